package e2e

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/testutil"
)

// txListener commits "commit", rolls back "rollback" and leaves "unknown"
// open; the broker's check then gets "commit" for it.
type txListener struct{ checks atomic.Int32 }

func (l *txListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	switch string(m.Body) {
	case "commit":
		return primitive.CommitMessageState
	case "rollback":
		return primitive.RollbackMessageState
	}
	return primitive.UnkonwnState
}

func (l *txListener) CheckLocalTransaction(*primitive.MessageExt) primitive.LocalTransactionState {
	l.checks.Add(1)
	return primitive.CommitMessageState
}

// TestTransactionalMessages: half messages stay invisible until committed
// (END_TRANSACTION); a rolled-back one never shows; an unresolved one is
// resolved by CHECK_TRANSACTION_STATE (docs/broker.md §1.11).
func TestTransactionalMessages(t *testing.T) {
	c := startCluster(t, func(cfg *broker.Config) {
		cfg.TransactionCheckInterval = 500 * time.Millisecond
		cfg.TransactionTimeOut = time.Second
	})
	topic := uniqueName(t, "T")
	c.createTopic(topic, 2)
	l := &txListener{}
	p, err := rocketmq.NewTransactionProducer(l,
		producer.WithNameServer([]string{c.nsAddr}),
		producer.WithGroupName(uniqueName(t, "tpg")),
		producer.WithInstanceName(uniqueName(t, "tpi")),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown() })
	r := newReceived()
	newPushConsumer(t, c.nsAddr, uniqueName(t, "cg"), topic, "*", r)

	ctx := testutil.Context(t, 60*time.Second)
	for _, body := range []string{"commit", "rollback", "unknown"} {
		res, err := p.SendMessageInTransaction(ctx, primitive.NewMessage(topic, []byte(body)))
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %s: %v %v", body, res, err)
		}
	}
	testutil.Eventually(t, 30*time.Second, func() bool { return r.count.Load() >= 2 },
		"received %d of 2 committed messages (checks so far: %d)", r.count.Load(), l.checks.Load())
	if l.checks.Load() == 0 {
		t.Error("the unresolved transaction was never checked")
	}
	// A sentinel makes sure a late rollback delivery would have shown up.
	sendN(t, newProducer(t, c.nsAddr), topic, "", "sentinel", 1)
	testutil.Eventually(t, 30*time.Second, func() bool { return r.count.Load() >= 3 }, "sentinel not received")
	r.mu.Lock()
	defer r.mu.Unlock()
	bodies := map[string]int{}
	for _, m := range r.msgs {
		bodies[string(m.Body)]++
	}
	if bodies["commit"] != 1 || bodies["unknown"] != 1 || bodies["rollback"] != 0 {
		t.Fatalf("consumed bodies = %v", bodies)
	}
}
