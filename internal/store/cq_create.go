package store

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// Creation of a queue's first file off the dispatch goroutine.
//
// The first unit of a new queue needs two directories and a file (mkdir,
// mkdir, create, ftruncate: four journaled metadata changes), which on the
// dispatch goroutine held every other queue's dispatch for ~0.4-2 ms:
// 500-2,800 new queues a second. Instead, once the store runs, the units of
// a queue without a file are kept in memory (consumeQueue.pending) and the
// queue is handed to one creator goroutine, which makes the file, writes
// the pending units with one pwrite and installs the file; units that
// arrive meanwhile join the pending list. Readers see pending units as if
// they were in the file (scan, maxOffset).
//
// Crash safety: pending units are in memory only, so until a queue's file
// is installed the checkpoint's logicsMsgTimestamp is held below the store
// time of its oldest pending unit (checkpoint.logicsHold): abnormal recovery
// then re-dispatches from a commit-log file at or before that record, and
// consume-queue writes are idempotent. Close drains the creator for a few
// seconds before the final flush and leaves the rest pending in the
// consume-queue snapshot (cq_snapshot.go). Recovery keeps the units of
// queues without a file pending too; the creator makes their files once
// the store runs (an abnormal recovery with 20,000 such queues took 13 s
// making them inline, 0.27 s this way).

// createJob is one queue waiting for its first file.
type createJob struct {
	cq *consumeQueue
	ts int64 // store time of the queue's first pending unit
}

// queueCreator owns the store-cq-create goroutine.
type queueCreator struct {
	log *slog.Logger
	// setHold sets checkpoint.logicsHold (0: nothing pending).
	setHold func(ts int64)
	m       *mapper
	// onError reports a creation failure (the store refuses writes while
	// one is outstanding) and nil once a creation succeeds again.
	onError func(err error)

	running atomic.Bool // set while the goroutine serves jobs
	// beforeCreate, when set, runs before each creation (a test seam).
	beforeCreate func()

	// createMu is held while a queue's file is made, from its deleted
	// check to the install, and by topic deletion from marking the queues
	// deleted to removing their directory: a creation never makes a
	// directory again after its removal.
	createMu sync.Mutex

	mu   sync.Mutex
	jobs []createJob // FIFO, oldest first; guarded by mu
	wake chan struct{}
}

func newQueueCreator(log *slog.Logger, setHold func(int64), m *mapper, onError func(error)) *queueCreator {
	return &queueCreator{log: log, setHold: setHold, m: m, onError: onError, wake: make(chan struct{}, 1)}
}

// active reports whether new queues go through the creator.
func (c *queueCreator) active() bool { return c != nil && c.running.Load() }

// enqueue hands a queue with its first pending unit to the creator.
func (c *queueCreator) enqueue(cq *consumeQueue, ts int64) {
	c.mu.Lock()
	if len(c.jobs) == 0 {
		c.setHold(ts)
	}
	c.jobs = append(c.jobs, createJob{cq, ts})
	c.mu.Unlock()
	wake(c.wake)
}

// pendingQueues is how many queues wait for their first file.
func (c *queueCreator) pendingQueues() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.jobs)
}

// run serves jobs until quit; Close then drains what is queued.
func (c *queueCreator) run(quit <-chan struct{}) {
	c.running.Store(true)
	for {
		select {
		case <-quit:
			return // Close drains what is left (drainFor), after dispatch stopped
		case <-c.wake:
		}
		if !c.serve(quit) {
			// A creation failed: retry after a pause (writes are refused
			// meanwhile).
			select {
			case <-quit:
			case <-time.After(100 * time.Millisecond):
				wake(c.wake)
			}
		}
	}
}

// drain stops routing new queues through the creator and creates the
// files of every queue still waiting (Close, after dispatch stopped).
func (c *queueCreator) drain() { c.drainFor(0) }

// drainFor is drain that gives up after d (0: no limit); the queues left
// keep their units pending (Close writes them into the consume-queue
// snapshot, cq_snapshot.go).
func (c *queueCreator) drainFor(d time.Duration) {
	if c == nil {
		return
	}
	c.running.Store(false)
	var deadline time.Time
	if d > 0 {
		deadline = time.Now().Add(d)
	}
	for i := 0; i < 3 && !c.serveUntil(nil, deadline); i++ {
	}
}

// jobTimes returns the store time of the first pending unit of every
// queue waiting for its file.
func (c *queueCreator) jobTimes() map[*consumeQueue]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[*consumeQueue]int64, len(c.jobs))
	for _, j := range c.jobs {
		if _, ok := out[j.cq]; !ok {
			out[j.cq] = j.ts
		}
	}
	return out
}

// serve creates files for the queued jobs in order; false if one failed
// (it stays first in the queue).
func (c *queueCreator) serve(quit <-chan struct{}) bool { return c.serveUntil(quit, time.Time{}) }

