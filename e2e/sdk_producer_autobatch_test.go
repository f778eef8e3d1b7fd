package e2e

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestSDKAutoBatchToOfficialConsumer: with auto-batching on, async sends
// are coalesced into SEND_BATCH_MESSAGE requests (far fewer requests than
// messages), the broker stores them as individual messages, and the
// official Go push consumer reads each one with its own message id, body,
// tag, keys and properties, at the queue and queue offset its own callback
// reported.
func TestSDKAutoBatchToOfficialConsumer(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 4)
	p := newSDKProducer(t, c.nsAddr, client.WithAutoBatch(true), client.WithBatchMaxDelayMs(20),
		client.WithBatchMaxBytes(16<<10))
	ctx := testutil.Context(t, 60*time.Second)
	if _, err := p.Queues(ctx, topic); err != nil { // route first: the loop below must not wait for it
		t.Fatal(err)
	}

	const n = 300
	type sent struct {
		msg *client.Message
		res *client.SendResult
	}
	var (
		mu   sync.Mutex
		byID = map[string]sent{}
		wg   sync.WaitGroup
	)
	for i := range n {
		body := bytes.Repeat([]byte{byte('a' + i%26)}, 200+i%7)
		copy(body, fmt.Sprintf("auto-%d-", i))
		m := client.NewMessage(topic, body).WithTag(fmt.Sprintf("tag%d", i%3)).WithKeys(fmt.Sprintf("k%d", i)).
			SetProperty("user-prop", fmt.Sprintf("v%d", i))
		wg.Add(1)
		if err := p.SendAsync(ctx, m, func(res *client.SendResult, err error) {
			defer wg.Done()
			if err != nil {
				t.Errorf("async send: %v", err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if _, dup := byID[res.MsgID]; dup || res.MsgID == "" {
				t.Errorf("message id %q empty or reported twice", res.MsgID)
			}
			byID[res.MsgID] = sent{m, res}
		}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if a := p.Stats().Attempts; a > n/4 {
		t.Fatalf("%d requests for %d messages: not batched", a, n)
	}
	t.Logf("%d messages in %d requests", n, p.Stats().Attempts)

	r := newReceived()
	newPushConsumer(t, c.nsAddr, uniqueName(t, "cg"), topic, "*", r)
	testutil.Eventually(t, 30*time.Second, func() bool { return int(r.count.Load()) >= n },
		"official consumer got %d of %d", r.count.Load(), n)
	for id, s := range byID {
		m, ok := r.get(id)
		if !ok {
			t.Errorf("message %s not received", id)
			continue
		}
		checkOfficialMessage(t, id, m, wantMessage{body: s.msg.Body, tag: s.msg.Tag(), keys: s.msg.Keys()[0], props: s.msg.Properties})
		if m.Queue.QueueId != s.res.Queue.QueueID || m.QueueOffset != s.res.QueueOffset {
			t.Errorf("message %s stored at queue %d offset %d; its callback said %d/%d", id,
				m.Queue.QueueId, m.QueueOffset, s.res.Queue.QueueID, s.res.QueueOffset)
		}
		if m.OffsetMsgId != s.res.OffsetMsgID {
			t.Errorf("message %s: offset message id %s, callback said %s", id, m.OffsetMsgId, s.res.OffsetMsgID)
		}
	}
	if d := r.duplicates(); d != 0 {
		t.Errorf("%d duplicate deliveries", d)
	}
}
