package client

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Latency fault tolerance (RocketMQ MQFaultStrategy, docs/broker.md
// §4.2, 4.x table). After every send attempt the producer records the
// broker's latency; a slow broker is isolated ("not available") for a
// duration looked up from the latency, a failed one as if it had taken
// isolationLatency. Queue selection then prefers available brokers.

// latencyMax[i] <= latency selects notAvailableDuration[i] (the last row
// whose threshold the latency reaches).
var (
	latencyMax           = [...]time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 550 * time.Millisecond, 1000 * time.Millisecond, 2000 * time.Millisecond, 3000 * time.Millisecond, 15000 * time.Millisecond}
	notAvailableDuration = [...]time.Duration{0, 0, 30 * time.Second, 60 * time.Second, 120 * time.Second, 180 * time.Second, 600 * time.Second}
)

// isolationLatency is the latency recorded for a failed attempt (4.x: 30 s
// -> 600 s isolation).
const isolationLatency = 30 * time.Second

// isolationFor returns how long a broker that answered in latency stays
// unavailable.
func isolationFor(latency time.Duration) time.Duration {
	for i := len(latencyMax) - 1; i >= 0; i-- {
		if latency >= latencyMax[i] {
			return notAvailableDuration[i]
		}
	}
	return 0
}

// faultItem is one broker's record.
type faultItem struct {
	latency        time.Duration
	availableAfter time.Time // zero = available
	reachable      bool
}

// faultStrategy selects queues and keeps the latency table. Safe for
// concurrent use.
type faultStrategy struct {
	enabled bool // sendLatencyFaultEnable
	now     func() time.Time

	mu    sync.Mutex
	items map[string]*faultItem // broker name -> record; guarded by mu

	index atomic.Uint32 // selection counter; random start
}

func newFaultStrategy(enabled bool) *faultStrategy {
	f := &faultStrategy{enabled: enabled, now: time.Now, items: make(map[string]*faultItem)}
	f.index.Store(rand.Uint32())
	return f
}

// update records an attempt's outcome for brokerName. With isolation (a
// failed attempt) the broker is treated as if it took isolationLatency;
// unreachable marks a network-level failure.
func (f *faultStrategy) update(brokerName string, latency time.Duration, isolation, unreachable bool) {
	if !f.enabled {
		return
	}
	if isolation {
		latency = isolationLatency
	}
	d := isolationFor(latency)
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
