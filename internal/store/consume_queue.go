package store

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Consume-queue unit layout (docs/storage.md §4.1). Part of the
// on-disk format; never change.
const (
	CQUnitSize      = 20
	cqUnitPhyOffset = 0
	cqUnitSize      = 8
	cqUnitTagsCode  = 12
	cqBlankUnitSize = math.MaxInt32 // size of a pre-blank filler unit
)

// cqUnit is one decoded consume-queue unit.
type cqUnit struct {
	PhyOffset int64
	Size      int32
	TagsCode  int64
}

func decodeCQUnit(b []byte) cqUnit {
	return cqUnit{
		PhyOffset: int64(binary.BigEndian.Uint64(b[cqUnitPhyOffset:])),
		Size:      int32(binary.BigEndian.Uint32(b[cqUnitSize:])),
		TagsCode:  int64(binary.BigEndian.Uint64(b[cqUnitTagsCode:])),
	}
}

func encodeCQUnit(b []byte, u cqUnit) {
	binary.BigEndian.PutUint64(b[cqUnitPhyOffset:], uint64(u.PhyOffset))
	binary.BigEndian.PutUint32(b[cqUnitSize:], uint32(u.Size))
	binary.BigEndian.PutUint64(b[cqUnitTagsCode:], uint64(u.TagsCode))
}

// valid is RocketMQ's recovery test for a unit (pre-blank units pass).
func (u cqUnit) valid() bool { return u.PhyOffset >= 0 && u.Size > 0 }

func (u cqUnit) blank() bool { return u.PhyOffset == 0 && u.Size == cqBlankUnitSize }

// consumeQueue is the dense array of 20-byte units of one (topic, queueId)
// under consumequeue/<topic>/<queueId>/. It is written only by the dispatch
// goroutine (and by recovery before services start); readers go through the
// mapped-file queue's hold/release.
type consumeQueue struct {
	topic   string
	queueID int32
	files   *mappedFileQueue
	log     *slog.Logger

	writeMu sync.Mutex // serialises unit appends and truncation

	// maxPhysicOffset is the end (offset+size) of the last unit written;
	// used to skip idempotent re-dispatch.
	maxPhysicOffset atomic.Int64
	// minLogicOffset is the byte offset of the first readable unit.
	minLogicOffset atomic.Int64

	// bg creates the queue's first file off the dispatch goroutine
	// (cq_create.go); nil or not running: created by the writer.
	bg *queueCreator
	// pending holds the units written while the queue has no file yet:
	// queue offsets pendFrom.. ; guarded by pendMu, appended under writeMu
	// too. pendEnd is pendFrom+len(pending) while any is pending, else 0.
	pendMu   sync.Mutex
	pending  []cqUnit
	pendFrom int64
	pendEnd  atomic.Int64
	// tailQ and tailU are the queue offset and the unit last written into
	// the files (tailQ -1: none), so a read of the newest unit (a consumer
	// at the tail; a lite topic's one message) needs no file access, which
	// for an unmapped file is an open, a pread and a close. A unit at an
	// offset never changes once written, except by truncateDirtyLogic,
	// which forgets the tail. Set under writeMu; guarded by pendMu.
	tailQ int64
	tailU cqUnit
	// deleted is set (under writeMu) when the queue's topic is deleted.
	deleted atomic.Bool
	// wb buffers the units of the queue while its last file is not mapped
	// past the mapping limit (cq_behind.go); wbGen is its FIFO generation
	// while pending holds such units, else 0 (changed under writeMu and
	// wb.mu).
	wb    *writeBehind
	wbGen atomic.Uint32
}

// newConsumeQueue builds the queue; its files are sparse and mapped
// lazily through m (lazy_map.go).
func newConsumeQueue(root, topic string, queueID int32, fileSize int64, log *slog.Logger, m *mapper) *consumeQueue {
	dir := filepath.Join(root, consumeQueueDirName, topic, strconv.Itoa(int(queueID)))
	cq := &consumeQueue{topic: topic, queueID: queueID, log: log, tailQ: -1}
	cq.files = newMappedFileQueueLazy(dir, fileSize, nil, m)
	cq.maxPhysicOffset.Store(-1)
	return cq
}

