package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/apogeemq/apogee/internal/message"
)

// IndexFile layout (docs/storage.md §5.1). Part of the on-disk format;
// never change.
//
//	header (40 bytes) | slot table (hashSlotNum x 4) | items (indexNum x 20)
const (
	indexHeaderSize     = 40
	ihBeginTimestamp    = 0
	ihEndTimestamp      = 8
	ihBeginPhyOffset    = 16
	ihEndPhyOffset      = 24
	ihHashSlotCount     = 32
	ihIndexCount        = 36
	indexSlotSize       = 4
	indexItemSize       = 20
	iiKeyHash           = 0
	iiPhyOffset         = 4
	iiTimeDiff          = 12
	iiPrevIndex         = 16
	indexFileNameLayout = "20060102150405.000"
)

// indexKeyHash is abs(javaHash(key)), with Integer.MIN_VALUE mapping to 0
// (Java String.hashCode over UTF-16 units, as message.TagsHashCode).
func indexKeyHash[S ~string | ~[]byte](key S) int32 {
	return indexSlotHash(uint32(message.TagsHashCodeBytes([]byte(key))))
}

// Powers of 31 modulo 2^32 for javaHashFrom's eight-byte steps.
const (
	p31x2 = 31 * 31
	p31x3 = p31x2 * 31
	p31x4 = p31x3 * 31
	p31x5 = p31x4 * 31
	p31x6 = p31x5 * 31
	p31x7 = (p31x6 * 31) % (1 << 32)
	p31x8 = (p31x6 * 31 * 31) % (1 << 32)
)

