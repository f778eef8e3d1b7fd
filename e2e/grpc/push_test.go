package grpce2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
)

// TestPushConsumer: the official v5.1.3 PushConsumer (QueryAssignment,
// auto-renewed receives, ack on success, nack by ChangeInvisibleDuration on
// failure) consumes every message; one whose first consumption fails comes
// back with delivery attempt 2.
func TestPushConsumer(t *testing.T) {
	s := startServer(t, "")
	const topic, group = "GrpcPushTopic", "GrpcPushGroup"
	s.createTopic(t, topic, "NORMAL", 2)
	withSSL(t, false)
	p := newProducer(t, s.grpc, rmq.WithTopics(topic))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ids := map[string]bool{}
	var failID string
	for i := range 10 {
		res, err := p.Send(ctx, &rmq.Message{Topic: topic, Body: []byte(fmt.Sprintf("push %d", i))})
		if err != nil {
			t.Fatal(err)
		}
		ids[res[0].MessageID] = true
		if i == 0 {
			failID = res[0].MessageID
		}
	}

	var mu sync.Mutex
	attempts := map[string][]int32{}
	listener := &rmq.FuncMessageListener{Consume: func(mv *rmq.MessageView) rmq.ConsumerResult {
		mu.Lock()
		defer mu.Unlock()
		attempts[mv.GetMessageId()] = append(attempts[mv.GetMessageId()], mv.GetDeliveryAttempt())
		if mv.GetMessageId() == failID && len(attempts[failID]) == 1 {
			return rmq.FAILURE
		}
		return rmq.SUCCESS
	}}
	c, err := rmq.NewPushConsumer(clientConfig(s.grpc, group), rmq.WithPushAwaitDuration(5*time.Second),
		rmq.WithPushSubscriptionExpressions(map[string]*rmq.FilterExpression{topic: rmq.SUB_ALL}),
		rmq.WithPushMessageListener(listener), rmq.WithPushConsumptionThreadCount(4))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("push consumer start: %v", err)
	}
	// GracefulStop waits for the consumer's held receives (up to the
	// 20 s long polling the settings give); stopping the server first
	// ends them at once.
	defer func() {
		s.stop(t)
		c.GracefulStop()
	}()
	start := time.Now()
	eventually(t, 45*time.Second, "every message consumed and the failed one redelivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		done := 0
		for id := range ids {
			if len(attempts[id]) > 0 {
				done++
			}
		}
		return done == len(ids) && len(attempts[failID]) >= 2
	})
	t.Logf("consumed after %s", time.Since(start))
	mu.Lock()
	defer mu.Unlock()
	if a := attempts[failID]; a[0] != 1 || a[1] != 2 {
		t.Errorf("failed message attempts %v, want [1 2]", a)
	}
	for id := range ids {
		if id != failID && len(attempts[id]) != 1 {
			t.Errorf("message %s consumed %d times", id, len(attempts[id]))
		}
	}
}
