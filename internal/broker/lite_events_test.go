package broker

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/lite"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestLiteEventDispatch: a lite pop reads the lite topics of its client's
// queued events. The queue is bounded by lite.sub.client.max.event.cnt:
// past it a full dispatch (liteEventFullDispatchDelayTime later) queues
// the rest; an unacked batch comes back when its invisible time ends; a
// client that stops popping loses its events to another client of the
// group.
func TestLiteEventDispatch(t *testing.T) {
	cfg := popTestConfig(t, t.TempDir())
	cfg.LiteEventFullDispatchDelayTime = 100
	cfg.LiteEventCheckInterval = 3600 * 1000 // checkBlocked is called below
	b := startBroker(t, cfg)
	c := newLiteClient(t)
	createTypedTopic(t, c.Client, b, "P", 1, "+message.type=LITE")
	createLiteGroup(t, c.Client, b, "G", map[string]string{"lite.bind.topic": "P", "lite.sub.client.max.event.cnt": "10"})
	var names []string
	for i := range 15 {
		n := fmt.Sprint("t", i)
		names = append(names, n)
		mustCode(t, invoke(t, c.Client, b.Addr(), sendReq("P", -1, []byte(n), liteSend(n, n))), protocol.Success)
	}
	for _, n := range names {
		waitDispatched(t, b, lite.QueueName("P", n), 0, 1)
	}
	mustCode(t, invoke(t, c.Client, b.Addr(), liteCtl(protocol.LiteSubscriptionDTO{Action: protocol.LiteActionPartialAdd,
		ClientID: "C1", Group: "G", Topic: "P", LiteTopicSet: names})), protocol.Success)
	if n := b.lite.disp.events.Len("C1"); n != 10 {
		t.Fatalf("%d events queued, want the capacity 10", n)
	}
	pop := func(client string, pollMs, invisible int64) []litePopped {
		t.Helper()
		req := popLiteReq(client, "G", "P", pollMs)
		var h protocol.PopLiteMessageRequestHeader
		if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
			t.Fatal(err)
		}
		h.InvisibleTime = invisible
		req = protocol.NewRequest(protocol.PopLiteMessage, protocol.EncodeHeader(&h, false), nil)
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(pollMs)*time.Millisecond+10*time.Second)
		defer cancel()
		resp, err := c.InvokeSync(ctx, b.Addr(), req)
		if err != nil {
			t.Fatal(err)
		}
		if protocol.ResponseCode(resp.Code) == protocol.PollingTimeout {
			return nil
		}
		mustCode(t, resp, protocol.Success)
		got, rh := decodeLitePop(t, resp)
		if invisible >= 30000 {
			for _, m := range got {
				liteAck(t, c.Client, b, "G", rh, m)
			}
		}
		return got
	}
	first := pop("C1", 0, 30000)
	if len(first) != 10 {
		t.Fatalf("first pop = %q, want the 10 queued lite topics", bodies(first))
	}
	// The full dispatch queues the other 5 (the queue is below its low
	// water mark now; a full dispatch that found it full was put off by
	// up to 10 s more); held pops are answered by them.
	var rest []string
	for deadline := time.Now().Add(60 * time.Second); len(rest) < 5; {
		if time.Now().After(deadline) {
			t.Fatalf("the rest was not dispatched: got %v", rest)
		}
		for _, m := range pop("C1", 5000, 30000) {
			rest = append(rest, m.body)
		}
	}
	all := append(strings.Split(bodies(first), ","), rest...)
	sort.Strings(all)
	want := append([]string(nil), names...)
	sort.Strings(want)
	if strings.Join(all, ",") != strings.Join(want, ",") {
		t.Fatalf("popped %v, want each of %v once", all, want)
	}

	// Not acked: the lite topic comes back when its invisible time ends.
	mustCode(t, invoke(t, c.Client, b.Addr(), sendReq("P", -1, []byte("again"), liteSend("t0", "again"))), protocol.Success)
	t0 := time.Now() // before the pop: its invisible time ends 1 s after t0 at the earliest
	if got := pop("C1", 5000, 1000); bodies(got) != "again" {
		t.Fatalf("pop = %q, want again", bodies(got))
	}
	if got := pop("C1", 10000, 30000); bodies(got) != "again" || got[0].queue != lite.QueueName("P", "t0") {
		t.Fatalf("pop after the invisible time = %q, want again", bodies(got))
	}
	if d := time.Since(t0); d < 990*time.Millisecond {
		t.Fatalf("redelivered after %v, before its invisible time", d)
	}

	// C2 joins the group (same lite topic); C1 stops popping. Its event
	// goes to C2 once C1 is taken for blocked.
	mustCode(t, invoke(t, c.Client, b.Addr(), liteCtl(protocol.LiteSubscriptionDTO{Action: protocol.LiteActionPartialAdd,
		ClientID: "C2", Group: "G", Topic: "P", LiteTopicSet: []string{"t1"}})), protocol.Success)
	// C2 is chosen last for a moment, so the event goes to C1.
	b.lite.disp.mu.Lock()
	b.lite.disp.black["C2"] = b.now().UnixMilli() + 300
	b.lite.disp.mu.Unlock()
	mustCode(t, invoke(t, c.Client, b.Addr(), sendReq("P", -1, []byte("blk"), liteSend("t1", "blk"))), protocol.Success)
	testutil.Eventually(t, 10*time.Second, func() bool { return b.lite.disp.events.Len("C1") == 1 }, "C1 has the event for t1")
	if n := b.lite.disp.events.Len("C2"); n != 0 {
		t.Fatalf("C2 has %d events, want 0", n)
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return !b.lite.disp.blacklisted("C2", b.now().UnixMilli()) }, "C2 chosen first again")
	b.lite.disp.checkBlocked(b.now().UnixMilli() + lite.ClientLongPollingMs + 1)
	if b.lite.disp.events.Len("C1") != 0 || b.lite.disp.events.Len("C2") != 1 {
		t.Fatalf("after the blocked check C1 has %d events, C2 %d; want 0 and 1",
			b.lite.disp.events.Len("C1"), b.lite.disp.events.Len("C2"))
	}
	if got := pop("C2", 5000, 30000); bodies(got) != "blk" {
		t.Fatalf("C2 popped %q, want blk", bodies(got))
	}
}