// javaHashFrom continues Java's String.hashCode (over UTF-16 units, as
// message.TagsHashCode) from h over b, eight ASCII bytes per step. Hashing
// a then b from the result equals hashing a+b when a ends with an ASCII
// byte (no rune spans the joint): build hashes "topic#" once per record.
func javaHashFrom(h uint32, b []byte) uint32 {
	for i := 0; i < len(b); {
		if i+8 <= len(b) {
			if w := binary.LittleEndian.Uint64(b[i:]); w&0x8080808080808080 == 0 {
				h = h*p31x8 + uint32(w&0xff)*p31x7 + uint32(w>>8&0xff)*p31x6 +
					uint32(w>>16&0xff)*p31x5 + uint32(w>>24&0xff)*p31x4 + uint32(w>>32&0xff)*p31x3 +
					uint32(w>>40&0xff)*p31x2 + uint32(w>>48&0xff)*31 + uint32(w>>56)
				i += 8
				continue
			}
		}
		if c := b[i]; c < utf8.RuneSelf {
			h = 31*h + uint32(c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		i += size
		if r > 0xFFFF {
			r1, r2 := utf16.EncodeRune(r)
			h = 31*(31*h+uint32(r1)) + uint32(r2)
			continue
		}
		h = 31*h + uint32(r)
	}
	return h
}

// indexSlotHash is abs(h) as int32, with Integer.MIN_VALUE mapping to 0:
// indexKeyHash of a key whose Java hash is h.
func indexSlotHash(h uint32) int32 {
	k := int32(h)
	if k < 0 {
		k = -k
	}
	if k < 0 {
		return 0
	}
	return k
}

// indexFile is one hash index file. The dispatch goroutine is the only
// writer; queries run concurrently. Header values are mirrored in atomics so
// readers never read a half-updated header; slot words are stored
// atomically after their item is complete.
type indexFile struct {
	mf       *mappedFile
	slotNum  int
	indexNum int

	beginTimestamp atomic.Int64
	endTimestamp   atomic.Int64
	beginPhyOffset atomic.Int64
	endPhyOffset   atomic.Int64
	hashSlotCount  atomic.Int32
	indexCount     atomic.Int32
}

func indexFileSize(slotNum, indexNum int) int64 {
	return indexHeaderSize + int64(slotNum)*indexSlotSize + int64(indexNum)*indexItemSize
}

func openIndexFile(path string, slotNum, indexNum int, create bool) (*indexFile, error) {
	mf, err := openMappedPath(path, 0, indexFileSize(slotNum, indexNum), create)
	if err != nil {
		return nil, err
	}
	f := &indexFile{mf: mf, slotNum: slotNum, indexNum: indexNum}
	be := binary.BigEndian
	d := mf.data
	f.beginTimestamp.Store(int64(be.Uint64(d[ihBeginTimestamp:])))
	f.endTimestamp.Store(int64(be.Uint64(d[ihEndTimestamp:])))
	f.beginPhyOffset.Store(int64(be.Uint64(d[ihBeginPhyOffset:])))
	f.endPhyOffset.Store(int64(be.Uint64(d[ihEndPhyOffset:])))
	f.hashSlotCount.Store(int32(be.Uint32(d[ihHashSlotCount:])))
	ic := int32(be.Uint32(d[ihIndexCount:]))
	if ic < 1 || int(ic) > indexNum {
		ic = 1
	}
	f.indexCount.Store(ic)
	return f, nil
}

func (f *indexFile) isFull() bool { return int(f.indexCount.Load()) >= f.indexNum }

func (f *indexFile) writeHeader() {
	be := binary.BigEndian
	d := f.mf.data
	be.PutUint64(d[ihBeginTimestamp:], uint64(f.beginTimestamp.Load()))
	be.PutUint64(d[ihEndTimestamp:], uint64(f.endTimestamp.Load()))
	be.PutUint64(d[ihBeginPhyOffset:], uint64(f.beginPhyOffset.Load()))
	be.PutUint64(d[ihEndPhyOffset:], uint64(f.endPhyOffset.Load()))
	be.PutUint32(d[ihHashSlotCount:], uint32(f.hashSlotCount.Load()))
	be.PutUint32(d[ihIndexCount:], uint32(f.indexCount.Load()))
}

func (f *indexFile) slotPos(keyHash int32) int {
	return indexHeaderSize + int(keyHash%int32(f.slotNum))*indexSlotSize
}

func (f *indexFile) itemPos(n int32) int {
	return indexHeaderSize + f.slotNum*indexSlotSize + int(n)*indexItemSize
}

// loadSlot / storeSlot access a big-endian slot word atomically.
func (f *indexFile) loadSlot(pos int) int32 {
	v := atomic.LoadUint32((*uint32)(unsafe.Pointer(&f.mf.data[pos])))
	var b [4]byte
	*(*uint32)(unsafe.Pointer(&b[0])) = v
	return int32(binary.BigEndian.Uint32(b[:]))
}

func (f *indexFile) storeSlot(pos int, val int32) {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(val))
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&f.mf.data[pos])), *(*uint32)(unsafe.Pointer(&b[0])))
}

// put adds one key of hash h (indexKeyHash; 5.3 steps 2-4). It returns
// false when the file is full.
func (f *indexFile) put(h int32, phyOffset, storeTimestamp int64) bool {
	count := f.indexCount.Load()
	if int(count) >= f.indexNum {
		return false
	}
	sp := f.slotPos(h)
	old := f.loadSlot(sp)
	if old <= 0 || old > count {
		old = 0
	}
	begin := f.beginTimestamp.Load()
	var diff int64
	if begin > 0 && count > 1 {
		diff = (storeTimestamp - begin) / 1000
	}
	diff = min(max(diff, 0), int64(^uint32(0)>>1))
	ip := f.itemPos(count)
	d := f.mf.data
	be := binary.BigEndian
	be.PutUint32(d[ip+iiKeyHash:], uint32(h))
	be.PutUint64(d[ip+iiPhyOffset:], uint64(phyOffset))
	be.PutUint32(d[ip+iiTimeDiff:], uint32(diff))
	be.PutUint32(d[ip+iiPrevIndex:], uint32(old))
	f.storeSlot(sp, count)
	if count <= 1 {
		f.beginPhyOffset.Store(phyOffset)
		f.beginTimestamp.Store(storeTimestamp)
	}
	if old == 0 {
		f.hashSlotCount.Add(1)
	}
	f.endPhyOffset.Store(phyOffset)
	f.endTimestamp.Store(storeTimestamp)
	f.indexCount.Store(count + 1)
	f.writeHeader()
	return true
}