// maxOffset is the exclusive max queue offset.
func (cq *consumeQueue) maxOffset() int64 {
	if e := cq.pendEnd.Load(); e > 0 {
		return e
	}
	return cq.files.maxOffset() / CQUnitSize
}

// minOffset is the first readable queue offset.
func (cq *consumeQueue) minOffset() int64 { return cq.minLogicOffset.Load() / CQUnitSize }

// recover implements 6.5: scan from the third-last file, stop at the first
// invalid unit, truncate after it.
func (cq *consumeQueue) recover() error {
	files := cq.files.snapshot()
	if len(files) == 0 {
		return nil
	}
	idx := max(0, len(files)-3)
	end := files[idx].fromOffset
	maxPhy := int64(-1)
	for ; idx < len(files); idx++ {
		f := files[idx]
		if !f.hold() {
			break
		}
		d, err := f.view()
		if err != nil {
			f.release()
			return fmt.Errorf("store: recover consume queue %s: %w", cq, err)
		}
		var pos int64
		for pos = 0; pos+CQUnitSize <= f.size; pos += CQUnitSize {
			u := decodeCQUnit(d[pos:])
			if !u.valid() {
				break
			}
			if !u.blank() {
				maxPhy = u.PhyOffset + int64(u.Size)
			}
		}
		f.release()
		end = f.fromOffset + pos
		if pos < f.size {
			break
		}
	}
	cq.files.truncateDirty(end)
	cq.files.flushedWhere.Store(end)
	cq.files.committedWhere.Store(end)
	cq.maxPhysicOffset.Store(maxPhy)
	if first := cq.files.first(); first != nil && cq.minLogicOffset.Load() < first.fromOffset {
		cq.minLogicOffset.Store(first.fromOffset)
	}
	return nil
}

// putUnit appends the unit for queueOffset (4.1 putMessagePositionInfo);
// storeTs is the record's store time. Re-dispatch of an already built unit
// is skipped as success. A queue without a file while the creator runs
// keeps the unit in memory (putPending); so does a queue whose last file
// is not mapped while the mapping limit is reached (write-behind,
// cq_behind.go), instead of evicting another file's mapping or a pwrite
// per unit.
func (cq *consumeQueue) putUnit(u cqUnit, queueOffset, storeTs int64) error {
	cq.writeMu.Lock()
	defer cq.writeMu.Unlock()
	if u.PhyOffset+int64(u.Size) <= cq.maxPhysicOffset.Load() {
		return nil
	}
	if cq.pendEnd.Load() > 0 || (cq.bg.active() && cq.files.last() == nil) {
		cq.putPending(u, queueOffset, storeTs)
		return nil
	}
	if cq.behindTail(queueOffset) {
		cq.wb.enter(cq, storeTs)
		cq.putPending(u, queueOffset, storeTs)
		return nil
	}
	if err := cq.appendLocked(u, queueOffset); err != nil {
		return err
	}
	cq.setTailLocked(queueOffset, u)
	return nil
}

