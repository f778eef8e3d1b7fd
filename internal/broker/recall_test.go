package broker

import (
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

func recallReq(topic, handle string) *protocol.Command {
	h := protocol.RecallMessageRequestHeader{ProducerGroup: "pg", Topic: topic, RecallHandle: handle}
	return protocol.NewRequest(protocol.RecallMessage, protocol.EncodeHeader(&h, false), nil)
}

// TestRecallTimerMessage: a timer message's send result carries a recall
// handle; RECALL_MESSAGE with it cancels the message, which is then never
// delivered, while a message sent alongside and not recalled is; bad
// handles get ILLEGAL_OPERATION (docs/grpc.md §11).
func TestRecallTimerMessage(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.TimerPrecisionMs = 100
	cfg.TimerFlushIntervalMs = 100
	cfg.MappedFileSizeTimerLog = 64 << 10
	b := startBroker(t, cfg)
	c := newClient(t)
	send := func(body, id string) *protocol.Command {
		resp := invoke(t, c, b.Addr(), sendReq("RecallT", 0, []byte(body), map[string]string{"TIMER_DELAY_MS": "1500", "UNIQ_KEY": id}))
		mustCode(t, resp, protocol.Success)
		return resp
	}
	recalled := send("recalled", "AC110001000000000000000000000001")
	kept := send("kept", "AC110001000000000000000000000002")
	handle := recalled.Ext("recallHandle")
	rh, err := protocol.ParseRecallHandle(handle)
	if err != nil || rh.Topic != "RecallT" || rh.BrokerName != "broker-a" || rh.MessageID != "AC110001000000000000000000000001" {
		t.Fatalf("recall handle %q: %+v %v", handle, rh, err)
	}
	if kept.Ext("recallHandle") == "" {
		t.Fatal("second timer message has no recall handle")
	}
	// A plain message has none.
	if h := invoke(t, c, b.Addr(), sendReq("RecallT", 1, []byte("now"), nil)).Ext("recallHandle"); h != "" {
		t.Fatalf("plain message has recall handle %q", h)
	}
	for _, tc := range []struct {
		name, topic, handle string
		want                protocol.ResponseCode
	}{
		{"garbage", "RecallT", "!!!", protocol.IllegalOperation},
		{"other topic", "TBW102", handle, protocol.IllegalOperation},
		{"unknown topic", "NoSuchTopic", handle, protocol.TopicNotExist},
		{"other broker", "RecallT", protocol.EncodeRecallHandle(protocol.RecallHandle{Topic: "RecallT", BrokerName: "x", DeliverTimeMs: rh.DeliverTimeMs, MessageID: "m"}), protocol.IllegalOperation},
		{"past", "RecallT", protocol.EncodeRecallHandle(protocol.RecallHandle{Topic: "RecallT", BrokerName: "broker-a", DeliverTimeMs: 1, MessageID: "m"}), protocol.IllegalOperation},
	} {
		t.Run(tc.name, func(t *testing.T) { mustCode(t, invoke(t, c, b.Addr(), recallReq(tc.topic, tc.handle)), tc.want) })
	}
	resp := invoke(t, c, b.Addr(), recallReq("RecallT", handle))
	mustCode(t, resp, protocol.Success)
	if resp.Ext("msgId") != rh.MessageID {
		t.Fatalf("recall msgId %q", resp.Ext("msgId"))
	}
	// The kept one arrives; the recalled one never does.
	testutil.Eventually(t, 5*time.Second, func() bool { return b.Store.MaxOffsetInQueue("RecallT", 0) >= 1 }, "kept timer message")
	time.Sleep(500 * time.Millisecond)
	if n := b.Store.MaxOffsetInQueue("RecallT", 0); n != 1 {
		t.Fatalf("queue 0 holds %d messages, want only the kept one", n)
	}
	gr := b.Store.GetMessage("g", "RecallT", 0, 0, 4, 0, nil)
	if len(gr.Messages) != 1 {
		t.Fatalf("got %d", len(gr.Messages))
	}
	if m := decodeOne(t, gr.Messages[0]); string(m.Body) != "kept" {
		t.Fatalf("delivered %q", m.Body)
	}
	if b.Store.MaxOffsetInQueue(names.TopicTimerWheel, 0) != 3 {
		t.Fatalf("timer topic holds %d records, want 2 timers + 1 delete", b.Store.MaxOffsetInQueue(names.TopicTimerWheel, 0))
	}
	b.cfg.RecallMessageEnable = false
	mustCode(t, invoke(t, c, b.Addr(), recallReq("RecallT", kept.Ext("recallHandle"))), protocol.NoPermission)
}

func decodeOne(t *testing.T, rec []byte) *message.Ext {
	t.Helper()
	m, _, err := message.DecodeStored(rec, message.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
