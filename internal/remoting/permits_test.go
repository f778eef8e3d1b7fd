package remoting

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPermitsBound: many goroutines taking and giving back permits never
// hold more than max at once, and every one gets through (a release that
// finds waiters wakes them).
func TestPermitsBound(t *testing.T) {
	const max, workers, rounds = 3, 16, 2000
	p := newPermits(max)
	var held, peak atomic.Int64
	var wg sync.WaitGroup
	quit := make(chan struct{})
	for range workers {
		wg.Go(func() {
			for range rounds {
				if err := p.acquire(context.Background(), quit); err != nil {
					t.Error(err)
					return
				}
				n := held.Add(1)
				for {
					old := peak.Load()
					if n <= old || peak.CompareAndSwap(old, n) {
						break
					}
				}
				held.Add(-1)
				p.release()
			}
		})
	}
	wg.Wait()
	if peak.Load() > max {
		t.Fatalf("peak %d permits held, max %d", peak.Load(), max)
	}
	if p.inUse() != 0 {
		t.Fatalf("%d permits still in use", p.inUse())
	}
}

// TestPermitsWaitEnds: a waiter for a permit that never comes back ends
// with ErrTooManyRequests when its context ends and ErrClosed on quit; a
// waiter is woken by a release.
func TestPermitsWaitEnds(t *testing.T) {
	p := newPermits(1)
	if !p.tryAcquire() || p.tryAcquire() {
		t.Fatal("one permit: the first try takes it, the second must fail")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := p.acquire(ctx, nil); !errors.Is(err, ErrTooManyRequests) {
		t.Fatalf("ctx ended: %v, want ErrTooManyRequests", err)
	}
	quit := make(chan struct{})
	close(quit)
	if err := p.acquire(context.Background(), quit); !errors.Is(err, ErrClosed) {
		t.Fatalf("quit: %v, want ErrClosed", err)
	}
	got := make(chan error, 1)
	go func() { got <- p.acquire(context.Background(), nil) }()
	for p.waiters.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	p.release()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not woken by the release")
	}
	if p.inUse() != 1 || p.waiters.Load() != 0 {
		t.Fatalf("in use %d, waiters %d; want 1, 0", p.inUse(), p.waiters.Load())
	}
}
