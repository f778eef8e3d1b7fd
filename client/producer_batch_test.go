package client

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

// asyncResults collects SendAsync callbacks.
type asyncResults struct {
	wg   sync.WaitGroup
	mu   sync.Mutex
	res  map[int]*SendResult
	errs map[int]error
}

func newAsyncResults() *asyncResults {
	return &asyncResults{res: map[int]*SendResult{}, errs: map[int]error{}}
}

func (r *asyncResults) send(t *testing.T, ctx context.Context, p *Producer, i int, m *Message) {
	t.Helper()
	r.wg.Add(1)
	if err := p.SendAsync(ctx, m, func(res *SendResult, err error) {
		defer r.wg.Done()
		r.mu.Lock()
		defer r.mu.Unlock()
		if _, dup := r.res[i]; dup {
			t.Errorf("callback of message %d ran twice", i)
		}
		r.res[i], r.errs[i] = res, err
	}); err != nil {
		r.wg.Done()
		t.Fatalf("SendAsync %d: %v", i, err)
	}
}

// batchRequests returns the SEND_BATCH_MESSAGE requests the broker got and
// how many single sends.
func batchRequests(t *testing.T, sends []*protocol.Command) (batches [][]message.Message, singles int) {
	t.Helper()
	for _, req := range sends {
		if req.Code != int32(protocol.SendBatchMessage) {
			singles++
			continue
		}
		msgs, err := message.DecodeBatch(req.Body)
		if err != nil {
			t.Fatalf("batch body: %v", err)
		}
		if h := sendHeader(t, req); !h.Batch || h.Topic != "T" {
			t.Fatalf("batch header %+v", h)
		}
		batches = append(batches, msgs)
	}
	return batches, singles
}

// TestAutoBatchCoalescesAsyncSends: async sends to one topic go out as
// SEND_BATCH_MESSAGE frames, each sent when it reaches batchMaxBytes;
// every callback gets its own UNIQ_KEY and the batch's queue offset plus
// its index; bodies and properties arrive intact.
func TestAutoBatchCoalescesAsyncSends(t *testing.T) {
	b := newFakeBroker(t, "broker-a")
	b.Serve("T", b)
	// 100-byte bodies, 1000-byte batches: full batches of 10; the delay is
	// long enough that only size sends them (TestAutoBatchDelay covers it).
	p := startProducer(t, b.Addr(), WithAutoBatch(true), WithBatchMaxBytes(1000), WithBatchMaxDelayMs(60_000))
	ctx := testutil.Context(t, 20*time.Second)
	const n = 40
	r := newAsyncResults()
	for i := range n {
		body := fmt.Appendf(nil, "%-100d", i)
		r.send(t, ctx, p, i, NewMessage("T", body).WithTag("tg").SetProperty("idx", strconv.Itoa(i)))
	}
	r.wg.Wait()
	batches, singles := batchRequests(t, b.Sends())
	if singles != 0 || len(batches) != 4 {
		t.Fatalf("%d batches, %d single sends; want 4 batches of 10", len(batches), singles)
	}
	byKey := map[string]message.Message{}
	for k, msgs := range batches {
		if len(msgs) != 10 {
			t.Fatalf("batch %d holds %d messages, want 10", k, len(msgs))
		}
		for _, m := range msgs {
			byKey[m.Properties[message.PropertyUniqClientMessageIDKeyidx]] = m
		}
	}
	firstOffset := map[int]int64{} // by batch position of message 0 of each batch
	for i := range n {
		res, err := r.res[i], r.errs[i]
		if err != nil || res == nil || res.Status != SendOK {
			t.Fatalf("message %d: %v %+v", i, err, res)
		}
		m, ok := byKey[res.MsgID]
		if !ok {
			t.Fatalf("message %d: result id %q is in no batch", i, res.MsgID)
		}
		if m.Properties["idx"] != strconv.Itoa(i) || string(m.Body) != fmt.Sprintf("%-100d", i) || m.Properties["TAGS"] != "tg" {
			t.Fatalf("message %d: stored as %q %v", i, m.Body, m.Properties)
		}
		// Messages were added in order, so message i is at index i%10 of
		// batch i/10: its offset is the batch's first plus i%10.
		k := i / 10
		if i%10 == 0 {
			firstOffset[k] = res.QueueOffset
		}
		if res.QueueOffset != firstOffset[k]+int64(i%10) {
			t.Fatalf("message %d: queue offset %d, batch starts at %d", i, res.QueueOffset, firstOffset[k])
		}
		if i%10 == 0 && res.OffsetMsgID == "" {
			t.Fatalf("message %d: no offset message id", i)
		}
	}
	if got := p.Stats().Attempts; got != 4 {
		t.Fatalf("attempts %d, want 4 (one per batch)", got)
	}
}

