package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// mappedFileQueue is the ordered list of equally sized mapped files of one
// directory (RocketMQ MappedFileQueue): the commit log, or one consume queue.
//
// The file list is guarded by mu; readers take it shared only long enough
// to find and hold a file, so they never wait for I/O. Only the owner's
// single writer appends to the last file.
type mappedFileQueue struct {
	dir      string
	fileSize int64
	// alloc creates (or takes a pre-allocated) file starting at an offset;
	// nil for lazily mapped files (allocLazy).
	alloc func(fromOffset int64) (*mappedFile, error)
	// lazy, when set, makes the files lazily mapped and sparse
	// (consume queues; lazy_map.go).
	lazy *mapper

	mu    sync.RWMutex
	files []*mappedFile // ascending fromOffset, contiguous; guarded by mu

	// Global frontiers (offsets in the queue's address space).
	flushedWhere   atomic.Int64
	committedWhere atomic.Int64
	// storeTimestamp of the last flushed record (commit log only).
	flushedTimestamp atomic.Int64

	// syncFault, when set, is consulted before every flush: a test seam that
	// injects msync/fsync failures (pebble's errorfs in miniature).
	syncFault atomic.Pointer[func() error]
}

func newMappedFileQueue(dir string, fileSize int64, alloc func(int64) (*mappedFile, error)) *mappedFileQueue {
	return newMappedFileQueueLazy(dir, fileSize, alloc, nil)
}

// newMappedFileQueueLazy is newMappedFileQueue whose files are mapped
// lazily through m (when m is not nil).
func newMappedFileQueueLazy(dir string, fileSize int64, alloc func(int64) (*mappedFile, error), m *mapper) *mappedFileQueue {
	q := &mappedFileQueue{dir: dir, fileSize: fileSize, alloc: alloc, lazy: m}
	if q.alloc == nil && m == nil {
		q.alloc = func(off int64) (*mappedFile, error) {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("store: create %s: %w", dir, err)
			}
			mf, err := openMappedFile(dir, off, fileSize, true)
			if err == nil {
				mf.adviseAppend(0)
			}
			return mf, err
		}
	}
	return q
}

// allocLazy creates the sparse file of a lazily mapped queue at off.
func (q *mappedFileQueue) allocLazy(off int64) (*mappedFile, error) {
	if err := mkdirQueue(q.dir); err != nil {
		return nil, fmt.Errorf("store: create %s: %w", q.dir, openErr(err))
	}
	mf, err := createLazyFile(filepath.Join(q.dir, fileName(off)), off, q.fileSize, q.lazy)
	if err == nil {
		mf.lazy.dir = q.dir
	}
	return mf, err
}

// mkdirQueue creates a queue directory and its parent with the fewest
// system calls (store-cq-create does this for every new queue,
// cq_create.go): mkdir, and mkdir of the parent only if that fails.
func mkdirQueue(dir string) error {
	err := os.Mkdir(dir, 0o755)
	if errors.Is(err, os.ErrNotExist) {
		err = os.Mkdir(filepath.Dir(dir), 0o755)
		if errors.Is(err, os.ErrNotExist) {
			err = os.MkdirAll(filepath.Dir(dir), 0o755) // the first queue of the store
		}
		if err == nil || errors.Is(err, os.ErrExist) {
			err = os.Mkdir(dir, 0o755)
		}
	}
	if err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return nil
}

// load maps every file of the directory, with all positions provisionally
// at the file end; recovery fixes the tail. A zero-length last file (a crash
// during creation) is deleted.
func (q *mappedFileQueue) load() error {
	entries, err := os.ReadDir(q.dir)
	if errors.Is(err, os.ErrNotExist) {
		return os.MkdirAll(q.dir, 0o755)
	}
	if err != nil {
		return fmt.Errorf("store: list %s: %w", q.dir, err)
	}
	type named struct {
		off  int64
		name string
	}
	var names []named
	for _, e := range entries {
		if off, ok := parseFileName(e.Name()); ok && e.Type().IsRegular() {
			names = append(names, named{off, e.Name()})
		}
	}
	sort.Slice(names, func(i, j int) bool { return names[i].off < names[j].off })
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, n := range names {
		if i == len(names)-1 {
			if st, err := os.Stat(q.dir + "/" + n.name); err == nil && st.Size() == 0 {
				os.Remove(q.dir + "/" + n.name)
				continue
			}
		}
		var mf *mappedFile
		if q.lazy != nil {
			mf, err = openLazyPath(filepath.Join(q.dir, n.name), n.off, q.fileSize, false, q.lazy)
			if err == nil {
				mf.lazy.dir = q.dir // shared, not one string per file
			}
		} else {
			mf, err = openMappedFile(q.dir, n.off, q.fileSize, false)
		}
		if err != nil {
			return err
		}
		if len(q.files) > 0 && q.files[len(q.files)-1].fromOffset+q.fileSize != n.off {
			mf.shutdown(time.Now(), 0)
			return fmt.Errorf("store: %s: file %s does not follow %s: %w", q.dir, n.name,
				fileName(q.files[len(q.files)-1].fromOffset), ErrCorrupt)
		}
		mf.setPositions(q.fileSize)
		q.files = append(q.files, mf)
	}
	return nil
}

