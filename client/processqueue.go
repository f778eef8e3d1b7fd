package client

import (
	"sync"
	"sync/atomic"
	"time"
)

// processQueue caches the pulled, not yet consumed messages of one message
// queue (RocketMQ's ProcessQueue, docs/broker.md §4.6). The pull
// loop adds messages, consumers remove them, and the pull loop reads the
// counters to decide whether to pause (flow control): a queue over its
// thresholds is not pulled until consumers catch up; messages are never
// dropped for flow control.
//
// Offsets of one queue arrive in increasing order (a pull continues from
// the previous nextBeginOffset), so the cache is an append-only slice of
// offsets plus a map; removal deletes from the map and the head of the slice
// skips removed entries. This gives O(1) min-offset and append without a
// tree.
type processQueue struct {
	mu sync.Mutex
	// offsets holds cached offsets in increasing order from head; entries
	// whose message is no longer in msgs are stale and skipped. Guarded by mu.
	offsets []int64
	head    int
	// msgs maps queue offset to a cached, not yet taken or removed message.
	// Guarded by mu.
	msgs map[int64]*MessageExt
	// consuming holds messages taken by an orderly consumer and not yet
	// committed, in offset order. Guarded by mu.
	consuming []*MessageExt
	// maxOffset is the largest offset ever added; -1 before the first.
	// Guarded by mu.
	maxOffset int64
	// consumeStart maps the offset of a cached message a listener is
	// working on (concurrent mode) to when that started, unix ns; for
	// consumeTimeout. Guarded by mu.
	consumeStart map[int64]int64

	count atomic.Int64 // cached messages (msgs + consuming)
	size  atomic.Int64 // cached body bytes (msgs + consuming)

	dropped       atomic.Bool
	locked        atomic.Bool  // orderly: the broker lock is held
	lastLockNanos atomic.Int64 // orderly: when the broker lock was last confirmed
	lastPullNanos atomic.Int64
	lastConsNanos atomic.Int64

	// consumeMu is the local per-queue lock of orderly consumption: only
	// the holder consumes this queue, so messages are handled in order even
	// when several pool workers pick up work for it.
	consumeMu sync.Mutex
}

// Expiry of a queue not pulled for a while; it is dropped at the next
// rebalance (docs/broker.md §4.6).
const pullMaxIdle = 120 * time.Second

// Broker locks live 60 s; a lock older than 30 s without renewal is treated
// as lost by the consumer.
const lockMaxLive = 30 * time.Second

func newProcessQueue() *processQueue {
	pq := &processQueue{msgs: make(map[int64]*MessageExt), maxOffset: -1, consumeStart: make(map[int64]int64)}
	pq.lastPullNanos.Store(time.Now().UnixNano())
	return pq
}

// putMessages caches msgs and reports whether the queue had nothing cached
// before (the orderly consumer then needs a new consume task).
func (pq *processQueue) putMessages(msgs []*MessageExt) (wasEmpty bool) {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	wasEmpty = len(pq.msgs) == 0 && len(pq.consuming) == 0
	var bytes int64
	added := int64(0)
	for _, m := range msgs {
		if _, dup := pq.msgs[m.QueueOffset]; dup || m.QueueOffset <= pq.maxOffset {
			continue // re-pulled after an offset correction; keep the first copy
		}
		pq.msgs[m.QueueOffset] = m
		pq.offsets = append(pq.offsets, m.QueueOffset)
		pq.maxOffset = m.QueueOffset
		bytes += int64(len(m.Body))
		added++
	}
	pq.count.Add(added)
	pq.size.Add(bytes)
	return wasEmpty
}

// skipStaleLocked advances head past removed entries and compacts the slice
// when most of it is stale. REQUIRES: pq.mu held.
func (pq *processQueue) skipStaleLocked() {
	for pq.head < len(pq.offsets) {
		if _, ok := pq.msgs[pq.offsets[pq.head]]; ok {
			break
		}
		pq.head++
	}
	if pq.head > 64 && pq.head*2 > len(pq.offsets) {
		pq.offsets = append(pq.offsets[:0], pq.offsets[pq.head:]...)
		pq.head = 0
	}
}

// removeMessages drops consumed messages (concurrent mode) and returns the
// offset to commit: the smallest offset still cached, or maxOffset+1 when
// the cache is empty; -1 if nothing was ever cached.
func (pq *processQueue) removeMessages(msgs []*MessageExt) int64 {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	var bytes, removed int64
	for _, m := range msgs {
		if cur, ok := pq.msgs[m.QueueOffset]; ok && cur == m {
			delete(pq.msgs, m.QueueOffset)
			delete(pq.consumeStart, m.QueueOffset)
			bytes += int64(len(m.Body))
			removed++
		}
	}
	pq.count.Add(-removed)
	pq.size.Add(-bytes)
	pq.skipStaleLocked()
	if pq.maxOffset < 0 {
		return -1
	}
	if pq.head < len(pq.offsets) {
		return pq.offsets[pq.head]
	}
	return pq.maxOffset + 1
}

