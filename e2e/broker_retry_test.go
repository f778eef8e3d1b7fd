package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/testutil"
)

// fastDelays makes every delay level one second so retries come back fast.
func fastDelays(cfg *broker.Config) {
	cfg.Store.MessageDelayLevel = strings.TrimSpace(strings.Repeat("1s ", 18))
}

// TestRetryAndDeadLetter: a message whose consumption fails is sent back
// (CONSUMER_SEND_MSG_BACK), redelivered through SCHEDULE_TOPIC_XXXX and
// %RETRY%<group> with reconsumeTimes+1 and its original topic; after
// maxReconsumeTimes failures it lands in %DLQ%<group> (docs/broker.md §1.10).
func TestRetryAndDeadLetter(t *testing.T) {
	c := startCluster(t, fastDelays)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 2)
	group := uniqueName(t, "cg")
	// Routed before the consumer starts, so it pulls retries at once instead
	// of after its next route refresh.
	c.createTopic(names.RetryTopic(group), 1)
	p := newProducer(t, c.nsAddr)

	var mu sync.Mutex
	deliveries := map[string][]int32{} // body -> reconsume times seen
	startOfficialPushConsumer(t, c.nsAddr, group, topic, tagSelector("*"),
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				if m.Topic != topic {
					t.Errorf("retry delivered with topic %q, want the original %q", m.Topic, topic)
				}
				deliveries[string(m.Body)] = append(deliveries[string(m.Body)], m.ReconsumeTimes)
			}
			if string(msgs[0].Body) == "ok-after-one" && len(deliveries["ok-after-one"]) >= 2 {
				return consumer.ConsumeSuccess, nil
			}
			return consumer.ConsumeRetryLater, nil
		}, consumer.WithMaxReconsumeTimes(2))

	ctx := testutil.Context(t, 60*time.Second)
	for _, body := range []string{"ok-after-one", "always-fails"} {
		if _, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(body))); err != nil {
			t.Fatal(err)
		}
	}
	dlq := names.DLQTopic(group)
	testutil.Eventually(t, 45*time.Second, func() bool {
		return c.b.Store.MaxOffsetInQueue(dlq, 0) == 1
	}, "failing message never reached %s", dlq)
	mu.Lock()
	defer mu.Unlock()
	if got := deliveries["ok-after-one"]; len(got) != 2 || got[0] != 0 || got[1] != 1 {
		t.Errorf("ok-after-one deliveries (reconsume times) = %v, want [0 1]", got)
	}
	if got := deliveries["always-fails"]; len(got) != 3 {
		t.Errorf("always-fails delivered %v times, want 3 (first + maxReconsumeTimes)", got)
	}
}

// TestDelayLevelMessage: a message with a delay level is held in
// SCHEDULE_TOPIC_XXXX and delivered to its topic after the delay (docs/broker.md §1.8).
func TestDelayLevelMessage(t *testing.T) {
	c := startCluster(t, func(cfg *broker.Config) { cfg.Store.MessageDelayLevel = "1s 2s" })
	topic := uniqueName(t, "T")
	c.createTopic(topic, 1)
	p := newProducer(t, c.nsAddr)
	r := newReceived()
	newPushConsumer(t, c.nsAddr, uniqueName(t, "cg"), topic, "*", r)
	m := primitive.NewMessage(topic, []byte("later"))
	m.WithDelayTimeLevel(2)
	sent := time.Now()
	if _, err := p.SendSync(testutil.Context(t, 30*time.Second), m); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*time.Second, func() bool { return r.count.Load() == 1 }, "delayed message not delivered")
	if d := time.Since(sent); d < 1500*time.Millisecond {
		t.Fatalf("delivered after %v, before its 2 s delay", d)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, got := range r.msgs {
		if string(got.Body) != "later" || got.Topic != topic {
			t.Fatalf("delivered %q on %q", got.Body, got.Topic)
		}
	}
}