// TestAutoBatchDelay: a lone message is sent batchMaxDelayMs after it was
// added (as a plain send: nothing to coalesce with), not held longer.
func TestAutoBatchDelay(t *testing.T) {
	b := newFakeBroker(t, "broker-a")
	b.Serve("T", b)
	p := startProducer(t, b.Addr(), WithAutoBatch(true), WithBatchMaxDelayMs(50))
	ctx := testutil.Context(t, 20*time.Second)
	r := newAsyncResults()
	start := time.Now()
	r.send(t, ctx, p, 0, NewMessage("T", []byte("alone")))
	r.wg.Wait()
	if el := time.Since(start); el < 50*time.Millisecond {
		t.Fatalf("sent after %v, before the 50 ms batch delay", el)
	}
	if r.errs[0] != nil || r.res[0].MsgID == "" {
		t.Fatalf("result %+v %v", r.res[0], r.errs[0])
	}
	if req := b.LastSend(); req.Code != int32(protocol.SendMessageV2) || string(req.Body) != "alone" {
		t.Fatalf("lone message sent as code %d %q", req.Code, req.Body)
	}
}

// TestAutoBatchExclusions: what RocketMQ never batches goes out at once as
// a single send, with auto-batching on.
func TestAutoBatchExclusions(t *testing.T) {
	b := newFakeBroker(t, "broker-a")
	b.Serve("T", b)
	b.Serve("%RETRY%g", b)
	p := startProducer(t, b.Addr(), WithAutoBatch(true), WithBatchMaxBytes(1000), WithBatchMaxDelayMs(60_000))
	ctx := testutil.Context(t, 20*time.Second)
	cases := []struct {
		name string
		msg  *Message
	}{
		{"delay level", NewMessage("T", []byte("d")).SetProperty(message.PropertyDelayTimeLevel, "3")},
		{"timer", NewMessage("T", []byte("t")).SetProperty(message.PropertyTimerDelaySec, "5")},
		{"retry topic", NewMessage("%RETRY%g", []byte("r"))},
		{"producer group property", NewMessage("T", []byte("p")).SetProperty(message.PropertyProducerGroup, "x")},
		{"body at batchMaxBytes", NewMessage("T", make([]byte, 1000))},
	}
	for i, c := range cases {
		r := newAsyncResults()
		r.send(t, ctx, p, i, c.msg)
		r.wg.Wait() // a batched message would wait the 60 s delay
		if r.errs[i] != nil {
			t.Fatalf("%s: %v", c.name, r.errs[i])
		}
		if req := b.LastSend(); req.Code == int32(protocol.SendBatchMessage) {
			t.Fatalf("%s: sent in a batch", c.name)
		}
	}
	// Sync sends are never batched either.
	if _, err := p.Send(ctx, NewMessage("T", []byte("sync"))); err != nil {
		t.Fatal(err)
	}
	if req := b.LastSend(); req.Code != int32(protocol.SendMessageV2) {
		t.Fatalf("sync send as code %d", req.Code)
	}
}

