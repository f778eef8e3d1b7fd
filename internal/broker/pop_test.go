package broker

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/testutil"
)

func popReq(group, topic string, queueID, max int32, invisible, poll time.Duration, order bool) *protocol.Command {
	h := protocol.PopMessageRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: queueID, MaxMsgNums: max,
		InvisibleTime: invisible.Milliseconds(), PollTime: poll.Milliseconds(), BornTime: time.Now().UnixMilli(),
		InitMode: protocol.PopInitModeMin, ExpType: "TAG", Exp: "*", Order: order}
	return protocol.NewRequest(protocol.PopMessage, protocol.EncodeHeader(&h, false), nil)
}

// popped is one message of a pop response with the ExtraInfo a client
// builds for it (MQClientAPIImpl.processPopResponse).
type popped struct {
	msg   *message.Ext
	extra protocol.ReceiptHandle
	real  string // the topic to ack on
}

// decodePop decodes a SUCCESS pop response as a RocketMQ client does.
func decodePop(t *testing.T, resp *protocol.Command, group, brokerName string) []popped {
	t.Helper()
	if resp.Code != int32(protocol.Success) {
		return nil
	}
	var rh protocol.PopMessageResponseHeader
	if err := protocol.DecodeHeader(resp.ExtFields, &rh, false); err != nil {
		t.Fatal(err)
	}
	starts, err := protocol.ParseStartOffsetInfo(rh.StartOffsetInfo)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := message.DecodeStoredAll(resp.Body, message.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []popped
	for _, m := range msgs {
		var ei protocol.ReceiptHandle
		if ck := m.Properties[message.PropertyPopCK]; ck != "" {
			if ei, err = protocol.ParseExtraInfo(ck); err != nil {
				t.Fatal(err)
			}
		} else {
			start, ok := starts[protocol.PopQueueKey{TopicType: protocol.PopTopicNormal, QueueID: m.QueueID}]
			if !ok {
				t.Fatalf("no start offset for queue %d in %q", m.QueueID, rh.StartOffsetInfo)
			}
			ei = protocol.ReceiptHandle{CkQueueOffset: start, PopTime: rh.PopTime, InvisibleTime: rh.InvisibleTime,
				ReviveQueueID: rh.ReviveQid, BrokerName: brokerName, QueueID: m.QueueID, QueueOffset: m.QueueOffset}
		}
		out = append(out, popped{msg: m, extra: ei, real: ei.RealTopic(m.Topic, group)})
	}
	return out
}

func ackReq(group string, p popped) *protocol.Command {
	h := protocol.AckMessageRequestHeader{ConsumerGroup: group, Topic: p.real, QueueID: p.extra.QueueID,
		ExtraInfo: p.extra.ExtraInfo(), Offset: p.extra.QueueOffset}
	return protocol.NewRequest(protocol.AckMessage, protocol.EncodeHeader(&h, false), nil)
}

func changeReq(group string, p popped, invisible time.Duration) *protocol.Command {
	h := protocol.ChangeInvisibleTimeRequestHeader{ConsumerGroup: group, Topic: p.real, QueueID: p.extra.QueueID,
		ExtraInfo: p.extra.ExtraInfo(), Offset: p.extra.QueueOffset, InvisibleTime: invisible.Milliseconds()}
	return protocol.NewRequest(protocol.ChangeMessageInvisibleTime, protocol.EncodeHeader(&h, false), nil)
}

// sendN sends n messages to topic's queue, bodies "<prefix>-i", and waits
// until they are dispatched.
func sendN(t *testing.T, c *remoting.Client, b *Broker, topic string, queueID int32, n int, prefix string) {
	t.Helper()
	before := max(b.Store.MaxOffsetInQueue(topic, queueID), 0)
	for i := 0; i < n; i++ {
		mustCode(t, invoke(t, c, b.Addr(), sendReq(topic, queueID, []byte(fmt.Sprintf("%s-%d", prefix, i)),
			map[string]string{"TAGS": "TagA", "UNIQ_KEY": fmt.Sprintf("%s-%d", prefix, i)})), protocol.Success)
	}
	waitDispatched(t, b, topic, queueID, before+int64(n))
}

func popAll(t *testing.T, c *remoting.Client, b *Broker, group, topic string, invisible time.Duration) []popped {
	t.Helper()
	resp := invoke(t, c, b.Addr(), popReq(group, topic, -1, 32, invisible, 0, false))
	if resp.Code != int32(protocol.Success) && resp.Code != int32(protocol.PollingTimeout) {
		t.Fatalf("pop: code %d remark %q", resp.Code, resp.Remark)
	}
	return decodePop(t, resp, group, b.cfg.BrokerName)
}

func popTestConfig(t *testing.T, dir string) Config {
	cfg := testConfig(t, dir)
	cfg.ReviveInterval = 50 * time.Millisecond
	return cfg
}

// TestPopAckRedeliver: popped messages are invisible to the group; the
// unacked ones come back through %RETRY%group+topic after the invisible
// time with reconsumeTimes+1, their topic and message id unchanged; acked
// ones never come back (docs/grpc.md §8.1-8.3).
func TestPopAckRedeliver(t *testing.T) {
	b := startBroker(t, popTestConfig(t, t.TempDir()))
	c := newClient(t)
	sendN(t, c, b, "PopT", 0, 6, "m")
	got := popAll(t, c, b, "G", "PopT", 800*time.Millisecond)
	if len(got) != 6 {
		t.Fatalf("popped %d, want 6", len(got))
	}
	if again := popAll(t, c, b, "G", "PopT", time.Second); len(again) != 0 {
		t.Fatalf("invisible messages popped again: %d", len(again))
	}
	acked := map[string]bool{}
	for i, p := range got {
		if i%2 == 0 {
			mustCode(t, invoke(t, c, b.Addr(), ackReq("G", p)), protocol.Success)
			acked[string(p.msg.Body)] = true
		}
	}
	// The unacked three come back from the v2 retry topic.
	var back []popped
	testutil.Eventually(t, 10*time.Second, func() bool {
		back = append(back, popAll(t, c, b, "G", "PopT", 5*time.Second)...)
		return len(back) >= 3
	}, "redelivery")
	if len(back) != 3 {
		t.Fatalf("redelivered %d, want 3", len(back))
	}
	for _, p := range back {
		if acked[string(p.msg.Body)] {
			t.Fatalf("acked message %s redelivered", p.msg.Body)
		}
		if p.msg.Topic != "PopT" || p.real != "%RETRY%G+PopT" || p.msg.ReconsumeTimes != 1 {
			t.Fatalf("redelivered topic %q real %q reconsume %d", p.msg.Topic, p.real, p.msg.ReconsumeTimes)
		}
		if p.msg.UniqKey() != string(p.msg.Body) || p.msg.Properties[message.PropertyFirstPopTime] == "" {
			t.Fatalf("properties %v", p.msg.Properties)
		}
		mustCode(t, invoke(t, c, b.Addr(), ackReq("G", p)), protocol.Success)
	}
	time.Sleep(1200 * time.Millisecond) // past the first pops' invisible time and the retry pops'
	if more := popAll(t, c, b, "G", "PopT", time.Second); len(more) != 0 {
		t.Fatalf("after acking everything %d came back", len(more))
	}
	// Another group sees everything: pop offsets are per group.
	if other := popAll(t, c, b, "G2", "PopT", time.Second); len(other) != 6 {
		t.Fatalf("second group popped %d", len(other))
	}
}

// TestPopChangeInvisibleTime: a change to 0 makes the message visible at
// once (a nack); the old handle no longer acks, a stale one is refused
// with NO_MESSAGE; the response's pop time builds the new handle.
func TestPopChangeInvisibleTime(t *testing.T) {
	b := startBroker(t, popTestConfig(t, t.TempDir()))
	c := newClient(t)
	sendN(t, c, b, "PopC", 0, 1, "c")
	got := popAll(t, c, b, "G", "PopC", time.Minute)
	if len(got) != 1 {
		t.Fatalf("popped %d", len(got))
	}
	// Move it to 30 s: new handle from the response.
	resp := invoke(t, c, b.Addr(), changeReq("G", got[0], 30*time.Second))
	mustCode(t, resp, protocol.Success)
	var rh protocol.ChangeInvisibleTimeResponseHeader
	if err := protocol.DecodeHeader(resp.ExtFields, &rh, false); err != nil || rh.InvisibleTime != 30000 {
		t.Fatalf("change response %+v %v", rh, err)
	}
	renewed := got[0]
	renewed.extra.CkQueueOffset, renewed.extra.PopTime, renewed.extra.InvisibleTime = got[0].extra.QueueOffset, rh.PopTime, rh.InvisibleTime
	// The old handle is spent.
	mustCode(t, invoke(t, c, b.Addr(), changeReq("G", got[0], 0)), protocol.NoMessage)
	// Nack with 0: visible again within a moment, from the retry topic.
	mustCode(t, invoke(t, c, b.Addr(), changeReq("G", renewed, 0)), protocol.Success)
	var back []popped
	start := time.Now()
	testutil.Eventually(t, 5*time.Second, func() bool {
		back = popAll(t, c, b, "G", "PopC", time.Minute)
		return len(back) == 1
	}, "nacked message not redelivered")
	if el := time.Since(start); el > 3*time.Second {
		t.Fatalf("nack redelivered after %v", el)
	}
	if back[0].msg.ReconsumeTimes != 1 || string(back[0].msg.Body) != "c-0" {
		t.Fatalf("redelivered %+v", back[0].msg)
	}
}

// TestPopLongPolling: a held pop is answered when a message arrives, and
// with POLLING_TIMEOUT at bornTime+pollTime when none does.
func TestPopLongPolling(t *testing.T) {
	b := startBroker(t, popTestConfig(t, t.TempDir()))
	c := newClient(t)
	sendN(t, c, b, "PopL", 0, 1, "x")
	popAll(t, c, b, "G", "PopL", time.Minute) // drain

	start := time.Now()
	resp := invoke(t, c, b.Addr(), popReq("G", "PopL", -1, 32, time.Minute, 400*time.Millisecond, false))
	el := time.Since(start)
	mustCode(t, resp, protocol.PollingTimeout)
	if el < 300*time.Millisecond || el > 1500*time.Millisecond {
		t.Fatalf("held pop answered after %v, want about 400ms", el)
	}

	done := make(chan *protocol.Command, 1)
	go func() {
		done <- invoke(t, c, b.Addr(), popReq("G", "PopL", -1, 32, time.Minute, 5*time.Second, false))
	}()
	time.Sleep(200 * time.Millisecond)
	start = time.Now()
	mustCode(t, invoke(t, c, b.Addr(), sendReq("PopL", 0, []byte("late"), nil)), protocol.Success)
	select {
	case resp := <-done:
		mustCode(t, resp, protocol.Success)
		if got := decodePop(t, resp, "G", b.cfg.BrokerName); len(got) != 1 || string(got[0].msg.Body) != "late" {
			t.Fatalf("woken pop got %v", got)
		}
		if el := time.Since(start); el > 2*time.Second {
			t.Fatalf("woken after %v", el)
		}
	case <-time.After(4 * time.Second):
		t.Fatal("held pop not woken by the arrival")
	}
}

// TestPopBadInput: RocketMQ's answers to bad pop, ack and change requests;
// the broker stays up.
func TestPopBadInput(t *testing.T) {
	cfg := popTestConfig(t, t.TempDir())
	b := startBroker(t, cfg)
	c := newClient(t)
	sendN(t, c, b, "PopB", 0, 1, "b")
	got := popAll(t, c, b, "G", "PopB", time.Minute)
	if len(got) != 1 {
		t.Fatal("pop")
	}
	p := got[0]
	ack := func(mut func(h map[string]string)) *protocol.Command {
		req := ackReq("G", p)
		mut(req.ExtFields)
		return invoke(t, c, b.Addr(), req)
	}
	for _, tc := range []struct {
		name string
		resp *protocol.Command
		want protocol.ResponseCode
	}{
		{"pop unknown topic", invoke(t, c, b.Addr(), popReq("G", "NoSuchTopic", -1, 1, time.Minute, 0, false)), protocol.TopicNotExist},
		{"pop 33 messages", invoke(t, c, b.Addr(), popReq("G", "PopB", -1, 33, time.Minute, 0, false)), protocol.InvalidParameter},
		{"pop invisible 0", invoke(t, c, b.Addr(), popReq("G", "PopB", -1, 1, 0, 0, false)), protocol.InvalidParameter},
		{"pop invisible 13h", invoke(t, c, b.Addr(), popReq("G", "PopB", -1, 1, 13*time.Hour, 0, false)), protocol.InvalidParameter},
		{"pop queue out of range", invoke(t, c, b.Addr(), popReq("G", "PopB", 99, 1, time.Minute, 0, false)), protocol.InvalidParameter},
		{"change negative", invoke(t, c, b.Addr(), changeReq("G", p, -time.Second)), protocol.InvalidParameter},
		{"change 13h", invoke(t, c, b.Addr(), changeReq("G", p, 13*time.Hour)), protocol.InvalidParameter},
		{"ack unknown topic", ack(func(h map[string]string) { h["topic"] = "Nope" }), protocol.TopicNotExist},
		{"ack bad queue", ack(func(h map[string]string) { h["queueId"] = "77" }), protocol.MessageIllegal},
		{"ack offset past the queue", ack(func(h map[string]string) { h["offset"] = "5000" }), protocol.NoMessage},
		{"ack malformed extra info", ack(func(h map[string]string) { h["extraInfo"] = "garbage" }), protocol.SystemError},
		{"ack missing extra info", ack(func(h map[string]string) { delete(h, "extraInfo") }), protocol.SystemError},
		{"ack forged checkpoint", ack(func(h map[string]string) { h["extraInfo"] = "0 1 60000 1 0 broker-a 0 0" }), protocol.Success},
		{"batch ack garbage", invoke(t, c, b.Addr(), protocol.NewRequest(protocol.BatchAckMessage, nil, []byte("{"))), protocol.SystemError},
		{"batch ack empty", invoke(t, c, b.Addr(), protocol.NewRequest(protocol.BatchAckMessage, nil, nil)), protocol.NoMessage},
	} {
		t.Run(tc.name, func(t *testing.T) { mustCode(t, tc.resp, tc.want) })
	}
	// A forged ack changed nothing: the real handle still acks.
	if r := invoke(t, c, b.Addr(), ackReq("G", p)); r.Code != 0 || r.Remark != "" {
		t.Fatalf("real ack: %d %q", r.Code, r.Remark)
	}
	// Acked: a second ack is a no-op SUCCESS, a change is NO_MESSAGE.
	if r := invoke(t, c, b.Addr(), ackReq("G", p)); r.Code != 0 || r.Remark == "" {
		t.Fatalf("second ack: %d %q", r.Code, r.Remark)
	}
	mustCode(t, invoke(t, c, b.Addr(), changeReq("G", p, time.Second)), protocol.NoMessage)
	// With auto-creation off an unknown group is refused.
	b.dyn.autoCreateGroup.Store(false)
	mustCode(t, invoke(t, c, b.Addr(), popReq("NoGroup", "PopB", -1, 1, time.Minute, 0, false)), protocol.SubscriptionGroupNotExist)
}

// TestPopAndPullIndependent: a pull consumer and a pop consumer of other
// groups on one topic each see every message.
func TestPopAndPullIndependent(t *testing.T) {
	b := startBroker(t, popTestConfig(t, t.TempDir()))
	c := newClient(t)
	sendN(t, c, b, "PopP", 0, 5, "p")
	got := popAll(t, c, b, "PopG", "PopP", time.Minute)
	resp := invoke(t, c, b.Addr(), pullReq("PullG", "PopP", 0, 0, protocol.PullFlagSubscription, 0, "*"))
	mustCode(t, resp, protocol.Success)
	pulled, err := message.DecodeStoredAll(resp.Body, message.DecodeOptions{})
	if err != nil || len(pulled) != 5 || len(got) != 5 {
		t.Fatalf("pulled %d (%v), popped %d", len(pulled), err, len(got))
	}
	if off, _ := b.Offsets.Query("PullG", "PopP", 0); off > 0 {
		t.Fatalf("pop moved the pull group's offset to %d", off)
	}
}

// TestPopRestartKeepsHandles: after a clean restart, handles issued before
// it still ack, and unacked messages are redelivered.
func TestPopRestartKeepsHandles(t *testing.T) {
	dir := t.TempDir()
	cfg := popTestConfig(t, dir)
	b, err := New(cfg, testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	c := newClient(t)
	sendN(t, c, b, "PopR", 0, 4, "r")
	got := popAll(t, c, b, "G", "PopR", 2*time.Second)
	if len(got) != 4 {
		t.Fatalf("popped %d", len(got))
	}
	mustCode(t, invoke(t, c, b.Addr(), ackReq("G", got[0])), protocol.Success)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.ListenPort = 0
	b = startBroker(t, cfg)
	if r := invoke(t, c, b.Addr(), ackReq("G", got[1])); r.Code != 0 || r.Remark != "" {
		t.Fatalf("ack after restart: %d %q", r.Code, r.Remark)
	}
	var back []popped
	testutil.Eventually(t, 10*time.Second, func() bool {
		back = append(back, popAll(t, c, b, "G", "PopR", time.Minute)...)
		return len(back) >= 2
	}, "redelivery after restart")
	seen := map[string]bool{}
	for _, p := range back {
		seen[string(p.msg.Body)] = true
	}
	if len(back) != 2 || !seen["r-2"] || !seen["r-3"] {
		t.Fatalf("redelivered %v", seen)
	}
}

// TestPopDLQ: a message not acked after retryMaxTimes retries goes to
// %DLQ%group with its origin.
func TestPopDLQ(t *testing.T) {
	b := startBroker(t, popTestConfig(t, t.TempDir()))
	c := newClient(t)
	gc, _, _ := b.Groups.FindOrCreate("GD", true)
	gc.RetryMaxTimes = 1
	if err := b.Groups.Update(gc); err != nil {
		t.Fatal(err)
	}
	sendN(t, c, b, "PopD", 0, 1, "d")
	deliveries := 0
	testutil.Eventually(t, 15*time.Second, func() bool {
		for _, p := range popAll(t, c, b, "GD", "PopD", 100*time.Millisecond) {
			deliveries++
			if int(p.msg.ReconsumeTimes) != deliveries-1 {
				t.Fatalf("delivery %d has reconsumeTimes %d", deliveries, p.msg.ReconsumeTimes)
			}
		}
		return b.Store.MaxOffsetInQueue(names.DLQTopic("GD"), 0) == 1
	}, "not dead-lettered")
	if deliveries != 2 {
		t.Fatalf("delivered %d times, want retryMaxTimes+1 = 2", deliveries)
	}
	gr := b.Store.GetMessage("x", names.DLQTopic("GD"), 0, 0, 1, 0, nil)
	m, _, err := message.DecodeStored(gr.Messages[0], message.DecodeOptions{})
	if err != nil || m.Properties[message.PropertyDLQOriginTopic] != "PopD" || m.Properties[message.PropertyDLQOriginMessageID] != "d-0" {
		t.Fatalf("DLQ message %v %v", m, err)
	}
}

// TestPopOrderly: in order mode a queue is blocked until its batch is
// acked or expires; after expiry the unacked message comes back first with
// its delivery count, acked ones do not (docs/grpc.md §8.4).
func TestPopOrderly(t *testing.T) {
	b := startBroker(t, popTestConfig(t, t.TempDir()))
	c := newClient(t)
	sendN(t, c, b, "PopO", 0, 4, "o")
	pop := func(n int32, invisible time.Duration) []popped {
		resp := invoke(t, c, b.Addr(), popReq("GO", "PopO", -1, n, invisible, 0, true))
		return decodePop(t, resp, "GO", b.cfg.BrokerName)
	}
	first := pop(2, 500*time.Millisecond)
	if len(first) != 2 || string(first[0].msg.Body) != "o-0" || first[0].extra.ReviveQueueID != protocol.PopOrderReviveQueue {
		t.Fatalf("first batch %v", first)
	}
	if blocked := pop(2, time.Second); len(blocked) != 0 {
		t.Fatalf("blocked queue gave %d", len(blocked))
	}
	mustCode(t, invoke(t, c, b.Addr(), ackReq("GO", first[1])), protocol.Success) // out of order
	var again []popped
	testutil.Eventually(t, 5*time.Second, func() bool { again = pop(2, time.Minute); return len(again) > 0 }, "unblock")
	if string(again[0].msg.Body) != "o-0" || again[0].msg.ReconsumeTimes != 1 {
		t.Fatalf("after expiry got %s reconsume %d", again[0].msg.Body, again[0].msg.ReconsumeTimes)
	}
	if len(again) != 2 || string(again[1].msg.Body) != "o-2" || again[1].msg.ReconsumeTimes != 0 {
		t.Fatalf("acked o-1 came back or o-2 missing: %v", again)
	}
	for _, p := range again {
		mustCode(t, invoke(t, c, b.Addr(), ackReq("GO", p)), protocol.Success)
	}
	last := pop(2, time.Minute)
	if len(last) != 1 || string(last[0].msg.Body) != "o-3" {
		t.Fatalf("last %v", last)
	}
	if off, _ := b.Offsets.Query("GO", "PopO", 0); off != 3 {
		t.Fatalf("consumer offset %d, want 3", off)
	}
	_ = strconv.Itoa
}

// TestPopPeekNotificationPollingInfo: PEEK reads without consuming;
// NOTIFICATION answers hasMsg at once when there is something to pop and
// is held until an arrival otherwise; POLLING_INFO counts held pops.
func TestPopPeekNotificationPollingInfo(t *testing.T) {
	b := startBroker(t, popTestConfig(t, t.TempDir()))
	c := newClient(t)
	sendN(t, c, b, "PopN", 0, 2, "n")
	peek := func() int {
		h := protocol.PeekMessageRequestHeader{Topic: "PopN", QueueID: -1, MaxMsgNums: 32, ConsumerGroup: "G"}
		resp := invoke(t, c, b.Addr(), protocol.NewRequest(protocol.PeekMessage, protocol.EncodeHeader(&h, false), nil))
		if resp.Code == int32(protocol.PullNotFound) {
			return 0
		}
		mustCode(t, resp, protocol.Success)
		msgs, err := message.DecodeStoredAll(resp.Body, message.DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return len(msgs)
	}
	notify := func(poll time.Duration) (bool, time.Duration) {
		h := protocol.NotificationRequestHeader{ConsumerGroup: "G", Topic: "PopN", QueueID: -1,
			PollTime: poll.Milliseconds(), BornTime: time.Now().UnixMilli()}
		start := time.Now()
		resp := invoke(t, c, b.Addr(), protocol.NewRequest(protocol.Notification, protocol.EncodeHeader(&h, false), nil))
		mustCode(t, resp, protocol.Success)
		return resp.Ext("hasMsg") == "true", time.Since(start)
	}
	if n := peek(); n != 2 {
		t.Fatalf("peek %d", n)
	}
	if has, _ := notify(time.Second); !has {
		t.Fatal("notification: no message reported")
	}
	if got := popAll(t, c, b, "G", "PopN", time.Minute); len(got) != 2 {
		t.Fatalf("peek consumed: pop got %d", len(got))
	}
	if n := peek(); n != 0 {
		t.Fatalf("peek after pop %d", n)
	}
	if has, el := notify(300 * time.Millisecond); has || el < 200*time.Millisecond {
		t.Fatalf("empty notification: has %v after %v", has, el)
	}
	// A held pop shows in POLLING_INFO; an arrival answers it.
	done := make(chan *protocol.Command, 1)
	go func() { done <- invoke(t, c, b.Addr(), popReq("G", "PopN", -1, 32, time.Minute, 5*time.Second, false)) }()
	ph := protocol.PollingInfoRequestHeader{ConsumerGroup: "G", Topic: "PopN", QueueID: -1}
	testutil.Eventually(t, 3*time.Second, func() bool {
		r := invoke(t, c, b.Addr(), protocol.NewRequest(protocol.PollingInfo, protocol.EncodeHeader(&ph, false), nil))
		return r.Code == 0 && r.Ext("pollingNum") == "1"
	}, "held pop not counted")
	sendN(t, c, b, "PopN", 0, 1, "late")
	if resp := <-done; resp.Code != 0 {
		t.Fatalf("held pop: %d %s", resp.Code, resp.Remark)
	}
}

// TestPopBatchAck: BATCH_ACK_MESSAGE acks the bit set's offsets of one
// checkpoint; only the others come back.
func TestPopBatchAck(t *testing.T) {
	b := startBroker(t, popTestConfig(t, t.TempDir()))
	c := newClient(t)
	sendN(t, c, b, "PopBA", 0, 3, "ba")
	got := popAll(t, c, b, "G", "PopBA", 600*time.Millisecond)
	if len(got) != 3 {
		t.Fatalf("popped %d", len(got))
	}
	a := protocol.BatchAck{ConsumerGroup: "G", Topic: "PopBA", Retry: "0", QueueID: 0,
		ReviveQueueID: got[0].extra.ReviveQueueID, PopTime: got[0].extra.PopTime, InvisibleTime: got[0].extra.InvisibleTime}
	if err := a.SetOffsetsFrom(got[0].extra.CkQueueOffset, []int64{got[0].extra.QueueOffset, got[2].extra.QueueOffset}); err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(protocol.BatchAckMessageRequestBody{BrokerName: "broker-a", Acks: []protocol.BatchAck{a}})
	if err != nil {
		t.Fatal(err)
	}
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.BatchAckMessage, nil, body)), protocol.Success)
	var back []popped
	testutil.Eventually(t, 10*time.Second, func() bool {
		back = append(back, popAll(t, c, b, "G", "PopBA", time.Minute)...)
		return len(back) > 0
	}, "redelivery")
	time.Sleep(300 * time.Millisecond)
	back = append(back, popAll(t, c, b, "G", "PopBA", time.Minute)...)
	if len(back) != 1 || string(back[0].msg.Body) != "ba-1" {
		t.Fatalf("after batch ack redelivered %d: %v", len(back), back)
	}
}

