package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/store"
	"github.com/apogeemq/apogee/internal/testutil"
)

// txnTimerCommit commits every local transaction.
type txnTimerCommit struct{}

func (txnTimerCommit) ExecuteLocalTransaction(context.Context, *client.Message, any) client.LocalTransactionState {
	return client.TransactionCommit
}

func (txnTimerCommit) CheckLocalTransaction(context.Context, *client.MessageExt) client.LocalTransactionState {
	return client.TransactionCommit
}

// TestTransactionCommitHonoursTimer: a transactional message with a
// delivery time (TIMER_DELIVER_MS, Apogee SDK WithDeliverTime) that is
// committed reaches consumers only at its delivery time, through the timer
// wheel, while an untimed committed message is consumed at once; the
// producer's trace has an EndTransaction record for it.
func TestTransactionCommitHonoursTimer(t *testing.T) {
	c := startCluster(t, func(cfg *broker.Config) { cfg.TraceTopicEnable = true })
	waitRoute(t, c.ns, client.DefaultTraceTopic)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 2)
	p := newSDKProducer(t, c.nsAddr, client.WithTransactionListener(txnTimerCommit{}), client.WithTrace(""))
	r := newReceived()
	newPushConsumer(t, c.nsAddr, uniqueName(t, "cg"), topic, "*", r)
	ctx := testutil.Context(t, 60*time.Second)

	deliverAt := time.Now().Add(3 * time.Second)
	timed, err := p.SendInTransaction(ctx, client.NewMessage(topic, []byte("timed")).WithDeliverTime(deliverAt), nil)
	if err != nil || timed.LocalState != client.TransactionCommit {
		t.Fatalf("timed: %+v %v", timed, err)
	}
	plain, err := p.SendInTransaction(ctx, client.NewMessage(topic, []byte("plain")), nil)
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*time.Second, func() bool { _, ok := r.get(plain.MsgID); return ok }, "untimed committed message not consumed")
	if _, ok := r.get(timed.MsgID); ok && time.Now().Before(deliverAt) {
		t.Fatalf("timed committed message consumed before its delivery time")
	}
	testutil.Eventually(t, 20*time.Second, func() bool { _, ok := r.get(timed.MsgID); return ok }, "timed committed message not consumed")
	m, _ := r.get(timed.MsgID)
	if m.StoreTimestamp < deliverAt.UnixMilli() {
		t.Errorf("timed message stored %d ms before its delivery time", deliverAt.UnixMilli()-m.StoreTimestamp)
	}
	if string(m.Body) != "timed" || m.GetProperty("TIMER_OUT_MS") == "" {
		t.Errorf("timed message body %q props %v", m.Body, m.GetProperties())
	}

	// The EndTransaction trace record of the timed message is in the trace
	// topic (read straight from the broker's store).
	testutil.Eventually(t, 20*time.Second, func() bool {
		for _, rec := range traceTopicRecords(c.b.Store) {
			if rec.Type == client.TraceEndTransaction && rec.MsgID == timed.MsgID &&
				rec.TransactionState == "COMMIT_MESSAGE" && !rec.FromTransactionCheck {
				return true
			}
		}
		return false
	}, "no EndTransaction trace record for %s", timed.MsgID)
}

// traceTopicRecords decodes every trace record stored in the trace topic.
func traceTopicRecords(st *store.Store) []client.TraceRecord {
	var out []client.TraceRecord
	for q := int32(0); q < 16; q++ {
		for off := int64(0); off < st.MaxOffsetInQueue(client.DefaultTraceTopic, q); {
			res := st.GetMessage("txn-timer-test", client.DefaultTraceTopic, q, off, 32, 0, nil)
			if res.Status != store.Found {
				break
			}
			for _, raw := range res.Messages {
				if m, _, err := message.DecodeStored(raw, message.DecodeOptions{Decompress: true}); err == nil {
					out = append(out, client.DecodeTraceRecords(m.Body)...)
				}
			}
			off = res.NextBeginOffset
		}
	}
	return out
}
