package remoting

import (
	"runtime/debug"
	"sync"
)

// callbackExecutor runs async-call callbacks on a fixed set of goroutines,
// so user code never runs on a read loop. Its queue has room for every
// permit, and a permit is released only after its callback ran, so run
// never blocks. After stop, run executes the callback on the caller.
//
// The queue carries batches: a reader hands over the async calls it
// completed in one read in one channel operation (runBatch), which one
// worker then runs in order. Every batch holds at least one permit, so a
// capacity of one batch per permit still never blocks.
type callbackExecutor struct {
	ep      *endpoint
	queue   chan []*future
	wg      sync.WaitGroup
	mu      sync.RWMutex
	stopped bool // guarded by mu
}

func newCallbackExecutor(ep *endpoint, capacity int) *callbackExecutor {
	return &callbackExecutor{ep: ep, queue: make(chan []*future, capacity)}
}

func (e *callbackExecutor) start(workers int) {
	for range workers {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			for fs := range e.queue {
				for _, f := range fs {
					e.safeRun(f)
				}
			}
		}()
	}
}

func (e *callbackExecutor) run(f *future) { e.runBatch([]*future{f}) }

// runBatch queues the callbacks of fs (whose results are set), to run in
// order on one worker. fs belongs to the executor from now on.
func (e *callbackExecutor) runBatch(fs []*future) {
	e.mu.RLock()
	if e.stopped {
		e.mu.RUnlock()
		for _, f := range fs {
			e.safeRun(f)
		}
		return
	}
	e.queue <- fs
	e.mu.RUnlock()
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
	if !e.stopped {
		e.stopped = true
		close(e.queue)
	}
	e.mu.Unlock()
	e.wg.Wait()
}
