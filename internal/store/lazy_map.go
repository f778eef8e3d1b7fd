package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Lazily mapped files: consume-queue files are mapped on first use and
// unmapped again when cold, so the number of mappings stays under a bound
// however many queues exist (vm.max_map_count is 65530 by default), and no
// descriptor is kept for them.
//
// Protocol (no lock on the fast path): a user takes a reference (hold) and
// then loads the mapping pointer; the evictor swaps the pointer to nil and
// then reads the reference count, restoring the pointer if the file is
// held. With sequentially consistent atomics, either the user's load sees
// nil (and maps the file again under mapMu, which waits for the evictor) or
// the evictor's read sees the user's reference and leaves the mapping.
// Callers therefore never touch a mapping without holding the file.

// lazyState is the mapping state of one lazily mapped file.
type lazyState struct {
	m *mapper
	// dir is the file's directory, shared with its queue (the path is
	// built when a system call needs it: a string per file cost ~100 bytes
	// per queue).
	dir     string
	mapping atomic.Pointer[[]byte] // nil while unmapped
	mapMu   sync.Mutex             // serialises mapping and unmapping of this file
	used    atomic.Bool            // CLOCK reference bit, set by every access
	// readSeen is set by the first read that finds the file unmapped: that
	// read uses pread, a later one maps the file (readUnmapped).
	readSeen atomic.Bool
	slot     int // index in m.ring, -1 when absent; guarded by m.mu
	// random is set while the current mapping carries MADV_RANDOM (a file
	// still being appended: one-page folios, see adviseAppend); guarded by
	// mapMu.
	random bool
	// reserved is how many bytes from the file start have blocks allocated
	// (fallocate); the file itself is sparse. Only the queue's writer moves
	// it.
	reserved atomic.Int64
}

// openLazyPath creates (sparse, full size) or checks a lazily mapped file.
// It maps nothing and keeps no descriptor.
func openLazyPath(path string, fromOffset, size int64, create bool, m *mapper) (*mappedFile, error) {
	st, err := os.Stat(path)
	switch {
	case err == nil && st.Size() == size:
	case (err == nil && st.Size() == 0 || errors.Is(err, os.ErrNotExist)) && create:
		// Sparse: blocks are reserved in steps ahead of the writer
		// (reserve), so an idle or short queue costs a few KiB, not the
		// 5.72 MiB RocketMQ reserves per file.
		f, oerr := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if oerr != nil {
			return nil, fmt.Errorf("store: open %s: %w", path, openErr(oerr))
		}
		terr := f.Truncate(size)
		f.Close()
		if terr != nil {
			os.Remove(path)
			return nil, fmt.Errorf("store: size %s: %w", path, diskErr(terr))
		}
		if st, err = os.Stat(path); err != nil {
			return nil, fmt.Errorf("store: stat %s: %w", path, err)
		}
	case err != nil:
		return nil, fmt.Errorf("store: stat %s: %w", path, openErr(err))
	default:
		return nil, fmt.Errorf("store: %s has size %d, want %d: %w", path, st.Size(), size, ErrBadFileSize)
	}
	mf := newLazyFile(path, fromOffset, size, m)
	mf.lastModified.Store(st.ModTime().UnixMilli())
	return mf, nil
}

// newLazyFile is the mappedFile of a lazily mapped file at path (nothing
// is opened or mapped). A file named by its offset in its queue's
// directory keeps no path string (filePath builds it).
func newLazyFile(path string, fromOffset, size int64, m *mapper) *mappedFile {
	dir, name := filepath.Split(path)
	mf := &mappedFile{fromOffset: fromOffset, size: size, lazy: &lazyState{m: m, slot: -1, dir: strings.TrimSuffix(dir, "/")}}
	if name != fileName(fromOffset) || dir == "" {
		mf.path = path
	}
	mf.refs.Store(1)
	mf.available.Store(true)
	return mf
}

// newLazyFileIn is newLazyFile for the file of fromOffset in dir, sharing
// the dir string.
func newLazyFileIn(dir string, fromOffset, size int64, m *mapper) *mappedFile {
	mf := &mappedFile{fromOffset: fromOffset, size: size, lazy: &lazyState{m: m, slot: -1, dir: dir}}
	mf.refs.Store(1)
	mf.available.Store(true)
	return mf
}

