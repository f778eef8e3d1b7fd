package client

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

// TestTraceRecordRoundTrip: every record type survives encode/decode in
// RocketMQ's field order (docs/broker.md §1.15).
func TestTraceRecordRoundTrip(t *testing.T) {
	records := []TraceRecord{
		{Type: TracePub, Timestamp: 1700000000123, RegionID: "DefaultRegion", Group: "pg", Topic: "T", MsgID: "AC11000100002A9F0000000000000001",
			Tags: "TagA", Keys: "k1 k2", StoreHost: "127.0.0.1:10911", BodyLength: 11, CostMs: 3, MsgType: TraceMsgNormal,
			OffsetMsgID: "7F00000100002A9F0000000000000000", Success: true, ClientHost: "10.0.0.1"},
		{Type: TraceSubBefore, Timestamp: 1700000000200, RegionID: "DefaultRegion", Group: "cg", RequestID: "R1",
			MsgID: "AC11000100002A9F0000000000000001", RetryTimes: 2, Keys: "k1", ClientHost: "10.0.0.2"},
		{Type: TraceSubAfter, RequestID: "R1", MsgID: "AC11000100002A9F0000000000000001", CostMs: 7, Success: false,
			ContextCode: traceContextFailed, Timestamp: 1700000000207, Group: "cg"},
		{Type: TraceEndTransaction, Timestamp: 1700000000300, RegionID: "r", Group: "pg", Topic: "T", MsgID: "M",
			Tags: "t", Keys: "k", StoreHost: "127.0.0.1:10911", MsgType: TraceMsgTransCommit, TransactionID: "X",
			TransactionState: "COMMIT_MESSAGE", FromTransactionCheck: true},
	}
	var body []byte
	for i := range records {
		body = AppendTraceRecord(body, &records[i])
	}
	got := DecodeTraceRecords(body)
	// Topic is not part of Sub records on the wire.
	if !reflect.DeepEqual(got, records) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, records)
	}
	if strings.Count(string(body), "\x02") != len(records) {
		t.Fatalf("body has %d record separators", strings.Count(string(body), "\x02"))
	}
}

// TestTraceDecodeForeignLayouts decodes hand-written records in the
// layouts the Java and Go clients write, including Java's 14-field Pub and
// "null" keys.
func TestTraceDecodeForeignLayouts(t *testing.T) {
	f := func(fields ...string) string { return strings.Join(fields, "\x01") + "\x02" }
	body := f("Pub", "1700000000000", "DefaultRegion", "pg", "T", "MSGID1", "tag", "key1", "127.0.0.1:10911", "5", "2", "0", "OFFID", "true") +
		f("SubBefore", "1700000000100", "DefaultRegion", "cg", "REQ", "MSGID1", "0", "null") +
		f("SubAfter", "REQ", "MSGID1", "4", "true", "null", "0") +
		f("Bogus", "1") + f("Pub", "short") + "\n"
	got := DecodeTraceRecords([]byte(body))
	if len(got) != 3 {
		t.Fatalf("decoded %d records: %+v", len(got), got)
	}
	if got[0].Type != TracePub || got[0].MsgID != "MSGID1" || !got[0].Success || got[0].ClientHost != "" || got[0].StoreHost != "127.0.0.1:10911" {
		t.Fatalf("Pub = %+v", got[0])
	}
	if got[1].Keys != "" || got[1].RequestID != "REQ" || got[2].CostMs != 4 || !got[2].Success || got[2].Group != "" {
		t.Fatalf("Sub records = %+v %+v", got[1], got[2])
	}
}

func TestTraceSeparatorsInValuesAreReplaced(t *testing.T) {
	r := TraceRecord{Type: TracePub, Topic: "T", MsgID: "M", Keys: "a\x01b\x02c", Success: true}
	got := DecodeTraceRecords(AppendTraceRecord(nil, &r))
	if len(got) != 1 || got[0].Keys != "a b c" || got[0].Topic != "T" {
		t.Fatalf("decoded %+v", got)
	}
}

func TestTraceBatchKeys(t *testing.T) {
	var b traceBatch
	full := false
	for i := range traceBatchRecords {
		full = b.add(&TraceRecord{Type: TracePub, MsgID: "ID" + strings.Repeat("x", i%3), Keys: "k1 k2"})
	}
	if !full {
		t.Fatal("batch of traceBatchRecords records not full")
	}
	keys := b.keyList()
	if strings.Join(keys, ",") != "ID,IDx,IDxx,k1,k2" {
		t.Fatalf("keys = %v", keys)
	}
	if len(DecodeTraceRecords(b.body)) != traceBatchRecords {
		t.Fatal("batch body does not decode")
	}
	b.reset()
	if !b.empty() {
		t.Fatal("reset batch not empty")
	}
}