// appendLocked writes the unit into the queue's files. REQUIRES: writeMu.
func (cq *consumeQueue) appendLocked(u cqUnit, queueOffset int64) error {
	expected := queueOffset * CQUnitSize
	empty := cq.files.last() == nil
	f, err := cq.files.lastOrCreate(expected)
	if err != nil {
		return err
	}
	if !f.hold() {
		return nil // the file is being deleted with its topic
	}
	defer f.release()
	preBlank := empty && expected > f.fromOffset
	d := f.mappedNow()
	if d == nil && (preBlank || f.lazy == nil || !f.lazy.m.full()) {
		if d, err = f.view(); err != nil {
			if empty {
				cq.files.removeLastIfEmpty(f)
			}
			return err
		}
	}
	if preBlank {
		// Pre-blank: a rebuilt queue whose first message is not offset 0.
		if err := f.reserve(expected - f.fromOffset); err != nil {
			cq.files.removeLastIfEmpty(f)
			return err
		}
		var blank [CQUnitSize]byte
		encodeCQUnit(blank[:], cqUnit{PhyOffset: 0, Size: cqBlankUnitSize})
		for pos := int64(0); pos < expected-f.fromOffset; pos += CQUnitSize {
			copy(d[pos:], blank[:])
		}
		f.setPositions(expected - f.fromOffset)
		cq.files.flushedWhere.Store(f.fromOffset)
		cq.files.committedWhere.Store(expected)
		cq.minLogicOffset.Store(expected)
	}
	cur := f.fromOffset + f.wrote.Load()
	if expected < cur {
		return nil // already built
	}
	if expected > cur && cur != 0 {
		cq.log.Warn("consume queue gap: unit appended at current end", "topic", cq.topic,
			"queueId", cq.queueID, "expected", expected/CQUnitSize, "actual", cur/CQUnitSize)
	}
	pos := f.wrote.Load()
	if d == nil {
		var b [CQUnitSize]byte
		encodeCQUnit(b[:], u)
		if err := f.writeAtLazy(b[:], pos); err != nil {
			return err
		}
	} else {
		if err := f.reserve(pos + CQUnitSize); err != nil {
			return err
		}
		encodeCQUnit(d[pos:], u)
	}
	f.wrote.Store(pos + CQUnitSize)
	cq.maxPhysicOffset.Store(u.PhyOffset + int64(u.Size))
	return nil
}

// setTailLocked records u, just written into the files at queue offset q
// (appendLocked), as the tail. The paths that write pending units set it
// under pendMu themselves. REQUIRES: writeMu held, pendMu not held.
func (cq *consumeQueue) setTailLocked(q int64, u cqUnit) {
	cq.pendMu.Lock()
	cq.tailQ, cq.tailU = q, u
	cq.pendMu.Unlock()
}

// tailAt returns the tail unit when it is the one at queue offset q.
func (cq *consumeQueue) tailAt(q int64) (cqUnit, bool) {
	cq.pendMu.Lock()
	defer cq.pendMu.Unlock()
	if q == cq.tailQ {
		return cq.tailU, true
	}
	return cqUnit{}, false
}

// unitAt reads the unit for queue offset q.
func (cq *consumeQueue) unitAt(q int64) (cqUnit, bool) {
	var u cqUnit
	ok := cq.scan(q, 1, func(_ int64, x cqUnit) bool { u = x; return false })
	return u, ok > 0
}

// scan calls fn for up to max units starting at queue offset q, within the
// file holding q (callers loop for more). It returns how many units it
// visited. fn returning false stops the scan.
func (cq *consumeQueue) scan(q int64, maxUnits int, fn func(q int64, u cqUnit) bool) int {
	if q < 0 || q < cq.minOffset() {
		return 0
	}
	if cq.pendEnd.Load() > 0 {
		if n, ok := cq.scanPending(q, maxUnits, fn); ok {
			return n
		}
	}
	if u, ok := cq.tailAt(q); ok {
		fn(q, u)
		return 1 // the newest unit written into the files
	}
	off := q * CQUnitSize
	f := cq.files.findHeld(off)
	if f == nil {
		return 0
	}
	defer f.release()
	readPos := f.readPosition()
	start := off - f.fromOffset
	d := f.mappedNow()
	if d == nil && f.readUnmapped() {
		// Not mapped while the mapping limit is reached, or read for the
		// first time: read the units wanted (pread) instead of mapping this
		// file (and unmapping another: pulls spread over more queues than
		// mappings).
		n := min(int64(maxUnits), max(readPos-start, 0)/CQUnitSize)
		buf := make([]byte, n*CQUnitSize)
		if err := f.readAtLazy(buf, start); err != nil {
			cq.log.Warn("consume queue unreadable", "queue", cq.String(), "err", err)
			return 0
		}
		d, start, readPos = buf, 0, int64(len(buf))
	} else if d == nil {
		var err error
		if d, err = f.view(); err != nil {
			cq.log.Warn("consume queue unreadable", "queue", cq.String(), "err", err)
			return 0
		}
	}
	n := 0
	for pos := start; pos+CQUnitSize <= readPos && n < maxUnits; pos += CQUnitSize {
		u := decodeCQUnit(d[pos:])
		n++
		if !fn(q, u) {
			break
		}
		q++
	}
	return n
}