// TestAutoBatchTotalLimit: once totalBatchMaxBytes of bodies are held, a
// further message is sent on its own at once.
func TestAutoBatchTotalLimit(t *testing.T) {
	b := newFakeBroker(t, "broker-a")
	b.Serve("T", b)
	p := startProducer(t, b.Addr(), WithAutoBatch(true), WithBatchMaxBytes(1000), WithTotalBatchMaxBytes(1000),
		WithBatchMaxDelayMs(60_000))
	ctx := testutil.Context(t, 20*time.Second)
	held := newAsyncResults()
	for i := range 9 { // 900 bytes held
		held.send(t, ctx, p, i, NewMessage("T", make([]byte, 100)))
	}
	over := newAsyncResults()
	over.send(t, ctx, p, 0, NewMessage("T", make([]byte, 101))) // 1001 > 1000
	over.wg.Wait()
	if over.errs[0] != nil || b.SendCount() != 1 || b.LastSend().Code != int32(protocol.SendMessageV2) {
		t.Fatalf("over the total: err %v, %d sends", over.errs[0], b.SendCount())
	}
	// Close sends the held batch and waits for its callbacks.
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	held.mu.Lock()
	defer held.mu.Unlock()
	if len(held.res) != 9 {
		t.Fatalf("%d of 9 held callbacks ran by Close", len(held.res))
	}
	for i, err := range held.errs {
		if err != nil {
			t.Fatalf("held message %d: %v", i, err)
		}
	}
	if batches, _ := batchRequests(t, b.Sends()); len(batches) != 1 || len(batches[0]) != 9 {
		t.Fatalf("batches %d", len(batches))
	}
}

// TestAutoBatchCancelledWhileHeld: a message whose context ends before its
// batch is sent (here by Close) gets the context's error and is left out of
// the batch.
func TestAutoBatchCancelledWhileHeld(t *testing.T) {
	b := newFakeBroker(t, "broker-a")
	b.Serve("T", b)
	p := startProducer(t, b.Addr(), WithAutoBatch(true), WithBatchMaxDelayMs(60_000))
	ctx := testutil.Context(t, 20*time.Second)
	cctx, cancel := context.WithCancel(ctx)
	r := newAsyncResults()
	r.send(t, cctx, p, 0, NewMessage("T", []byte("cancelled")))
	r.send(t, ctx, p, 1, NewMessage("T", []byte("kept-1")))
	r.send(t, ctx, p, 2, NewMessage("T", []byte("kept-2")))
	cancel()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	r.wg.Wait()
	if r.errs[0] == nil || r.errs[1] != nil || r.errs[2] != nil {
		t.Fatalf("errors %v", r.errs)
	}
	batches, _ := batchRequests(t, b.Sends())
	if len(batches) != 1 || len(batches[0]) != 2 || string(batches[0][0].Body) != "kept-1" {
		t.Fatalf("batches %v", batches)
	}
}

// TestAutoBatchFailureReachesEveryCallback: a batch the broker refuses
// fails every message in it, each callback once.
func TestAutoBatchFailureReachesEveryCallback(t *testing.T) {
	b := newFakeBroker(t, "broker-a")
	b.Serve("T", b)
	b.Control(protocol.SendBatchMessage, func(req *protocol.Command) *protocol.Command {
		return protocol.NewResponse(req, protocol.MessageIllegal, "refused")
	})
	// Five 1-byte bodies fill a 5-byte batch: one batch, sent by the fifth.
	p := startProducer(t, b.Addr(), WithAutoBatch(true), WithBatchMaxBytes(5), WithBatchMaxDelayMs(60_000))
	ctx := testutil.Context(t, 20*time.Second)
	r := newAsyncResults()
	for i := range 5 {
		r.send(t, ctx, p, i, NewMessage("T", []byte("x")))
	}
	r.wg.Wait()
	for i := range 5 {
		if r.errs[i] == nil {
			t.Fatalf("message %d: no error", i)
		}
	}
	if b.SendCount() != 1 || b.LastSend().Code != int32(protocol.SendBatchMessage) {
		t.Fatalf("%d sends, want the one batch", b.SendCount())
	}
}

