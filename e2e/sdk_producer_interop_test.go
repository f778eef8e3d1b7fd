package e2e

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/testutil"
)

// newSDKProducer starts an Apogee SDK producer closed by t.Cleanup.
func newSDKProducer(t *testing.T, nsAddr string, opts ...client.ProducerOpt) *client.Producer {
	t.Helper()
	all := append([]client.ProducerOpt{
		client.WithNameServers(nsAddr),
		client.WithLogger(testutil.Logger(t)),
		client.WithSendTimeout(5 * time.Second),
	}, opts...)
	p, err := client.NewProducer(uniqueName(t, "pg"), all...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("producer close: %v", err)
		}
	})
	return p
}

// TestSDKProducerToOfficialConsumer: every send mode of the Apogee producer
// (sync, async, oneway, batch, a body over compressMsgBodyOverHowmuch) is
// consumed by the official Go push consumer with byte-identical bodies,
// tags, keys and user properties (docs/broker.md §4.4, docs/protocol.md
// §6.5-§6.7).
func TestSDKProducerToOfficialConsumer(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 4)
	p := newSDKProducer(t, c.nsAddr)
	ctx := testutil.Context(t, 60*time.Second)

	want := map[string]wantMessage{} // by UNIQ_KEY
	var mu sync.Mutex
	record := func(id string, m *client.Message) {
		mu.Lock()
		defer mu.Unlock()
		want[id] = wantMessage{body: m.Body, tag: m.Tag(), keys: strings.Join(m.Keys(), " "), props: m.Properties}
	}
	mk := func(i int, size int) *client.Message {
		body := bytes.Repeat([]byte{byte('a' + i%26)}, size)
		copy(body, fmt.Sprintf("msg-%d-", i))
		return client.NewMessage(topic, body).WithTag(fmt.Sprintf("tag%d", i%3)).WithKeys(fmt.Sprintf("k%d", i), "shared").
			SetProperty("user-prop", fmt.Sprintf("v%d", i))
	}

	// Sync, including a compressed body.
	for i, size := range []int{10, 4095, 4096, 100_000} {
		m := mk(i, size)
		res, err := p.Send(ctx, m)
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if res.Status != client.SendOK || res.MsgID == "" || res.OffsetMsgID == "" {
			t.Fatalf("send %d: result %+v", i, res)
		}
		record(res.MsgID, m)
	}
	// Async.
	var wg sync.WaitGroup
	for i := 10; i < 20; i++ {
		m := mk(i, 200)
		wg.Add(1)
		if err := p.SendAsync(ctx, m, func(res *client.SendResult, err error) {
			defer wg.Done()
			if err != nil {
				t.Errorf("async send: %v", err)
				return
			}
			record(res.MsgID, m)
		}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	// Batch.
	var batch []*client.Message
	for i := 20; i < 25; i++ {
		batch = append(batch, mk(i, 300))
	}
	res, err := p.SendBatch(ctx, batch...)
	if err != nil {
		t.Fatalf("batch: %v", err)
	}
	ids := strings.Split(res.MsgID, ",")
	if len(ids) != len(batch) {
		t.Fatalf("batch ids %q", res.MsgID)
	}
	for i, id := range ids {
		record(id, batch[i])
	}
	// Oneway: identified by its key.
	ow := mk(30, 50).WithKeys("oneway-key")
	if err := p.SendOneway(ctx, ow); err != nil {
		t.Fatal(err)
	}

	r := newReceived()
	newPushConsumer(t, c.nsAddr, uniqueName(t, "cg"), topic, "*", r)
	total := len(want) + 1
	testutil.Eventually(t, 30*time.Second, func() bool { return int(r.count.Load()) >= total },
		"official consumer got %d of %d", r.count.Load(), total)
	for id, w := range want {
		m, ok := r.get(id)
		if !ok {
			t.Errorf("message %s not received", id)
			continue
		}
		checkOfficialMessage(t, id, m, w)
	}
	found := false
	r.mu.Lock()
	for _, m := range r.msgs {
		if m.GetKeys() == "oneway-key" {
			found = bytes.Equal(m.Body, ow.Body)
		}
	}
	r.mu.Unlock()
	if !found {
		t.Error("oneway message not received intact")
	}
}