// span is the distance between the largest and smallest cached offsets,
// which bounds how far a slow message holds back the committed offset.
func (pq *processQueue) span() int64 {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	pq.skipStaleLocked()
	if pq.head >= len(pq.offsets) {
		return 0
	}
	return pq.maxOffset - pq.offsets[pq.head]
}

// takeMessages moves up to n of the lowest cached messages to the consuming
// set (orderly mode) and returns them in offset order.
func (pq *processQueue) takeMessages(n int) []*MessageExt {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	var out []*MessageExt
	for len(out) < n {
		pq.skipStaleLocked()
		if pq.head >= len(pq.offsets) {
			break
		}
		off := pq.offsets[pq.head]
		m := pq.msgs[off]
		delete(pq.msgs, off)
		pq.head++
		out = append(out, m)
	}
	pq.consuming = append(pq.consuming, out...)
	return out
}

// commit forgets the consuming set (orderly mode, consumed successfully) and
// returns the offset to store: one past the largest committed offset, or -1
// if nothing was consuming.
func (pq *processQueue) commit() int64 {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	if len(pq.consuming) == 0 {
		return -1
	}
	var bytes int64
	for _, m := range pq.consuming {
		bytes += int64(len(m.Body))
	}
	last := pq.consuming[len(pq.consuming)-1].QueueOffset
	pq.count.Add(-int64(len(pq.consuming)))
	pq.size.Add(-bytes)
	pq.consuming = pq.consuming[:0]
	return last + 1
}

// makeMessagesConsumeAgain returns the consuming set to the cache (orderly
// mode, consumption suspended) so the next takeMessages returns it again.
func (pq *processQueue) makeMessagesConsumeAgain() {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	if len(pq.consuming) == 0 {
		return
	}
	// The consuming set precedes every cached offset, so it goes back at
	// the head in order.
	pq.skipStaleLocked()
	rest := pq.offsets[pq.head:]
	merged := make([]int64, 0, len(pq.consuming)+len(rest))
	for _, m := range pq.consuming {
		pq.msgs[m.QueueOffset] = m
		merged = append(merged, m.QueueOffset)
	}
	pq.offsets = append(merged, rest...)
	pq.head = 0
	pq.consuming = pq.consuming[:0]
}

// empty reports whether nothing is cached or consuming.
func (pq *processQueue) empty() bool { return pq.count.Load() == 0 }

func (pq *processQueue) markPulled() { pq.lastPullNanos.Store(time.Now().UnixNano()) }

func (pq *processQueue) pullExpired(now time.Time) bool {
	return now.Sub(time.Unix(0, pq.lastPullNanos.Load())) > pullMaxIdle
}

func (pq *processQueue) lockExpired(now time.Time) bool {
	return now.Sub(time.Unix(0, pq.lastLockNanos.Load())) > lockMaxLive
}

func (pq *processQueue) setLocked(now time.Time) {
	pq.locked.Store(true)
	pq.lastLockNanos.Store(now.UnixNano())
}

// cachedSizeMiB is the cached body size in MiB, rounded down.
func (pq *processQueue) cachedSizeMiB() int64 { return pq.size.Load() >> 20 }

// markConsumeStart records that a listener starts on msgs now.
func (pq *processQueue) markConsumeStart(msgs []*MessageExt, now time.Time) {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	for _, m := range msgs {
		if _, ok := pq.msgs[m.QueueOffset]; ok {
			pq.consumeStart[m.QueueOffset] = now.UnixNano()
		}
	}
	pq.lastConsNanos.Store(now.UnixNano())
}

// expiredHead returns up to max of the lowest cached messages whose
// listener has been running longer than timeout (RocketMQ's
// cleanExpiredMsg looks at the head only: those hold the offset back).
func (pq *processQueue) expiredHead(now time.Time, timeout time.Duration, max int) []*MessageExt {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	pq.skipStaleLocked()
	var out []*MessageExt
	for i := pq.head; i < len(pq.offsets) && len(out) < max; i++ {
		off := pq.offsets[i]
		m, ok := pq.msgs[off]
		if !ok {
			continue
		}
		start, ok := pq.consumeStart[off]
		if !ok || now.Sub(time.Unix(0, start)) <= timeout {
			break
		}
		out = append(out, m)
	}
	return out
}