// TestLiteIdleSubscriptions: a client whose subscriptions no
// LITE_SUBSCRIPTION_CTL changed for liteSubscriptionCheckTimeoutMills loses
// them at the next check; one that re-sent its complete set keeps them.
func TestLiteIdleSubscriptions(t *testing.T) {
	cfg := popTestConfig(t, t.TempDir())
	cfg.LiteSubscriptionCheckInterval = 3600 * 1000 // dropIdleSubscriptions is called below
	b := startBroker(t, cfg)
	if cfg.LiteSubscriptionCheckTimeoutMills != 180000 {
		t.Fatalf("liteSubscriptionCheckTimeoutMills default = %d, want 180000", cfg.LiteSubscriptionCheckTimeoutMills)
	}
	c := newLiteClient(t)
	createTypedTopic(t, c.Client, b, "P", 1, "+message.type=LITE")
	createLiteGroup(t, c.Client, b, "G", nil)
	sub := func(client, action string) {
		t.Helper()
		mustCode(t, invoke(t, c.Client, b.Addr(), liteCtl(protocol.LiteSubscriptionDTO{Action: action,
			ClientID: client, Group: "G", Topic: "P", LiteTopicSet: []string{"a", "b"}})), protocol.Success)
	}
	sub("C1", protocol.LiteActionPartialAdd)
	sub("C2", protocol.LiteActionPartialAdd)
	t0 := b.now().UnixMilli()
	if gone := b.lite.disp.dropIdleSubscriptions(t0 + 1000); len(gone) != 0 {
		t.Fatalf("dropped %v a second after subscribing", gone)
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return b.now().UnixMilli() > t0 }, "the clock moves")
	t2 := b.now().UnixMilli()                 // after C1's change, before C2's
	sub("C2", protocol.LiteActionCompleteAdd) // C2's periodic complete set
	// At t2 + timeout C1 (subscribed before t2) is idle, C2 not yet.
	gone := b.lite.disp.dropIdleSubscriptions(t2 + cfg.LiteSubscriptionCheckTimeoutMills)
	if len(gone) != 1 || gone[0] != "C1" {
		t.Fatalf("dropped %v, want C1", gone)
	}
	if _, _, _, n, _, ok := b.lite.subs.Client("C2", 0); !ok || n != 2 {
		t.Fatalf("C2 has %d subscriptions (known %v), want 2", n, ok)
	}
	if n := b.lite.subs.Count(); n != 2 {
		t.Fatalf("%d subscriptions left, want C2's 2", n)
	}
}