// TestPopLowWatermarkWithoutState: the consumer offset table holds each
// popped queue's oldest unacked offset, so a broker without the POP state
// (its pop directory lost) delivers the unacked messages again instead of
// losing them. (Slaves follow the POP state itself: TestPopStateFailover.)
func TestPopLowWatermarkWithoutState(t *testing.T) {
	dir := t.TempDir()
	cfg := popTestConfig(t, dir)
	b, err := New(cfg, testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	c := newClient(t)
	sendN(t, c, b, "PopW", 0, 4, "w")
	got := popAll(t, c, b, "G", "PopW", time.Minute)
	if len(got) != 4 {
		t.Fatalf("popped %d", len(got))
	}
	mustCode(t, invoke(t, c, b.Addr(), ackReq("G", got[0])), protocol.Success)
	testutil.Eventually(t, 5*time.Second, func() bool {
		off, ok := b.Offsets.Query("G", "PopW", 0)
		return ok && off == 1
	}, "low watermark not committed")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "pop")); err != nil {
		t.Fatal(err)
	}
	cfg.ListenPort = 0
	b = startBroker(t, cfg)
	again := popAll(t, c, b, "G", "PopW", time.Minute)
	if len(again) != 3 || string(again[0].msg.Body) != "w-1" {
		t.Fatalf("without POP state popped %d, first %q", len(again), again[0].msg.Body)
	}
}
