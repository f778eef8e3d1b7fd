package e2e

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/testutil"
)

// restartTxListener commits "commit", rolls back "rollback" and leaves
// "unknown" open. Its check answers UNKNOW until resolve is set, then
// COMMIT, and records which bodies were checked after that.
type restartTxListener struct {
	resolve      atomic.Bool
	checksBefore atomic.Int32
	mu           sync.Mutex
	checkedAfter map[string]int // guarded by mu
}

func (l *restartTxListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	switch string(m.Body) {
	case "commit":
		return primitive.CommitMessageState
	case "rollback":
		return primitive.RollbackMessageState
	}
	return primitive.UnkonwnState
}

func (l *restartTxListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	if !l.resolve.Load() {
		l.checksBefore.Add(1)
		return primitive.UnkonwnState
	}
	l.mu.Lock()
	l.checkedAfter[string(m.Body)]++
	l.mu.Unlock()
	return primitive.CommitMessageState
}

// TestTransactionStateSurvivesRestart: the half and op queues
// (RMQ_SYS_TRANS_HALF_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC) and the checker's
// progress survive a broker restart: after it the committed message is
// consumed once and never checked again, the rolled-back one is never
// delivered nor checked, and the still-open one is resolved by a check
// after the restart and consumed once.
func TestTransactionStateSurvivesRestart(t *testing.T) {
	c := startCluster(t, func(cfg *broker.Config) {
		cfg.TransactionCheckInterval = 300 * time.Millisecond
		cfg.TransactionTimeOut = 500 * time.Millisecond
		cfg.TransactionCheckMax = 100 // the open one must outlive the pre-restart checks
	})
	topic := uniqueName(t, "T")
	c.createTopic(topic, 2)
	l := &restartTxListener{checkedAfter: map[string]int{}}
	instance := uniqueName(t, "tpi")
	p, err := rocketmq.NewTransactionProducer(l,
		producer.WithNameServer([]string{c.nsAddr}),
		producer.WithGroupName(uniqueName(t, "tpg")),
		producer.WithInstanceName(instance),
		producer.WithRetry(2),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown() })

	ctx := testutil.Context(t, 60*time.Second)
	for _, body := range []string{"commit", "rollback", "unknown"} {
		res, err := p.SendMessageInTransaction(ctx, primitive.NewMessage(topic, []byte(body)))
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %s: %v %v", body, res, err)
		}
	}
	// The checker has asked about the open transaction (and been told
	// UNKNOW) at least once before the restart.
	testutil.Eventually(t, 15*time.Second, func() bool { return l.checksBefore.Load() >= 1 },
		"the open transaction was never checked before the restart")
	c.stopBroker()
	l.resolve.Store(true)
	c.startBroker()

	// The consumer shares the producer's client instance: its start-up
	// heartbeat registers the producer group with the restarted broker at
	// once (the official client's periodic heartbeat is every 30 s), so the
	// check can reach the producer.
	r := newReceived()
	newPushConsumer(t, c.nsAddr, uniqueName(t, "cg"), topic, "*", r,
		consumer.WithInstance(instance))
	testutil.Eventually(t, 30*time.Second, func() bool { return r.count.Load() >= 2 },
		"received %v of 2 messages after the restart", lazy(func() string {
			l.mu.Lock()
			defer l.mu.Unlock()
			return fmt.Sprintf("%d (checks after the restart: %v)", r.count.Load(), l.checkedAfter)
		}))
	// A sentinel sent after both are in makes a late duplicate or a leaked
	// rollback likely to have shown up by the time it arrives; wait for a
	// few more check rounds as well.
	sendN(t, newProducer(t, c.nsAddr), topic, "", "sentinel", 1)
	testutil.Eventually(t, 30*time.Second, func() bool { return r.count.Load() >= 3 }, "sentinel not received")

	r.mu.Lock()
	bodies := map[string]int{}
	for _, m := range r.msgs {
		bodies[string(m.Body)]++
	}
	dups := r.dups
	r.mu.Unlock()
	if bodies["commit"] != 1 || bodies["unknown"] != 1 || bodies["rollback"] != 0 || dups != 0 {
		t.Fatalf("consumed bodies = %v, %d duplicate deliveries; want commit and unknown once, rollback never", bodies, dups)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.checkedAfter["unknown"] == 0 {
		t.Error("the open transaction was resolved without a check after the restart")
	}
	if l.checkedAfter["commit"] != 0 || l.checkedAfter["rollback"] != 0 {
		t.Errorf("checks after the restart = %v: resolved transactions were checked again (op records lost?)", l.checkedAfter)
	}
}
