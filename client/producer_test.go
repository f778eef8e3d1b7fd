package client

import (
	"context"
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestSendRequestLayout: a sync send is SEND_MESSAGE_V2 with one-letter
// header names (docs/protocol.md §3.3.1), defaultTopic TBW102 and 4 queues,
// born timestamp, a UNIQ_KEY in the properties, and the result carries the
// broker's msgId/queueId/queueOffset.
func TestSendRequestLayout(t *testing.T) {
	b := newFakeBroker(t, "broker-a")
	b.Serve("T", b)
	p := startProducer(t, b.Addr())
	ctx := testutil.Context(t, 10*time.Second)
	m := NewMessage("T", []byte("hello")).WithTag("tagA").WithKeys("k1", "k2").SetProperty("user", "v")
	m.Flag = 7
	before := time.Now().UnixMilli()
	res, err := p.Send(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	req := b.LastSend()
	if req.Code != int32(protocol.SendMessageV2) || req.SerializeType != protocol.SerializeRocketMQ {
		t.Fatalf("code %d serialize %v", req.Code, req.SerializeType)
	}
	h := sendHeader(t, req)
	if h.ProducerGroup != "pg" || h.Topic != "T" || h.DefaultTopic != "TBW102" || h.DefaultTopicQueueNums != 4 ||
		h.SysFlag != 0 || h.Flag != 7 || h.Batch || h.BrokerName != "broker-a" || h.BornTimestamp < before {
		t.Fatalf("header %+v", h)
	}
	props := message.DecodeProperties(h.Properties)
	if props["TAGS"] != "tagA" || props["KEYS"] != "k1 k2" || props["user"] != "v" || props["UNIQ_KEY"] == "" {
		t.Fatalf("properties %v", props)
	}
	if string(req.Body) != "hello" {
		t.Fatalf("body %q", req.Body)
	}
	if res.Status != SendOK || res.MsgID != props["UNIQ_KEY"] || res.OffsetMsgID == "" || res.Queue.Topic != "T" ||
		res.Queue.BrokerName != "broker-a" || res.Queue.QueueID != int(h.QueueID) || res.RegionID != "DefaultRegion" {
		t.Fatalf("result %+v", res)
	}
	if m.Properties["UNIQ_KEY"] != "" {
		t.Fatal("the caller's message was modified")
	}
	// The V1 option switches to SEND_MESSAGE with long names.
	p1 := startProducer(t, b.Addr(), WithSendMessageV1(true))
	if _, err := p1.Send(ctx, NewMessage("T", []byte("v1"))); err != nil {
		t.Fatal(err)
	}
	req = b.LastSend()
	if req.Code != int32(protocol.SendMessage) || req.Ext("producerGroup") != "pg" || req.Ext("topic") != "T" {
		t.Fatalf("v1 request %d %v", req.Code, req.ExtFields)
	}
}

// TestCompression: docs/broker.md §4.4: bodies >= 4096 bytes are
// zlib-compressed and flagged COMPRESSED|ZLIB; smaller ones and batches
// are not.
func TestCompression(t *testing.T) {
	b := newFakeBroker(t, "broker-a")
	b.Serve("T", b)
	p := startProducer(t, b.Addr())
	ctx := testutil.Context(t, 10*time.Second)
	for _, size := range []int{4095, 4096, 100_000} {
		body := []byte(strings.Repeat("x", size))
		if _, err := p.Send(ctx, NewMessage("T", body)); err != nil {
			t.Fatal(err)
		}
		req := b.LastSend()
		h := sendHeader(t, req)
		compressed := h.SysFlag&message.SysFlagCompressed != 0
		if compressed != (size >= 4096) {
			t.Fatalf("size %d: sysFlag %#x", size, h.SysFlag)
		}
		if !compressed {
			continue
		}
		if h.SysFlag != message.SysFlagCompressed|message.SysFlagCompressionZLIB {
			t.Fatalf("size %d: sysFlag %#x, want 0x301", size, h.SysFlag)
		}
		plain, err := message.Decompress(req.Body)
		if err != nil || string(plain) != string(body) {
			t.Fatalf("size %d: decompress: %v", size, err)
		}
	}
	// Batches: code 320, batch flag, never compressed.
	big := []byte(strings.Repeat("y", 10_000))
	res, err := p.SendBatch(ctx, NewMessage("T", big), NewMessage("T", []byte("small")).WithTag("t2"))
	if err != nil {
		t.Fatal(err)
	}
	req := b.LastSend()
	h := sendHeader(t, req)
	if req.Code != int32(protocol.SendBatchMessage) || !h.Batch || h.SysFlag != 0 {
		t.Fatalf("batch: code %d header %+v", req.Code, h)
	}
	msgs, err := message.DecodeBatch(req.Body)
	if err != nil || len(msgs) != 2 || string(msgs[0].Body) != string(big) || msgs[1].Tags() != "t2" {
		t.Fatalf("batch body: %v %d", err, len(msgs))
	}
	ids := strings.Split(res.MsgID, ",")
	if len(ids) != 2 || ids[0] != msgs[0].UniqKey() || ids[1] != msgs[1].UniqKey() {
		t.Fatalf("batch ids %q vs %q %q", res.MsgID, msgs[0].UniqKey(), msgs[1].UniqKey())
	}
	// A batch must not mix topics.
	if _, err := p.SendBatch(ctx, NewMessage("T", big), NewMessage("U", big)); !errors.Is(err, ErrIllegalMessage) {
		t.Fatalf("mixed batch: %v", err)
	}
}

// TestRetryMovesToAnotherBroker: a retriable code (SYSTEM_BUSY) is retried
// on the other broker (docs/broker.md §4.3); a non-retriable one (MESSAGE_ILLEGAL) fails
// at once with a BrokerError naming broker, code and topic.
func TestRetryMovesToAnotherBroker(t *testing.T) {
	a := newFakeBroker(t, "broker-a")
	b := newFakeBroker(t, "broker-b")
	a.Serve("T", a, b)
	a.OnSend(func(req *protocol.Command) *protocol.Command {
		return &protocol.Command{Code: int32(protocol.SystemBusy), Remark: "busy"}
	})
	p := startProducer(t, a.Addr())
	ctx := testutil.Context(t, 10*time.Second)
	for range 10 {
		res, err := p.Send(ctx, NewMessage("T", []byte("x")))
		if err != nil {
			t.Fatal(err)
		}
		if res.Queue.BrokerName != "broker-b" {
			t.Fatalf("stored on %s", res.Queue.BrokerName)
		}
	}
	var done sync.WaitGroup
	for range 10 {
		done.Add(1)
		err := p.SendAsync(ctx, NewMessage("T", []byte("x")), func(res *SendResult, err error) {
			defer done.Done()
			if err != nil || res.Queue.BrokerName != "broker-b" {
				t.Errorf("async: %v %+v", err, res)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	done.Wait()
	if st := p.Stats(); st.Sent != 20 || st.Failed != 0 || st.Attempts < 20 {
		t.Fatalf("stats %+v", st)
	}

	b.OnSend(func(req *protocol.Command) *protocol.Command {
		return &protocol.Command{Code: int32(protocol.MessageIllegal), Remark: "bad"}
	})
	before := a.SendCount() + b.SendCount()
	_, err := p.Send(ctx, NewMessage("T", []byte("x")))
	var be *BrokerError
	if !errors.As(err, &be) {
		t.Fatalf("err %v", err)
	}
	if be.Code != int32(protocol.MessageIllegal) && be.Code != int32(protocol.SystemBusy) {
		t.Fatalf("code %d", be.Code)
	}
	if be.Topic != "T" || be.Addr == "" || be.BrokerName == "" || !strings.Contains(err.Error(), "T") {
		t.Fatalf("error lacks context: %v", err)
	}
	attempts := a.SendCount() + b.SendCount() - before
	if be.Code == int32(protocol.MessageIllegal) && attempts > 2 {
		// SYSTEM_BUSY on a, then MESSAGE_ILLEGAL on b stops: at most 2.
		t.Fatalf("%d attempts for a non-retriable failure", attempts)
	}
}

type txListener struct {
	state   LocalTransactionState
	checked chan *MessageExt
}

func (l *txListener) ExecuteLocalTransaction(context.Context, *Message, any) LocalTransactionState {
	return l.state
}

func (l *txListener) CheckLocalTransaction(_ context.Context, m *MessageExt) LocalTransactionState {
	l.checked <- m
	return TransactionCommit
}

// TestTransaction: the half message carries TRAN_MSG/PGROUP and sysFlag
// PREPARED; END_TRANSACTION echoes the half's queue offset and commit-log
// offset with 8 (commit), 12 (rollback) or 0 (unknown) (docs/protocol.md
// §3.3.2, Appendix B).
func TestTransaction(t *testing.T) {
	b := newFakeBroker(t, "broker-a")
	b.Serve("T", b)
	l := &txListener{checked: make(chan *MessageExt, 1)}
	p := startProducer(t, b.Addr(), WithTransactionListener(l))
	ctx := testutil.Context(t, 10*time.Second)
	for i, tc := range []struct {
		state LocalTransactionState
		want  string
	}{{TransactionCommit, "8"}, {TransactionRollback, "12"}, {TransactionUnknown, "0"}} {
		l.state = tc.state
		res, err := p.SendInTransaction(ctx, NewMessage("T", []byte("tx")).WithDelayLevel(3), nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.LocalState != tc.state {
			t.Fatalf("local state %v", res.LocalState)
		}
		h := sendHeader(t, b.LastSend())
		props := message.DecodeProperties(h.Properties)
		if h.SysFlag&message.SysFlagTransactionPreparedType == 0 || props["TRAN_MSG"] != "true" || props["PGROUP"] != "pg" || props["DELAY"] != "" {
			t.Fatalf("half message header %+v props %v", h, props)
		}
		testutil.Eventually(t, 5*time.Second, func() bool { return len(b.Ends()) == i+1 }, "no END_TRANSACTION")
		end := b.Ends()[i]
		_, clOffset, _ := message.ParseOffsetMsgID(res.OffsetMsgID)
		if end.Ext("commitOrRollback") != tc.want || end.Ext("producerGroup") != "pg" ||
			end.Ext("tranStateTableOffset") != itoa(res.QueueOffset) || end.Ext("commitLogOffset") != itoa(clOffset) ||
			end.Ext("msgId") != res.MsgID || end.Ext("fromTransactionCheck") != "false" || !end.IsOneway() {
			t.Fatalf("end %v oneway=%v (result %+v)", end.ExtFields, end.IsOneway(), res)
		}
	}

	// The broker checks back: CHECK_TRANSACTION_STATE with the half message.
	testutil.Eventually(t, 5*time.Second, func() bool { return len(b.Heartbeats()) > 0 }, "producer never heartbeated")
	check := func(group string) {
		e := &message.Ext{Message: message.Message{Topic: "T", Body: []byte("tx"), Properties: map[string]string{
			"PGROUP": group, "UNIQ_KEY": "UNIQ-1", "__transactionId__": "UNIQ-1"}},
			BornHost: netip.MustParseAddrPort("127.0.0.1:1"), StoreHost: netip.MustParseAddrPort(b.Addr()),
			QueueOffset: 5, CommitLogOffset: 1234}
		body, err := message.AppendStored(nil, e)
		if err != nil {
			t.Fatal(err)
		}
		req := protocol.NewRequest(protocol.CheckTransactionState, map[string]string{
			"tranStateTableOffset": "5", "commitLogOffset": "1234", "msgId": "UNIQ-1", "transactionId": "UNIQ-1"}, body)
		if err := b.SendToClient(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	check("other-group") // ignored
	check("pg")
	select {
	case m := <-l.checked:
		if m.MsgID != "UNIQ-1" || string(m.Body) != "tx" {
			t.Fatalf("checked message %+v", m)
		}
	case <-ctx.Done():
		t.Fatal("no check")
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return len(b.Ends()) == 4 }, "no END_TRANSACTION after check")
	end := b.Ends()[3]
	if end.Ext("fromTransactionCheck") != "true" || end.Ext("commitOrRollback") != "8" ||
		end.Ext("commitLogOffset") != "1234" || end.Ext("tranStateTableOffset") != "5" || end.Ext("msgId") != "UNIQ-1" {
		t.Fatalf("check answer %v", end.ExtFields)
	}
	if len(l.checked) != 0 {
		t.Fatal("another group's check reached the listener")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestNamespaceOnTheWire: WithNamespace prefixes topic and group on the
// wire; the result shows the plain topic.
func TestNamespaceOnTheWire(t *testing.T) {
	b := newFakeBroker(t, "broker-a")
	b.Serve("ns%T", b)
	p := startProducer(t, b.Addr(), WithNamespace("ns"))
	res, err := p.Send(testutil.Context(t, 10*time.Second), NewMessage("T", []byte("x")))
	if err != nil {
		t.Fatal(err)
	}
	h := sendHeader(t, b.LastSend())
	if h.Topic != "ns%T" || h.ProducerGroup != "ns%pg" || res.Queue.Topic != "T" {
		t.Fatalf("header %+v result %+v", h, res)
	}
	testutil.Eventually(t, 5*time.Second, func() bool {
		hbs := b.Heartbeats()
		return len(hbs) > 0 && hbs[0].ProducerDataSet[0].GroupName == "ns%pg"
	}, "no heartbeat with the namespaced group")
}

// TestAutoCreateThroughTBW102: docs/protocol.md Appendix B: an unknown topic is
// sent along TBW102's route with queue ids below defaultTopicQueueNums.
func TestAutoCreateThroughTBW102(t *testing.T) {
	b := newFakeBroker(t, "broker-a")
	b.Serve("TBW102", b)
	p := startProducer(t, b.Addr(), WithDefaultTopicQueueNums(2))
	ctx := testutil.Context(t, 10*time.Second)
	for range 8 {
		if _, err := p.Send(ctx, NewMessage("NEW", []byte("x"))); err != nil {
			t.Fatal(err)
		}
		h := sendHeader(t, b.LastSend())
		if h.Topic != "NEW" || h.DefaultTopic != "TBW102" || h.DefaultTopicQueueNums != 2 || h.QueueID >= 2 {
			t.Fatalf("header %+v", h)
		}
	}
	// Without TBW102 either, the error says there is no route.
	b.Serve("TBW102")
	p2 := startProducer(t, b.Addr())
	if _, err := p2.Send(ctx, NewMessage("NONE", []byte("x"))); !errors.Is(err, ErrNoRoute) {
		t.Fatalf("err %v, want ErrNoRoute", err)
	}
}

type recordingHook struct {
	before, after atomic.Int64
	lastErr       atomic.Pointer[error]
}

func (h *recordingHook) OnBeforeSend(context.Context, *SendContext) { h.before.Add(1) }
func (h *recordingHook) OnAfterSend(_ context.Context, sc *SendContext) {
	h.after.Add(1)
	if sc.Err != nil {
		h.lastErr.Store(&sc.Err)
	}
}

// TestHooksOrderedSendAndValidation covers hooks, the hash selector and
// message validation.
func TestHooksOrderedSendAndValidation(t *testing.T) {
	b := newFakeBroker(t, "broker-a")
	b.Serve("T", b)
	hook := &recordingHook{}
	p := startProducer(t, b.Addr(), WithHooks(hook))
	ctx := testutil.Context(t, 10*time.Second)
	queueOf := map[string]int{}
	for i := range 20 {
		key := []string{"order-1", "order-2", "order-3"}[i%3]
		res, err := p.SendOrderly(ctx, NewMessage("T", []byte(key)), HashQueueSelector{}, key)
		if err != nil {
			t.Fatal(err)
		}
		if q, ok := queueOf[key]; ok && q != res.Queue.QueueID {
			t.Fatalf("key %s moved from queue %d to %d", key, q, res.Queue.QueueID)
		}
		queueOf[key] = res.Queue.QueueID
	}
	if err := p.SendOneway(ctx, NewMessage("T", []byte("ow"))); err != nil {
		t.Fatal(err)
	}
	if hook.before.Load() != 21 || hook.after.Load() != 21 || hook.lastErr.Load() != nil {
		t.Fatalf("hooks: before %d after %d", hook.before.Load(), hook.after.Load())
	}
	for _, m := range []*Message{nil, NewMessage("", []byte("x")), NewMessage("T", nil), NewMessage("bad topic!", []byte("x")),
		NewMessage(strings.Repeat("t", 128), []byte("x")), NewMessage("T", make([]byte, 5<<20))} {
		if _, err := p.Send(ctx, m); !errors.Is(err, ErrIllegalMessage) {
			t.Fatalf("message %v: err %v", m != nil, err)
		}
	}
}

// TestLifecycle: sends before Start or after Close fail with the sentinel;
// Close waits for outstanding async callbacks and is idempotent.
func TestLifecycle(t *testing.T) {
	b := newFakeBroker(t, "broker-a")
	b.Serve("T", b)
	p, err := NewProducer("pg", WithNameServers(b.Addr()), WithLogger(testutil.Logger(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testutil.Context(t, 10*time.Second)
	if _, err := p.Send(ctx, NewMessage("T", []byte("x"))); !errors.Is(err, ErrNotStarted) {
		t.Fatalf("before start: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	b.OnSend(func(*protocol.Command) *protocol.Command { <-release; return nil })
	var called atomic.Bool
	if err := p.SendAsync(ctx, NewMessage("T", []byte("x")), func(*SendResult, error) { called.Store(true) }); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error)
	go func() { closed <- p.Close() }()
	select {
	case <-closed:
		t.Fatal("Close returned with an async send outstanding")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if !called.Load() {
		t.Fatal("callback did not run before Close returned")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(ctx, NewMessage("T", []byte("x"))); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
	if _, err := NewProducer("pg"); err == nil {
		t.Fatal("NewProducer without name servers succeeded")
	}
	if _, err := NewProducer("", WithNameServers("x:1")); err == nil {
		t.Fatal("NewProducer without group succeeded")
	}
	if _, err := NewProducer("pg", WithNameServers("x:1"), WithCompressLevel(10)); err == nil {
		t.Fatal("compress level 10 accepted")
	}
}

// TestRouteRefreshedAfterFailure: a failed send makes the producer refetch
// the topic's route at once instead of waiting for the 30 s refresh.
func TestRouteRefreshedAfterFailure(t *testing.T) {
	a := newFakeBroker(t, "broker-a")
	b := newFakeBroker(t, "broker-b")
	a.Serve("T", a)
	p := startProducer(t, a.Addr(), WithRetries(0))
	ctx := testutil.Context(t, 10*time.Second)
	if _, err := p.Send(ctx, NewMessage("T", []byte("x"))); err != nil {
		t.Fatal(err)
	}
	// The topic moves to broker-b; broker-a refuses it.
	a.Serve("T", b)
	a.OnSend(func(*protocol.Command) *protocol.Command {
		return &protocol.Command{Code: int32(protocol.TopicNotExist), Remark: "gone"}
	})
	if _, err := p.Send(ctx, NewMessage("T", []byte("x"))); err == nil {
		t.Fatal("send to the old broker succeeded")
	}
	testutil.Eventually(t, 5*time.Second, func() bool {
		res, err := p.Send(ctx, NewMessage("T", []byte("x")))
		return err == nil && res.Queue.BrokerName == "broker-b"
	}, "route not refreshed after the failure")
}

// TestNameServerFailover: a dead name server in the list is skipped.
func TestNameServerFailover(t *testing.T) {
	b := newFakeBroker(t, "broker-a")
	b.Serve("T", b)
	dead := newFakeBroker(t, "dead")
	deadAddr := dead.Addr()
	dead.Close()
	p := startProducer(t, deadAddr+";"+b.Addr())
	ctx := testutil.Context(t, 10*time.Second)
	for range 4 { // round-robin start index: both orders are tried
		if _, err := p.Queues(ctx, "T"); err != nil {
			t.Fatal(err)
		}
		p.in.forgetRoute("T")
	}
}

// TestHeartbeatsAndRouteRefresh: heartbeats carry the producer group and
// repeat every heartbeatBrokerInterval; routes are refetched every
// pollNameServerInterval (docs/broker.md §4.1), so a new broker is picked up.
func TestHeartbeatsAndRouteRefresh(t *testing.T) {
	a := newFakeBroker(t, "broker-a")
	b := newFakeBroker(t, "broker-b")
	a.Serve("T", a)
	p := startProducer(t, a.Addr(), WithHeartbeatBrokerInterval(50*time.Millisecond), WithPollNameServerInterval(50*time.Millisecond))
	ctx := testutil.Context(t, 10*time.Second)
	if _, err := p.Send(ctx, NewMessage("T", []byte("x"))); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, func() bool {
		n := 0
		for _, hb := range a.Heartbeats() {
			if hb.ClientID == p.ClientID() && len(hb.ProducerDataSet) == 1 && hb.ProducerDataSet[0].GroupName == "pg" {
				n++
			}
		}
		return n >= 3
	}, "fewer than 3 heartbeats")
	a.Serve("T", a, b)
	testutil.Eventually(t, 5*time.Second, func() bool {
		qs, err := p.Queues(ctx, "T")
		return err == nil && len(qs) == 8
	}, "route refresh did not pick up broker-b")
	testutil.Eventually(t, 5*time.Second, func() bool {
		return len(b.Heartbeats()) > 0
	}, "new broker never heartbeated")
}