// query collects physical offsets of items whose key hash matches and whose
// time is within [begin, end] (5.4).
func (f *indexFile) query(out []int64, key string, maxNum int, begin, end int64) []int64 {
	if !f.mf.hold() {
		return out
	}
	defer f.mf.release()
	h := indexKeyHash(key)
	count := f.indexCount.Load()
	n := f.loadSlot(f.slotPos(h))
	if n <= 0 || n >= count {
		return out
	}
	beginTs := f.beginTimestamp.Load()
	d := f.mf.data
	be := binary.BigEndian
	for steps := 0; len(out) < maxNum && n > 0 && n < count && steps < f.indexNum; steps++ {
		ip := f.itemPos(n)
		kh := int32(be.Uint32(d[ip+iiKeyHash:]))
		phy := int64(be.Uint64(d[ip+iiPhyOffset:]))
		diff := int32(be.Uint32(d[ip+iiTimeDiff:]))
		prev := int32(be.Uint32(d[ip+iiPrevIndex:]))
		if diff < 0 {
			break
		}
		t := beginTs + int64(diff)*1000
		if kh == h && t >= begin && t <= end {
			out = append(out, phy)
		}
		if prev <= 0 || prev >= count || prev == n || t < begin {
			break
		}
		n = prev
	}
	return out
}

// indexFileName renders local time as yyyyMMddHHmmssSSS.
func indexFileName(t time.Time) string {
	s := t.Format(indexFileNameLayout)
	return s[:14] + s[15:]
}

// indexService owns the index files (RocketMQ IndexService).
type indexService struct {
	dir      string
	slotNum  int
	indexNum int
	cp       *checkpoint
	log      *slog.Logger
	now      func() time.Time
	spawn    func(func()) // runs a background job (the store's goroutine helper)

	mu    sync.RWMutex
	files []*indexFile // ascending creation time; guarded by mu

	// Creation failures (a disk too full for another file). current() does
	// not try again before retryAt, the wait doubling from 1 s up to
	// indexRetryMax, and says so in the log at most once per
	// indexLogInterval instead of once per message. Dispatch goroutine only.
	retryAt   time.Time
	backoff   time.Duration
	lastLog   time.Time
	skipped   int64 // messages not indexed since the last log line
	lastError error

	// gapFrom is the physical offset from which records were dispatched
	// without index entries (no file could be created, or a crash dropped
	// the newest file), -1 when there is no gap. The store re-indexes the
	// gap from the commit log before the next record is indexed.
	// Dispatch goroutine (or recovery) only.
	gapFrom int64

	unavailable    atomic.Bool  // true while no index file can be created
	createFailures atomic.Int64 // index files that could not be created
	notIndexed     atomic.Int64 // records dispatched while unavailable (re-indexed later)
	reindexed      atomic.Int64 // records indexed again from the commit log

	// failCreate, when set, fails file creation with its error: tests use it
	// to stand for a full disk (root ignores read-only directories).
	failCreate atomic.Pointer[error]
}

const (
	indexRetryMax    = 30 * time.Second
	indexLogInterval = 10 * time.Second
)

// errIndexUnavailable: no index file can be created now; the record joins
// the gap that is re-indexed later.
var errIndexUnavailable = errors.New("store: no index file can be created")

