package remoting

import (
	"sync"

	"github.com/apogeemq/apogee/internal/protocol"
)

type result struct {
	resp *protocol.Command
	err  error
}

// future is one in-flight request. It lives in its Conn's table until
// taken; whoever takes it (the read loop on a response, the timeout, the
// connection cleanup, a failed send) completes it, exactly once.
type future struct {
	opaque int32

	// Sync calls: the completion is sent here (capacity 1, never blocks).
	// Sync futures are pooled; the waiter returns it to the pool after
	// receiving, and the completer never touches it after sending.
	ch chan result

	// Async calls: cb runs on the client's callback executor, then done
	// (permit release, context cleanup).
	cb   func(*protocol.Command, error)
	stop func() bool // stops the context.AfterFunc timeout
	done func()
	exec *callbackExecutor
}

var syncFutures = sync.Pool{New: func() any { return &future{ch: make(chan result, 1)} }}

func (f *future) complete(resp *protocol.Command, err error) { f.finish(resp, err, true) }

// finish completes f. stopTimer is false on the timeout path itself, which
// must not read f.stop (it may run before InvokeAsync stored it).
func (f *future) finish(resp *protocol.Command, err error, stopTimer bool) {
	if f.cb == nil {
		f.ch <- result{resp, err}
		return
	}
	if stopTimer {
		f.stop()
	}
	f.exec.run(func() {
		defer f.done()
		f.cb(resp, err)
	})
}