// TestTracerNeverBlocks: with no goroutine draining it, a tracer's queue
// fills and further records are dropped and counted instead of blocking.
func TestTracerNeverBlocks(t *testing.T) {
	cfg := defaultClientConfig()
	tr := newTracer("", &cfg)
	tr.started = true // pretend: no goroutine reads the queue
	for range traceQueueSize + 10 {
		tr.add(TraceRecord{Type: TracePub, MsgID: "M"})
	}
	if tr.dropped.Load() != 10 {
		t.Fatalf("dropped = %d, want 10", tr.dropped.Load())
	}
	if tr.topic != DefaultTraceTopic {
		t.Fatalf("topic = %q", tr.topic)
	}
}

func FuzzDecodeTraceRecords(f *testing.F) {
	r := TraceRecord{Type: TracePub, MsgID: "M", Keys: "k", Success: true}
	f.Add(AppendTraceRecord(nil, &r))
	f.Add([]byte("SubAfter\x01R\x01M\x011\x01true\x01null\x010\x02"))
	f.Add([]byte("SubBefore\x01\x01\x01\x01\x01\x01\x01\x01\x02Pub"))
	f.Fuzz(func(t *testing.T, body []byte) {
		recs := DecodeTraceRecords(body)
		// Re-encoding what was decoded decodes to the same records.
		var again []byte
		for i := range recs {
			again = AppendTraceRecord(again, &recs[i])
		}
		if got := DecodeTraceRecords(again); len(got) != len(recs) {
			t.Fatalf("re-decoded %d records, want %d", len(got), len(recs))
		}
	})
}

func TestTraceEndTransactionRecord(t *testing.T) {
	cfg := defaultClientConfig()
	tr := newTracer("", &cfg)
	tr.started = true // no goroutine: read the queue directly
	p := &Producer{group: "pg", cfg: producerConfig{hooks: []Hook{tr}}}
	msg := NewMessage("T", []byte("x")).WithTag("t").WithKeys("k")
	p.traceEndTransaction(msg, &SendResult{MsgID: "M", TransactionID: "X", RegionID: "r"}, "127.0.0.1:10911", TransactionCommit, true)
	r := <-tr.records
	want := TraceRecord{Type: TraceEndTransaction, Timestamp: r.Timestamp, RegionID: "r", Group: "pg", Topic: "T", MsgID: "M",
		Tags: "t", Keys: "k", StoreHost: "127.0.0.1:10911", MsgType: TraceMsgTransCommit, TransactionID: "X",
		TransactionState: "COMMIT_MESSAGE", FromTransactionCheck: true, ClientHost: r.ClientHost}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("record %+v\nwant %+v", r, want)
	}
	if got := DecodeTraceRecords(AppendTraceRecord(nil, &r)); len(got) != 1 || got[0].TransactionState != "COMMIT_MESSAGE" {
		t.Fatalf("round trip %+v", got)
	}
}

// TestTracePubRecords: a successful send gives a Pub record with the
// result's ids and region; a broker with traceOn=false is not traced.
func TestTracePubRecords(t *testing.T) {
	cfg := defaultClientConfig()
	tr := newTracer("", &cfg)
	tr.started = true
	msg := NewMessage("T", []byte("body")).WithTag("t").WithKeys("k").WithDelayLevel(2)
	sc := &SendContext{ProducerGroup: "pg", Message: msg, BrokerAddr: "b:1", Latency: 3e6,
		Result: &SendResult{MsgID: "M1", OffsetMsgID: "O1", RegionID: "r", TraceOn: true}}
	tr.OnAfterSend(context.Background(), sc)
	r := <-tr.records
	if r.Type != TracePub || r.MsgID != "M1" || r.OffsetMsgID != "O1" || r.RegionID != "r" || r.CostMs != 3 ||
		r.StoreHost != "b:1" || r.BodyLength != 4 || !r.Success || r.MsgType != TraceMsgDelay || r.Keys != "k" || r.Tags != "t" {
		t.Fatalf("Pub record %+v", r)
	}
	sc.Result.TraceOn = false
	tr.OnAfterSend(context.Background(), sc)
	if len(tr.records) != 0 {
		t.Fatal("traced a send to a broker with traceOn=false")
	}
	// Records of the trace topic itself are never traced.
	tr.OnAfterSend(context.Background(), &SendContext{Message: NewMessage(DefaultTraceTopic, nil), Result: &SendResult{MsgID: "X", TraceOn: true}})
	if len(tr.records) != 0 {
		t.Fatal("traced a trace message")
	}
}
