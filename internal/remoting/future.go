package remoting

import (
	"context"

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
	// extList: the response is decoded with ExtList, not ExtFields
	// (ClientConfig.ExtListResponseCodes); set before the future is added.
	extList bool

	// Sync calls: the completion is sent here (capacity 1, never blocks).
	// Sync futures are pooled; the waiter returns it to the pool after
	// receiving, and the completer never touches it after sending.
	ch chan result

	// Async calls: cb runs on the client's callback executor with res, then
	// the permit goes back to sem. The client's timeout scanner fails the
	// future once deadline (unix nanos) passes or ctx ends; ctx is kept
	// only for that check.
	cb       AsyncHandler
	deadline int64
	ctx      context.Context
	sem      *permits
	exec     *callbackExecutor
	res      result
}

func newSyncFuture() any { return &future{ch: make(chan result, 1)} }

func (f *future) complete(resp *protocol.Command, err error) {
	if f.cb == nil {
		f.ch <- result{resp, err}
		return
	}
	f.res = result{resp, err}
	f.exec.run(f)
}

// callback runs on the executor. The permit is read before the callback,
// which may reuse f for the next call (InvokeAsyncCall): f is not touched
// once it runs.
func (f *future) callback() {
	defer f.sem.release()
	f.cb.OnResponse(f.res.resp, f.res.err)
}

// release gives back what an async call holds.
func (f *future) release() { f.sem.release() }
