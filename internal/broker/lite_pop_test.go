package broker

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/lite"
	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/testutil"
)

// liteClient is a remoting connection that records the broker's
// NOTIFY_UNSUBSCRIBE_LITE requests.
type liteClient struct {
	*remoting.Client
	mu       sync.Mutex
	notified []protocol.NotifyUnsubscribeLiteRequestHeader
}

func newLiteClient(t *testing.T) *liteClient {
	t.Helper()
	lc := &liteClient{Client: remoting.NewClient(remoting.ClientConfig{Logger: testutil.Logger(t)})}
	lc.RegisterProcessor(protocol.NotifyUnsubscribeLite, func(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
		var h protocol.NotifyUnsubscribeLiteRequestHeader
		if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
			return nil, err
		}
		lc.mu.Lock()
		lc.notified = append(lc.notified, h)
		lc.mu.Unlock()
		return nil, nil
	})
	if err := lc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lc.Close() })
	return lc
}

func (lc *liteClient) told() []string {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	var out []string
	for _, h := range lc.notified {
		out = append(out, h.ClientID+"/"+h.ConsumerGroup+"/"+h.LiteTopic)
	}
	return out
}

func liteCtl(entries ...protocol.LiteSubscriptionDTO) *protocol.Command {
	body, _ := protocol.MarshalJSON(protocol.LiteSubscriptionCtlRequestBody{SubscriptionSet: entries})
	return protocol.NewRequest(protocol.LiteSubscriptionCtl, nil, body)
}

func popLiteReq(client, group, parent string, pollMs int64) *protocol.Command {
	h := protocol.PopLiteMessageRequestHeader{ClientID: client, ConsumerGroup: group, Topic: parent, MaxMsgNum: 32,
		InvisibleTime: 30000, PollTime: pollMs, BornTime: time.Now().UnixMilli()}
	return protocol.NewRequest(protocol.PopLiteMessage, protocol.EncodeHeader(&h, false), nil)
}

// litePopped is one popped message: its lite topic's queue, offset, body.
type litePopped struct {
	queue  string
	offset int64
	body   string
}

func decodeLitePop(t *testing.T, resp *protocol.Command) ([]litePopped, protocol.PopLiteMessageResponseHeader) {
	t.Helper()
	var rh protocol.PopLiteMessageResponseHeader
	if err := protocol.DecodeHeader(resp.ExtFields, &rh, false); err != nil {
		t.Fatal(err)
	}
	var out []litePopped
	for body := resp.Body; len(body) > 0; {
		m, n, err := message.DecodeStored(body, message.DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, litePopped{m.Topic, m.QueueOffset, string(m.Body)})
		body = body[n:]
	}
	return out, rh
}

func liteAck(t *testing.T, c *remoting.Client, b *Broker, group string, rh protocol.PopLiteMessageResponseHeader, m litePopped) {
	t.Helper()
	ei := protocol.ReceiptHandle{CkQueueOffset: m.offset, PopTime: rh.PopTime, InvisibleTime: rh.InvisibleTime,
		ReviveQueueID: rh.ReviveQid, BrokerName: b.cfg.BrokerName, QueueID: 0, QueueOffset: m.offset}
	h := protocol.AckMessageRequestHeader{ConsumerGroup: group, Topic: m.queue, QueueID: 0, ExtraInfo: ei.ExtraInfo(), Offset: m.offset}
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.AckMessage, protocol.EncodeHeader(&h, false), nil)), protocol.Success)
}

func bodies(ms []litePopped) string {
	var s []string
	for _, m := range ms {
		s = append(s, m.body)
	}
	return strings.Join(s, ",")
}

func createLiteGroup(t *testing.T, c *remoting.Client, b *Broker, group string, attrs map[string]string) {
	t.Helper()
	g := protocol.NewSubscriptionGroupConfig(group)
	g.Attributes = attrs
	body, _ := protocol.MarshalJSON(&g)
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.UpdateAndCreateSubscriptionGroup, nil, body)), protocol.Success)
}

