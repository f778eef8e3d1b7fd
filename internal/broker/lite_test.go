package broker

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/lite"
	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

func liteSend(name, body string) map[string]string {
	return map[string]string{message.PropertyLiteTopic: name, "UNIQ_KEY": body}
}

// TestLiteTopicLifecycle: a send to a LITE parent creates the lite topic
// (its own queue, no topics.json entry) and POP reads it in FIFO mode; a
// send without a lite topic, a bad name and a new lite topic past
// maxLmqConsumeQueueNum are refused; an idle lite topic expires after the
// parent's lite.topic.expiration; a restart brings back the rest.
func TestLiteTopicLifecycle(t *testing.T) {
	dir := t.TempDir()
	cfg := popTestConfig(t, dir)
	cfg.MaxLmqConsumeQueueNum = 3
	cfg.MinLiteTTl = 0
	cfg.LiteTtlCheckInterval = 3600 * 1000 // expiry runs when the test asks
	cfg.LiteExpirationUnitMs = 1
	var skew atomic.Int64
	b, err := New(cfg, testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	b.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) } // before Start: goroutines read it
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	c := newClient(t)
	createTypedTopic(t, c, b, "Parent", 1, "+message.type=LITE,+lite.topic.expiration=100000")
	createTypedTopic(t, c, b, "Forever", 1, "+message.type=LITE")

	for i := range 3 {
		mustCode(t, invoke(t, c, b.Addr(), sendReq("Parent", -1, []byte(fmt.Sprint("a", i)), liteSend("a", fmt.Sprint("a", i)))), protocol.Success)
	}
	mustCode(t, invoke(t, c, b.Addr(), sendReq("Parent", -1, []byte("b0"), liteSend("b", "b0"))), protocol.Success)
	mustCode(t, invoke(t, c, b.Addr(), sendReq("Forever", -1, []byte("f0"), liteSend("f", "f0"))), protocol.Success)
	qa, qb := lite.QueueName("Parent", "a"), lite.QueueName("Parent", "b")
	waitDispatched(t, b, qa, 0, 3)
	waitDispatched(t, b, qb, 0, 1)
	if b.Topics.Contains(qa) || len(b.Topics.Names()) == 0 {
		t.Fatal("a lite topic entered the topic table")
	}
	for _, tc := range []struct {
		topic string
		props map[string]string
		code  protocol.ResponseCode
		rem   string
	}{
		{"Parent", map[string]string{}, protocol.MessageIllegal, ""},
		{"Parent", liteSend("bad/name", "x"), protocol.MessageIllegal, ""},
		{"Parent", liteSend("c", "c0"), protocol.SystemError, liteQuotaRemark}, // a, b, f exist: quota 3
	} {
		resp := invoke(t, c, b.Addr(), sendReq(tc.topic, -1, []byte("x"), tc.props))
		if protocol.ResponseCode(resp.Code) != tc.code || !strings.HasPrefix(resp.Remark, tc.rem) {
			t.Errorf("send %v: code %d %q, want %d %q", tc.props, resp.Code, resp.Remark, tc.code, tc.rem)
		}
	}

	// Admin: the parent's count and names, one lite topic's offsets, the
	// broker's totals.
	var pi protocol.GetParentTopicInfoResponseBody
	resp := invoke(t, c, b.Addr(), protocol.NewRequest(protocol.GetParentTopicInfo, map[string]string{"topic": "Parent"}, nil))
	mustCode(t, resp, protocol.Success)
	if err := json.Unmarshal(resp.Body, &pi); err != nil || pi.LiteTopicCount != 2 || pi.TTL != 100000 ||
		strings.Join(pi.LiteTopics, ",") != "a,b" || pi.LmqNum != 3 {
		t.Fatalf("parent topic info %s: %+v %v", resp.Body, pi, err)
	}
	var li protocol.GetLiteTopicInfoResponseBody
	resp = invoke(t, c, b.Addr(), protocol.NewRequest(protocol.GetLiteTopicInfo, map[string]string{"parentTopic": "Parent", "liteTopic": "a"}, nil))
	mustCode(t, resp, protocol.Success)
	if err := json.Unmarshal(resp.Body, &li); err != nil || li.TopicOffset.MaxOffset != 3 || li.TopicOffset.LastUpdateTimestamp <= 0 {
		t.Fatalf("lite topic info %s: %v", resp.Body, err)
	}
	var bi protocol.GetBrokerLiteInfoResponseBody
	resp = invoke(t, c, b.Addr(), protocol.NewRequest(protocol.GetBrokerLiteInfo, nil, nil))
	mustCode(t, resp, protocol.Success)
	if err := json.Unmarshal(resp.Body, &bi); err != nil || bi.CurrentLmqNum != 3 || bi.MaxLmqNum != 3 || bi.TopicMeta["Forever"] != 1 {
		t.Fatalf("broker lite info %s: %v", resp.Body, err)
	}
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.GetLiteTopicInfo, map[string]string{"parentTopic": "Parent", "liteTopic": "zz"}, nil)), protocol.TopicNotExist)
	createTypedTopic(t, c, b, "PlainT", 1, "")
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.GetParentTopicInfo, map[string]string{"topic": "PlainT"}, nil)), protocol.InvalidParameter)

	// FIFO pop of the lite topic's queue: in order, then blocked until acked.
	resp = invoke(t, c, b.Addr(), popReq("g", qa, 0, 32, time.Minute, 0, true))
	got := decodePop(t, resp, "g", cfg.BrokerName)
	if len(got) != 3 || string(got[0].msg.Body) != "a0" || string(got[2].msg.Body) != "a2" ||
		got[0].msg.Properties[message.PropertyLiteTopic] != "a" {
		t.Fatalf("pop lite topic a: %d messages", len(got))
	}
	for _, p := range got {
		mustCode(t, invoke(t, c, b.Addr(), ackReq("g", p)), protocol.Success)
	}

	// Expiry: a and b were written long before now + 100000 units of 1 ms.
	skew.Store(int64(time.Hour))
	if n := b.lite.expireOnce(); n != 2 {
		t.Fatalf("expired %d lite topics, want 2 (a, b; f never expires)", n)
	}
	if _, ok := b.Topics.Get(qa); ok {
		t.Fatal("expired lite topic still answers Get")
	}
	mustCode(t, invoke(t, c, b.Addr(), popReq("g", qa, 0, 32, time.Minute, 0, true)), protocol.TopicNotExist)
	// The quota has room again; c is created.
	mustCode(t, invoke(t, c, b.Addr(), sendReq("Parent", -1, []byte("c0"), liteSend("c", "c0"))), protocol.Success)
	waitDispatched(t, b, lite.QueueName("Parent", "c"), 0, 1)
	if b.lite.registry.Count("Parent") != 1 || b.lite.registry.Count("Forever") != 1 {
		t.Fatalf("counts %v", b.lite.registry.Parents())
	}
	skew.Store(0)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b2, err := New(cfg, testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := b2.Start(); err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if got := b2.lite.registry.Parents(); got["Parent"] != 1 || got["Forever"] != 1 || len(got) != 2 {
		t.Fatalf("restored %v", got)
	}
	// lite-restore replaces the start time with c's real last write.
	testutil.Eventually(t, 10*time.Second, func() bool {
		lw, ok := b2.lite.registry.LastWrite(lite.QueueName("Parent", "c"))
		return ok && lw < b2.lite.started.UnixMilli()
	}, "restored lite topic keeps the start time")
	resp = invoke(t, c, b2.Addr(), popReq("g", lite.QueueName("Parent", "c"), 0, 32, time.Minute, 0, true))
	if got := decodePop(t, resp, "g", cfg.BrokerName); len(got) != 1 || string(got[0].msg.Body) != "c0" {
		t.Fatalf("pop c after restart: %d", len(got))
	}
}
