package broker

import (
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/testutil"
)

// sendHalfAndCommit sends a prepared message to topic/queue 1 with props and
// commits it with END_TRANSACTION; it returns the commit's response.
func sendHalfAndCommit(t *testing.T, b *Broker, c *remoting.Client, topic string, props map[string]string) *protocol.Command {
	t.Helper()
	p := map[string]string{message.PropertyTransactionPrepared: "true", message.PropertyProducerGroup: "pg"}
	for k, v := range props {
		p[k] = v
	}
	mustCode(t, invoke(t, c, b.Addr(), sendReq(topic, 1, []byte("txn"), p)), protocol.Success)
	waitDispatched(t, b, names.TopicTransHalf, 0, 1)
	res := b.Store.GetMessage("g", names.TopicTransHalf, 0, 0, 1, 0, nil)
	if len(res.Messages) != 1 {
		t.Fatalf("half message not readable: %v", res.Status)
	}
	half, _, err := message.DecodeStored(res.Messages[0], message.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if half.Properties[message.PropertyRealTopic] != topic {
		t.Fatalf("half message REAL_TOPIC %q, want %q (topic %s)", half.Properties[message.PropertyRealTopic], topic, half.Topic)
	}
	h := protocol.EndTransactionRequestHeader{
		ProducerGroup: "pg", TranStateTableOffset: half.QueueOffset, CommitLogOffset: half.CommitLogOffset,
		CommitOrRollback: message.SysFlagTransactionCommitType,
	}
	return invoke(t, c, b.Addr(), protocol.NewRequest(protocol.EndTransaction, protocol.EncodeHeader(&h, false), nil))
}

// TestCommittedTransactionHonoursTimer: a committed transactional message
// carrying TIMER_DELAY_MS goes through the timer wheel like a plain send:
// it reaches its real topic only after the delay (measured from the
// commit), with TIMER_OUT_MS set, and the half message is resolved.
func TestCommittedTransactionHonoursTimer(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.TimerPrecisionMs = 100
	cfg.TimerFlushIntervalMs = 100
	cfg.MappedFileSizeTimerLog = 64 << 10
	b := startBroker(t, cfg)
	c := newClient(t)
	const delay = 1500 * time.Millisecond
	committed := time.Now()
	resp := sendHalfAndCommit(t, b, c, "TxTimer", map[string]string{"TIMER_DELAY_MS": "1500", "TAGS": "t"})
	mustCode(t, resp, protocol.Success)
	waitDispatched(t, b, names.TopicTimerWheel, 0, 1)
	if n := b.Store.MaxOffsetInQueue("TxTimer", 1); n != 0 {
		t.Fatalf("committed timer message delivered at once (%d in TxTimer/1)", n)
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return b.Store.MaxOffsetInQueue("TxTimer", 1) == 1 }, "timer delivery")
	// Slots are on the precision grid: a delivery may come up to one
	// precision step before the exact time.
	if d := time.Since(committed); d < delay-time.Duration(cfg.TimerPrecisionMs)*time.Millisecond {
		t.Fatalf("delivered %v after the commit, before the %v delay", d, delay)
	}
	resp = invoke(t, c, b.Addr(), pullReq("g", "TxTimer", 1, 0, protocol.PullFlagSubscription, 0, "*"))
	mustCode(t, resp, protocol.Success)
	m, _, err := message.DecodeStored(resp.Body, message.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Body) != "txn" || m.Properties["TIMER_OUT_MS"] == "" || m.Properties[message.PropertyRealTopic] != "" ||
		m.Properties[message.PropertyTransactionPrepared] != "" || m.Tags() != "t" {
		t.Fatalf("delivered %q props %v", m.Body, m.Properties)
	}
	if tt := message.TransactionType(m.SysFlag); tt != message.SysFlagTransactionCommitType {
		t.Fatalf("delivered message transaction type %#x, want commit", tt)
	}
	waitDispatched(t, b, names.TopicTransOpHalf, 0, 1) // the half message is resolved
}

// TestCommittedTransactionTimerRefused: with the timer wheel disabled the
// commit of a timer message is refused like the send would be
// (SYSTEM_ERROR), nothing reaches the real topic and the half message stays
// unresolved (no op record) for the check service.
func TestCommittedTransactionTimerRefused(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.TimerWheelEnable = false
	b := startBroker(t, cfg)
	c := newClient(t)
	resp := sendHalfAndCommit(t, b, c, "TxTimerOff", map[string]string{"TIMER_DELAY_SEC": "5"})
	mustCode(t, resp, protocol.SystemError)
	if n := b.Store.MaxOffsetInQueue("TxTimerOff", 1); n != 0 {
		t.Fatalf("refused commit delivered (%d)", n)
	}
	if n := b.Store.MaxOffsetInQueue(names.TopicTransOpHalf, 0); n != 0 {
		t.Fatalf("refused commit wrote %d op records", n)
	}
}
