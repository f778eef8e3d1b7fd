package e2e

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/apogeemq/apogee/internal/testutil"
)

// TestRequestReply: the Go client's Request() is answered by a consumer's
// reply, which the broker pushes to the requester with
// PUSH_REPLY_MESSAGE_TO_CLIENT (docs/protocol.md §3.3.1, §3.6).
func TestRequestReply(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 2)
	requesterGroup := uniqueName(t, "rq")
	requester := newProducer(t, c.nsAddr, producer.WithGroupName(requesterGroup))
	replier := newProducer(t, c.nsAddr)

	// The official consumer's Shutdown does not wait for a listener in
	// flight, so a reply may still be sending while the cleanups shut the
	// replier down: its failure then is no test failure (and t.Errorf after
	// the test would panic). ending is set by the first cleanup to run.
	var ending atomic.Bool
	startOfficialPushConsumer(t, c.nsAddr, uniqueName(t, "cg"), topic, tagSelector("*"),
		func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			for _, m := range msgs {
				reply, err := consumer.CreateReplyMessage(m, []byte("pong"))
				if err != nil {
					t.Errorf("create reply: %v", err)
					continue
				}
				if reply.GetProperty(primitive.PropertyCorrelationID) == "" {
					continue // the warm-up message is not a request
				}
				if _, err := replier.SendSync(ctx, reply); err != nil && !ending.Load() {
					t.Errorf("send reply: %v", err)
				}
			}
			return consumer.ConsumeSuccess, nil
		})
	t.Cleanup(func() { ending.Store(true) }) // runs before the consumer's and the replier's
	// The broker pushes replies to the requester's producer channel, known
	// from its heartbeat; the Go client heartbeats brokers it has routes
	// for (1 s after start, then every 30 s).
	sendN(t, requester, topic, "", "warm-up", 1)
	testutil.Eventually(t, 40*time.Second, func() bool {
		return slices.Contains(c.b.Clients.ProducerGroups(), requesterGroup)
	}, "requester never registered")

	ctx := testutil.Context(t, 30*time.Second)
	req := primitive.NewMessage(topic, []byte("ping"))
	reply, err := requester.Request(ctx, 10*time.Second, req)
	if err != nil {
		for _, g := range c.b.Clients.ProducerGroups() {
			for _, ch := range c.b.Clients.ProducerChannels(g) {
				t.Logf("producer group %s client %s", g, ch.ClientID)
			}
		}
		t.Fatalf("request: %v", err)
	}
	if reply == nil || reply.GetProperty(primitive.PropertyCorrelationID) != req.GetProperty(primitive.PropertyCorrelationID) {
		t.Fatalf("reply %+v does not answer the request", reply)
	}

}
