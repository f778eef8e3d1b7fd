package remoting

import (
	"runtime/debug"
	"sync"
)

// callbackExecutor runs async-call callbacks on a fixed set of goroutines,
// so user code never runs on a read loop. Its queue is unbounded, so
// runBatch never blocks: a read loop that blocked on it could deadlock
// against a callback waiting for that read loop. It is bounded in practice
// by the permits: every batch holds at least one permit, and a permit is
// released only after its callback ran. After stop, runBatch executes the
// callbacks on the caller.
//
// The queue is a ring that grows to the largest backlog seen (doubling)
// and never shrinks; a channel with room for every permit (65535 by
// default) would hold 1.5 MiB per client from the start, which the garbage
// collector scans every cycle and a long pipelined run makes resident.
//
// The queue carries batches: a reader hands over the async calls it
// completed in one read in one operation, which one worker then runs in
// order.
type callbackExecutor struct {
	ep *endpoint
	wg sync.WaitGroup

	mu   sync.Mutex
	cond sync.Cond // on mu: signalled when a batch is queued or on stop
	// ring[head], ring[head+1], ... (mod len(ring)) are the n queued
	// batches, oldest first; len(ring) is 0 or a power of two.
	ring    [][]*future
	head, n int
	stopped bool // guarded by mu
}

func newCallbackExecutor(ep *endpoint) *callbackExecutor {
	e := &callbackExecutor{ep: ep}
	e.cond.L = &e.mu
	return e
}

func (e *callbackExecutor) start(workers int) {
	for range workers {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			for {
				fs, ok := e.next()
				if !ok {
					return
				}
				for _, f := range fs {
					e.safeRun(f)
				}
			}
		}()
	}
}

// next waits for the oldest queued batch; false once stopped and drained.
func (e *callbackExecutor) next() ([]*future, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for e.n == 0 {
		if e.stopped {
			return nil, false
		}
		e.cond.Wait()
	}
	fs := e.ring[e.head]
	e.ring[e.head] = nil
	e.head = (e.head + 1) & (len(e.ring) - 1)
	e.n--
	return fs, true
}

func (e *callbackExecutor) run(f *future) { e.runBatch([]*future{f}) }

// runBatch queues the callbacks of fs (whose results are set), to run in
// order on one worker. fs belongs to the executor from now on.
func (e *callbackExecutor) runBatch(fs []*future) {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		for _, f := range fs {
			e.safeRun(f)
		}
		return
	}
	if e.n == len(e.ring) {
		e.grow()
	}
	e.ring[(e.head+e.n)&(len(e.ring)-1)] = fs
	e.n++
	e.mu.Unlock()
	e.cond.Signal()
}

// grow doubles the ring, keeping the queued batches in order at its start.
// REQUIRES: e.mu held and the ring full.
func (e *callbackExecutor) grow() {
	ring := make([][]*future, max(16, 2*len(e.ring)))
	k := copy(ring, e.ring[e.head:])
	copy(ring[k:], e.ring[:e.head])
	e.ring, e.head = ring, 0
}

func (e *callbackExecutor) safeRun(f *future) {
	defer func() {
		if r := recover(); r != nil {
			e.ep.logger.Error("remoting: async callback panicked", "panic", r, "stack", string(debug.Stack()))
		}
	}()
	f.callback()
}

// stop runs what is queued and waits for the workers. Idempotent.
func (e *callbackExecutor) stop() {
	e.mu.Lock()
	e.stopped = true
	e.mu.Unlock()
	e.cond.Broadcast()
	e.wg.Wait()
}