// load maps existing index files. After a crash, files with entries newer
// than the checkpoint's indexMsgTimestamp are destroyed (6.3 step 2). It
// returns how many were dropped.
func (s *indexService) load(lastExitOK bool) (int, error) {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return 0, fmt.Errorf("store: create %s: %w", s.dir, err)
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return 0, fmt.Errorf("store: list %s: %w", s.dir, err)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && len(e.Name()) == 17 {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	dropped := 0
	for _, n := range names {
		p := filepath.Join(s.dir, n)
		f, err := openIndexFile(p, s.slotNum, s.indexNum, false)
		if err != nil {
			s.log.Warn("index file unusable, deleted", "file", p, "err", err)
			os.Remove(p)
			dropped++
			continue
		}
		if !lastExitOK && f.endTimestamp.Load() > s.cp.indexMsgTimestamp.Load() {
			f.mf.destroy(s.now(), 0)
			dropped++
			continue
		}
		s.files = append(s.files, f)
	}
	return dropped, nil
}

// current returns the writable file, creating the next one when needed.
// REQUIRES: called from the dispatch goroutine only.
func (s *indexService) current() (*indexFile, error) {
	s.mu.RLock()
	var last *indexFile
	if n := len(s.files); n > 0 {
		last = s.files[n-1]
	}
	s.mu.RUnlock()
	if last != nil && !last.isFull() {
		return last, nil
	}
	t := s.now()
	if t.Before(s.retryAt) {
		return nil, errIndexUnavailable
	}
	path := filepath.Join(s.dir, indexFileName(t))
	for i := 1; i < 1000; i++ {
		if _, err := os.Stat(path); err != nil {
			break
		}
		path = filepath.Join(s.dir, indexFileName(t.Add(time.Duration(i)*time.Millisecond)))
	}
	var f *indexFile
	var err error
	if p := s.failCreate.Load(); p != nil {
		err = *p
	} else {
		f, err = openIndexFile(path, s.slotNum, s.indexNum, true)
	}
	if err != nil {
		s.createFailed(t, err)
		return nil, fmt.Errorf("%w: %w", errIndexUnavailable, err)
	}
	if s.unavailable.CompareAndSwap(true, false) {
		s.backoff, s.retryAt = 0, time.Time{}
		s.log.Info("index file created again: indexing resumes", "file", path)
	}
	if last != nil {
		f.beginPhyOffset.Store(last.endPhyOffset.Load())
		f.endPhyOffset.Store(last.endPhyOffset.Load())
		f.beginTimestamp.Store(last.endTimestamp.Load())
		f.endTimestamp.Store(last.endTimestamp.Load())
		f.writeHeader()
		prev := last
		s.spawn(func() {
			if err := prev.mf.flushAll(); err != nil {
				s.log.Error("index flush failed", "file", prev.mf.path, "err", err)
				return
			}
			s.cp.indexMsgTimestamp.Store(prev.endTimestamp.Load())
			if err := s.cp.persist(); err != nil {
				s.log.Error("checkpoint persist failed", "err", err)
			}
		})
	}
	s.mu.Lock()
	s.files = append(s.files, f)
	s.mu.Unlock()
	return f, nil
}

// createFailed arms the retry back-off after a failed creation at t.
func (s *indexService) createFailed(t time.Time, err error) {
	s.createFailures.Add(1)
	s.unavailable.Store(true)
	s.backoff = min(max(2*s.backoff, time.Second), indexRetryMax)
	s.retryAt = t.Add(s.backoff)
	s.lastError = err
	if s.lastLog.IsZero() || t.Sub(s.lastLog) >= indexLogInterval {
		s.lastLog = t
		s.log.Error("index file cannot be created: messages are stored and consumable but not indexed by key until it can",
			"err", err, "retryIn", s.backoff, "notIndexedSinceLastLog", s.skipped)
		s.skipped = 0
	}
}

// skip counts a record dispatched without index entries.
func (s *indexService) skip() {
	s.skipped++
	s.notIndexed.Add(1)
}

// alreadyIndexed reports whether the record at phy is covered by f: records
// are indexed in offset order, so anything at or below the newest indexed
// offset is (a new file starts with its predecessor's end offset and time).
func (f *indexFile) alreadyIndexed(phy int64) bool {
	if f.indexCount.Load() <= 1 && f.endTimestamp.Load() == 0 {
		return false // nothing indexed yet
	}
	return phy <= f.endPhyOffset.Load()
}

// lastIndexed returns the physical offset of the newest indexed record and
// whether there is one.
func (s *indexService) lastIndexed() (int64, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for i := len(s.files) - 1; i >= 0; i-- {
		f := s.files[i]
		if f.indexCount.Load() > 1 || f.endTimestamp.Load() > 0 {
			return f.endPhyOffset.Load(), true
		}
	}
	return 0, false
}

// build indexes one dispatched message (5.2): topic#UNIQ_KEY and
// topic#token for every space-separated KEYS token.
func (s *indexService) build(r *dispatchRequest) error {
	f, err := s.current()
	if err != nil {
		return err
	}
	if f.alreadyIndexed(r.phyOffset) {
		return nil
	}
	// Every key is topic#key: hash "topic#" once, then each key from there.
	th := 31*javaHashFrom(0, r.topic) + '#'
	add := func(key []byte) error {
		h := indexSlotHash(javaHashFrom(th, key))
		for range 3 {
			if f.put(h, r.phyOffset, r.storeTimestamp) {
				return nil
			}
			if f, err = s.current(); err != nil {
				return err
			}
		}
		return fmt.Errorf("store: index put failed for key %q", string(r.topic)+"#"+string(key))
	}
	if len(r.uniqKey) > 0 {
		if err := add(r.uniqKey); err != nil {
			return err
		}
	}
	for keys := r.keys; len(keys) > 0; {
		i := bytes.IndexByte(keys, ' ')
		var k []byte
		if i < 0 {
			k, keys = keys, nil
		} else {
			k, keys = keys[:i], keys[i+1:]
		}
		if len(k) > 0 {
			if err := add(k); err != nil {
				return err
			}
		}
	}
	return nil
}

// query walks files newest first (5.4) and returns matching physical
// offsets with the newest file's end timestamp and end offset.
func (s *indexService) query(topic, key string, maxNum int, begin, end int64) (offs []int64, lastTs, lastPhy int64) {
	s.mu.RLock()
	files := append([]*indexFile(nil), s.files...)
	s.mu.RUnlock()
	if n := len(files); n > 0 {
		lastTs = files[n-1].endTimestamp.Load()
		lastPhy = files[n-1].endPhyOffset.Load()
	}
	k := topic + "#" + key
	for i := len(files) - 1; i >= 0 && len(offs) < maxNum; i-- {
		f := files[i]
		fb, fe := f.beginTimestamp.Load(), f.endTimestamp.Load()
		if fe >= begin && fb <= end {
			offs = f.query(offs, k, maxNum, begin, end)
		}
		if fb < begin {
			break
		}
	}
	return offs, lastTs, lastPhy
}

// deleteExpired deletes files (never the last) whose end offset is below
// minPhy (7.3).
func (s *indexService) deleteExpired(minPhy int64, forceAfter time.Duration) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for n < len(s.files)-1 && s.files[n].endPhyOffset.Load() < minPhy {
		if !s.files[n].mf.destroy(s.now(), forceAfter) {
			break
		}
		n++
	}
	s.files = append([]*indexFile(nil), s.files[n:]...)
	return n
}

// close flushes and unmaps every file.
func (s *indexService) close() {
	s.mu.Lock()
	files := s.files
	s.files = nil
	s.mu.Unlock()
	for _, f := range files {
		f.writeHeader()
		_ = f.mf.flushAll()
		f.mf.shutdown(s.now(), 0)
	}
}
