package client

import (
	"context"
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
		{FaultTable4x().FailedLatency, 600 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.latency.String(), func(t *testing.T) {
			if got := FaultTable4x().isolationFor(tc.latency); got != tc.want {
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
		f := newFaultStrategy(enabled, FaultTable4x())
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
	f := newFaultStrategy(false, FaultTable4x())
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
	f := newFaultStrategy(true, FaultTable4x())
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
	f := newFaultStrategy(false, FaultTable4x())
	f.update("a", 0, true, true)
	if !f.available("a") || !f.reachable("a") {
		t.Fatal("disabled strategy isolated a broker")
	}
}

// TestIsolationTable5x: RocketMQ 5's MQFaultStrategy defaults (latency >=
// 50/100/550/1800/3000/5000/15000 ms -> 0/0/2/5/6/10/30 s; a failed attempt
// counts as 10 s).
func TestIsolationTable5x(t *testing.T) {
	tab := FaultTable5x()
	tests := []struct {
		latency time.Duration
		want    time.Duration
	}{
		{0, 0},
		{549 * time.Millisecond, 0},
		{550 * time.Millisecond, 2 * time.Second},
		{1799 * time.Millisecond, 2 * time.Second},
		{1800 * time.Millisecond, 5 * time.Second},
		{3 * time.Second, 6 * time.Second},
		{5 * time.Second, 10 * time.Second},
		{tab.FailedLatency, 10 * time.Second},
		{15 * time.Second, 30 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.latency.String(), func(t *testing.T) {
			if got := tab.isolationFor(tc.latency); got != tc.want {
				t.Fatalf("isolationFor(%v) = %v, want %v", tc.latency, got, tc.want)
			}
		})
	}
	f := newFaultStrategy(true, tab)
	now := time.Unix(1000, 0)
	f.now = func() time.Time { return now }
	f.update("b", 0, true, true)
	if f.available("b") {
		t.Fatal("a failed broker is available at once")
	}
	now = now.Add(10 * time.Second)
	if !f.available("b") {
		t.Fatal("5.x isolation of a failure outlasted 10 s")
	}
}

// TestFaultDetector: a detector round probes each broker of the table no
// more often than the interval, makes an unreachable broker that answers
// reachable again, leaves one that does not, and drops a broker the routes
// no longer name.
func TestFaultDetector(t *testing.T) {
	f := newFaultStrategy(true, FaultTable5x())
	now := time.Unix(1000, 0)
	f.now = func() time.Time { return now }
	f.update("up", 0, true, true)   // failed, unreachable; answers probes now
	f.update("down", 0, true, true) // failed, unreachable; still down
	f.update("gone", 0, false, false)
	addrs := map[string]string{"up": "10.0.0.1:10911", "down": "10.0.0.2:10911"}
	probes := map[string]int{}
	probe := func(_ context.Context, addr string) bool { probes[addr]++; return addr == addrs["up"] }
	resolve := func(name string) string { return addrs[name] }
	ctx := context.Background()

	f.detectOnce(ctx, 2*time.Second, resolve, probe)
	if !f.reachable("up") || f.reachable("down") {
		t.Fatalf("after a round: up reachable %v, down reachable %v", f.reachable("up"), f.reachable("down"))
	}
	if f.available("up") {
		t.Fatal("reachable again, but its isolation is not the detector's to end")
	}
	f.mu.Lock()
	_, kept := f.items["gone"]
	f.mu.Unlock()
	if kept {
		t.Fatal("a broker without an address stayed in the table")
	}
	f.detectOnce(ctx, 2*time.Second, resolve, probe) // within the interval: no probes
	now = now.Add(2 * time.Second)
	f.detectOnce(ctx, 2*time.Second, resolve, probe)
	if probes[addrs["down"]] != 2 || probes[addrs["up"]] != 1 {
		t.Fatalf("probes %v: want down twice (interval), up once (reachable needs none)", probes)
	}
	// Selection prefers the reachable broker over the unreachable one while
	// both are isolated.
	qs := pqueues("up", "down")
	for range 4 {
		if q := f.selectQueue(qs, ""); q.BrokerName != "up" {
			t.Fatalf("selected %s", q.BrokerName)
		}
	}
}
