package run

import (
	"context"
	"runtime/pprof"
	"sync"
	"time"
)

// Group is a set of goroutines with one owner. The zero value is not
// usable; create one with NewGroup.
//
// Go starts a goroutine unless closing has begun. Stop begins closing
// (refuse, cancel) without waiting; Wait waits for every started
// goroutine; Close does both. All methods are safe for concurrent use and
// Stop, Wait and Close are idempotent. A goroutine of the group must not
// call Close or Wait (it would wait for itself); it may call Stop.
type Group struct {
	label  string // pprof label key, e.g. "store"
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool // Go refuses once set; guarded by mu
	wg     sync.WaitGroup
}

// NewGroup returns an open group whose goroutines carry the pprof label
// label=<name>. The group's context derives from context.Background.
func NewGroup(label string) *Group {
	return NewGroupContext(context.Background(), label)
}

// NewGroupContext is NewGroup with a parent context: cancelling parent
// cancels the group's context (goroutines see Done) but does not close
// the group; Go still starts goroutines until Stop or Close.
func NewGroupContext(parent context.Context, label string) *Group {
	ctx, cancel := context.WithCancel(parent)
	return &Group{label: label, ctx: ctx, cancel: cancel}
}

// Go starts f on a new goroutine counted by the group and labelled
// label=name for pprof. f receives the group's context, which is
// cancelled when closing begins. Go reports false, and does not run f,
// once closing has begun.
func (g *Group) Go(name string, f func(ctx context.Context)) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		pprof.Do(g.ctx, pprof.Labels(g.label, name), f)
	}()
	return true
}

// Every starts a goroutine that calls f every d until the group closes
// (the first call comes after d, as with time.Ticker). f runs on that one
// goroutine, never concurrently with itself. It reports false once
// closing has begun.
func (g *Group) Every(name string, d time.Duration, f func(ctx context.Context)) bool {
	return g.Go(name, func(ctx context.Context) { Every(ctx, d, f) })
}

// Context returns the group's context, cancelled when closing begins.
func (g *Group) Context() context.Context { return g.ctx }

// Done returns a channel closed when closing begins (the group's
// context's Done channel).
func (g *Group) Done() <-chan struct{} { return g.ctx.Done() }

// Closing reports whether closing has begun.
func (g *Group) Closing() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

// Stop begins closing: Go refuses from now on and the group's context is
// cancelled. It does not wait. It reports whether this call began
// closing (false if the group was already closing).
func (g *Group) Stop() bool {
	g.mu.Lock()
	first := !g.closed
	g.closed = true
	g.mu.Unlock()
	g.cancel()
	return first
}

// Wait blocks until every goroutine the group started has returned. It
// does not itself begin closing; call Stop first or use Close.
func (g *Group) Wait() { g.wg.Wait() }

// Close stops the group and waits for its goroutines.
func (g *Group) Close() {
	g.Stop()
	g.wg.Wait()
}

// Every calls f every d until ctx is done. The first call comes after d;
// a call that overruns d delays the next tick instead of queueing ticks
// (time.Ticker drops missed ticks). d must be positive.
func Every(ctx context.Context, d time.Duration, f func(ctx context.Context)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			// A tick and cancellation may be ready together; select
			// picks at random, so check again before running f.
			if ctx.Err() != nil {
				return
			}
			f(ctx)
		}
	}
}