// TestLiteAdminRequests: GET_LITE_CLIENT_INFO, GET_LITE_GROUP_INFO and
// TRIGGER_LITE_DISPATCH answer RocketMQ's bodies and codes.
func TestLiteAdminRequests(t *testing.T) {
	b := startBroker(t, popTestConfig(t, t.TempDir()))
	c := newLiteClient(t)
	createTypedTopic(t, c.Client, b, "P", 1, "+message.type=LITE")
	createTypedTopic(t, c.Client, b, "Plain", 1, "")
	createLiteGroup(t, c.Client, b, "G", map[string]string{"lite.bind.topic": "P"})
	createLiteGroup(t, c.Client, b, "Q", map[string]string{"lite.bind.topic": "Other"})
	createLiteGroup(t, c.Client, b, "NoLite", nil)
	for i := range 3 {
		mustCode(t, invoke(t, c.Client, b.Addr(), sendReq("P", -1, []byte(fmt.Sprint("a", i)), liteSend("a", fmt.Sprint("a", i)))), protocol.Success)
	}
	mustCode(t, invoke(t, c.Client, b.Addr(), sendReq("P", -1, []byte("b0"), liteSend("b", "b0"))), protocol.Success)
	waitDispatched(t, b, lite.QueueName("P", "a"), 0, 3)
	waitDispatched(t, b, lite.QueueName("P", "b"), 0, 1)
	mustCode(t, invoke(t, c.Client, b.Addr(), liteCtl(protocol.LiteSubscriptionDTO{Action: protocol.LiteActionPartialAdd,
		ClientID: "C1", Group: "G", Topic: "P", LiteTopicSet: []string{"a", "b", "c"}})), protocol.Success)
	call := func(code protocol.RequestCode, h any, want protocol.ResponseCode) *protocol.Command {
		t.Helper()
		resp := invoke(t, c.Client, b.Addr(), protocol.NewRequest(code, protocol.EncodeHeader(h, false), nil))
		mustCode(t, resp, want)
		return resp
	}

	// GET_LITE_CLIENT_INFO: before any pop, then after one.
	clientInfo := func(h protocol.GetLiteClientInfoRequestHeader) protocol.GetLiteClientInfoResponseBody {
		t.Helper()
		body, err := protocol.DecodeGetLiteClientInfoBody(call(protocol.GetLiteClientInfo, &h, protocol.Success).Body)
		if err != nil {
			t.Fatal(err)
		}
		return body
	}
	ci := clientInfo(protocol.GetLiteClientInfoRequestHeader{ParentTopic: "P", Group: "G", ClientID: "C1", MaxCount: 2})
	if ci.LiteTopicCount != 3 || len(ci.LiteTopicSet) != 2 || !strings.HasPrefix(ci.LiteTopicSet[0], "%LMQ%$P$") {
		t.Fatalf("client info = %+v, want 3 lite topics, 2 listed", ci)
	}
	resp := invoke(t, c.Client, b.Addr(), popLiteReq("C1", "G", "P", 0))
	mustCode(t, resp, protocol.Success)
	got, rh := decodeLitePop(t, resp)
	if bodies(got) != "a0,a1,a2,b0" && bodies(got) != "b0,a0,a1,a2" {
		t.Fatalf("pop = %q, want a0..a2 and b0", bodies(got))
	}
	ci = clientInfo(protocol.GetLiteClientInfoRequestHeader{ParentTopic: "P", Group: "G", ClientID: "C1", MaxCount: 10})
	if ci.LiteTopicCount != 3 || len(ci.LiteTopicSet) != 3 || ci.LastAccessTime <= 0 || ci.LastConsumeTime <= 0 {
		t.Fatalf("client info after a pop = %+v", ci)
	}
	if ci := clientInfo(protocol.GetLiteClientInfoRequestHeader{ParentTopic: "P", Group: "G", ClientID: "nobody", MaxCount: 10}); ci.LiteTopicCount != -1 || ci.LastAccessTime != -1 {
		t.Fatalf("unknown client's info = %+v, want -1 count and access", ci)
	}
	for _, c := range []struct {
		h    protocol.GetLiteClientInfoRequestHeader
		want protocol.ResponseCode
	}{
		{protocol.GetLiteClientInfoRequestHeader{ParentTopic: "Nope", Group: "G", ClientID: "C1", MaxCount: 1}, protocol.TopicNotExist},
		{protocol.GetLiteClientInfoRequestHeader{ParentTopic: "Plain", Group: "G", ClientID: "C1", MaxCount: 1}, protocol.InvalidParameter},
		{protocol.GetLiteClientInfoRequestHeader{ParentTopic: "P", Group: "Nope", ClientID: "C1", MaxCount: 1}, protocol.SubscriptionGroupNotExist},
		{protocol.GetLiteClientInfoRequestHeader{ParentTopic: "P", Group: "Q", ClientID: "C1", MaxCount: 1}, protocol.InvalidParameter},
		{protocol.GetLiteClientInfoRequestHeader{ParentTopic: "P", Group: "G", ClientID: "C1", MaxCount: -1}, protocol.SystemError},
	} {
		call(protocol.GetLiteClientInfo, &c.h, c.want)
	}

	// GET_LITE_GROUP_INFO: a acked (lag 0), b not: committed offsets come
	// with acks, so only a has one.
	for _, m := range got {
		if m.queue == lite.QueueName("P", "a") {
			liteAck(t, c.Client, b, "G", rh, m)
		}
	}
	mustCode(t, invoke(t, c.Client, b.Addr(), sendReq("P", -1, []byte("a3"), liteSend("a", "a3"))), protocol.Success)
	waitDispatched(t, b, lite.QueueName("P", "a"), 0, 4)
	groupInfo := func(h protocol.GetLiteGroupInfoRequestHeader) protocol.GetLiteGroupInfoResponseBody {
		t.Helper()
		body, err := protocol.DecodeGetLiteGroupInfoBody(call(protocol.GetLiteGroupInfo, &h, protocol.Success).Body)
		if err != nil {
			t.Fatal(err)
		}
		return body
	}
	gi := groupInfo(protocol.GetLiteGroupInfoRequestHeader{Group: "G", TopK: 5})
	if gi.ParentTopic != "P" || gi.TotalLagCount != 1 || len(gi.LagCountTopK) != 1 || gi.LagCountTopK[0].LiteTopic != "a" ||
		len(gi.LagTimestampTopK) != 1 || gi.EarliestUnconsumedTimestamp <= 0 {
		t.Fatalf("group info = %+v, want a lag of 1 on a", gi)
	}
	gi = groupInfo(protocol.GetLiteGroupInfoRequestHeader{Group: "G", LiteTopic: "a"})
	if w := gi.LiteTopicOffsetWrapper; gi.TotalLagCount != 1 || w == nil || w.BrokerOffset != 4 || w.ConsumerOffset != 3 || w.LastTimestamp <= 0 {
		t.Fatalf("group info of a = %+v %+v, want offsets 4/3", gi, gi.LiteTopicOffsetWrapper)
	}
	if gi := groupInfo(protocol.GetLiteGroupInfoRequestHeader{Group: "G", LiteTopic: "none"}); gi.TotalLagCount != -1 || gi.EarliestUnconsumedTimestamp != -1 {
		t.Fatalf("group info of a missing lite topic = %+v, want -1 and -1", gi)
	}
	call(protocol.GetLiteGroupInfo, &protocol.GetLiteGroupInfoRequestHeader{Group: "Nope"}, protocol.SubscriptionGroupNotExist)
	call(protocol.GetLiteGroupInfo, &protocol.GetLiteGroupInfoRequestHeader{Group: "NoLite"}, protocol.InvalidParameter)

	// TRIGGER_LITE_DISPATCH: the events were taken; a trigger queues a's
	// backlog again (b is in flight but not committed: queued too).
	b.lite.disp.events.Remove("C1")
	call(protocol.TriggerLiteDispatch, &protocol.TriggerLiteDispatchRequestHeader{Group: "G", ClientID: "C1"}, protocol.Success)
	if n := b.lite.disp.events.Len("C1"); n != 2 {
		t.Fatalf("%d events after the trigger, want 2 (a, b)", n)
	}
	b.lite.disp.events.Remove("C1")
	call(protocol.TriggerLiteDispatch, &protocol.TriggerLiteDispatchRequestHeader{Group: "G"}, protocol.Success)
	if n := b.lite.disp.events.Len("C1"); n != 2 {
		t.Fatalf("%d events after the group's trigger, want 2", n)
	}
	var bi protocol.GetBrokerLiteInfoResponseBody
	if err := protocol.UnmarshalFastJSON(invoke(t, c.Client, b.Addr(), protocol.NewRequest(protocol.GetBrokerLiteInfo, nil, nil)).Body, &bi); err != nil {
		t.Fatal(err)
	}
	if bi.LiteSubscriptionCount != 3 || bi.EventMapSize != 1 || strings.Join(bi.GroupMeta["P"], ",") != "G" || bi.TopicMeta["P"] != 2 {
		t.Fatalf("broker lite info = %+v, want 3 subscriptions, 1 event queue, G bound to P", bi)
	}
	call(protocol.TriggerLiteDispatch, &protocol.TriggerLiteDispatchRequestHeader{Group: "Nope"}, protocol.SubscriptionGroupNotExist)
	call(protocol.TriggerLiteDispatch, &protocol.TriggerLiteDispatchRequestHeader{Group: "NoLite"}, protocol.InvalidParameter)
}