// snapshot returns the current file list (shared; do not modify).
func (q *mappedFileQueue) snapshot() []*mappedFile {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return q.files
}

func (q *mappedFileQueue) first() *mappedFile {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if len(q.files) == 0 {
		return nil
	}
	return q.files[0]
}

func (q *mappedFileQueue) last() *mappedFile {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if len(q.files) == 0 {
		return nil
	}
	return q.files[len(q.files)-1]
}

// lastOrCreate returns the last file if it has room, else creates the next
// one. startOffset names the first file of an empty queue.
// REQUIRES: the owner's append lock held (single creator).
func (q *mappedFileQueue) lastOrCreate(startOffset int64) (*mappedFile, error) {
	last := q.last()
	var create int64
	switch {
	case last == nil:
		create = startOffset - startOffset%q.fileSize
	case last.isFull():
		create = last.fromOffset + q.fileSize
	default:
		return last, nil
	}
	alloc := q.alloc
	if alloc == nil {
		alloc = q.allocLazy // no closure per consume queue
	}
	mf, err := alloc(create)
	if err != nil {
		return nil, err
	}
	q.mu.Lock()
	if last == nil {
		q.flushedWhere.Store(create)
		q.committedWhere.Store(create)
	}
	q.files = append(q.files, mf)
	q.mu.Unlock()
	return mf, nil
}

// find returns the file containing offset, or nil. With returnFirst, an
// offset below the first file yields the first file.
func (q *mappedFileQueue) find(offset int64, returnFirst bool) *mappedFile {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return q.findLocked(offset, returnFirst)
}

// REQUIRES: q.mu held (shared is enough).
func (q *mappedFileQueue) findLocked(offset int64, returnFirst bool) *mappedFile {
	if len(q.files) == 0 {
		return nil
	}
	first := q.files[0]
	lastF := q.files[len(q.files)-1]
	if offset < first.fromOffset || offset >= lastF.fromOffset+q.fileSize {
		if returnFirst {
			return first
		}
		return nil
	}
	idx := int(offset/q.fileSize - first.fromOffset/q.fileSize)
	if idx >= 0 && idx < len(q.files) {
		if f := q.files[idx]; offset >= f.fromOffset && offset < f.fromOffset+q.fileSize {
			return f
		}
	}
	for _, f := range q.files {
		if offset >= f.fromOffset && offset < f.fromOffset+q.fileSize {
			return f
		}
	}
	if returnFirst {
		return first
	}
	return nil
}

// findHeld is find plus hold; the caller releases.
func (q *mappedFileQueue) findHeld(offset int64) *mappedFile {
	q.mu.RLock()
	f := q.findLocked(offset, false)
	if f != nil && !f.hold() {
		f = nil
	}
	q.mu.RUnlock()
	return f
}

// minOffset is the first offset still held, -1 if empty.
func (q *mappedFileQueue) minOffset() int64 {
	q.mu.RLock()
	defer q.mu.RUnlock()
	for _, f := range q.files {
		if f.available.Load() {
			return f.fromOffset
		}
	}
	if len(q.files) > 0 {
		return q.files[len(q.files)-1].fromOffset + q.fileSize
	}
	return -1
}

// maxOffset is the end of readable data.
func (q *mappedFileQueue) maxOffset() int64 {
	if l := q.last(); l != nil {
		return l.fromOffset + l.readPosition()
	}
	return 0
}

// writtenOffset is the end of appended data, staged or not.
func (q *mappedFileQueue) writtenOffset() int64 {
	if l := q.last(); l != nil {
		return l.fromOffset + l.wrote.Load()
	}
	return 0
}

// mayFlush is a cheap test (no file lookup, no lock but last's) of
// whether flush(leastPages) could move the frontier: false only when
// nothing is unflushed, or when fewer than leastPages pages are, all in
// the frontier's file and short of its end.
func (q *mappedFileQueue) mayFlush(leastPages int) bool {
	w, fl := q.writtenOffset(), q.flushedWhere.Load()
	if w <= fl {
		return false
	}
	if leastPages <= 0 {
		return true
	}
	base := fl - fl%q.fileSize
	if w-base >= q.fileSize {
		return true // the frontier's file is complete
	}
	return (w-base)/pageSize-(fl-base)/pageSize >= int64(leastPages)
}

// flush flushes one file (the one holding the flush frontier) and reports
// whether the frontier did NOT move, as RocketMQ does. Errors are sticky at
// the caller.
func (q *mappedFileQueue) flush(leastPages int) (bool, error) {
	where := q.flushedWhere.Load()
	f := q.find(where, where == 0)
	if f == nil {
		// The frontier's file was deleted by cleanup: move past it.
		first := q.first()
		if first == nil || where >= first.fromOffset {
			return true, nil
		}
		where, f = first.fromOffset, first
		q.flushedWhere.Store(where)
	}
	ts := f.storeTimestamp.Load()
	if fault := q.syncFault.Load(); fault != nil && f.wrote.Load() > f.flushed.Load() {
		if err := (*fault)(); err != nil {
			return true, err
		}
	}
	pos, err := f.flush(leastPages)
	if err != nil {
		return true, err
	}
	nw := f.fromOffset + pos
	if nw < where { // frontier is never moved backwards by a stale file
		return true, nil
	}
	q.flushedWhere.Store(nw)
	if leastPages == 0 && ts > 0 {
		q.flushedTimestamp.Store(ts)
	}
	return nw == where, nil
}

