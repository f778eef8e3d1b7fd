package ha

import (
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/store"
)

// GroupTransfer is RocketMQ's GroupTransferService: the ack bookkeeping of
// synchronous replication, independent of the wire. Replicas report ack
// offsets (Ack) and leave (Remove); puts wait in AwaitReplicated until
// enough replicas acknowledged their end offset or slaveTimeout passes.
// It implements store.Replicator. Controller mode can feed it from another
// transport.
type GroupTransfer struct {
	needAcks int // inSyncReplicas, master included
	// allAck (allAckInSyncStateSet): a put needs an ack from every key of
	// required instead of needAcks acks.
	allAck  bool
	timeout time.Duration
	now     func() time.Time
	onWait  func() // wakes the writers when a put starts waiting

	wake chan struct{} // capacity 1: waiters or acks changed
	quit chan struct{}

	mu sync.Mutex
	// acks maps a replica id to its ack offset (bytes acknowledged from
	// offset 0). Guarded by mu.
	acks map[uint64]int64
	// waiters in arrival order, so deadlines are non-decreasing. Guarded by mu.
	waiters []transferWaiter
	closed  bool // guarded by mu
	// required is the SyncStateSet without the master (allAck mode);
	// guarded by mu.
	required []uint64
	// onConfirm receives the confirm offset (allAck mode): the lowest ack
	// of the required replicas, or -1 (no limit) when none is required.
	// Called with mu held, so calls are ordered; it must not block.
	onConfirm func(int64)
}

type transferWaiter struct {
	nextOffset int64
	deadline   time.Time
	done       func(store.PutStatus)
}

// NewGroupTransfer needs needAcks acknowledgements (master included) for
// every put within timeout. onWait may be nil.
func NewGroupTransfer(needAcks int, timeout time.Duration, onWait func()) *GroupTransfer {
	return &GroupTransfer{
		needAcks: needAcks,
		timeout:  timeout,
		now:      time.Now,
		onWait:   onWait,
		wake:     make(chan struct{}, 1),
		quit:     make(chan struct{}),
		acks:     make(map[uint64]int64),
	}
}

// AwaitReplicated implements store.Replicator. done runs at once (caller's
// goroutine) when the offset is already acknowledged, else later on the
// ack-reporting goroutine or the expiry goroutine; it must not block.
func (g *GroupTransfer) AwaitReplicated(nextOffset int64, done func(store.PutStatus)) {
	if g.needAcks <= 1 && !g.allAck {
		done(store.PutOK)
		return
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		done(store.FlushSlaveTimeout)
		return
	}
	if g.ackedLocked(nextOffset) {
		g.mu.Unlock()
		done(store.PutOK)
		return
	}
	g.waiters = append(g.waiters, transferWaiter{nextOffset: nextOffset, deadline: g.now().Add(g.timeout), done: done})
	first := len(g.waiters) == 1
	g.mu.Unlock()
	if first {
		signal(g.wake) // arm the expiry timer
	}
	if g.onWait != nil {
		g.onWait()
	}
}

// ackedLocked reports whether enough replicas hold nextOffset.
// REQUIRES: g.mu held.
func (g *GroupTransfer) ackedLocked(nextOffset int64) bool {
	if g.allAck {
		for _, id := range g.required {
			if g.acks[id] < nextOffset {
				return false
			}
		}
		return true
	}
	n := 1 // the master
	for _, a := range g.acks {
		if a >= nextOffset {
			n++
		}
	}
	return n >= g.needAcks
}

// SetConfirmListener installs fn, called with the confirm offset whenever
// an ack or a SyncStateSet change moves it (allAck mode; RocketMQ's
// AutoSwitchHAService.computeConfirmOffset): the lowest ack offset of the
// SyncStateSet's replicas, or -1 when the set is the master alone. While a
// member has no connection the value is kept, not recomputed without it.
// Controller mode stops dispatch there, so consumers of the master read
// only what the whole set holds. fn must not block.
func (g *GroupTransfer) SetConfirmListener(fn func(int64)) {
	g.mu.Lock()
	g.onConfirm = fn
	g.confirmLocked()
	g.mu.Unlock()
}