// TestAutoBatchOptions: the options are validated only with autoBatch on.
func TestAutoBatchOptions(t *testing.T) {
	for _, c := range []struct {
		opts []ProducerOpt
		ok   bool
	}{
		{[]ProducerOpt{WithAutoBatch(true)}, true},
		{[]ProducerOpt{WithAutoBatch(true), WithBatchMaxDelayMs(0)}, false},
		{[]ProducerOpt{WithAutoBatch(true), WithBatchMaxBytes(0)}, false},
		{[]ProducerOpt{WithAutoBatch(true), WithBatchMaxBytes(8 << 20)}, false},
		{[]ProducerOpt{WithAutoBatch(true), WithTotalBatchMaxBytes(100)}, false},
		{[]ProducerOpt{WithBatchMaxDelayMs(0)}, true},
	} {
		_, err := NewProducer("pg", append(c.opts, WithNameServers("127.0.0.1:1"))...)
		if (err == nil) != c.ok {
			t.Errorf("options %d: err %v, want ok=%v", len(c.opts), err, c.ok)
		}
	}
}

func TestNthField(t *testing.T) {
	for _, c := range []struct {
		s    string
		i    int
		want string
	}{{"a,b,c", 0, "a"}, {"a,b,c", 1, "b"}, {"a,b,c", 2, "c"}, {"a,b,c", 3, ""}, {"a", 0, "a"}, {"", 0, ""}} {
		if got := nthField(c.s, c.i); got != c.want {
			t.Errorf("nthField(%q, %d) = %q, want %q", c.s, c.i, got, c.want)
		}
	}
}

// TestPrepareAutoBatchMatchesPrepareBatch: the map-free batch encoding
// decodes to the same messages as SendBatch's (UNIQ_KEY values aside,
// which are new per call unless the caller set them), and the result's ids
// are the items' UNIQ_KEYs in order.
func TestPrepareAutoBatchMatchesPrepareBatch(t *testing.T) {
	p, err := NewProducer("pg", WithNameServers("127.0.0.1:1"), WithAutoBatch(true))
	if err != nil {
		t.Fatal(err)
	}
	msgs := []*Message{
		NewMessage("T", []byte("plain")),
		NewMessage("T", []byte("tagged")).WithTag("a").WithKeys("k1", "k2").SetProperty("user", "v"),
		NewMessage("T", []byte("own-id")).SetProperty(message.PropertyUniqClientMessageIDKeyidx, "MYID"),
		NewMessage("T", make([]byte, 3000)),
	}
	msgs[1].Flag = 9
	var sends []batchedSend
	for _, m := range msgs {
		sends = append(sends, batchedSend{ctx: context.Background(), msg: m})
	}
	auto, err := p.prepareAutoBatch("T", sends)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := p.prepareBatch(msgs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := message.DecodeBatch(auto.body)
	if err != nil {
		t.Fatal(err)
	}
	want, err := message.DecodeBatch(plain.body)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || !auto.batch || auto.topic != "T" {
		t.Fatalf("%d items, want %d", len(got), len(want))
	}
	for i := range got {
		id := got[i].Properties[message.PropertyUniqClientMessageIDKeyidx]
		if id == "" || nthField(auto.uniqIDs, i) != id {
			t.Fatalf("item %d: UNIQ_KEY %q, result ids %q", i, id, auto.uniqIDs)
		}
		delete(got[i].Properties, message.PropertyUniqClientMessageIDKeyidx)
		wantID := want[i].Properties[message.PropertyUniqClientMessageIDKeyidx]
		delete(want[i].Properties, message.PropertyUniqClientMessageIDKeyidx)
		if i == 2 && (id != "MYID" || wantID != "MYID") {
			t.Fatalf("caller's UNIQ_KEY replaced: %q / %q", id, wantID)
		}
		if string(got[i].Body) != string(want[i].Body) || got[i].Flag != want[i].Flag ||
			fmt.Sprint(got[i].Properties) != fmt.Sprint(want[i].Properties) {
			t.Fatalf("item %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if msgs[0].Properties[message.PropertyUniqClientMessageIDKeyidx] != "" {
		t.Fatal("the caller's message was modified")
	}
}
