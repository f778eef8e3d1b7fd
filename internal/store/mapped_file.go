package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// pageSize is RocketMQ's OS page unit for the "least pages" flush rule.
// Part of the flush policy semantics; never change.
const pageSize = 4096

var osUserHome = os.UserHomeDir

// mappedFile is one fixed-size file mapped read-write in full (RocketMQ
// DefaultMappedFile). Appends are done by one writer at a time (the owner's
// append lock); readers use hold/release so the mapping is never unmapped
// under them.
//
// Positions are byte offsets from the file start:
//
//	flushed <= committed <= wrote <= size
//
// Without a write buffer committed is not maintained and the read position
// is wrote. With a transient-pool write buffer, appends go to writeBuf and
// commit copies [committed, wrote) into the mapping; readers see only up to
// committed.
type mappedFile struct {
	path       string
	fromOffset int64 // first offset of the address space covered by this file
	size       int64

	// data is the mapping (len == size) of an eagerly mapped file (commit
	// log, index); nil for a lazy file (consume queue), whose mapping comes
	// and goes (lazy_map.go).
	data []byte
	lazy *lazyState

	// No descriptor is kept for a mapped file: a mapping does not need one.
	// fh is opened on demand for the syscalls that do (pwrite and fdatasync
	// of writeWithoutMmap) and closed once the file is complete and
	// flushed, so open files do not grow with the number of files.
	fhMu sync.Mutex
	fh   *os.File // guarded by fhMu

	// writeBuf is the transient-pool buffer (nil without the pool); it is
	// given back through returnBuf once the file is fully committed.
	writeBuf []byte
	pooled   bool // set at creation: the file was given a write buffer
	// writeThrough files are appended with pwrite and synced with
	// fdatasync (writeWithoutMmap); readers still use the mapping, which
	// shares the page cache.
	writeThrough bool
	// stage, when set (Config.stagedAppends: without the transient pool), makes appends
	// staged: the writer copies records into this ring (shared by the
	// store's files; only the last file appends, and a file is fully
	// committed before the next one starts) at position mod len(stage), and
	// commitStaged writes [committed, wrote) with one pwrite, so a group of
	// puts costs one write and one fdatasync. Readers see up to committed.
	stage     []byte
	stageMu   sync.Mutex // serialises commits of staged bytes
	returnBuf func([]byte)
	bufMu     sync.Mutex // guards writeBuf hand-back against a concurrent commit

	wrote     atomic.Int64
	committed atomic.Int64
	flushed   atomic.Int64

	// storeTimestamp is the store time of the last record appended (ms).
	storeTimestamp atomic.Int64

	// Reference counting (RocketMQ ReferenceResource): starts at 1; hold
	// fails once shutdown has begun; the mapping is released at 0.
	refs         atomic.Int64
	available    atomic.Bool
	cleaned      atomic.Bool
	shutdownAt   atomic.Int64 // unix ms of the first shutdown call
	flushMu      sync.Mutex   // serialises flushes of this file
	lastModified atomic.Int64 // mtime at load (unix ms), for expiry

	// appendAdvised is set while the unwritten tail of the mapping carries
	// MADV_RANDOM (see adviseAppend).
	appendAdvised atomic.Bool
}

// fileName renders RocketMQ's 20-digit zero-padded offset name.
func fileName(offset int64) string {
	return fmt.Sprintf("%020d", offset)
}

