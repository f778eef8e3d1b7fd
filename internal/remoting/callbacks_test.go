package remoting

import (
	"sync"
	"testing"

	"github.com/apogeemq/apogee/internal/protocol"
)

// TestCallbackExecutorOrderAndStop: one worker runs batches in the order
// they were queued across ring growth, a panicking callback does not stop
// it, stop runs what is still queued, and after stop callbacks run on the
// caller.
func TestCallbackExecutorOrderAndStop(t *testing.T) {
	e := newCallbackExecutor(newEndpoint(nil, 0, 0))
	var mu sync.Mutex
	var got []int
	// fut makes an async future holding its permit, whose callback runs fn.
	fut := func(fn func()) *future {
		sem := newPermits(1)
		sem.tryAcquire()
		return &future{cb: AsyncFunc(func(*protocol.Command, error) { fn() }), sem: sem}
	}
	mk := func(i int) *future {
		return fut(func() {
			if i == 7 {
				panic("callback 7")
			}
			mu.Lock()
			got = append(got, i)
			mu.Unlock()
		})
	}
	block := make(chan struct{})
	e.runBatch([]*future{fut(func() { <-block })}) // queued before start: held by the worker below
	e.start(1)
	const n = 1000 // grows the ring from 16 several times while the worker is held
	for i := 0; i < n; i += 2 {
		e.runBatch([]*future{mk(i), mk(i + 1)})
	}
	close(block)
	e.stop()
	e.run(mk(n)) // after stop: runs here, now
	want := 0
	for _, v := range got {
		if want == 7 {
			want++
		}
		if v != want {
			t.Fatalf("callback %d ran where %d was due (got %v...)", v, want, got[:min(len(got), 20)])
		}
		want++
	}
	if want != n+1 {
		t.Fatalf("%d callbacks ran, want %d", want, n+1)
	}
	e.stop() // idempotent
}
