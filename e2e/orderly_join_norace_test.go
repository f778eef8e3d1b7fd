//go:build !race

package e2e

// Built only without -race: the official Go client's orderly push consumer
// races internally (see broker_orderly_norace_test.go).

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/testutil"
)

// orderlyDelivery is one message handed to an orderly listener.
type orderlyDelivery struct {
	consumer  int // 1 or 2
	id, seq   int
	afterJoin bool
}

// orderlyLog records deliveries of several orderly consumers in the order
// their listeners saw them.
type orderlyLog struct {
	mu     sync.Mutex
	log    []orderlyDelivery // guarded by mu
	joined atomic.Bool
	n      atomic.Int64 // len(log)
}

func (l *orderlyLog) listener(consumerNo int) officialListener {
	return func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			var id, seq int
			if _, err := fmt.Sscanf(string(m.Body), "%d:%d", &id, &seq); err != nil {
				return consumer.ConsumeSuccess, nil // foreign message: counted nowhere
			}
			l.mu.Lock()
			l.log = append(l.log, orderlyDelivery{consumer: consumerNo, id: id, seq: seq, afterJoin: l.joined.Load()})
			l.mu.Unlock()
			l.n.Add(1)
			time.Sleep(2 * time.Millisecond) // a slow consumer keeps messages flowing across the join
		}
		return consumer.ConsumeSuccess, nil
	}
}

// distinct counts the distinct (id, seq) pairs delivered.
func (l *orderlyLog) distinct() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	seen := map[[2]int]bool{}
	for _, d := range l.log {
		seen[[2]int{d.id, d.seq}] = true
	}
	return len(seen)
}

// TestOrderlyConsumerSecondJoins: a second orderly consumer joins the group
// while the first is consuming; queue locks (LOCK_BATCH_MQ) and the
// rebalance keep every order id's messages in send order: the first
// delivery of each sequence number comes after the first delivery of all
// lower ones (re-deliveries of already seen numbers are allowed), nothing
// is lost and both consumers receive messages after the join.
//
// The official Go client does not unlock the queues a rebalance takes away
// from an orderly consumer (its removeUnnecessaryMessageQueue leaves
// orderly as a TODO), so the second consumer gets them only when the
// broker's lock expires and its next rebalance (every 20 s) follows. The
// lock lifetime is shortened to 5 s here (rebalanceLockMaxLiveTime, 60 s by
// default as in RocketMQ) so the test takes about 25 s, not 65 s.
func TestOrderlyConsumerSecondJoins(t *testing.T) {
	const ids, perID = 40, 50
	c := startCluster(t, func(cfg *broker.Config) { cfg.RebalanceLockMaxLiveTime = 5 * time.Second })
	topic := uniqueName(t, "T")
	c.createTopic(topic, 4)
	p := newProducer(t, c.nsAddr, producer.WithQueueSelector(producer.NewHashQueueSelector()))
	ctx := testutil.Context(t, 60*time.Second)
	for seq := range perID {
		for id := range ids {
			m := primitive.NewMessage(topic, fmt.Appendf(nil, "%d:%d", id, seq))
			m.WithShardingKey(fmt.Sprintf("order-%d", id))
			if _, err := p.SendSync(ctx, m); err != nil {
				t.Fatalf("send %d:%d: %v", id, seq, err)
			}
		}
	}

	group := uniqueName(t, "og")
	l := &orderlyLog{}
	startOfficialPushConsumer(t, c.nsAddr, group, topic, tagSelector("*"), l.listener(1),
		consumer.WithConsumerOrder(true))
	testutil.Eventually(t, 30*time.Second, func() bool { return l.n.Load() >= ids*perID/5 },
		"first consumer received %v messages before the join", lazy(func() string { return fmt.Sprint(l.n.Load()) }))
	if l.n.Load() >= ids*perID {
		t.Fatal("the first consumer finished before the second could join; slow it down")
	}
	l.joined.Store(true)
	startOfficialPushConsumer(t, c.nsAddr, group, topic, tagSelector("*"), l.listener(2),
		consumer.WithConsumerOrder(true))

	testutil.Eventually(t, 100*time.Second, func() bool { return l.distinct() == ids*perID },
		"%v", lazy(func() string { return fmt.Sprintf("%d of %d messages delivered", l.distinct(), ids*perID) }))

	l.mu.Lock()
	defer l.mu.Unlock()
	seen := make([]map[int]bool, ids)
	next := make([]int, ids)
	afterJoin := map[int]int{}
	dups := 0
	for i, d := range l.log {
		if d.afterJoin {
			afterJoin[d.consumer]++
		}
		if seen[d.id] == nil {
			seen[d.id] = map[int]bool{}
		}
		if seen[d.id][d.seq] {
			dups++
			continue
		}
		if d.seq != next[d.id] {
			t.Fatalf("delivery %d (consumer %d): order id %d got sequence %d first, want %d next", i, d.consumer, d.id, d.seq, next[d.id])
		}
		seen[d.id][d.seq] = true
		next[d.id]++
	}
	if afterJoin[1] == 0 || afterJoin[2] == 0 {
		t.Fatalf("deliveries after the join per consumer = %v, want both > 0 (no rebalance?)", afterJoin)
	}
	t.Logf("%d deliveries, %d re-deliveries, after the join per consumer %v", len(l.log), dups, afterJoin)
}
