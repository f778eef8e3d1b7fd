package e2e

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestSDKPushConsumerRetry: a message the listener fails is sent back
// (CONSUMER_SEND_MSG_BACK, or the %RETRY% send fallback, docs/protocol.md §7.8)
// and delivered again through the group's retry topic with its original
// topic, id and body and a higher reconsume count.
func TestSDKPushConsumerRetry(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 2)
	p := newProducer(t, c.nsAddr)
	ids := sendN(t, p, topic, "r", "retry", 3)

	var mu sync.Mutex
	attempts := map[string][]int32{}
	bodies := map[string]string{}
	l := func(_ context.Context, msgs []*client.MessageExt) (client.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		res := client.ConsumeSuccess
		for _, m := range msgs {
			if m.Topic != topic {
				t.Errorf("retry delivered with topic %q", m.Topic)
			}
			attempts[m.MsgID] = append(attempts[m.MsgID], m.ReconsumeTimes)
			bodies[m.MsgID] = string(m.Body)
			if len(attempts[m.MsgID]) == 1 {
				res = client.ConsumeRetryLater
			}
		}
		return res, nil
	}
	// Delay level 1 (1 s) keeps the test short; the default (0) makes the
	// broker use level 3 (10 s).
	pc := newSDKPushConsumer(t, c.nsAddr, uniqueName(t, "cg"), topic, client.TagSelector("r"), l,
		client.WithRetryDelayLevel(1))
	testutil.Eventually(t, 40*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range ids {
			if len(attempts[id]) < 2 {
				return false
			}
		}
		return true
	}, "messages not redelivered")
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		a := attempts[id]
		if a[0] != 0 || a[1] < 1 {
			t.Errorf("%s: reconsume times %v", id, a)
		}
		if bodies[id] == "" {
			t.Errorf("%s: empty body on retry", id)
		}
	}
	if s := pc.Stats(); s.SentBack < int64(len(ids)) {
		t.Errorf("sent back %d, want >= %d", s.SentBack, len(ids))
	}
}