// confirmLocked reports the confirm offset to the listener, if it can be
// computed. REQUIRES: g.mu held.
func (g *GroupTransfer) confirmLocked() {
	if g.onConfirm == nil || !g.allAck {
		return
	}
	if len(g.required) == 0 {
		g.onConfirm(-1)
		return
	}
	c := int64(-1)
	for _, id := range g.required {
		a, ok := g.acks[id]
		if !ok {
			return // a member without a connection: keep the last value
		}
		if c < 0 || a < c {
			c = a
		}
	}
	g.onConfirm(c)
}

// Ack records replica id's ack offset and releases satisfied waiters on the
// caller's goroutine.
func (g *GroupTransfer) Ack(id uint64, offset int64) {
	g.mu.Lock()
	if prev, ok := g.acks[id]; ok && prev >= offset {
		g.mu.Unlock()
		return
	}
	g.acks[id] = offset
	g.confirmLocked()
	if len(g.waiters) == 0 {
		g.mu.Unlock()
		return
	}
	var ready []transferWaiter
	kept := g.waiters[:0]
	for _, w := range g.waiters {
		if g.ackedLocked(w.nextOffset) {
			ready = append(ready, w)
		} else {
			kept = append(kept, w)
		}
	}
	clear(g.waiters[len(kept):])
	g.waiters = kept
	g.mu.Unlock()
	for _, w := range ready {
		w.done(store.PutOK)
	}
}

// SetSyncStateSet sets the replicas every put must reach in allAck mode
// (the SyncStateSet without the master) and releases waiters the new set
// satisfies (a shrink).
func (g *GroupTransfer) SetSyncStateSet(replicas []uint64) {
	g.mu.Lock()
	g.required = append([]uint64(nil), replicas...)
	g.confirmLocked()
	var ready []transferWaiter
	kept := g.waiters[:0]
	for _, w := range g.waiters {
		if g.ackedLocked(w.nextOffset) {
			ready = append(ready, w)
		} else {
			kept = append(kept, w)
		}
	}
	clear(g.waiters[len(kept):])
	g.waiters = kept
	g.mu.Unlock()
	for _, w := range ready {
		w.done(store.PutOK)
	}
}

// Remove forgets replica id (its connection closed).
func (g *GroupTransfer) Remove(id uint64) {
	g.mu.Lock()
	delete(g.acks, id)
	g.mu.Unlock()
}

// AckOffsets returns a copy of every replica's ack offset.
func (g *GroupTransfer) AckOffsets() map[uint64]int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[uint64]int64, len(g.acks))
	for k, v := range g.acks {
		out[k] = v
	}
	return out
}

// Waiting is the number of puts waiting for acks.
func (g *GroupTransfer) Waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.waiters)
}

// run expires waiters at their deadline until stop. The owner runs it on
// one goroutine.
func (g *GroupTransfer) run() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		select {
		case <-g.quit:
			return
		case <-g.wake:
		case <-t.C:
		}
		g.expire()
		g.mu.Lock()
		wait := time.Hour
		if len(g.waiters) > 0 {
			wait = max(g.waiters[0].deadline.Sub(g.now()), time.Millisecond)
		}
		g.mu.Unlock()
		t.Reset(wait)
	}
}

// expire answers FLUSH_SLAVE_TIMEOUT to every waiter past its deadline.
func (g *GroupTransfer) expire() {
	now := g.now()
	g.mu.Lock()
	i := 0
	for i < len(g.waiters) && !g.waiters[i].deadline.After(now) {
		i++
	}
	expired := append([]transferWaiter(nil), g.waiters[:i]...)
	n := copy(g.waiters, g.waiters[i:])
	clear(g.waiters[n:])
	g.waiters = g.waiters[:n]
	g.mu.Unlock()
	for _, w := range expired {
		w.done(store.FlushSlaveTimeout)
	}
}

// stop ends run and answers FLUSH_SLAVE_TIMEOUT to every waiter (the
// messages are stored on the master; 3.4). Later puts get the same at once.
func (g *GroupTransfer) stop() {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.closed = true
	pending := g.waiters
	g.waiters = nil
	g.mu.Unlock()
	close(g.quit)
	for _, w := range pending {
		w.done(store.FlushSlaveTimeout)
	}
}

// signal is a non-blocking wake-up on a capacity-1 channel.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
