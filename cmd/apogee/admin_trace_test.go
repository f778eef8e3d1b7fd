package main

import (
	"testing"

	"github.com/apogeemq/apogee/client"
)

// TestTraceViews pairs SubBefore/SubAfter by request id (also the older
// Java SubAfter without a timestamp), orders steps by time and gives
// consumes the send's topic.
func TestTraceViews(t *testing.T) {
	recs := []client.TraceRecord{
		{Type: client.TraceSubAfter, RequestID: "R2", MsgID: "M", CostMs: 5, Success: false, Timestamp: 0},
		{Type: client.TraceSubBefore, RequestID: "R2", MsgID: "M", Group: "g2", ClientHost: "h2", Timestamp: 3000, RetryTimes: 1},
		{Type: client.TraceSubBefore, RequestID: "R1", MsgID: "M", Group: "g1", ClientHost: "h1", Timestamp: 2000},
		{Type: client.TracePub, MsgID: "M", Group: "pg", Topic: "T", StoreHost: "b:1", ClientHost: "p", Timestamp: 1000, CostMs: 2, Success: true},
		{Type: client.TraceSubAfter, RequestID: "R1", MsgID: "M", CostMs: 7, Success: true, Timestamp: 2007},
	}
	v := traceViews(recs)
	if len(v) != 3 {
		t.Fatalf("views = %+v", v)
	}
	if v[0].Type != "Pub" || v[0].StoreHost != "b:1" || v[0].Status != "success" {
		t.Fatalf("first = %+v", v[0])
	}
	if v[1].Group != "g1" || v[1].Status != "success" || v[1].CostMs != 7 || v[1].Topic != "T" || v[1].ClientHost != "h1" {
		t.Fatalf("second = %+v", v[1])
	}
	if v[2].Group != "g2" || v[2].Status != "failed" || v[2].RetryTimes != 1 || v[2].Time != 3000 {
		t.Fatalf("third = %+v", v[2])
	}
	// A SubBefore without its SubAfter is still consuming.
	v = traceViews(recs[1:2])
	if len(v) != 1 || v[0].Status != "consuming" {
		t.Fatalf("lone SubBefore = %+v", v)
	}
}