// TestLitePopMessage: LITE_SUBSCRIPTION_CTL registers a client's lite
// topics and one POP_LITE_MESSAGE pops all of them in FIFO order (an
// unsubscribed one is not read); a lite topic is blocked until acked; a
// held pop is answered by a send to a subscribed lite topic; an add past
// maxLiteSubscriptionCount is refused with LITE_SUBSCRIPTION_QUOTA_EXCEEDED;
// an expired lite topic is told with NOTIFY_UNSUBSCRIBE_LITE; requests
// RocketMQ numbers but Apogee does not serve answer
// REQUEST_CODE_NOT_SUPPORTED.
func TestLitePopMessage(t *testing.T) {
	cfg := popTestConfig(t, t.TempDir())
	cfg.MaxLiteSubscriptionCount = 4
	cfg.MinLiteTTl = 0
	cfg.LiteTtlCheckInterval = 3600 * 1000
	cfg.LiteExpirationUnitMs = 1
	var skew atomic.Int64
	b, err := New(cfg, testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	b.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	c := newLiteClient(t)
	createTypedTopic(t, c.Client, b, "P", 1, "+message.type=LITE,+lite.topic.expiration=100000")
	createLiteGroup(t, c.Client, b, "G", map[string]string{"lite.bind.topic": "P"})
	send := func(name, body string) {
		t.Helper()
		mustCode(t, invoke(t, c.Client, b.Addr(), sendReq("P", -1, []byte(body), liteSend(name, body))), protocol.Success)
	}
	for i := range 3 {
		send("a", fmt.Sprint("a", i))
	}
	send("b", "b0")
	send("b", "b1")
	send("c", "c0")
	waitDispatched(t, b, lite.QueueName("P", "a"), 0, 3)
	waitDispatched(t, b, lite.QueueName("P", "b"), 0, 2)
	waitDispatched(t, b, lite.QueueName("P", "c"), 0, 1)

	// Bad bodies and unserved codes.
	mustCode(t, invoke(t, c.Client, b.Addr(), protocol.NewRequest(protocol.LiteSubscriptionCtl, nil, nil)), protocol.IllegalOperation)
	mustCode(t, invoke(t, c.Client, b.Addr(), liteCtl()), protocol.IllegalOperation)
	mustCode(t, invoke(t, c.Client, b.Addr(), protocol.NewRequest(protocol.LiteSubscriptionCtl, nil, []byte(`{"subscriptionSet":[{"action":"JUMP"}]}`))), protocol.IllegalOperation)
	for _, code := range []protocol.RequestCode{protocol.AckLiteMessage} {
		mustCode(t, invoke(t, c.Client, b.Addr(), protocol.NewRequest(code, nil, nil)), protocol.RequestCodeNotSupported)
	}
	// A group bound to another parent.
	createLiteGroup(t, c.Client, b, "Other", map[string]string{"lite.bind.topic": "Q"})
	mustCode(t, invoke(t, c.Client, b.Addr(), popLiteReq("C1", "Other", "P", 0)), protocol.InvalidParameter)

	// Nothing subscribed yet: nothing popped.
	mustCode(t, invoke(t, c.Client, b.Addr(), popLiteReq("C1", "G", "P", 0)), protocol.PollingTimeout)
	mustCode(t, invoke(t, c.Client, b.Addr(), liteCtl(protocol.LiteSubscriptionDTO{Action: protocol.LiteActionPartialAdd,
		ClientID: "C1", Group: "G", Topic: "P", LiteTopicSet: []string{"a", "b"}})), protocol.Success)
	resp := invoke(t, c.Client, b.Addr(), popLiteReq("C1", "G", "P", 0))
	mustCode(t, resp, protocol.Success)
	got, rh := decodeLitePop(t, resp)
	if bodies(got) != "a0,a1,a2,b0,b1" || rh.ReviveQid != protocol.PopOrderReviveQueue || rh.OrderCountInfo != "0;0;0;0;0" {
		t.Fatalf("lite pop = %q %+v, want a0..a2,b0,b1 in order", bodies(got), rh)
	}
	// Both lite topics are blocked until acked.
	mustCode(t, invoke(t, c.Client, b.Addr(), popLiteReq("C1", "G", "P", 0)), protocol.PollingTimeout)
	for _, m := range got[:3] {
		liteAck(t, c.Client, b, "G", rh, m)
	}

	// A held pop is answered by the next send to a subscribed lite topic.
	type answer struct {
		resp *protocol.Command
		err  error
	}
	held := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r, err := c.InvokeSync(ctx, b.Addr(), popLiteReq("C1", "G", "P", 20000))
		held <- answer{r, err}
	}()
	testutil.Eventually(t, 10*time.Second, func() bool { return b.pop.hold.pollingNum("P", "G", -1) == 1 }, "the lite pop is held")
	send("c", "c1") // not subscribed: wakes nothing
	send("a", "a3")
	a := <-held
	if a.err != nil {
		t.Fatal(a.err)
	}
	mustCode(t, a.resp, protocol.Success)
	if got, _ := decodeLitePop(t, a.resp); bodies(got) != "a3" {
		t.Fatalf("held pop = %q, want a3", bodies(got))
	}

	// Quota: 2 subscriptions held, 4 allowed; 3 more are refused whole.
	mustCode(t, invoke(t, c.Client, b.Addr(), liteCtl(protocol.LiteSubscriptionDTO{Action: protocol.LiteActionPartialAdd,
		ClientID: "C1", Group: "G", Topic: "P", LiteTopicSet: []string{"x", "y", "z"}})), protocol.LiteSubscriptionQuotaExceeded)
	if n := b.lite.subs.Count(); n != 2 {
		t.Fatalf("%d subscriptions after a refused add, want 2", n)
	}

	// Expiry: b idles past its TTL (c and a are written again first).
	skew.Store(int64(200 * time.Second))
	send("a", "a4")
	send("c", "c2")
	waitDispatched(t, b, lite.QueueName("P", "a"), 0, 5)
	if n := b.lite.expireOnce(); n != 1 {
		t.Fatalf("%d lite topics expired, want 1 (b)", n)
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return strings.Join(c.told(), ",") == "C1/G/b" }, "C1 told b expired")
	if b.lite.subs.Count() != 1 {
		t.Fatalf("%d subscriptions after b expired, want 1", b.lite.subs.Count())
	}
}