// markFlushed records that everything below upTo is durable (it was
// written before a syncfs that succeeded).
func (q *mappedFileQueue) markFlushed(upTo int64) {
	for _, f := range q.snapshot() {
		if f.fromOffset >= upTo {
			break
		}
		pos := min(upTo-f.fromOffset, f.size)
		if pos > f.flushed.Load() {
			f.flushed.Store(pos)
			if pos == f.size {
				f.adviseReads()
			}
		}
	}
	if upTo > q.flushedWhere.Load() {
		q.flushedWhere.Store(upTo)
	}
}

// flushTo flushes until the frontier reaches target or stops moving.
func (q *mappedFileQueue) flushTo(target int64) error {
	if l := q.last(); l != nil && q.flushedWhere.Load() >= target {
		// Nothing to flush: everything written is durable, so the last
		// file's newest record time is (read first, then the check, so
		// that no record of that time can be unflushed).
		ts := l.storeTimestamp.Load()
		if ts > 0 && q.flushedWhere.Load() >= q.writtenOffset() {
			q.flushedTimestamp.Store(ts)
		}
		return nil
	}
	for i := 0; i < 64 && q.flushedWhere.Load() < target; i++ {
		unchanged, err := q.flush(0)
		if err != nil {
			return err
		}
		if unchanged {
			break
		}
	}
	return nil
}

// commit moves data from write buffers into the mappings (pool only) and
// reports whether the frontier did not move.
func (q *mappedFileQueue) commit(leastPages int) bool {
	where := q.committedWhere.Load()
	f := q.find(where, where == 0)
	if f == nil {
		first := q.first()
		if first == nil || where >= first.fromOffset {
			return true
		}
		where, f = first.fromOffset, first
		q.committedWhere.Store(where)
	}
	pos := f.commit(leastPages)
	nw := f.fromOffset + pos
	if nw < where {
		return true
	}
	q.committedWhere.Store(nw)
	return nw == where
}

// truncateDirty cuts the queue at offset: the file containing it gets all
// positions set to offset's position; later files are destroyed.
func (q *mappedFileQueue) truncateDirty(offset int64) {
	q.mu.Lock()
	var keep, drop []*mappedFile
	for _, f := range q.files {
		end := f.fromOffset + q.fileSize
		switch {
		case end <= offset:
			keep = append(keep, f)
		case f.fromOffset <= offset && offset < end:
			f.setPositions(offset - f.fromOffset)
			keep = append(keep, f)
		default:
			drop = append(drop, f)
		}
	}
	// An offset exactly at a file boundary keeps the previous file full.
	q.files = keep
	q.mu.Unlock()
	for _, f := range drop {
		if !f.destroy(time.Now(), 0) {
			os.Remove(f.filePath()) // a reader unmaps it on release
		}
	}
	if q.flushedWhere.Load() > offset {
		q.flushedWhere.Store(offset)
	}
	if q.committedWhere.Load() > offset {
		q.committedWhere.Store(offset)
	}
}

// removeFirst drops the given files (which must be a prefix) from the list.
func (q *mappedFileQueue) removeFirst(n int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if n > len(q.files) {
		n = len(q.files)
	}
	q.files = append([]*mappedFile(nil), q.files[n:]...)
}

// shutdownAll unmaps every file (without deleting).
func (q *mappedFileQueue) shutdownAll() {
	q.mu.Lock()
	files := q.files
	q.files = nil
	q.mu.Unlock()
	// One shutdown each: a file a reader still holds is unmapped by that
	// reader's release, never under it.
	for _, f := range files {
		f.shutdown(time.Now(), 0)
	}
}

// destroyAll deletes every file and the directory.
func (q *mappedFileQueue) destroyAll() {
	q.mu.Lock()
	files := q.files
	q.files = nil
	q.mu.Unlock()
	for _, f := range files {
		// Never forced: a reader still holding the file unmaps it on
		// release; the name is unlinked now either way.
		if !f.destroy(time.Now(), 0) {
			os.Remove(f.filePath())
		}
	}
	q.flushedWhere.Store(0)
	q.committedWhere.Store(0)
	os.Remove(q.dir)
}

// removeLastIfEmpty drops f from the list if it is the last file and has
// no data, destroying it.
func (q *mappedFileQueue) removeLastIfEmpty(f *mappedFile) {
	q.mu.Lock()
	if n := len(q.files); n > 0 && q.files[n-1] == f && f.wrote.Load() == 0 {
		q.files = q.files[:n-1]
		q.mu.Unlock()
		if !f.destroy(time.Now(), 0) {
			os.Remove(f.filePath())
		}
		return
	}
	q.mu.Unlock()
}