// truncateDirtyLogic removes every unit pointing at or beyond phyOffset
// (6.4 truncateDirtyLogicFiles) and returns how many units it removed.
func (cq *consumeQueue) truncateDirtyLogic(phyOffset int64) int64 {
	cq.writeMu.Lock()
	defer cq.writeMu.Unlock()
	if mp := cq.maxPhysicOffset.Load(); mp >= 0 && mp <= phyOffset && cq.pendEnd.Load() == 0 {
		// Units ascend in physical offset and the last one ends at mp:
		// none points at or beyond phyOffset (nothing to map and read).
		return 0
	}
	var removed int64
	cq.pendMu.Lock()
	cq.tailQ = -1 // the offsets from the cut on may be written again
	cq.pendMu.Unlock()
	if cq.pendEnd.Load() > 0 {
		// Units in memory (restored from the snapshot, no file yet) come
		// after every unit in the files.
		cq.pendMu.Lock()
		keep := len(cq.pending)
		for keep > 0 && cq.pending[keep-1].PhyOffset >= phyOffset {
			keep--
		}
		removed = int64(len(cq.pending) - keep)
		if keep > 0 {
			cq.pending = cq.pending[:keep]
			cq.pendEnd.Store(cq.pendFrom + int64(keep))
			u := cq.pending[keep-1]
			cq.maxPhysicOffset.Store(u.PhyOffset + int64(u.Size))
			cq.pendMu.Unlock()
			return removed
		}
		cq.pending, cq.pendFrom = nil, 0
		cq.pendEnd.Store(0)
		cq.pendMu.Unlock()
	}
	for {
		f := cq.files.last()
		if f == nil {
			break
		}
		wrote := f.wrote.Load()
		cut := int64(-1)
		if f.hold() {
			d, err := f.view()
			for pos := int64(0); err == nil && pos+CQUnitSize <= wrote; pos += CQUnitSize {
				u := decodeCQUnit(d[pos:])
				if !u.blank() && u.PhyOffset >= phyOffset {
					cut = pos
					break
				}
			}
			f.release()
			if err != nil {
				cq.log.Warn("consume queue truncation skipped a file it cannot map", "queue", cq.String(), "err", err)
			}
		}
		if cut < 0 {
			break
		}
		removed += (wrote - cut) / CQUnitSize
		if cut == 0 {
			cq.files.truncateDirty(f.fromOffset)
			cq.files.removeLastIfEmpty(f)
			continue
		}
		cq.files.truncateDirty(f.fromOffset + cut)
		break
	}
	cq.maxPhysicOffset.Store(-1)
	if f := cq.files.last(); f != nil {
		if u, ok := lastUnitOfFile(f); ok && !u.blank() {
			cq.maxPhysicOffset.Store(u.PhyOffset + int64(u.Size))
		}
	}
	return removed
}

// flush flushes dirty units with leastPages (0 = everything).
func (cq *consumeQueue) flush(leastPages int) error {
	for i := 0; i < 64; i++ {
		unchanged, err := cq.files.flush(leastPages)
		if err != nil || unchanged {
			return err
		}
	}
	return nil
}

// lastUnitOfFile reads the last unit written to a file.
func lastUnitOfFile(f *mappedFile) (cqUnit, bool) {
	w := f.wrote.Load()
	if w < CQUnitSize || !f.hold() {
		return cqUnit{}, false
	}
	defer f.release()
	d, err := f.view()
	if err != nil {
		return cqUnit{}, false
	}
	return decodeCQUnit(d[w-CQUnitSize:]), true
}

