//go:build !race

package e2e

// The official Go pull consumer races internally (its rebalance reads what
// Pull writes without a lock), so this test runs only without -race.

import (
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/apogeemq/apogee/internal/testutil"
)

// TestGoPullConsumerPullFrom: the official pull consumer posts its
// subscription with each pull (sysFlag 6, docs/protocol.md §7.1); the broker
// filters by tag hash and reports the queue's offsets.
func TestGoPullConsumerPullFrom(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 1)
	p := newProducer(t, c.nsAddr)
	sendN(t, p, topic, "A", "a", 5)
	sendN(t, p, topic, "B", "b", 5)
	testutil.Eventually(t, 10*time.Second, func() bool { return c.b.Store.MaxOffsetInQueue(topic, 0) == 10 }, "not dispatched")

	pc, err := rocketmq.NewPullConsumer(
		consumer.WithNameServer([]string{c.nsAddr}),
		consumer.WithGroupName(uniqueName(t, "pc")),
		consumer.WithInstance(uniqueName(t, "ci")),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "A"}); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Shutdown() })
	mq := &primitive.MessageQueue{Topic: topic, BrokerName: c.cfg.BrokerName, QueueId: 0}
	ctx := testutil.Context(t, 30*time.Second)
	res, err := pc.PullFrom(ctx, mq, 0, 32)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != primitive.PullFound || res.MaxOffset != 10 || res.NextBeginOffset != 10 {
		t.Fatalf("pull result = %+v", res)
	}
	msgs := res.GetMessageExts()
	if len(msgs) != 5 {
		t.Fatalf("pulled %d messages, want the 5 tagged A", len(msgs))
	}
	for _, m := range msgs {
		if m.GetTags() != "A" {
			t.Fatalf("message with tag %q passed the A filter", m.GetTags())
		}
	}
}
