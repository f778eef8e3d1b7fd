package client

import (
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/testutil"
	"github.com/apogeemq/apogee/internal/testutil/fakebroker"
)

// traceRecordsSent decodes every trace record the fake broker received on
// the trace topic.
func traceRecordsSent(t *testing.T, b *fakebroker.Broker) []TraceRecord {
	t.Helper()
	sends := b.Sends()
	var out []TraceRecord
	for _, req := range sends {
		if sendHeader(t, req).Topic == DefaultTraceTopic {
			out = append(out, DecodeTraceRecords(req.Body)...)
		}
	}
	return out
}

// TestTransactionEndTransactionTrace: with WithTrace, END_TRANSACTION (after
// the local transaction, and when answering a broker's check) writes an
// EndTransaction trace record to the trace topic with the message id,
// transaction id, state, broker and fromTransactionCheck.
func TestTransactionEndTransactionTrace(t *testing.T) {
	b := newFakeBroker(t, "broker-a")
	b.Serve("T", b)
	b.Serve(DefaultTraceTopic, b)
	l := &txListener{state: TransactionRollback, checked: make(chan *MessageExt, 1)}
	p := startProducer(t, b.Addr(), WithTransactionListener(l), WithTrace(""))
	ctx := testutil.Context(t, 10*time.Second)
	res, err := p.SendInTransaction(ctx, NewMessage("T", []byte("tx")).WithTag("tg").WithKeys("k1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	find := func(fromCheck bool) (TraceRecord, bool) {
		for _, r := range traceRecordsSent(t, b) {
			if r.Type == TraceEndTransaction && r.FromTransactionCheck == fromCheck {
				return r, true
			}
		}
		return TraceRecord{}, false
	}
	testutil.Eventually(t, 5*time.Second, func() bool { _, ok := find(false); return ok }, "no EndTransaction trace record")
	r, _ := find(false)
	if r.MsgID != res.MsgID || r.TransactionID != res.TransactionID || r.TransactionState != "ROLLBACK_MESSAGE" ||
		r.Topic != "T" || r.Tags != "tg" || r.Keys != "k1" || r.Group != "pg" || r.StoreHost != b.Addr() ||
		r.MsgType != TraceMsgTransCommit {
		t.Fatalf("EndTransaction record %+v (send result %+v)", r, res)
	}

	// A broker check answered by the listener (commit) is traced too.
	m := &MessageExt{Message: *NewMessage("T", []byte("tx")).WithTag("tg"), MsgID: "UNIQ-1"}
	m.Properties["UNIQ_KEY"] = "UNIQ-1"
	m.Properties["__transactionId__"] = "TX-1"
	p.tx.check(txCheck{brokerAddr: b.Addr(), msg: m,
		header: map[string]string{"tranStateTableOffset": "5", "commitLogOffset": "1234", "msgId": "UNIQ-1"}})
	testutil.Eventually(t, 5*time.Second, func() bool { _, ok := find(true); return ok }, "no EndTransaction trace record for the check")
	r, _ = find(true)
	if r.MsgID != "UNIQ-1" || r.TransactionID != "TX-1" || r.TransactionState != "COMMIT_MESSAGE" || r.Topic != "T" ||
		r.StoreHost != b.Addr() {
		t.Fatalf("check EndTransaction record %+v", r)
	}
}