// filePath is the file's path.
func (mf *mappedFile) filePath() string {
	if mf.path != "" || mf.lazy == nil {
		return mf.path
	}
	d := mf.lazy.dir
	b := make([]byte, len(d)+1+20)
	copy(b, d)
	b[len(d)] = filepath.Separator
	// fileName's 20-digit zero-padded offset, without fmt (this runs for
	// every unit written to a file that is not mapped).
	v := uint64(mf.fromOffset)
	for i := len(b) - 1; i > len(d); i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return string(b)
}

// createLazyFile is openLazyPath(create) for a file its writer is about
// to append to, in one open: create sparse at full size, reserve the first
// step and map it (the first unit follows at once).
func createLazyFile(path string, fromOffset, size int64, m *mapper) (*mappedFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, openErr(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("store: stat %s: %w", path, err)
	}
	if st.Size() != 0 && st.Size() != size {
		return nil, fmt.Errorf("store: %s has size %d, want %d: %w", path, st.Size(), size, ErrBadFileSize)
	}
	mf := newLazyFile(path, fromOffset, size, m)
	mf.lastModified.Store(time.Now().UnixMilli())
	if st.Size() == 0 {
		if err := f.Truncate(size); err != nil {
			os.Remove(path)
			return nil, fmt.Errorf("store: size %s: %w", path, diskErr(err))
		}
		to := min(size, reserveMinStep)
		err := fallocate(f, 0, to)
		if err != nil && !errors.Is(err, errUnsupported) {
			os.Remove(path)
			return nil, fmt.Errorf("store: reserve %s: %w", path, diskErr(err))
		}
		mf.lazy.reserved.Store(to)
	}
	if m.full() {
		return mf, nil // the writer pwrites; mapped on a reader's first use
	}
	m.maps.Add(1)
	data, err := mmapFile(f, size)
	if err != nil {
		return mf, nil // mapped on first use (view), where the error is handled
	}
	l := mf.lazy
	l.mapMu.Lock()
	if adviseRandom(data) {
		l.random = true
	}
	l.used.Store(true)
	l.mapping.Store(&data)
	l.m.add(mf)
	l.mapMu.Unlock()
	return mf, nil
}

// mappedNow returns the mapping if the file is mapped now, else nil.
// REQUIRES: a reference held (hold), kept while the slice is used.
func (mf *mappedFile) mappedNow() []byte {
	l := mf.lazy
	if l == nil {
		return mf.data
	}
	if p := l.mapping.Load(); p != nil {
		if !l.used.Load() {
			l.used.Store(true)
		}
		return *p
	}
	return nil
}

// writeAtLazy writes b at off through a brief descriptor: the writer of a
// file that is not mapped while the mapping limit is reached (mapping it
// would unmap another file: with more queues than mappings written
// round-robin, every unit cost an mmap and a munmap). A pwrite into a
// hole allocates its block or fails with ENOSPC, so it needs no
// reservation; the page cache keeps it coherent with any mapping.
func (mf *mappedFile) writeAtLazy(b []byte, off int64) error {
	if err := pwritePath(mf.filePath(), b, off); err != nil {
		return fmt.Errorf("store: %w", openErr(err))
	}
	return nil
}

// readAtLazy fills b from off through a brief descriptor (a reader of a
// file that is not mapped while the mapping limit is reached).
func (mf *mappedFile) readAtLazy(b []byte, off int64) error {
	if err := preadPath(mf.filePath(), b, off); err != nil {
		return fmt.Errorf("store: %w", openErr(err))
	}
	return nil
}

// readUnmapped reports whether a read of this unmapped lazy file should
// pread the units it wants rather than map the file: always once the
// mapping budget is spent, and for the first read of the file. A queue
// read once (a lite topic's one message, popped) costs open, pread and
// close instead of open, mmap, close, the page faults and a later
// munmap; a queue read again is mapped.
func (mf *mappedFile) readUnmapped() bool {
	l := mf.lazy
	return l != nil && (l.m.full() || l.readSeen.CompareAndSwap(false, true))
}

