package broker

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// rocketmq_rpc_latency: processing time per request code and response
// code, RocketMQ's buckets (1, 3, 5, 10, 100, 1000, 3000 ms). Recorded by
// an RPC hook for requests answered by their processor; sends answer from
// the store's completion callback and are timed there, from just before
// the put to the response (observeRPC). Held pulls are not timed (their
// time is the consumer's long-polling wait, not processing).

// RPCLatencyBounds are rocketmq_rpc_latency's bucket upper bounds.
var RPCLatencyBounds = [...]time.Duration{time.Millisecond, 3 * time.Millisecond, 5 * time.Millisecond,
	10 * time.Millisecond, 100 * time.Millisecond, time.Second, 3 * time.Second}

type rpcKey struct{ request, response int32 }

type rpcMeter struct {
	counts [len(RPCLatencyBounds) + 1]atomic.Int64
	nanos  atomic.Int64
}

type rpcMeters struct {
	mu sync.Mutex
	m  atomic.Pointer[map[rpcKey]*rpcMeter]
}

func (r *rpcMeters) observe(k rpcKey, d time.Duration) {
	var m *rpcMeter
	if p := r.m.Load(); p != nil {
		m = (*p)[k]
	}
	if m == nil {
		r.mu.Lock()
		old := r.m.Load()
		if old != nil {
			m = (*old)[k]
		}
		if m == nil {
			next := map[rpcKey]*rpcMeter{}
			if old != nil {
				for kk, v := range *old {
					next[kk] = v
				}
			}
			m = &rpcMeter{}
			next[k] = m
			r.m.Store(&next)
		}
		r.mu.Unlock()
	}
	i := 0
	for i < len(RPCLatencyBounds) && d > RPCLatencyBounds[i] {
		i++
	}
	m.counts[i].Add(1)
	m.nanos.Add(int64(d))
}

// RPCLatencySnapshot is one (request code, response code) histogram;
// Counts are per bucket (not cumulative), the last bucket is +Inf.
type RPCLatencySnapshot struct {
	Request  protocol.RequestCode
	Response protocol.ResponseCode
	Counts   [len(RPCLatencyBounds) + 1]int64
	Sum      time.Duration
}

// RPCLatencies returns every recorded rpc latency histogram.
func (b *Broker) RPCLatencies() []RPCLatencySnapshot {
	if b.meters == nil {
		return nil
	}
	p := b.meters.rpc.m.Load()
	if p == nil {
		return nil
	}
	out := make([]RPCLatencySnapshot, 0, len(*p))
	for k, m := range *p {
		s := RPCLatencySnapshot{Request: protocol.RequestCode(k.request), Response: protocol.ResponseCode(k.response),
			Sum: time.Duration(m.nanos.Load())}
		for i := range s.Counts {
			s.Counts[i] = m.counts[i].Load()
		}
		out = append(out, s)
	}
	return out
}

// rpcHook times requests answered by their processor.
type rpcHook struct{ m *meters }

func (h rpcHook) Before(*remoting.Conn, *protocol.Command) error             { return nil }
func (h rpcHook) After(*remoting.Conn, *protocol.Command, *protocol.Command) {}
func (h rpcHook) AfterTimed(_ *remoting.Conn, req, resp *protocol.Command, start time.Time) {
	if resp == nil {
		return // answered later (send, held pull) or oneway
	}
	d := time.Since(start)
	h.m.rpc.observe(rpcKey{req.Code, resp.Code}, d)
}

// startAt is the start time of a timed send: start (when processing began,
// as remoting's TimedRPCHook start or the send worker's clock read), the
// clock when start is zero, and zero without metrics.
func (m *meters) startAt(start time.Time) time.Time {
	if m == nil {
		return time.Time{}
	}
	if start.IsZero() {
		return time.Now()
	}
	return start
}

// observeRPC records a request answered outside the remoting processor
// (a send, from the store's callback). Nil-safe.
func (m *meters) observeRPC(request int32, response protocol.ResponseCode, start time.Time) {
	if m == nil || start.IsZero() {
		return
	}
	m.rpc.observe(rpcKey{request, int32(response)}, time.Since(start))
}
