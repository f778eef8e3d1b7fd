//go:build !race

package e2e

// The official Go client's orderly push consumer has a data race of its own
// (processQueue's tree map is written by the pull goroutine and read by the
// consume goroutine without a lock), so this test runs only without -race.

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/apogeemq/apogee/internal/testutil"
)

// TestOrderlyConsumer: an orderly consumer locks its queues
// (LOCK_BATCH_MQ) and receives each queue's messages in order.
func TestOrderlyConsumer(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 2)
	p := newProducer(t, c.nsAddr, producer.WithQueueSelector(producer.NewHashQueueSelector()))
	ctx := testutil.Context(t, 60*time.Second)
	for i := range 30 {
		m := primitive.NewMessage(topic, []byte{byte(i)})
		m.WithShardingKey([]string{"a", "b"}[i%2])
		if _, err := p.SendSync(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	perQueue := map[int][]byte{}
	startOfficialPushConsumer(t, c.nsAddr, uniqueName(t, "og"), topic, tagSelector("*"),
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				perQueue[m.Queue.QueueId] = append(perQueue[m.Queue.QueueId], m.Body[0])
			}
			return consumer.ConsumeSuccess, nil
		}, consumer.WithConsumerOrder(true))
	testutil.Eventually(t, 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(perQueue[0])+len(perQueue[1]) >= 30
	}, "orderly consumer did not receive all messages")
	mu.Lock()
	defer mu.Unlock()
	for q, seq := range perQueue {
		for i := 1; i < len(seq); i++ {
			if seq[i] <= seq[i-1] {
				t.Fatalf("queue %d out of order: %v", q, seq)
			}
		}
	}
	if !c.b.Locks.HasActiveLocks(consGroupOf(t, c, topic)) {
		t.Fatal("orderly consumer holds no queue lock on the broker")
	}
}

// consGroupOf finds the orderly group registered for topic.
func consGroupOf(t *testing.T, c *testCluster, topic string) string {
	for _, g := range c.b.Clients.ConsumerGroups() {
		if info, ok := c.b.Clients.ConsumerGroup(g); ok {
			if _, sub := info.Subscriptions[topic]; sub {
				return g
			}
		}
	}
	t.Fatalf("no group subscribes %s", topic)
	return ""
}