// view returns the mapping, mapping the file if needed.
// REQUIRES: a reference held (hold), kept while the slice is used.
func (mf *mappedFile) view() ([]byte, error) {
	l := mf.lazy
	if l == nil {
		return mf.data, nil
	}
	if p := l.mapping.Load(); p != nil {
		if !l.used.Load() {
			l.used.Store(true)
		}
		return *p, nil
	}
	return mf.mapLazy()
}

func (mf *mappedFile) mapLazy() ([]byte, error) {
	l := mf.lazy
	l.mapMu.Lock()
	defer l.mapMu.Unlock()
	if p := l.mapping.Load(); p != nil {
		return *p, nil
	}
	data, err := mf.mmapOnce()
	if isNoMemory(err) || isTooManyFiles(err) {
		// Out of mappings or descriptors: give back cold mappings and
		// try once more.
		l.m.shrink(mf)
		data, err = mf.mmapOnce()
	}
	if err != nil {
		if isNoMemory(err) {
			err = mapErr(err)
		} else {
			err = openErr(err)
		}
		return nil, fmt.Errorf("store: map %s: %w", mf.filePath(), err)
	}
	l.random = false
	if !mf.isFull() && adviseRandom(data) {
		l.random = true
	}
	l.used.Store(true)
	l.mapping.Store(&data)
	l.m.add(mf)
	return data, nil
}

// mmapOnce opens, maps and closes the file (the mapping needs no
// descriptor).
func (mf *mappedFile) mmapOnce() ([]byte, error) {
	f, err := os.OpenFile(mf.filePath(), os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	mf.lazy.m.maps.Add(1)
	return mmapFile(f, mf.size)
}

// tryUnmapIdle unmaps the file unless someone holds it (or is mapping or
// unmapping it right now). It reports whether the file is unmapped.
// The reference count is read before availability: shutdown clears
// available before dropping the base reference, so a held file is never
// taken for idle.
func (mf *mappedFile) tryUnmapIdle() bool {
	l := mf.lazy
	if !l.mapMu.TryLock() {
		return false
	}
	defer l.mapMu.Unlock()
	p := l.mapping.Swap(nil)
	if p == nil {
		return true
	}
	refs := mf.refs.Load()
	base := int64(0)
	if mf.available.Load() {
		base = 1
	}
	if refs > base {
		l.mapping.Store(p)
		return false
	}
	_ = munmap(*p)
	l.m.unmaps.Add(1)
	return true
}

// unmapLazy drops the mapping for good (cleanup: no reference is left).
func (mf *mappedFile) unmapLazy() {
	l := mf.lazy
	l.mapMu.Lock()
	if p := l.mapping.Swap(nil); p != nil {
		_ = munmap(*p)
		l.m.unmaps.Add(1)
	}
	l.mapMu.Unlock()
	l.m.remove(mf)
}

// syncLazy makes [from, to) durable: msync through the current mapping,
// or fdatasync through a brief descriptor when the file is not mapped (the
// dirty pages stay in the page cache after munmap). REQUIRES: a reference.
func (mf *mappedFile) syncLazy(from, to int64) error {
	if p := mf.lazy.mapping.Load(); p != nil {
		if err := msync((*p)[from&^(pageSize-1) : to]); err != nil {
			return fmt.Errorf("store: msync %s: %w", mf.filePath(), err)
		}
		return nil
	}
	f, err := os.OpenFile(mf.filePath(), os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("store: open %s: %w", mf.filePath(), openErr(err))
	}
	defer f.Close()
	if err := fdatasync(f); err != nil {
		return fmt.Errorf("store: fdatasync %s: %w", mf.filePath(), err)
	}
	return nil
}

// adviseLazyReads restores readahead on the mapping of a complete file.
func (mf *mappedFile) adviseLazyReads() {
	l := mf.lazy
	l.mapMu.Lock()
	defer l.mapMu.Unlock()
	if p := l.mapping.Load(); p != nil && l.random {
		adviseNormal(*p)
		l.random = false
	}
}

// Reservation steps: the first 4 KiB, then doubling up to 1 MiB a step.
const (
	reserveMinStep = 4 << 10
	reserveMaxStep = 1 << 20
)

// reserve makes sure the blocks of [0, end) are allocated before the
// writer stores into them through the mapping: a store into a hole of a
// full file system raises SIGBUS, a failed fallocate is an error. Blocks
// are reserved in steps (doubling, 4 KiB to 1 MiB) through a brief
// descriptor. REQUIRES: the queue's writer.
func (mf *mappedFile) reserve(end int64) error {
	l := mf.lazy
	if l == nil || end <= l.reserved.Load() {
		return nil
	}
	// Blocks below the data already written are allocated (a loaded file
	// starts at 0: fallocate of allocated blocks changes nothing).
	start := l.reserved.Load()
	step := min(max(start, reserveMinStep), reserveMaxStep)
	to := min(mf.size, max(start+step, (end+pageSize-1)&^(pageSize-1)))
	f, err := os.OpenFile(mf.filePath(), os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("store: open %s: %w", mf.filePath(), openErr(err))
	}
	err = fallocate(f, start, to-start)
	f.Close()
	if err != nil && !errors.Is(err, errUnsupported) {
		return fmt.Errorf("store: reserve %s [%d, %d): %w", mf.filePath(), start, to, diskErr(err))
	}
	l.reserved.Store(to)
	return nil
}

// mapper bounds the number of lazy mappings with a CLOCK ring: once more
// than limit files are mapped, the hand sweeps the ring, clearing
// reference bits and unmapping the first file that was not used since the
// last sweep and is not held. Mapping a file is the only time it takes mu.
type mapper struct {
	limit int

	mu   sync.Mutex
	ring []*mappedFile // mapped lazy files; guarded by mu
	hand int           // guarded by mu

	maps   atomic.Int64 // mmap calls
	unmaps atomic.Int64 // munmap calls
	count  atomic.Int64 // len(ring), readable without mu
}

// full reports whether the ring is at its limit (a new mapping would
// unmap another file).
func (m *mapper) full() bool { return m.count.Load() >= int64(m.limit) }

func newMapper(limit int) *mapper { return &mapper{limit: max(limit, 2)} }

// mapped is the number of lazy files mapped now.
func (m *mapper) mapped() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.ring)
}

