package e2e

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestSendModesByteExact sends sync, async and oneway messages with tags,
// keys and user properties (docs/protocol.md §3.3.1, Appendix B) and checks that
// a push consumer receives every one byte-exact. One body is large enough
// for the Go producer to compress it (§6.5); the consumer inflates it.
func TestSendModesByteExact(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 4)
	p := newProducer(t, c.nsAddr)
	ctx := testutil.Context(t, 60*time.Second)

	mk := func(i int, mode string) (*primitive.Message, wantMessage) {
		body := []byte(fmt.Sprintf("%s-%d-\x00\x01\xff-ünïcode", mode, i))
		if i == 0 {
			body = bytes.Repeat([]byte("compress me "), 1000) // > 4 KiB
		}
		s := wantMessage{body: body, tag: "Tag" + mode, keys: fmt.Sprintf("k%d shared", i),
			props: map[string]string{"user": mode, "n": fmt.Sprint(i)}}
		m := primitive.NewMessage(topic, body)
		m.WithTag(s.tag)
		m.WithKeys(strings.Fields(s.keys))
		for k, v := range s.props {
			m.WithProperty(k, v)
		}
		return m, s
	}

	want := map[string]wantMessage{} // by "mode/i"
	for i := range 5 {
		m, s := mk(i, "sync")
		res, err := p.SendSync(ctx, m)
		if err != nil {
			t.Fatalf("sync send: %v", err)
		}
		if res.Status != primitive.SendOK || res.MsgID == "" || res.OffsetMsgID == "" {
			t.Fatalf("sync result %+v", res)
		}
		want[fmt.Sprintf("sync/%d", i)] = s
	}
	var wg sync.WaitGroup
	var asyncErr sync.Map
	for i := range 5 {
		m, s := mk(i, "async")
		want[fmt.Sprintf("async/%d", i)] = s
		wg.Add(1)
		if err := p.SendAsync(ctx, func(_ context.Context, res *primitive.SendResult, err error) {
			defer wg.Done()
			if err != nil || res.Status != primitive.SendOK {
				asyncErr.Store(i, fmt.Sprint(err, res))
			}
		}, m); err != nil {
			t.Fatalf("async send: %v", err)
		}
	}
	wg.Wait()
	asyncErr.Range(func(k, v any) bool { t.Errorf("async send %v failed: %v", k, v); return true })
	for i := range 5 {
		m, s := mk(i, "oneway")
		want[fmt.Sprintf("oneway/%d", i)] = s
		if err := p.SendOneWay(ctx, m); err != nil {
			t.Fatalf("oneway send: %v", err)
		}
	}

	r := newReceived()
	newPushConsumer(t, c.nsAddr, uniqueName(t, "cg"), topic, "*", r)
	testutil.Eventually(t, 30*time.Second, func() bool { return r.count.Load() >= int64(len(want)) },
		"received %d of %d", r.count.Load(), len(want))

	got := map[string]*primitive.MessageExt{}
	r.mu.Lock()
	for _, m := range r.msgs {
		got[m.GetProperty("user")+"/"+m.GetProperty("n")] = m
	}
	r.mu.Unlock()
	for k, s := range want {
		m, ok := got[k]
		if !ok {
			t.Errorf("message %s not received", k)
			continue
		}
		checkOfficialMessage(t, k, m, s)
		if m.Topic != topic || m.StoreHost != c.b.Addr() {
			t.Errorf("%s: topic %q storeHost %q", k, m.Topic, m.StoreHost)
		}
	}
	if d := r.duplicates(); d != 0 {
		t.Errorf("%d duplicate deliveries", d)
	}
}

// TestBatchSend sends one SEND_BATCH_MESSAGE (docs/protocol.md §6.7); every inner message is
// stored with consecutive queue offsets and consumed with its own
// properties.
func TestBatchSend(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 2)
	p := newProducer(t, c.nsAddr)
	ctx := testutil.Context(t, 60*time.Second)
	var msgs []*primitive.Message
	for i := range 20 {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("batch-%d", i)))
		m.WithTag("B")
		m.WithProperty("i", fmt.Sprint(i))
		msgs = append(msgs, m)
	}
	res, err := p.SendSync(ctx, msgs...)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != primitive.SendOK || len(strings.Split(res.OffsetMsgID, ",")) != 20 {
		t.Fatalf("batch result %+v", res)
	}
	r := newReceived()
	newPushConsumer(t, c.nsAddr, uniqueName(t, "cg"), topic, "B", r)
	testutil.Eventually(t, 30*time.Second, func() bool { return r.count.Load() >= 20 }, "received %d of 20", r.count.Load())
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]int64{}
	for _, m := range r.msgs {
		if string(m.Body) != "batch-"+m.GetProperty("i") {
			t.Errorf("body %q with i=%s", m.Body, m.GetProperty("i"))
		}
		seen[m.GetProperty("i")] = m.QueueOffset
	}
	if len(seen) != 20 {
		t.Fatalf("distinct messages %d", len(seen))
	}
	for i := range 20 {
		if seen[fmt.Sprint(i)] != int64(i)+seen["0"] {
			t.Fatalf("queue offsets not consecutive: %v", seen)
		}
	}
}

// TestMessageTooLarge: a body over maxMessageSize is refused with
// MESSAGE_ILLEGAL (13) and the broker keeps serving (docs/protocol.md §1.7).
func TestMessageTooLarge(t *testing.T) {
	c := startCluster(t, func(cfg *broker.Config) { cfg.Store.MaxMessageSize = 64 << 10 })
	topic := uniqueName(t, "T")
	c.createTopic(topic, 1)
	// Compression would shrink a repetitive body below the limit.
	p := newProducer(t, c.nsAddr)
	ctx := testutil.Context(t, 60*time.Second)
	big := make([]byte, 65<<10)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	_, err := p.SendSync(ctx, primitive.NewMessage(topic, big))
	if err == nil || !strings.Contains(err.Error(), "13") {
		t.Fatalf("err = %v, want MESSAGE_ILLEGAL (13)", err)
	}
	res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("small")))
	if err != nil || res.Status != primitive.SendOK {
		t.Fatalf("send after refusal: %v %v", res, err)
	}
}