// TestLiteExclusiveAndOffsetOption: in an exclusive group a second
// client's subscription takes the lite topic from the first, which is
// told; a complete set still naming it is told again and does not take it
// back. OffsetOption MAX skips the backlog, OFFSET starts at the offset,
// TAIL_N rewinds from the current position; a wildcard group's client pops
// every lite topic without naming it and cannot add partially.
func TestLiteExclusiveAndOffsetOption(t *testing.T) {
	b := startBroker(t, popTestConfig(t, t.TempDir()))
	c1, c2 := newLiteClient(t), newLiteClient(t)
	createTypedTopic(t, c1.Client, b, "P", 1, "+message.type=LITE")
	createLiteGroup(t, c1.Client, b, "GX", map[string]string{"lite.sub.model": "Exclusive"})
	createLiteGroup(t, c1.Client, b, "GO", nil)
	createLiteGroup(t, c1.Client, b, "GW", map[string]string{"lite.sub.wildcard": ""})
	for i := range 4 {
		mustCode(t, invoke(t, c1.Client, b.Addr(), sendReq("P", -1, []byte(fmt.Sprint("a", i)), liteSend("a", fmt.Sprint("a", i)))), protocol.Success)
	}
	mustCode(t, invoke(t, c1.Client, b.Addr(), sendReq("P", -1, []byte("b0"), liteSend("b", "b0"))), protocol.Success)
	waitDispatched(t, b, lite.QueueName("P", "a"), 0, 4)
	waitDispatched(t, b, lite.QueueName("P", "b"), 0, 1)
	add := func(c *liteClient, client, group string, opt *protocol.LiteOffsetOption, names ...string) {
		t.Helper()
		mustCode(t, invoke(t, c.Client, b.Addr(), liteCtl(protocol.LiteSubscriptionDTO{Action: protocol.LiteActionPartialAdd,
			ClientID: client, Group: group, Topic: "P", LiteTopicSet: names, OffsetOption: opt})), protocol.Success)
	}
	pop := func(c *liteClient, client, group string) string {
		t.Helper()
		resp := invoke(t, c.Client, b.Addr(), popLiteReq(client, group, "P", 0))
		if protocol.ResponseCode(resp.Code) == protocol.PollingTimeout {
			return ""
		}
		mustCode(t, resp, protocol.Success)
		got, rh := decodeLitePop(t, resp)
		for _, m := range got {
			liteAck(t, c.Client, b, group, rh, m)
		}
		return bodies(got)
	}

	add(c1, "C1", "GX", nil, "a")
	add(c2, "C2", "GX", nil, "a")
	testutil.Eventually(t, 10*time.Second, func() bool { return strings.Join(c1.told(), ",") == "C1/GX/a" }, "C1 told it lost a")
	if got := pop(c1, "C1", "GX"); got != "" {
		t.Fatalf("evicted C1 popped %q", got)
	}
	if got := pop(c2, "C2", "GX"); got != "a0,a1,a2,a3" {
		t.Fatalf("C2 popped %q, want a0..a3", got)
	}
	mustCode(t, invoke(t, c1.Client, b.Addr(), liteCtl(protocol.LiteSubscriptionDTO{Action: protocol.LiteActionCompleteAdd,
		ClientID: "C1", Group: "GX", Topic: "P", LiteTopicSet: []string{"a"}})), protocol.Success)
	testutil.Eventually(t, 10*time.Second, func() bool { return len(c1.told()) == 2 }, "C1 told again")
	if subs := b.lite.subs.Subscribers(lite.QueueName("P", "a")); len(subs) != 1 || subs[0] != "C2" {
		t.Fatalf("subscribers of a = %v, want C2 only", subs)
	}

	// Offset options (group GO, client C3).
	add(c1, "C3", "GO", &protocol.LiteOffsetOption{Type: protocol.LiteOffsetPolicy, Value: protocol.LiteOffsetPolicyMax}, "a")
	if got := pop(c1, "C3", "GO"); got != "" {
		t.Fatalf("MAX popped the backlog %q", got)
	}
	add(c1, "C3", "GO", &protocol.LiteOffsetOption{Type: protocol.LiteOffsetOffset, Value: 2}, "a")
	if got := pop(c1, "C3", "GO"); got != "a2,a3" {
		t.Fatalf("OFFSET 2 popped %q, want a2,a3", got)
	}
	add(c1, "C3", "GO", &protocol.LiteOffsetOption{Type: protocol.LiteOffsetTailN, Value: 3}, "a")
	if got := pop(c1, "C3", "GO"); got != "a1,a2,a3" {
		t.Fatalf("TAIL_N 3 popped %q, want a1..a3", got)
	}
	add(c1, "C3", "GO", &protocol.LiteOffsetOption{Type: protocol.LiteOffsetPolicy, Value: protocol.LiteOffsetPolicyMin}, "a")
	if got := pop(c1, "C3", "GO"); got != "a0,a1,a2,a3" {
		t.Fatalf("MIN popped %q, want a0..a3", got)
	}

	// Wildcard group: a complete set (of anything) consumes every lite topic.
	mustCode(t, invoke(t, c1.Client, b.Addr(), liteCtl(protocol.LiteSubscriptionDTO{Action: protocol.LiteActionPartialAdd,
		ClientID: "C4", Group: "GW", Topic: "P", LiteTopicSet: []string{"a"}})), protocol.IllegalOperation)
	mustCode(t, invoke(t, c1.Client, b.Addr(), liteCtl(protocol.LiteSubscriptionDTO{Action: protocol.LiteActionCompleteAdd,
		ClientID: "C4", Group: "GW", Topic: "P"})), protocol.Success)
	var all []string
	for range 2 {
		if got := pop(c1, "C4", "GW"); got != "" {
			all = append(all, strings.Split(got, ",")...)
		}
	}
	if strings.Join(all, ",") != "a0,a1,a2,a3,b0" && strings.Join(all, ",") != "b0,a0,a1,a2,a3" {
		t.Fatalf("wildcard client popped %v, want a0..a3 and b0", all)
	}
	// With patterns (RocketMQ's LitePatternMatcher): only matching lite
	// topics. C4 leaves first: in a shared group one client gets each event.
	mustCode(t, invoke(t, c1.Client, b.Addr(), liteCtl(protocol.LiteSubscriptionDTO{Action: protocol.LiteActionCompleteRemove,
		ClientID: "C4", Group: "GW", Topic: "P"})), protocol.Success)
	for _, n := range []string{"pay__refund", "pay__ok", "ship__ok"} {
		mustCode(t, invoke(t, c1.Client, b.Addr(), sendReq("P", -1, []byte(n), liteSend(n, n))), protocol.Success)
		waitDispatched(t, b, lite.QueueName("P", n), 0, 1)
	}
	mustCode(t, invoke(t, c1.Client, b.Addr(), liteCtl(protocol.LiteSubscriptionDTO{Action: protocol.LiteActionCompleteAdd,
		ClientID: "C5", Group: "GW", Topic: "P", LiteTopicSet: []string{"bad*", "pay__*"}})), protocol.Success)
	var pays []string
	for range 3 {
		if got := pop(c1, "C5", "GW"); got != "" {
			pays = append(pays, strings.Split(got, ",")...)
		}
	}
	if sort.Strings(pays); strings.Join(pays, ",") != "pay__ok,pay__refund" {
		t.Fatalf("pattern pay__* popped %v, want pay__ok and pay__refund", pays)
	}
	// New patterns: the backlog they now match is dispatched.
	mustCode(t, invoke(t, c1.Client, b.Addr(), liteCtl(protocol.LiteSubscriptionDTO{Action: protocol.LiteActionCompleteAdd,
		ClientID: "C5", Group: "GW", Topic: "P", LiteTopicSet: []string{"ship__*"}})), protocol.Success)
	if got := pop(c1, "C5", "GW"); got != "ship__ok" {
		t.Fatalf("pattern ship__* popped %q, want ship__ok", got)
	}
	mustCode(t, invoke(t, c1.Client, b.Addr(), liteCtl(protocol.LiteSubscriptionDTO{Action: protocol.LiteActionCompleteAdd,
		ClientID: "C6", Group: "GW", Topic: "P", LiteTopicSet: []string{"bad*", "**__x"}})), protocol.IllegalOperation)
}
