package store

import (
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Write-behind of consume-queue units for queues that are not mapped.
//
// Past the mapping budget (MaxMappedConsumeQueueFiles) a queue whose last
// file is not mapped got each unit by open + 20-byte pwrite + close:
// publishing round-robin over 100,000 queues spent 44 % of the broker's
// CPU there, and no descriptor cache helps cyclic access. Instead such a
// queue keeps its units in memory (consumeQueue.pending, the list the
// queue creator uses for queues without a file; readers serve it as if
// written) and this goroutine writes them with one pwrite per queue:
//
//   - when a queue has a page's worth (behindPageUnits);
//   - when the buffers of all queues exceed the budget
//     (consumeQueueWriteBehindBytes): the largest first, down to half;
//   - when a queue's oldest buffered unit is older than
//     consumeQueueWriteBehindMaxAge;
//   - at Close, after dispatch stopped (the rest, past a time budget, go
//     into the consume-queue snapshot as pending units).
//
// Crash rule: the checkpoint's logicsMsgTimestamp is held below the store
// time of the oldest buffered unit (checkpoint.behindHold), so after a
// SIGKILL abnormal recovery re-dispatches every unit that was not in its
// file yet; consume-queue writes are idempotent.

// behindPageUnits is a page's worth of units: a queue with that many
// buffered is written at once (one pwrite covers the page).
const behindPageUnits = pageSize / CQUnitSize

// cqUnitMem is what one buffered unit costs in memory (a cqUnit).
const cqUnitMem = 24

// behindEntry is a queue's turn in the FIFO of write-behind queues: gen
// matches cq.wbGen while the queue is in write-behind with the units that
// entered at ts (store time) and at (monotonic time of entry).
type behindEntry struct {
	cq  *consumeQueue
	ts  int64
	at  time.Duration
	gen uint32
}

// writeBehind owns the store-cq-behind goroutine and the accounting of
// the buffered units.
type writeBehind struct {
	log *slog.Logger
	// setHold sets checkpoint.behindHold (0: nothing buffered).
	setHold func(ts int64)
	// onError reports a write failure (writes refused) and nil once a
	// write succeeds again.
	onError func(err error)
	budget  int64 // bytes of buffers (capacity) that trigger a flush
	maxAge  time.Duration
	epoch   time.Time

	running atomic.Bool
	mem     atomic.Int64 // bytes of buffer capacity held by write-behind queues
	units   atomic.Int64 // units buffered
	peakMem atomic.Int64
	writes  atomic.Int64 // pwrites (one per queue flush)
	written atomic.Int64 // units written by them

	mu    sync.Mutex
	fifo  []behindEntry   // entry order (so store-time order); guarded by mu
	live  int             // entries of fifo whose gen matches; guarded by mu
	gen   uint32          // last generation given; guarded by mu
	ready []*consumeQueue // queues with a page's worth; guarded by mu
	wake  chan struct{}

	scratch []byte // encoding buffer of the flushing goroutine
	failed  bool   // the last write failed; owned by the flushing goroutine
	sizes   []behindSize
}

type behindSize struct {
	cq *consumeQueue
	n  int
}

func newWriteBehind(log *slog.Logger, budget int64, maxAge time.Duration, setHold func(int64), onError func(error)) *writeBehind {
	return &writeBehind{log: log, budget: budget, maxAge: maxAge, setHold: setHold, onError: onError,
		epoch: time.Now(), wake: make(chan struct{}, 1)}
}

// active reports whether units of unmapped queues are buffered.
func (w *writeBehind) active() bool { return w != nil && w.running.Load() }

func (w *writeBehind) now() time.Duration { return time.Since(w.epoch) }

// enter registers cq, whose first buffered unit has store time ts.
// REQUIRES: cq.writeMu (the dispatch goroutine).
func (w *writeBehind) enter(cq *consumeQueue, ts int64) {
	ts = max(ts, 1)
	w.mu.Lock()
	w.gen++
	if w.gen == 0 {
		w.gen = 1
	}
	cq.wbGen.Store(w.gen)
	w.fifo = append(w.fifo, behindEntry{cq: cq, ts: ts, at: w.now(), gen: w.gen})
	w.live++
	if w.live == 1 {
		w.setHold(ts) // before dispatch advances logicsMsgTimestamp past it
	}
	w.mu.Unlock()
}

// grew accounts a unit buffered by cq (n units now, capacity grown by
// grownCap units). REQUIRES: cq.writeMu.
func (w *writeBehind) grew(cq *consumeQueue, n, grownCap int) {
	w.units.Add(1)
	if grownCap > 0 {
		m := w.mem.Add(int64(grownCap) * cqUnitMem)
		if m > w.peakMem.Load() {
			w.peakMem.Store(m)
		}
		if m > w.budget && m-int64(grownCap)*cqUnitMem <= w.budget {
			wake(w.wake)
		}
	}
	if n == behindPageUnits {
		w.mu.Lock()
		w.ready = append(w.ready, cq)
		w.mu.Unlock()
		wake(w.wake)
	}
}

// leave unregisters cq (its buffer written or dropped: units units,
// capacity capUnits). REQUIRES: cq.writeMu.
func (w *writeBehind) leave(cq *consumeQueue, units, capUnits int) {
	w.units.Add(-int64(units))
	w.mem.Add(-int64(capUnits) * cqUnitMem)
	w.mu.Lock()
	if cq.wbGen.Load() != 0 {
		cq.wbGen.Store(0)
		w.live--
	}
	w.mu.Unlock()
}

// run serves the flush triggers until quit; Close drains the rest.
func (w *writeBehind) run(quit <-chan struct{}) {
	tick := time.NewTicker(max(w.maxAge/8, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-quit:
			return
		case <-w.wake:
		case <-tick.C:
		}
		w.serve(quit)
	}
}

// serve writes the queues that are due: a page's worth, over budget
// (largest first), too old; then moves the checkpoint hold.
func (w *writeBehind) serve(quit <-chan struct{}) {
	w.mu.Lock()
	ready := w.ready
	w.ready = nil
	w.mu.Unlock()
	for _, cq := range ready {
		w.flushQueue(cq, 0)
	}
	if w.mem.Load() > w.budget {
		w.flushLargest(w.budget / 2)
	}
	// Oldest first while due.
	limit := w.now() - w.maxAge
	for {
		select {
		case <-quit:
			w.updateHold()
			return
		default:
		}
		e, ok := w.head()
		if !ok || e.at > limit {
			break
		}
		if !w.flushQueue(e.cq, e.gen) {
			break // a failed write: the rest wait for the next pass
		}
	}
	w.updateHold()
}

// head drops stale entries from the front and returns the oldest live one.
func (w *writeBehind) head() (behindEntry, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.trimLocked()
	if len(w.fifo) == 0 {
		return behindEntry{}, false
	}
	return w.fifo[0], true
}

// REQUIRES: w.mu.
func (w *writeBehind) trimLocked() {
	i := 0
	for i < len(w.fifo) && w.fifo[i].cq.wbGen.Load() != w.fifo[i].gen {
		w.fifo[i] = behindEntry{}
		i++
	}
	w.fifo = w.fifo[i:]
	if len(w.fifo) > 1024 && len(w.fifo) > 2*w.live {
		// Mostly stale (queues written out of order): compact.
		out := make([]behindEntry, 0, w.live+w.live/4)
		for _, e := range w.fifo {
			if e.cq.wbGen.Load() == e.gen {
				out = append(out, e)
			}
		}
		w.fifo = out
	}
	if len(w.fifo) == 0 {
		w.fifo = nil
	}
}

// updateHold sets the checkpoint hold to the oldest live entry's store
// time (entries are in store-time order: dispatch enters queues in
// commit-log order).
func (w *writeBehind) updateHold() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.trimLocked()
	if len(w.fifo) == 0 {
		w.setHold(0)
		return
	}
	w.setHold(w.fifo[0].ts)
}