// TestLiteConfigDefaults: the lite broker.conf keys default to RocketMQ
// 5.5's BrokerConfig values.
func TestLiteConfigDefaults(t *testing.T) {
	c := DefaultConfig()
	for _, tc := range []struct {
		key       string
		got, want int64
	}{
		{"maxLmqConsumeQueueNum", int64(c.MaxLmqConsumeQueueNum), 20000},
		{"liteTtlCheckInterval", c.LiteTtlCheckInterval, 120000},
		{"minLiteTTl", c.MinLiteTTl, 15 * 60 * 1000},
		{"maxLiteSubscriptionCount", int64(c.MaxLiteSubscriptionCount), 100000},
		{"maxClientEventCount", int64(c.MaxClientEventCount), 100},
		{"liteEventCheckInterval", c.LiteEventCheckInterval, 10000},
		{"liteEventFullDispatchDelayTime", c.LiteEventFullDispatchDelayTime, 10000},
		{"liteEventFullDispatchDelayTimeForWildcardGroup", c.LiteEventFullDispatchDelayTimeForWildcardGroup, 10000},
		{"liteSubscriptionCheckInterval", c.LiteSubscriptionCheckInterval, 120000},
		{"liteSubscriptionCheckTimeoutMills", c.LiteSubscriptionCheckTimeoutMills, 180000},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.key, tc.got, tc.want)
		}
	}
}
