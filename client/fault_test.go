package client

import (
	"testing"
	"time"
)

// TestIsolationTable: the 4.x MQFaultStrategy table of the brief and
// docs/broker.md §4.2 (latency >= 50/100/550/1000/2000/3000/15000 ms
// -> 0/0/30/60/120/180/600 s).
func TestIsolationTable(t *testing.T) {
	tests := []struct {
		latency time.Duration
		want    time.Duration
	}{
		{0, 0},
		{49 * time.Millisecond, 0},
		{50 * time.Millisecond, 0},
		{549 * time.Millisecond, 0},
		{550 * time.Millisecond, 30 * time.Second},
		{999 * time.Millisecond, 30 * time.Second},
		{time.Second, 60 * time.Second},
		{2 * time.Second, 120 * time.Second},
		{3 * time.Second, 180 * time.Second},
		{14 * time.Second, 180 * time.Second},
		{15 * time.Second, 600 * time.Second},
		{isolationLatency, 600 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.latency.String(), func(t *testing.T) {
			if got := isolationFor(tc.latency); got != tc.want {
				t.Fatalf("isolationFor(%v) = %v, want %v", tc.latency, got, tc.want)
			}
		})
	}
}

func pqueues(brokers ...string) []MessageQueue {
	var qs []MessageQueue
	for _, b := range brokers {
		for i := 0; i < 4; i++ {
			qs = append(qs, MessageQueue{Topic: "T", BrokerName: b, QueueID: i})
		}
	}
	return qs
}

func TestSelectQueueAvoidsLastBroker(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		f := newFaultStrategy(enabled)
		qs := pqueues("a", "b")
		for range 100 {
			if q := f.selectQueue(qs, "a"); q.BrokerName != "b" {
				t.Fatalf("enabled=%v: picked %v after a failure on a", enabled, q)
			}
		}
		// One broker only: it is picked anyway.
		if q := f.selectQueue(pqueues("a"), "a"); q.BrokerName != "a" {
			t.Fatalf("single broker: %v", q)
		}
	}
}

func TestSelectQueueRoundRobin(t *testing.T) {
	f := newFaultStrategy(false)
	qs := pqueues("a", "b")
	seen := map[MessageQueue]int{}
	for range len(qs) * 10 {
		seen[f.selectQueue(qs, "")]++
	}
	for _, q := range qs {
		if seen[q] != 10 {
			t.Fatalf("queue %v picked %d times, want 10 (%v)", q, seen[q], seen)
		}
	}
}

func TestFaultIsolationAndRecovery(t *testing.T) {
	now := time.Unix(1000, 0)
	f := newFaultStrategy(true)
	f.now = func() time.Time { return now }
	qs := pqueues("a", "b")

	f.update("b", 0, true, false) // failure: isolated 600 s
	if f.available("b") || !f.available("a") {
		t.Fatal("b should be isolated, a available")
	}
	for range 50 {
		if q := f.selectQueue(qs, ""); q.BrokerName != "a" {
			t.Fatalf("picked isolated broker: %v", q)
		}
	}
	now = now.Add(599 * time.Second)
	if f.available("b") {
		t.Fatal("b available before 600 s")
	}
	now = now.Add(time.Second)
	if !f.available("b") {
		t.Fatal("b still isolated after 600 s")
	}
	// A slow answer (700 ms) isolates for 30 s; a fast one clears it.
	f.update("a", 700*time.Millisecond, false, false)
	if f.available("a") {
		t.Fatal("a should be isolated after 700 ms latency")
	}
	f.update("a", 10*time.Millisecond, false, false)
	if !f.available("a") {
		t.Fatal("a should be available after a fast answer")
	}
	// Everyone isolated: selection still returns a queue.
	f.update("a", 0, true, false)
	f.update("b", 0, true, false)
	if q := f.selectQueue(qs, "a"); q.BrokerName != "b" {
		t.Fatalf("all isolated: want the non-last broker, got %v", q)
	}
	if len(f.isolated()) != 2 {
		t.Fatalf("isolated = %v", f.isolated())
	}
}

func TestFaultDisabledRecordsNothing(t *testing.T) {
	f := newFaultStrategy(false)
	f.update("a", 0, true, true)
	if !f.available("a") || !f.reachable("a") {
		t.Fatal("disabled strategy isolated a broker")
	}
}