// serveUntil is serve that also returns (true) once deadline passed (zero:
// never).
func (c *queueCreator) serveUntil(quit <-chan struct{}, deadline time.Time) bool {
	for {
		c.mu.Lock()
		if len(c.jobs) == 0 {
			c.setHold(0)
			c.mu.Unlock()
			return true
		}
		j := c.jobs[0]
		c.mu.Unlock()
		if c.beforeCreate != nil {
			c.beforeCreate()
		}
		c.createMu.Lock()
		err := c.create(j.cq)
		c.createMu.Unlock()
		if err != nil {
			c.onError(err)
			return false
		}
		c.onError(nil)
		c.mu.Lock()
		c.jobs[0] = createJob{}
		c.jobs = c.jobs[1:]
		if len(c.jobs) > 0 {
			c.setHold(c.jobs[0].ts)
		} else {
			c.setHold(0)
			c.jobs = nil
		}
		c.mu.Unlock()
		if !deadline.IsZero() && time.Now().After(deadline) {
			return true
		}
		if quit != nil {
			select {
			case <-quit:
				return true
			default:
			}
		}
	}
}

// create makes the first file of cq, writes its pending units and installs
// the file. The file system calls run without the queue's locks (dispatch
// keeps appending to pending); the install takes writeMu and pendMu.
func (c *queueCreator) create(cq *consumeQueue) error {
	var err error
	if !cq.deleted.Load() { // deleted: DeleteTopics removes the directory
		err = c.createFile(cq)
	}
	if cq.deleted.Load() {
		// DeleteTopics sets deleted before it removes the directory: a
		// file-system step that failed because the directory vanished
		// under us is no reason to refuse writes, and nothing is left to
		// make (the units are forgotten, as createFile does for a queue
		// deleted before its install).
		cq.writeMu.Lock()
		cq.pendMu.Lock()
		cq.pending, cq.pendFrom = nil, 0
		cq.pendEnd.Store(0)
		cq.pendMu.Unlock()
		cq.writeMu.Unlock()
		return nil
	}
	return err
}