// flushLargest writes the queues with the most buffered units until the
// buffers hold at most target bytes.
func (w *writeBehind) flushLargest(target int64) {
	w.mu.Lock()
	w.trimLocked()
	sizes := w.sizes[:0]
	for _, e := range w.fifo {
		if e.cq.wbGen.Load() == e.gen {
			sizes = append(sizes, behindSize{cq: e.cq})
		}
	}
	w.mu.Unlock()
	for i := range sizes {
		cq := sizes[i].cq
		cq.pendMu.Lock()
		sizes[i].n = cap(cq.pending)
		cq.pendMu.Unlock()
	}
	slices.SortFunc(sizes, func(a, b behindSize) int { return b.n - a.n })
	for i := range sizes {
		if w.mem.Load() <= target {
			break
		}
		w.flushQueue(sizes[i].cq, 0)
		sizes[i] = behindSize{}
	}
	w.sizes = sizes[:0]
}

// flushQueue writes cq's buffered units into its files (gen: those of
// that FIFO entry; 0: any). It reports false when a write failed and the
// units stay buffered.
func (w *writeBehind) flushQueue(cq *consumeQueue, gen uint32) bool {
	cq.writeMu.Lock()
	defer cq.writeMu.Unlock()
	if g := cq.wbGen.Load(); g == 0 || (gen != 0 && g != gen) {
		return true // written already (another trigger)
	}
	var err error
	w.scratch, err = cq.writeBehindLocked(w, w.scratch)
	if err != nil || w.failed {
		w.failed = err != nil
		w.onError(err)
	}
	return err == nil
}

// drainFor writes every buffered queue (Close, after dispatch stopped),
// giving up after d; the queues left keep their units pending (the
// snapshot carries them).
func (w *writeBehind) drainFor(d time.Duration) {
	if w == nil {
		return
	}
	w.running.Store(false)
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		e, ok := w.head()
		if !ok {
			break
		}
		if !w.flushQueue(e.cq, e.gen) {
			break
		}
	}
	w.updateHold()
}

