package remoting

import (
	"context"
	"sync"
	"sync/atomic"
)

// permits is a counting semaphore for calls in flight (MaxAsync,
// MaxOneway). Taking and giving back a free permit is one atomic
// operation each: a buffered channel used as a semaphore locks the
// channel on both sides, and every pipelined send and its callback paid
// that, the publishers and the callback worker contending for the lock.
//
// Invariant: used never exceeds max. A waiter counts itself in waiters
// before it tries again, and release decrements used before it reads
// waiters; both are sequentially consistent atomics, so either the
// waiter's retry sees the free permit or the release sees the waiter and
// wakes it (no lost wake-up).
type permits struct {
	max     int64
	used    atomic.Int64
	waiters atomic.Int32

	mu   sync.Mutex
	wake chan struct{} // closed (and replaced) by a release that finds waiters; guarded by mu
}

func newPermits(n int) *permits {
	return &permits{max: int64(n), wake: make(chan struct{})}
}

// tryAcquire takes a permit if one is free.
func (p *permits) tryAcquire() bool {
	for {
		n := p.used.Load()
		if n >= p.max {
			return false
		}
		if p.used.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// acquire takes a permit, waiting until one is free: ErrClosed once quit
// is closed, ErrTooManyRequests when ctx ends first.
func (p *permits) acquire(ctx context.Context, quit <-chan struct{}) error {
	if p.tryAcquire() {
		return nil
	}
	p.waiters.Add(1)
	defer p.waiters.Add(-1)
	for {
		p.mu.Lock()
		wake := p.wake
		p.mu.Unlock()
		if p.tryAcquire() {
			return nil
		}
		select {
		case <-wake:
		case <-quit:
			return ErrClosed
		case <-ctx.Done():
			return ErrTooManyRequests
		}
	}
}

// release gives a permit back and wakes the waiters, if any, to compete
// for it.
func (p *permits) release() {
	p.used.Add(-1)
	if p.waiters.Load() == 0 {
		return
	}
	p.mu.Lock()
	close(p.wake)
	p.wake = make(chan struct{})
	p.mu.Unlock()
}

// inUse is the number of permits taken.
func (p *permits) inUse() int { return int(p.used.Load()) }