func (c *queueCreator) createFile(cq *consumeQueue) error {
	cq.pendMu.Lock()
	from, units := cq.pendFrom, cq.pending
	cq.pendMu.Unlock()
	if len(units) == 0 {
		return nil
	}
	if cq.files.last() != nil {
		return cq.flushPending()
	}
	size := cq.files.fileSize
	start := from * CQUnitSize
	fileFrom := start - start%size
	dir := cq.files.dir
	path := filepath.Join(dir, fileName(fileFrom))
	if err := mkdirQueue(dir); err != nil {
		return fmt.Errorf("store: create %s: %w", dir, openErr(err))
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("store: open %s: %w", path, openErr(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("store: stat %s: %w", path, err)
	}
	if st.Size() != 0 && st.Size() != size {
		return fmt.Errorf("store: %s has size %d, want %d: %w", path, st.Size(), size, ErrBadFileSize)
	}
	if st.Size() == 0 {
		if err := f.Truncate(size); err != nil {
			os.Remove(path)
			return fmt.Errorf("store: size %s: %w", path, diskErr(err))
		}
	}
	// Pre-blank units below the first offset (a rebuilt queue), then the
	// pending units that fit in the file, in one write.
	room := int((size - (start - fileFrom)) / CQUnitSize)
	units = units[:min(len(units), room)]
	buf := make([]byte, 0, start-fileFrom+int64(len(units))*CQUnitSize)
	var u [CQUnitSize]byte
	encodeCQUnit(u[:], cqUnit{PhyOffset: 0, Size: cqBlankUnitSize})
	for p := fileFrom; p < start; p += CQUnitSize {
		buf = append(buf, u[:]...)
	}
	for _, x := range units {
		encodeCQUnit(u[:], x)
		buf = append(buf, u[:]...)
	}
	if _, err := f.WriteAt(buf, 0); err != nil {
		return fmt.Errorf("store: write %s: %w", path, diskErr(err))
	}

	cq.writeMu.Lock()
	defer cq.writeMu.Unlock()
	if cq.deleted.Load() {
		// Deleted meanwhile: remove what was made (the topic directory
		// too when it is empty) and forget the units.
		os.Remove(path)
		os.Remove(dir)
		os.Remove(filepath.Dir(dir))
		cq.pendMu.Lock()
		cq.pending, cq.pendFrom = nil, 0
		cq.pendEnd.Store(0)
		cq.pendMu.Unlock()
		return nil
	}
	cq.pendMu.Lock()
	defer cq.pendMu.Unlock()
	// Units appended since the snapshot (pending only grows while the
	// queue has no file, under writeMu, which is held now).
	rest := cq.pending[len(units):]
	over := rest[min(len(rest), room-len(units)):]
	rest = rest[:len(rest)-len(over)]
	if len(rest) > 0 {
		b := make([]byte, len(rest)*CQUnitSize)
		for i, x := range rest {
			encodeCQUnit(b[i*CQUnitSize:], x)
		}
		if _, err := f.WriteAt(b, int64(len(buf))); err != nil {
			return fmt.Errorf("store: write %s: %w", path, diskErr(err))
		}
		buf = append(buf, b...)
	}
	mf := newLazyFileIn(dir, fileFrom, size, c.m)
	mf.lastModified.Store(time.Now().UnixMilli())
	mf.wrote.Store(int64(len(buf)))
	mf.committed.Store(int64(len(buf)))
	mf.flushed.Store(start - fileFrom)
	cq.files.mu.Lock()
	n := len(cq.files.files)
	if n != 0 && cq.files.files[n-1].fromOffset+size != fileFrom {
		cq.files.mu.Unlock()
		return errors.New("store: consume queue " + cq.String() + " got a file while units were pending")
	}
	cq.files.files = append(cq.files.files, mf)
	if n == 0 {
		cq.files.flushedWhere.Store(fileFrom)
		cq.files.committedWhere.Store(start)
	}
	cq.files.mu.Unlock()
	// Units beyond the first file (a queue that received more than a
	// file's worth before its creation): written by the ordinary path,
	// which rolls to the next files. pendEnd stays until they are all
	// written, so maxOffset never goes back.
	overFrom := cq.pendFrom + int64(len(units)+len(rest))
	for i, x := range over {
		if err := cq.appendLocked(x, overFrom+int64(i)); err != nil {
			// Keep the rest pending: the job stays queued and is
			// retried (flushPending).
			cq.pending = append([]cqUnit(nil), over[i:]...)
			cq.pendFrom = overFrom + int64(i)
			return err
		}
	}
	if k := len(cq.pending); k > 0 {
		cq.tailQ, cq.tailU = cq.pendFrom+int64(k)-1, cq.pending[k-1] // pendMu held
	}
	cq.pending = nil
	cq.pendFrom = 0
	cq.pendEnd.Store(0)
	return nil
}

// flushPending writes the pending units of a queue that has files
// by the ordinary path (the retry after a failure beyond the first file).
func (cq *consumeQueue) flushPending() error {
	cq.writeMu.Lock()
	defer cq.writeMu.Unlock()
	cq.pendMu.Lock()
	defer cq.pendMu.Unlock()
	for len(cq.pending) > 0 {
		if cq.deleted.Load() {
			cq.pending = nil
			break
		}
		if err := cq.appendLocked(cq.pending[0], cq.pendFrom); err != nil {
			return err
		}
		cq.tailQ, cq.tailU = cq.pendFrom, cq.pending[0] // pendMu held
		cq.pending = cq.pending[1:]
		cq.pendFrom++
	}
	cq.pending, cq.pendFrom = nil, 0
	cq.pendEnd.Store(0)
	return nil
}

// putPending appends a unit to a queue whose first file is not made yet.
// REQUIRES: cq.writeMu held; the unit is not a re-dispatch
// (maxPhysicOffset checked by the caller).
func (cq *consumeQueue) putPending(u cqUnit, queueOffset, storeTs int64) {
	cq.pendMu.Lock()
	first := len(cq.pending) == 0
	if first {
		cq.pendFrom = queueOffset
		if queueOffset > 0 && cq.wbGen.Load() == 0 { // a new queue (write-behind: after its files)
			cq.minLogicOffset.Store(queueOffset * CQUnitSize)
		}
	} else if end := cq.pendFrom + int64(len(cq.pending)); queueOffset < end {
		cq.pendMu.Unlock()
		return // already built
	} else if queueOffset > end {
		cq.log.Warn("consume queue gap: unit appended at current end", "topic", cq.topic,
			"queueId", cq.queueID, "expected", queueOffset, "actual", end)
	}
	c0 := cap(cq.pending)
	cq.pending = append(cq.pending, u)
	n := len(cq.pending)
	cq.pendEnd.Store(cq.pendFrom + int64(n))
	cq.pendMu.Unlock()
	cq.maxPhysicOffset.Store(u.PhyOffset + int64(u.Size))
	switch {
	case cq.wbGen.Load() != 0:
		cq.wb.grew(cq, n, cap(cq.pending)-c0)
	case first:
		cq.bg.enqueue(cq, storeTs)
	}
}

// scanPending is scan over the pending units; ok false when the queue has
// none (its file is installed: read that).
func (cq *consumeQueue) scanPending(q int64, maxUnits int, fn func(q int64, u cqUnit) bool) (int, bool) {
	cq.pendMu.Lock()
	if len(cq.pending) == 0 {
		cq.pendMu.Unlock()
		return 0, false
	}
	i := q - cq.pendFrom
	if i < 0 {
		cq.pendMu.Unlock()
		return 0, false // in the files already written
	}
	var got []cqUnit
	if i < int64(len(cq.pending)) {
		got = append(got, cq.pending[i:min(int64(len(cq.pending)), i+int64(maxUnits))]...)
	}
	cq.pendMu.Unlock()
	n := 0
	for _, u := range got {
		n++
		if !fn(q, u) {
			break
		}
		q++
	}
	return n, true
}