// parseFileName parses a 20-digit name; ok=false for anything else.
func parseFileName(name string) (int64, bool) {
	if len(name) != 20 {
		return 0, false
	}
	n, err := strconv.ParseInt(name, 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// openMappedFile opens (creating and sizing if needed) and maps a file.
// An existing file of another size is an error.
func openMappedFile(dir string, fromOffset, size int64, create bool) (*mappedFile, error) {
	return openMappedPath(filepath.Join(dir, fileName(fromOffset)), fromOffset, size, create)
}

// openMappedPath is openMappedFile for an explicit path (index files are
// named by time, not offset).
func openMappedPath(path string, fromOffset, size int64, create bool) (*mappedFile, error) {
	flags := os.O_RDWR
	if create {
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, openErr(err))
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("store: stat %s: %w", path, err)
	}
	switch {
	case st.Size() == size:
	case st.Size() == 0 && create:
		// Reserve the blocks now: writing through a mapping into a hole of
		// a full file system raises SIGBUS, while a failed fallocate is an
		// ordinary error (CREATE_MAPPED_FILE_FAILED).
		err := fallocate(f, 0, size)
		if errors.Is(err, errUnsupported) {
			err = f.Truncate(size)
		}
		if err != nil {
			f.Close()
			os.Remove(path)
			return nil, fmt.Errorf("store: size %s: %w", path, diskErr(err))
		}
	default:
		f.Close()
		return nil, fmt.Errorf("store: %s has size %d, want %d: %w", path, st.Size(), size, ErrBadFileSize)
	}
	data, err := mmapFile(f, size)
	f.Close() // the mapping keeps the file; no descriptor per mapped file
	if err != nil {
		return nil, fmt.Errorf("store: mmap %s: %w", path, mapErr(err))
	}
	mf := &mappedFile{path: path, fromOffset: fromOffset, size: size, data: data}
	mf.refs.Store(1)
	mf.available.Store(true)
	mf.lastModified.Store(st.ModTime().UnixMilli())
	return mf, nil
}

// warmFrom pre-faults the pages of [from, size) writable (RocketMQ
// warmMappedFile), so appends do not take page faults. It uses
// MADV_POPULATE_WRITE, which never changes the content: it is safe while the
// writer appends to the same file, so it runs in the background. It stops
// early (returning false) when quit is closed.
func (mf *mappedFile) warmFrom(from int64, quit <-chan struct{}) bool {
	if !mf.hold() {
		return false
	}
	defer mf.release()
	const chunk = 4 << 20
	start := from &^ (pageSize - 1)
	for p := start; p < mf.size; p += chunk {
		select {
		case <-quit:
			return false
		default:
		}
		end := min(p+chunk, mf.size)
		if err := populateWrite(mf.data[p:end]); err != nil {
			// Older kernels: touch one byte per page with an atomic add of
			// zero (never changes data a concurrent writer put there).
			for q := p; q < end; q += pageSize {
				atomicTouch(mf.data[q:])
			}
		}
	}
	return true
}

// adviseAppend marks [from, size) of the mapping MADV_RANDOM before the
// writer reaches it. Page-cache folios are created by the first touch of a
// page; a fault in a mapping with normal advice goes through readahead,
// which (on kernels with large folios, ext4 since 6.x) creates folios of up
// to read_ahead_kb, and a write fault on a large folio marks all of it dirty
// (block_page_mkwrite), so every msync writes the whole folio again: 1 KiB
// SYNC_FLUSH puts measured up to 1.2 MiB of disk writes per sync once the
// readahead window had grown. MADV_RANDOM keeps fault-created folios at one
// page. It only affects faults (and prefault's MADV_POPULATE_WRITE) in this
// mapping; adviseReads restores readahead once the file is complete. Used
// for consume queues and for the commit log under SYNC_FLUSH.
// REQUIRES: a reference held (or the file not yet published).
func (mf *mappedFile) adviseAppend(from int64) {
	from &^= pageSize - 1
	if from < 0 || from >= mf.size || mf.writeThrough || mf.lazy != nil {
		return
	}
	if adviseRandom(mf.data[from:]) {
		mf.appendAdvised.Store(true)
	}
}

// adviseReads restores normal readahead for a file that is fully written,
// so cold reads of it are read ahead again. REQUIRES: a reference held.
func (mf *mappedFile) adviseReads() {
	if mf.lazy != nil {
		mf.adviseLazyReads()
		return
	}
	if mf.appendAdvised.CompareAndSwap(true, false) {
		adviseNormal(mf.data)
	}
}

// isFull reports whether the writer reached the end of the file.
func (mf *mappedFile) isFull() bool { return mf.wrote.Load() >= mf.size }

// readPosition is what readers may see.
func (mf *mappedFile) readPosition() int64 {
	if mf.pooled || mf.stage != nil {
		return mf.committed.Load()
	}
	return mf.wrote.Load()
}

// appendTarget is where the writer copies bytes: the write buffer with the
// transient pool, the mapping otherwise.
// REQUIRES: the owner's append lock held.
func (mf *mappedFile) appendTarget() []byte {
	if mf.writeBuf != nil {
		return mf.writeBuf
	}
	return mf.data
}

// appendBytes copies b at the write position: into the mapping (or the
// write buffer), or with pwrite for a write-through file. A failed pwrite
// leaves the position unchanged. REQUIRES: append lock held and
// len(b) <= size - wrote.
func (mf *mappedFile) appendBytes(b []byte) error {
	pos := mf.wrote.Load()
	if mf.stage != nil {
		return mf.appendStaged(b, pos)
	}
	if mf.lazy != nil {
		return mf.appendLazy(b, pos)
	}
	if mf.writeThrough {
		if err := mf.writeAt(b, pos); err != nil {
			return err
		}
	} else {
		copy(mf.appendTarget()[pos:], b)
	}
	mf.wrote.Store(pos + int64(len(b)))
	return nil
}

// appendLazy copies b into a lazily mapped file at pos, reserving its
// blocks first. REQUIRES: the file's writer.
func (mf *mappedFile) appendLazy(b []byte, pos int64) error {
	if !mf.hold() {
		return fmt.Errorf("store: append %s: %w", mf.path, ErrClosed)
	}
	defer mf.release()
	d, err := mf.view()
	if err != nil {
		return err
	}
	if err := mf.reserve(pos + int64(len(b))); err != nil {
		return err
	}
	copy(d[pos:], b)
	mf.wrote.Store(pos + int64(len(b)))
	return nil
}

// appendStaged copies b into the stage ring at pos. When the ring has no
// room (the flusher is behind, or b is larger than the ring) the writer
// commits what is staged itself, and writes b directly if it still does not
// fit. REQUIRES: append lock held, mf.stage != nil.
func (mf *mappedFile) appendStaged(b []byte, pos int64) error {
	n, ring := int64(len(b)), int64(len(mf.stage))
	if pos+n-mf.committed.Load() > ring {
		mf.stageMu.Lock()
		defer mf.stageMu.Unlock()
		if err := mf.commitStagedLocked(); err != nil {
			return err
		}
		if n > ring {
			if err := mf.writeAt(b, pos); err != nil {
				return err
			}
			mf.wrote.Store(pos + n)
			mf.committed.Store(pos + n)
			return nil
		}
	}
	// The bytes [committed, pos) still staged occupy other ring slots:
	// pos+n-committed <= ring.
	i := pos % ring
	k := copy(mf.stage[i:], b)
	copy(mf.stage, b[k:])
	mf.wrote.Store(pos + n)
	return nil
}

// stagedSlot returns the n bytes of the stage ring at the write position,
// with length 0 and capacity n, when they are contiguous and hold nothing
// still waiting for its pwrite; nil otherwise (no ring, the ring's wrap, a
// full ring: appendBytes handles those). The writer fills the slot and
// publishes it with advanceStaged; until then the staged committer does not
// read it (it writes [committed, wrote) only). REQUIRES: append lock held.
func (mf *mappedFile) stagedSlot(n int64) []byte {
	if mf.stage == nil {
		return nil
	}
	pos, ring := mf.wrote.Load(), int64(len(mf.stage))
	i := pos % ring
	if i+n > ring || pos+n-mf.committed.Load() > ring {
		return nil
	}
	return mf.stage[i : i : i+n]
}

// advanceStaged publishes the n bytes the writer put into stagedSlot's
// slot. REQUIRES: append lock held, n <= size - wrote.
func (mf *mappedFile) advanceStaged(n int64) { mf.wrote.Store(mf.wrote.Load() + n) }

// commitStaged writes the staged bytes [committed, wrote) to the file (at
// most two pwrites, when the range wraps around the ring).
func (mf *mappedFile) commitStaged() error {
	mf.stageMu.Lock()
	defer mf.stageMu.Unlock()
	return mf.commitStagedLocked()
}

// REQUIRES: mf.stageMu held.
func (mf *mappedFile) commitStagedLocked() error {
	c, w := mf.committed.Load(), mf.wrote.Load()
	ring := int64(len(mf.stage))
	for c < w {
		i := c % ring
		n := min(w-c, ring-i)
		if err := mf.writeAt(mf.stage[i:i+n], c); err != nil {
			return err
		}
		c += n
		mf.committed.Store(c)
	}
	return nil
}

// fillToEnd closes the file with blank (the BLANK record's header) at the
// write position; the rest of the file stays zero. REQUIRES: append lock
// held and len(blank) <= size - wrote.
func (mf *mappedFile) fillToEnd(blank []byte) error {
	w := mf.wrote.Load()
	switch {
	case mf.stage != nil:
		mf.stageMu.Lock()
		defer mf.stageMu.Unlock()
		err := mf.commitStagedLocked()
		if err == nil {
			err = mf.writeAt(blank, w)
		}
		mf.wrote.Store(mf.size)
		mf.committed.Store(mf.size)
		return err
	case mf.writeThrough:
		err := mf.writeAt(blank, w)
		mf.wrote.Store(mf.size)
		return err
	}
	copy(mf.appendTarget()[w:], blank)
	mf.wrote.Store(mf.size)
	return nil
}

// hold takes a reader reference; false once the file is shutting down.
func (mf *mappedFile) hold() bool {
	if !mf.available.Load() {
		return false
	}
	if mf.refs.Add(1) > 1 {
		return true
	}
	mf.refs.Add(-1)
	return false
}

// release drops a reference; the last one unmaps.
func (mf *mappedFile) release() {
	if mf.refs.Add(-1) > 0 {
		return
	}
	mf.cleanup()
}

func (mf *mappedFile) cleanup() {
	if !mf.cleaned.CompareAndSwap(false, true) {
		return
	}
	mf.returnWriteBuf()
	if mf.lazy != nil {
		mf.unmapLazy()
	} else {
		_ = munmap(mf.data)
	}
	mf.closeHandle()
}

// handle returns the file's descriptor, opening it on first use (see fh).
func (mf *mappedFile) handle() (*os.File, error) {
	mf.fhMu.Lock()
	defer mf.fhMu.Unlock()
	if mf.fh != nil {
		return mf.fh, nil
	}
	f, err := os.OpenFile(mf.path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", mf.path, openErr(err))
	}
	mf.fh = f
	return f, nil
}

func (mf *mappedFile) closeHandle() {
	mf.fhMu.Lock()
	defer mf.fhMu.Unlock()
	if mf.fh != nil {
		_ = mf.fh.Close()
		mf.fh = nil
	}
}

// writeAt is pwrite through the on-demand descriptor.
func (mf *mappedFile) writeAt(b []byte, pos int64) error {
	f, err := mf.handle()
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(b, pos); err != nil {
		return fmt.Errorf("store: write %s at %d: %w", mf.path, pos, diskErr(err))
	}
	return nil
}

// shutdown marks the file unavailable and drops the initial reference. If
// readers still hold it, a later call after forceAfter drops them by force
// (RocketMQ intervalForcibly).
func (mf *mappedFile) shutdown(now time.Time, forceAfter time.Duration) {
	if mf.available.CompareAndSwap(true, false) {
		mf.shutdownAt.Store(now.UnixMilli())
		mf.release()
		return
	}
	if mf.refs.Load() > 0 && now.UnixMilli()-mf.shutdownAt.Load() >= forceAfter.Milliseconds() {
		mf.refs.Store(0)
		mf.cleanup()
	}
}

// destroy shuts the file down and deletes it once unmapped. It reports
// whether the file is gone.
func (mf *mappedFile) destroy(now time.Time, forceAfter time.Duration) bool {
	mf.shutdown(now, forceAfter)
	if !mf.cleaned.Load() {
		return false
	}
	if err := os.Remove(mf.filePath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false
	}
	return true
}

// flush forces dirty data to disk following RocketMQ's least-pages rule and
// returns the new flushed position. Errors are returned, never swallowed:
// the caller makes them sticky.
func (mf *mappedFile) flush(leastPages int) (int64, error) {
	mf.flushMu.Lock()
	defer mf.flushMu.Unlock()
	if mf.stage != nil && mf.wrote.Load() > mf.committed.Load() && mf.hold() {
		err := mf.commitStaged()
		mf.release()
		if err != nil {
			return mf.flushed.Load(), err
		}
	}
	flushed := mf.flushed.Load()
	readPos := mf.readPosition()
	if !mf.isAbleToFlush(flushed, readPos, leastPages) {
		return flushed, nil
	}
	if !mf.hold() {
		return flushed, nil
	}
	defer mf.release()
	switch {
	case mf.writeThrough:
		f, err := mf.handle()
		if err != nil {
			return flushed, err
		}
		if err := fdatasync(f); err != nil {
			return flushed, fmt.Errorf("store: fdatasync %s: %w", mf.path, err)
		}
	case mf.lazy != nil:
		if err := mf.syncLazy(flushed, readPos); err != nil {
			return flushed, err
		}
	default:
		start := flushed &^ (pageSize - 1)
		if err := msync(mf.data[start:readPos]); err != nil {
			return flushed, fmt.Errorf("store: msync %s: %w", mf.path, err)
		}
	}
	mf.flushed.Store(readPos)
	if readPos == mf.size {
		mf.adviseReads()
		mf.closeHandle() // complete and durable: no syscall needs it again
	}
	return readPos, nil
}

func (mf *mappedFile) isAbleToFlush(flushed, readPos int64, leastPages int) bool {
	if readPos <= flushed {
		return false
	}
	if mf.isFull() && readPos == mf.size {
		return true
	}
	if leastPages > 0 {
		return readPos/pageSize-flushed/pageSize >= int64(leastPages)
	}
	return true
}

// commit copies [committed, wrote) from the write buffer into the mapping
// (transient pool only) and returns the committed position.
func (mf *mappedFile) commit(leastPages int) int64 {
	if !mf.pooled {
		return mf.wrote.Load()
	}
	mf.bufMu.Lock()
	defer mf.bufMu.Unlock()
	committed := mf.committed.Load()
	if mf.writeBuf == nil { // returned concurrently
		return committed
	}
	wrote := mf.wrote.Load()
	able := wrote > committed
	if able && !(mf.isFull() && wrote == mf.size) && leastPages > 0 {
		able = wrote/pageSize-committed/pageSize >= int64(leastPages)
	}
	if able {
		copy(mf.data[committed:wrote], mf.writeBuf[committed:wrote])
		mf.committed.Store(wrote)
		committed = wrote
	}
	if committed == mf.size {
		mf.returnWriteBufLocked()
	}
	return committed
}

func (mf *mappedFile) returnWriteBuf() {
	mf.bufMu.Lock()
	defer mf.bufMu.Unlock()
	mf.returnWriteBufLocked()
}

// REQUIRES: mf.bufMu held.
func (mf *mappedFile) returnWriteBufLocked() {
	if mf.writeBuf != nil && mf.returnBuf != nil {
		mf.returnBuf(mf.writeBuf)
	}
	// Readers switch to the mapping for good: committed == wrote here
	// unless the file is being torn down.
	mf.writeBuf = nil
}

// setPositions sets all three positions (recovery, truncation).
func (mf *mappedFile) setPositions(pos int64) {
	mf.wrote.Store(pos)
	mf.committed.Store(pos)
	mf.flushed.Store(pos)
}

// flushAll msyncs the whole mapping (index files, which track no positions).
func (mf *mappedFile) flushAll() error {
	if !mf.hold() {
		return nil
	}
	defer mf.release()
	if err := msync(mf.data); err != nil {
		return fmt.Errorf("store: msync %s: %w", mf.path, err)
	}
	return nil
}

// lastModifiedMillis is the time of the last append this process made (on
// the store clock), else the file's mtime at load.
func (mf *mappedFile) lastModifiedMillis() int64 {
	if ts := mf.storeTimestamp.Load(); ts > 0 {
		return ts
	}
	return mf.lastModified.Load()
}

func (mf *mappedFile) lastModifiedTime() time.Time { return time.UnixMilli(mf.lastModifiedMillis()) }

// atomicTouch write-faults the page holding b[0] without changing it.
func atomicTouch(b []byte) {
	p := (*uint32)(unsafe.Pointer(&b[0]))
	atomic.AddUint32(p, 0)
}

// populate pre-faults [from, to) writable without changing the content.
func (mf *mappedFile) populate(from, to int64) bool {
	if !mf.hold() {
		return false
	}
	defer mf.release()
	from &^= pageSize - 1
	if err := populateWrite(mf.data[from:to]); err != nil {
		for q := from; q < to; q += pageSize {
			atomicTouch(mf.data[q:])
		}
	}
	return true
}
