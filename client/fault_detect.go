package client

import (
	"context"
	"time"
)

// The isolated-broker detector of RocketMQ 5 (LatencyFaultToleranceImpl
// .detectByOneRound, startDetectorEnable): every detectTick the producer's
// detector goroutine walks the fault table; a broker whose next check time
// has come is checked again no sooner than detectInterval later. A broker
// the routes no longer name (no master address) leaves the table; one that
// answers a probe (GET_MAX_OFFSET of a topic the producer publishes to,
// within detectTimeout, as the Java producer's ServiceDetector asks) is
// reachable again, so selection may pick it before its isolation ends.

// detectTick is how often the detector walks the table (Java schedules the
// round every 3 s).
const detectTick = 3 * time.Second

// detectTarget is a broker due for a probe.
type detectTarget struct{ name string }

// dueForDetect returns the brokers whose check time has come and sets
// their next one.
func (f *faultStrategy) dueForDetect(interval time.Duration) []detectTarget {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	var out []detectTarget
	for name, it := range f.items {
		if !now.Before(it.checkAfter) {
			it.checkAfter = now.Add(interval)
			out = append(out, detectTarget{name: name})
		}
	}
	return out
}

// forget drops brokerName from the table (the routes no longer have it).
func (f *faultStrategy) forget(brokerName string) {
	f.mu.Lock()
	delete(f.items, brokerName)
	f.mu.Unlock()
}

// markReachable records a successful probe of brokerName.
func (f *faultStrategy) markReachable(brokerName string) {
	f.mu.Lock()
	if it := f.items[brokerName]; it != nil {
		it.reachable = true
	}
	f.mu.Unlock()
}

// detectOnce is one detector round: resolve gives a broker's address ("" =
// gone), probe checks it.
func (f *faultStrategy) detectOnce(ctx context.Context, interval time.Duration, resolve func(string) string,
	probe func(ctx context.Context, addr string) bool) {
	for _, t := range f.dueForDetect(interval) {
		addr := resolve(t.name)
		if addr == "" {
			f.forget(t.name)
			continue
		}
		if !f.reachable(t.name) && probe(ctx, addr) {
			f.markReachable(t.name)
		}
	}
}
