package remoting

import (
	"runtime/debug"
	"sync"
)

// callbackExecutor runs async-call callbacks on a fixed set of goroutines,
// so user code never runs on a read loop. Its queue has room for every
// permit, and a permit is released only after its callback ran, so run
// never blocks. After stop, run executes the callback on the caller.
type callbackExecutor struct {
	ep      *endpoint
	queue   chan *future
	wg      sync.WaitGroup
	mu      sync.RWMutex
	stopped bool // guarded by mu
}

func newCallbackExecutor(ep *endpoint, capacity int) *callbackExecutor {
	return &callbackExecutor{ep: ep, queue: make(chan *future, capacity)}
}

func (e *callbackExecutor) start(workers int) {
	for range workers {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			for f := range e.queue {
				e.safeRun(f)
			}
		}()
	}
}

func (e *callbackExecutor) run(f *future) {
	e.mu.RLock()
	if e.stopped {
		e.mu.RUnlock()
		e.safeRun(f)
		return
	}
	e.queue <- f
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
