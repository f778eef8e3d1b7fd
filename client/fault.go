package client

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Latency fault tolerance (RocketMQ MQFaultStrategy, docs/broker.md
// §4.2). After every send attempt the producer records the broker's
// latency; a slow broker is isolated ("not available") for a duration
// looked up from the latency in a FaultTable, a failed one as if it had
// taken the table's FailedLatency. Queue selection then prefers available
// brokers, then reachable ones. RocketMQ 5 adds a detector: brokers marked
// unreachable are probed in the background and become reachable again as
// soon as one answers (fault_detect.go).

// FaultTable is a latency fault table: an attempt that took at least
// LatencyMax[i] (the last such row) isolates its broker for
// NotAvailable[i]; a failed attempt counts as FailedLatency.
type FaultTable struct {
	LatencyMax    []time.Duration
	NotAvailable  []time.Duration
	FailedLatency time.Duration
}

// FaultTable4x is RocketMQ 4.x's table (latency >= 50/100/550/1000/2000/
// 3000/15000 ms -> 0/0/30/60/120/180/600 s; a failure counts as 30 s, so
// it isolates for 10 minutes). The default.
func FaultTable4x() FaultTable {
	return FaultTable{
		LatencyMax:    ms(50, 100, 550, 1000, 2000, 3000, 15000),
		NotAvailable:  ms(0, 0, 30000, 60000, 120000, 180000, 600000),
		FailedLatency: 30 * time.Second,
	}
}

// FaultTable5x is RocketMQ 5's table (latency >= 50/100/550/1800/3000/
// 5000/15000 ms -> 0/0/2/5/6/10/30 s; a failure counts as 10 s, so it
// isolates for 10 seconds): short isolations, since the detector brings an
// unreachable broker back as soon as it answers.
func FaultTable5x() FaultTable {
	return FaultTable{
		LatencyMax:    ms(50, 100, 550, 1800, 3000, 5000, 15000),
		NotAvailable:  ms(0, 0, 2000, 5000, 6000, 10000, 30000),
		FailedLatency: 10 * time.Second,
	}
}

func ms(v ...int) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, n := range v {
		out[i] = time.Duration(n) * time.Millisecond
	}
	return out
}

// validate checks the table's shape.
func (t FaultTable) validate() error {
	if len(t.LatencyMax) == 0 || len(t.LatencyMax) != len(t.NotAvailable) {
		return fmt.Errorf("client: fault table needs as many latencies as durations (%d, %d)", len(t.LatencyMax), len(t.NotAvailable))
	}
	return nil
}

// isolationFor returns how long a broker that answered in latency stays
// unavailable.
func (t FaultTable) isolationFor(latency time.Duration) time.Duration {
	for i := len(t.LatencyMax) - 1; i >= 0; i-- {
		if latency >= t.LatencyMax[i] {
			return t.NotAvailable[i]
		}
	}
	return 0
}

// faultItem is one broker's record.
type faultItem struct {
	latency        time.Duration
	availableAfter time.Time // zero = available
	reachable      bool
	checkAfter     time.Time // the detector's next probe of this broker
}

// faultStrategy selects queues and keeps the latency table. Safe for
// concurrent use.
type faultStrategy struct {
	enabled bool // sendLatencyFaultEnable
	table   FaultTable
	now     func() time.Time

	mu    sync.Mutex
	items map[string]*faultItem // broker name -> record; guarded by mu

	index atomic.Uint32 // selection counter; random start
}

func newFaultStrategy(enabled bool, table FaultTable) *faultStrategy {
	f := &faultStrategy{enabled: enabled, table: table, now: time.Now, items: make(map[string]*faultItem)}
	f.index.Store(rand.Uint32())
	return f
}

// update records an attempt's outcome for brokerName. With isolation (a
// failed attempt) the broker is treated as if it took the table's
// FailedLatency; unreachable marks a network-level failure.
func (f *faultStrategy) update(brokerName string, latency time.Duration, isolation, unreachable bool) {
	if !f.enabled {
		return
	}
	if isolation {
		latency = f.table.FailedLatency
	}
	d := f.table.isolationFor(latency)
	f.mu.Lock()
	defer f.mu.Unlock()
	it := f.items[brokerName]
	if it == nil {
		it = &faultItem{}
		f.items[brokerName] = it
	}
	it.latency = latency
	it.reachable = !unreachable
	if d > 0 {
		it.availableAfter = f.now().Add(d)
	} else {
		it.availableAfter = time.Time{}
	}
}

// available reports whether brokerName is not isolated.
func (f *faultStrategy) available(brokerName string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	it := f.items[brokerName]
	return it == nil || it.availableAfter.IsZero() || !f.now().Before(it.availableAfter)
}

// reachable reports whether the last attempt to brokerName reached it.
func (f *faultStrategy) reachable(brokerName string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	it := f.items[brokerName]
	return it == nil || it.reachable
}

// isolated lists the currently isolated brokers (for tests and stats).
func (f *faultStrategy) isolated() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	now := f.now()
	for name, it := range f.items {
		if !it.availableAfter.IsZero() && now.Before(it.availableAfter) {
			out = append(out, name)
		}
	}
	return out
}

// selectQueue picks the next queue of qs for an attempt whose previous
// attempt went to lastBroker ("" for the first). Without fault tolerance:
// the next queue on a different broker, else the next queue. With it: the
// next queue on an available broker other than lastBroker, else on a
// reachable one, else the next queue.
func (f *faultStrategy) selectQueue(qs []MessageQueue, lastBroker string) MessageQueue {
	n := uint32(len(qs))
	if f.enabled {
		for _, ok := range []func(string) bool{f.available, f.reachable} {
			for range n {
				q := qs[f.index.Add(1)%n]
				if q.BrokerName != lastBroker && ok(q.BrokerName) {
					return q
				}
			}
		}
		// Every broker is isolated: fall through to plain selection, which
		// still avoids the last broker.
	}
	if lastBroker != "" {
		for range n {
			q := qs[f.index.Add(1)%n]
			if q.BrokerName != lastBroker {
				return q
			}
		}
	}
	return qs[f.index.Add(1)%n]
}