// deleteExpired deletes files (never the last) whose last unit points below
// minPhy (7.3). It returns the number of files deleted.
// forceAfter is destroyMapedFileIntervalForcibly: a file a reader still
// holds is only force-unmapped that long after its first shutdown.
func (cq *consumeQueue) deleteExpired(minPhy int64, now time.Time, forceAfter time.Duration) int {
	files := cq.files.snapshot()
	n := 0
	for i := 0; i < len(files)-1; i++ {
		u, ok := lastUnitOfFile(files[i])
		if !ok || (!u.blank() && u.PhyOffset >= minPhy) {
			break
		}
		if !files[i].destroy(now, forceAfter) {
			break
		}
		n++
	}
	if n > 0 {
		cq.files.removeFirst(n)
	}
	return n
}

// correctMinOffset implements 7.4.
func (cq *consumeQueue) correctMinOffset(minPhy int64) {
	if cq.correctFilesMinOffset(minPhy) {
		cq.correctPendingMinOffset(minPhy)
	}
}

// correctFilesMinOffset is correctMinOffset over the files; it reports
// whether every unit they hold points below minPhy (or there is no file),
// so the pending units come next.
func (cq *consumeQueue) correctFilesMinOffset(minPhy int64) bool {
	last := cq.files.last()
	if last == nil {
		return true
	}
	if u, ok := lastUnitOfFile(last); ok && !u.blank() && u.PhyOffset+int64(u.Size) <= minPhy {
		cq.minLogicOffset.Store(last.fromOffset + last.wrote.Load())
		return true
	}
	// Scan from the first file that can be held: deleteExpired leaves a
	// file it could not destroy (a flush held it) shut down in place, and
	// stops there, so the files after it may lie wholly below minPhy too:
	// the scan goes on into them until a unit at or above minPhy.
	start := cq.minLogicOffset.Load()
	for _, f := range cq.files.snapshot() {
		if f.fromOffset+f.size <= start || !f.hold() {
			continue
		}
		from := max(start, f.fromOffset)
		next, found := scanMinOffset(f, from, minPhy)
		f.release()
		if found {
			cq.minLogicOffset.Store(next)
			return false
		}
		if next < 0 {
			return false // unreadable: leave the offset for the next pass
		}
		cq.minLogicOffset.Store(next)
		start = next
	}
	return false
}

// correctPendingMinOffset moves the first readable offset past the units
// still in memory (a queue waiting for its first file, or units written
// behind, cq_create.go and cq_behind.go) that point below minPhy: forced
// cleaning can delete a commit-log file before the creator made the queue's
// file, and a reader must then get OFFSET_TOO_SMALL, not a unit whose
// message is gone. REQUIRES: writeMu held.
func (cq *consumeQueue) correctPendingMinOffset(minPhy int64) {
	cq.pendMu.Lock()
	defer cq.pendMu.Unlock()
	if len(cq.pending) == 0 {
		return
	}
	q := max(cq.minLogicOffset.Load()/CQUnitSize, cq.pendFrom)
	end := cq.pendFrom + int64(len(cq.pending))
	for q < end && cq.pending[q-cq.pendFrom].PhyOffset < minPhy {
		q++
	}
	if q*CQUnitSize > cq.minLogicOffset.Load() {
		cq.minLogicOffset.Store(q * CQUnitSize)
	}
}

// scanMinOffset returns the logic offset of f's first unit at or after
// from that points at or above minPhy (found), or f's write position when
// there is none, or -1 when f cannot be read. REQUIRES: f held.
// The scan is linear and bounded by one file (units ascend in phyOffset).
func scanMinOffset(f *mappedFile, from, minPhy int64) (int64, bool) {
	d, err := f.view()
	if err != nil {
		return -1, false
	}
	w := f.readPosition()
	for pos := from - f.fromOffset; pos+CQUnitSize <= w; pos += CQUnitSize {
		u := decodeCQUnit(d[pos:])
		if !u.blank() && u.PhyOffset >= minPhy {
			return f.fromOffset + pos, true
		}
	}
	return f.fromOffset + w, false
}

func (cq *consumeQueue) String() string {
	return fmt.Sprintf("%s-%d", cq.topic, cq.queueID)
}
