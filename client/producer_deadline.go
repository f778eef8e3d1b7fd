package client

import (
	"context"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// sendDeadlines hands out the deadline contexts of sends. A context with a
// deadline costs a runtime timer (context.WithDeadline arms a
// time.AfterFunc, its cancel stops it): per message that was a quarter of
// the pipelined publish path's CPU. Sends that start in the same
// millisecond from the same parent context have the same deadline once it
// is rounded down to the millisecond, so they share one context: at 50 000
// sends/s that is one timer per 50 sends. The remoting client needs the
// context only for its deadline (it sweeps request deadlines itself) and
// for the parent's cancellation, both of which a shared context carries.
//
// Shared contexts are never cancelled by a send: each lives until its
// deadline fires (at most sendTimeout, one per step), or until Close,
// which cancels those still live.
//
// The step is one millisecond, or sendTimeout/2048 for timeouts over
// 2 s (deadlineStepMs), so one parent keeps at most ~2048 shared
// contexts alive, under maxSharedDeadlines whatever the timeout: a 10 s
// timeout at 1 ms steps kept 10 000 alive, so past maxSharedDeadlines
// every send paid its own timer and a scan of the whole list. A deadline
// is thus early by less than one step (under 0.05 % of the timeout).
type sendDeadlines struct {
	stepMs int64 // deadline rounding, ms; 0 or 1: to the millisecond

	last atomic.Pointer[sharedDeadline]  // the most recently made one
	prev atomic.Pointer[context.Context] // parent of the last unshared send

	mu     sync.Mutex
	live   []*sharedDeadline // made and not yet known to have expired
	closed bool
}

type sharedDeadline struct {
	parent context.Context
	ptype  reflect.Type // parent's dynamic type, always comparable
	ms     int64        // deadline, Unix milliseconds
	ctx    context.Context
	cancel context.CancelFunc
}

// is reports whether parent is c's parent. Only comparable parents are
// shared, so once the types match == cannot panic.
func (c *sharedDeadline) is(parent context.Context) bool {
	return reflect.TypeOf(parent) == c.ptype && parent == c.parent
}

// deadlineStepMs is the deadline rounding of sends that time out after
// timeout.
func deadlineStepMs(timeout time.Duration) int64 {
	return max(1, timeout.Milliseconds()/2048)
}

// noCancel is the cancel function of a shared context.
func noCancel() {}

// maxSharedDeadlines bounds the shared contexts alive at once (each holds
// a timer until its deadline): beyond it sends get their own again.
const maxSharedDeadlines = 4096

// with returns a context derived from parent whose deadline is d rounded
// down to the millisecond (to a multiple of stepMs), with that deadline,
// and the function to call when the send is done.
//
// A parent is shared only once it has been seen twice in a row: a caller
// that passes a new context per send (its own timeout, say) keeps getting
// contexts of its own, cancelled when the send ends, as before.
func (s *sendDeadlines) with(parent context.Context, d time.Time) (context.Context, time.Time, context.CancelFunc) {
	ms := d.UnixMilli()
	if s.stepMs > 1 {
		ms -= ms % s.stepMs
	}
	at := time.UnixMilli(ms)
	if c := s.last.Load(); c != nil && c.is(parent) {
		if c.ms == ms {
			return c.ctx, at, noCancel
		}
		if ctx, ok := s.share(parent, ms, at); ok {
			return ctx, at, noCancel
		}
	} else if p := s.prev.Swap(boxed(parent)); p != nil && sameContext(*p, parent) {
		if ctx, ok := s.share(parent, ms, at); ok {
			return ctx, at, noCancel
		}
	}
	ctx, cancel := context.WithDeadline(parent, at)
	return ctx, at, cancel
}

// boxed returns a new pointer to ctx. with stores it without taking its
// parameter's address, which would move the parameter to the heap on every
// call, the shared fast path's included.
func boxed(ctx context.Context) *context.Context { return &ctx }

// share makes the shared context of parent and ms, unless closed or too
// many are alive.
func (s *sendDeadlines) share(parent context.Context, ms int64, at time.Time) (context.Context, bool) {
	if !comparable(parent) {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false
	}
	// Sends racing into a new step all get here: the first made it.
	if c := s.last.Load(); c != nil && c.ms == ms && c.is(parent) {
		return c.ctx, true
	}
	// Forget the ones whose deadline passed (their timer fired and released
	// them). Deadlines mostly grow with time, so look at the front first.
	now := time.Now().UnixMilli()
	n := 0
	for n < len(s.live) && s.live[n].ms <= now {
		n++
	}
	if n > 0 {
		s.live = append(s.live[:0], s.live[n:]...)
	}
	if len(s.live) >= maxSharedDeadlines {
		s.live = slices.DeleteFunc(s.live, func(c *sharedDeadline) bool { return c.ms <= now })
		if len(s.live) >= maxSharedDeadlines {
			return nil, false
		}
	}
	ctx, cancel := context.WithDeadline(parent, at)
	c := &sharedDeadline{parent: parent, ptype: reflect.TypeOf(parent), ms: ms, ctx: ctx, cancel: cancel}
	s.live = append(s.live, c)
	s.last.Store(c)
	return ctx, true
}

// close cancels the shared contexts still live; later calls to with get
// contexts of their own.
func (s *sendDeadlines) close() {
	s.mu.Lock()
	live := s.live
	s.live, s.closed = nil, true
	s.mu.Unlock()
	s.last.Store(nil)
	s.prev.Store(nil)
	for _, c := range live {
		c.cancel()
	}
}

// comparable reports whether == on ctx cannot panic (contexts are
// nearly always pointers, but a user's context type need not be).
func comparable(ctx context.Context) bool {
	t := reflect.TypeOf(ctx)
	return t != nil && t.Comparable()
}

// sameContext reports whether a and b are the same context value.
func sameContext(a, b context.Context) bool {
	return reflect.TypeOf(a) == reflect.TypeOf(b) && comparable(a) && a == b
}