// add records a newly mapped file and unmaps cold ones beyond the limit.
func (m *mapper) add(mf *mappedFile) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if mf.lazy.slot < 0 {
		mf.lazy.slot = len(m.ring)
		m.ring = append(m.ring, mf)
	}
	m.evictLocked(len(m.ring)-m.limit, mf)
	m.count.Store(int64(len(m.ring)))
}

// shrink unmaps an eighth of the mapped files (at least one), sparing
// keep: mmap failed for lack of mappings or descriptors.
func (m *mapper) shrink(keep *mappedFile) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.evictLocked(max(1, len(m.ring)/8), keep)
}

// REQUIRES: m.mu held.
func (m *mapper) evictLocked(n int, keep *mappedFile) {
	for steps := 0; n > 0 && len(m.ring) > 0 && steps < 3*len(m.ring)+3; steps++ {
		if m.hand >= len(m.ring) {
			m.hand = 0
		}
		v := m.ring[m.hand]
		if v != keep && !v.lazy.used.Swap(false) && v.tryUnmapIdle() {
			m.removeLocked(v) // the hand now points at the moved last entry
			n--
			continue
		}
		m.hand++
	}
}

func (m *mapper) remove(mf *mappedFile) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.removeLocked(mf)
}

// REQUIRES: m.mu held.
func (m *mapper) removeLocked(mf *mappedFile) {
	i := mf.lazy.slot
	if i < 0 || i >= len(m.ring) || m.ring[i] != mf {
		return
	}
	last := len(m.ring) - 1
	m.ring[i] = m.ring[last]
	m.ring[i].lazy.slot = i
	m.ring[last] = nil
	m.ring = m.ring[:last]
	m.count.Store(int64(len(m.ring)))
	mf.lazy.slot = -1
}

// defaultMappedLimit is half of vm.max_map_count (65530 by default), less
// a margin for the commit log, index files, the runtime and libraries.
func defaultMappedLimit() int {
	n := 65530
	if b, err := os.ReadFile("/proc/sys/vm/max_map_count"); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && v > 0 {
			n = v
		}
	}
	return max(n/2-1024, 256)
}