// jobTimes adds the store time of the first buffered unit of every queue
// still in write-behind to out.
func (w *writeBehind) jobTimes(out map[*consumeQueue]int64) int {
	if w == nil {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, e := range w.fifo {
		if e.cq.wbGen.Load() == e.gen {
			if _, ok := out[e.cq]; !ok {
				out[e.cq] = e.ts
				n++
			}
		}
	}
	return n
}

// BehindStats is the write-behind state (Store.WriteBehind).
type BehindStats struct {
	Queues  int   // queues with units buffered
	Units   int64 // units buffered
	Bytes   int64 // buffer memory (capacity) held for them
	Peak    int64 // the most Bytes held since start
	Budget  int64
	Writes  int64 // pwrites of buffered units
	Written int64 // units written by them
}

func (w *writeBehind) stats() BehindStats {
	if w == nil {
		return BehindStats{}
	}
	w.mu.Lock()
	live := w.live
	w.mu.Unlock()
	return BehindStats{Queues: live, Units: w.units.Load(), Bytes: w.mem.Load(), Peak: w.peakMem.Load(),
		Budget: w.budget, Writes: w.writes.Load(), Written: w.written.Load()}
}

// WriteBehind reports the consume-queue write-behind buffers.
func (s *Store) WriteBehind() BehindStats { return s.behind.stats() }

// --- consumeQueue side ---

// behindTail reports whether the unit for queueOffset goes to the
// write-behind buffer: the queue's last file is not mapped while the
// mapping limit is reached, the unit follows its last one, and the
// buffers hold at most twice the budget.
// REQUIRES: cq.writeMu, no pending units.
func (cq *consumeQueue) behindTail(queueOffset int64) bool {
	if !cq.wb.active() || cq.wb.mem.Load() > 2*cq.wb.budget {
		// Twice the budget: the flusher is behind; write the unit at once
		// (memory stays bounded whatever the inflow).
		return false
	}
	f := cq.files.last()
	if f == nil || f.lazy == nil || f.lazy.mapping.Load() != nil || !f.lazy.m.full() || !f.available.Load() {
		return false
	}
	w := f.wrote.Load()
	return queueOffset*CQUnitSize == f.fromOffset+w && w+CQUnitSize <= f.size
}

// writeBehindLocked writes the buffered units: those that fit in the last
// file with one pwrite, any beyond it by the ordinary path (it rolls to the
// next file). On failure what is not written stays buffered. buf is a
// scratch buffer, returned grown. REQUIRES: cq.writeMu.
func (cq *consumeQueue) writeBehindLocked(w *writeBehind, buf []byte) ([]byte, error) {
	// pending changes only under writeMu (held): read it without pendMu.
	units, from := cq.pending, cq.pendFrom
	capUnits := cap(units)
	if cq.deleted.Load() || len(units) == 0 {
		cq.dropPending()
		w.leave(cq, len(units), capUnits)
		return buf, nil
	}
	n := 0
	var err error
	if f := cq.files.last(); f != nil && f.hold() {
		pos := f.wrote.Load()
		if from*CQUnitSize == f.fromOffset+pos {
			n = min(len(units), int((f.size-pos)/CQUnitSize))
			buf = slices.Grow(buf[:0], n*CQUnitSize)[:n*CQUnitSize]
			for i, u := range units[:n] {
				encodeCQUnit(buf[i*CQUnitSize:], u)
			}
			if n > 0 {
				if err = f.writeAtLazy(buf, pos); err != nil {
					n = 0
				} else {
					f.wrote.Store(pos + int64(n)*CQUnitSize)
					w.writes.Add(1)
					w.written.Add(int64(n))
				}
			}
		}
		f.release()
	}
	for err == nil && n < len(units) {
		// Beyond the last file (or a queue whose file changed under it):
		// the ordinary path, one unit at a time.
		if err = cq.appendLocked(units[n], from+int64(n)); err == nil {
			n++
		}
	}
	cq.pendMu.Lock()
	if n > 0 {
		cq.tailQ, cq.tailU = from+int64(n)-1, units[n-1]
	}
	if n == len(units) {
		cq.pending, cq.pendFrom = nil, 0
		cq.pendEnd.Store(0)
	} else {
		cq.pending = units[n:]
		cq.pendFrom = from + int64(n)
	}
	cq.pendMu.Unlock()
	if n == len(units) {
		w.leave(cq, n, capUnits)
	} else {
		// units[n:] keeps the rest of the same array.
		w.units.Add(-int64(n))
		w.mem.Add(-int64(n) * cqUnitMem)
	}
	return buf, err
}

// dropPending forgets the units in memory (a deleted queue).
// REQUIRES: cq.writeMu.
func (cq *consumeQueue) dropPending() {
	cq.pendMu.Lock()
	cq.pending, cq.pendFrom = nil, 0
	cq.pendEnd.Store(0)
	cq.pendMu.Unlock()
}

// forgetBehind drops the write-behind units of a deleted queue.
// REQUIRES: cq.writeMu.
func (cq *consumeQueue) forgetBehind() {
	if cq.wbGen.Load() == 0 {
		return
	}
	n, c := len(cq.pending), cap(cq.pending)
	cq.dropPending()
	cq.wb.leave(cq, n, c)
}
