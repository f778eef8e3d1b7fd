package store

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// The consume-queue snapshot: a clean stop writes the state of every
// consume queue (its files, write position, last physical offset, min
// logical offset) into one file, and the next start builds the queues from
// it instead of listing two directories, opening a file and reading (or
// mapping) it per queue: with 100,000 queues that was ~12 s of system
// calls, with 1,000,000 minutes. The snapshot is an accelerator, never the
// truth: it is used only after a clean stop (no abort file), with the
// checkpoint it was written with, the same consume-queue file size and a
// commit-log record boundary at its recorded end; any doubt (missing, torn,
// stale, another version) and the start lists and recovers every queue
// directory as before. It is removed at every start before the abort file
// is written, so a snapshot never outlives the run that follows it.
//
// Queues still waiting for their first file at the stop (cq_create.go: a
// new queue's file costs three journaled namespace operations, ~1 ms each
// on a busy disk, so 100,000 new queues take minutes to get theirs) are not
// waited for beyond a few seconds: their units in memory go into the
// snapshot, and the abort file is left in place with abortSnapshotMark as
// its content instead of being removed. The next start restores them as
// pending (the creator makes their files in the background); if the
// snapshot cannot be used, the abort file makes the start an abnormal
// recovery, which re-dispatches from the checkpoint, held below the oldest
// pending unit, so nothing is lost either way (RocketMQ, too, sees an
// abnormal exit).
//
// Layout (big endian, docs/storage.md §6.7):
//
//	header   magic "APGCQS02" | cqFileSize int64 | commitLogEnd int64 |
//	         checkpoint image [40]byte
//	entry    topicLen uint16 | topic | queueId int32 | firstFrom int64 |
//	         files uint32 | lastWrote int64 | maxPhysicOffset int64 |
//	         minLogicOffset int64 | pendFrom int64 | pendTs int64 |
//	         pendCount uint32 | pendCount consume-queue units (20 bytes)
//	trailer  count int64 | crc32c(every preceding byte) uint32
const (
	cqSnapshotFileName   = "consumequeue.snapshot"
	cqSnapshotMagic      = "APGCQS02"
	cqSnapshotHeaderLen  = 8 + 8 + 8 + checkpointUsedBytes
	cqSnapshotTrailerLen = 8 + 4
	cqSnapshotEntryLen   = 2 + 4 + 8 + 4 + 8 + 8 + 8 + 8 + 8 + 4 // without the topic and units
	// abortSnapshotMark is the abort file's content after a clean stop
	// that left units pending in the snapshot.
	abortSnapshotMark = "clean stop; pending consume-queue units in " + cqSnapshotFileName + "\n"
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// cqSnapshotEntry is one queue of a snapshot.
type cqSnapshotEntry struct {
	topic     string
	queueID   int32
	firstFrom int64 // fromOffset of the first file
	files     uint32
	lastWrote int64 // write position in the last file
	maxPhy    int64
	minLogic  int64
	// Units kept in memory (no file yet): queue offsets pendFrom.. , the
	// first stored at pendTs.
	pendFrom int64
	pendTs   int64
	pending  []cqUnit
}

// writeCQSnapshot writes the snapshot of queues (tmp file, fsync, rename,
// directory fsync). It returns an error, and writes nothing, if a queue
// has units in its files that are not flushed: the snapshot describes
// durable state only. pendTs gives the store time of the first pending
// unit of the queues that have some.
func writeCQSnapshot(root string, fileSize, commitLogEnd int64, cp [checkpointUsedBytes]byte, queues []*consumeQueue, pendTs map[*consumeQueue]int64) error {
	path := filepath.Join(root, cqSnapshotFileName)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("store: create %s: %w", tmp, err)
	}
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return err
	}
	crc := crc32.New(crc32c)
	w := bufio.NewWriterSize(io.MultiWriter(f, crc), 1<<20)
	be := binary.BigEndian
	buf := make([]byte, 0, 256)
	buf = append(buf, cqSnapshotMagic...)
	buf = be.AppendUint64(buf, uint64(fileSize))
	buf = be.AppendUint64(buf, uint64(commitLogEnd))
	buf = append(buf, cp[:]...)
	w.Write(buf)
	var count int64
	for _, cq := range queues {
		e, ok, err := cq.snapshotEntry(pendTs[cq])
		if err != nil {
			return fail(err)
		}
		if !ok {
			continue
		}
		if len(e.topic) > 0xFFFF {
			return fail(fmt.Errorf("store: snapshot: topic of %d bytes", len(e.topic)))
		}
		buf = be.AppendUint16(buf[:0], uint16(len(e.topic)))
		buf = append(buf, e.topic...)
		buf = be.AppendUint32(buf, uint32(e.queueID))
		buf = be.AppendUint64(buf, uint64(e.firstFrom))
		buf = be.AppendUint32(buf, e.files)
		buf = be.AppendUint64(buf, uint64(e.lastWrote))
		buf = be.AppendUint64(buf, uint64(e.maxPhy))
		buf = be.AppendUint64(buf, uint64(e.minLogic))
		buf = be.AppendUint64(buf, uint64(e.pendFrom))
		buf = be.AppendUint64(buf, uint64(e.pendTs))
		buf = be.AppendUint32(buf, uint32(len(e.pending)))
		for _, u := range e.pending {
			var b [CQUnitSize]byte
			encodeCQUnit(b[:], u)
			buf = append(buf, b[:]...)
		}
		w.Write(buf)
		count++
	}
	w.Write(be.AppendUint64(buf[:0], uint64(count)))
	if err := w.Flush(); err != nil {
		return fail(fmt.Errorf("store: write %s: %w", tmp, err))
	}
	if _, err := f.Write(be.AppendUint32(nil, crc.Sum32())); err != nil {
		return fail(fmt.Errorf("store: write %s: %w", tmp, err))
	}
	if err := f.Sync(); err != nil {
		return fail(fmt.Errorf("store: sync %s: %w", tmp, err))
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("store: close %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("store: rename %s: %w", tmp, err)
	}
	syncDir(root)
	return nil
}

// errNoSnapshot: the snapshot is absent or not usable (the caller falls
// back to the full load; the reason is logged).
var errNoSnapshot = errors.New("no usable consume-queue snapshot")

// readCQSnapshot reads and checks a snapshot: magic, CRC, file size,
// checkpoint image. It returns the commit-log end it records and its
// entries.
func readCQSnapshot(path string, fileSize int64, cp [checkpointUsedBytes]byte) (int64, []cqSnapshotEntry, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil, errNoSnapshot
	}
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %v", errNoSnapshot, err)
	}
	return parseCQSnapshot(b, fileSize, cp)
}

// parseCQSnapshot decodes a snapshot image (readCQSnapshot; the fuzz
// test). Any inconsistency is errNoSnapshot, never a panic.
func parseCQSnapshot(b []byte, fileSize int64, cp [checkpointUsedBytes]byte) (int64, []cqSnapshotEntry, error) {
	bad := func(why string) (int64, []cqSnapshotEntry, error) {
		return 0, nil, fmt.Errorf("%w: %s", errNoSnapshot, why)
	}
	be := binary.BigEndian
	if len(b) < cqSnapshotHeaderLen+cqSnapshotTrailerLen || string(b[:8]) != cqSnapshotMagic {
		return bad("no snapshot header")
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, crc32c) != be.Uint32(b[len(b)-4:]) {
		return bad("checksum mismatch (torn or damaged)")
	}
	if int64(be.Uint64(b[8:])) != fileSize {
		return bad("written with another consume-queue file size")
	}
	clEnd := int64(be.Uint64(b[16:]))
	if [checkpointUsedBytes]byte(b[24:24+checkpointUsedBytes]) != cp {
		return bad("the checkpoint changed since it was written")
	}
	count := int64(be.Uint64(body[len(body)-8:]))
	p := b[cqSnapshotHeaderLen : len(body)-8]
	if count < 0 || count > int64(len(p))/cqSnapshotEntryLen {
		return bad("entry count out of range")
	}
	entries := make([]cqSnapshotEntry, 0, count)
	for len(p) > 0 {
		if len(p) < 2 {
			return bad("truncated entry")
		}
		n := int(be.Uint16(p))
		if len(p) < cqSnapshotEntryLen+n {
			return bad("truncated entry")
		}
		e := cqSnapshotEntry{topic: string(p[2 : 2+n])}
		q := p[2+n:]
		e.queueID = int32(be.Uint32(q))
		e.firstFrom = int64(be.Uint64(q[4:]))
		e.files = be.Uint32(q[12:])
		e.lastWrote = int64(be.Uint64(q[16:]))
		e.maxPhy = int64(be.Uint64(q[24:]))
		e.minLogic = int64(be.Uint64(q[32:]))
		e.pendFrom = int64(be.Uint64(q[40:]))
		e.pendTs = int64(be.Uint64(q[48:]))
		units := int64(be.Uint32(q[56:]))
		p = q[60:]
		if units > int64(len(p))/CQUnitSize {
			return bad("truncated entry")
		}
		if units > 0 {
			e.pending = make([]cqUnit, units)
			for i := range e.pending {
				e.pending[i] = decodeCQUnit(p[i*CQUnitSize:])
			}
			p = p[units*CQUnitSize:]
		}
		end := e.firstFrom + int64(e.files)*fileSize
		if e.topic == "" || e.queueID < 0 || (e.files == 0 && units == 0) || e.files > 1<<20 || e.firstFrom < 0 ||
			e.firstFrom%fileSize != 0 || e.firstFrom > math.MaxInt64/2 ||
			e.lastWrote < 0 || e.lastWrote > fileSize || e.lastWrote%CQUnitSize != 0 ||
			e.minLogic < 0 || (e.files > 0 && e.minLogic > end) ||
			e.pendFrom < 0 || e.pendFrom > math.MaxInt64/CQUnitSize/2 {
			return bad("entry out of range")
		}
		entries = append(entries, e)
	}
	if int64(len(entries)) != count {
		return bad("entry count mismatch")
	}
	return clEnd, entries, nil
}

// snapshotEntry describes the queue for a snapshot; ok is false for a
// queue with neither files nor pending units (nothing to restore). An
// error means units in its files are not durable. pendTs is the store
// time of its first pending unit.
func (cq *consumeQueue) snapshotEntry(pendTs int64) (cqSnapshotEntry, bool, error) {
	cq.writeMu.Lock()
	defer cq.writeMu.Unlock()
	e := cqSnapshotEntry{topic: cq.topic, queueID: cq.queueID, maxPhy: cq.maxPhysicOffset.Load(),
		minLogic: cq.minLogicOffset.Load(), pendTs: pendTs}
	cq.pendMu.Lock()
	if len(cq.pending) > 0 {
		e.pendFrom = cq.pendFrom
		e.pending = append([]cqUnit(nil), cq.pending...)
	}
	cq.pendMu.Unlock()
	files := cq.files.snapshot()
	if len(files) > 0 {
		last := files[len(files)-1]
		if w := last.fromOffset + last.wrote.Load(); w > cq.files.flushedWhere.Load() {
			return cqSnapshotEntry{}, false, fmt.Errorf("store: snapshot: %s is not flushed", cq)
		}
		e.firstFrom, e.files, e.lastWrote = files[0].fromOffset, uint32(len(files)), last.wrote.Load()
	}
	return e, len(files) > 0 || len(e.pending) > 0, nil
}

// restoreQueue builds a consume queue from its snapshot entry without a
// system call: the files are lazy (mapped on first use) and their
// positions are the recorded ones.
func (s *Store) restoreQueue(e cqSnapshotEntry, now int64) *consumeQueue {
	size := s.cfg.MappedFileSizeConsumeQueue
	cq := newConsumeQueue(s.cfg.StorePathRootDir, e.topic, e.queueID, size, s.log, s.mapper)
	cq.bg = s.creator
	cq.wb = s.behind
	if len(e.pending) > 0 {
		cq.pending, cq.pendFrom = e.pending, e.pendFrom
		cq.pendEnd.Store(e.pendFrom + int64(len(e.pending)))
	}
	cq.maxPhysicOffset.Store(e.maxPhy)
	cq.minLogicOffset.Store(e.minLogic)
	if e.files == 0 {
		return cq
	}
	files := make([]*mappedFile, e.files)
	for i := range files {
		from := e.firstFrom + int64(i)*size
		mf := newLazyFileIn(cq.files.dir, from, size, s.mapper)
		mf.lastModified.Store(now)
		pos := size
		if i == len(files)-1 {
			pos = e.lastWrote
		}
		mf.setPositions(pos)
		files[i] = mf
	}
	cq.files.files = files
	end := files[len(files)-1].fromOffset + e.lastWrote
	cq.files.flushedWhere.Store(end)
	cq.files.committedWhere.Store(end)
	return cq
}

// loadFromSnapshot builds every consume queue from the snapshot when it is
// usable (see the top of this file) and reports whether it did. marked: the
// abort file holds abortSnapshotMark (a clean stop that left pending units
// in the snapshot). The snapshot file is removed either way. REQUIRES: the
// commit log and the checkpoint loaded, nothing started.
func (s *Store) loadFromSnapshot(lastExitOK, marked bool) bool {
	root := s.cfg.StorePathRootDir
	path := filepath.Join(root, cqSnapshotFileName)
	defer func() {
		os.Remove(path)
		os.Remove(path + ".tmp")
	}()
	if !lastExitOK && !marked {
		return false
	}
	t0 := time.Now()
	clEnd, entries, err := readCQSnapshot(path, s.cfg.MappedFileSizeConsumeQueue, s.cp.lastImage())
	if err == nil && !s.boundaryAt(clEnd) {
		err = fmt.Errorf("%w: no record boundary at the commit-log end it records (%d)", errNoSnapshot, clEnd)
	}
	if err != nil {
		if _, serr := os.Stat(path); serr == nil {
			s.log.Warn("consume-queue snapshot not used; loading every queue directory", "reason", err)
		}
		return false
	}
	s.queuesMu.Lock()
	if len(s.queues) == 0 {
		// Sized once: growing the maps by rehashing cost a quarter of a
		// restart with 10^6 queues.
		s.queues = make(map[string]topicQueues, len(entries))
		s.queueList = make([]*consumeQueue, 0, len(entries))
	}
	s.queuesMu.Unlock()
	now := time.Now().UnixMilli()
	var pend []createJob
	for _, e := range entries {
		cq := s.restoreQueue(e, now)
		s.putQueue(cq)
		if len(e.pending) > 0 {
			// A missing time holds the checkpoint at the start of the log
			// (setHold(0) would mean nothing is pending).
			pend = append(pend, createJob{cq, max(e.pendTs, 1)})
		}
	}
	// The creator makes their files once it runs, oldest first (the
	// checkpoint hold follows its queue's head).
	sort.SliceStable(pend, func(i, j int) bool { return pend[i].ts < pend[j].ts })
	for _, j := range pend {
		s.creator.enqueue(j.cq, j.ts)
	}
	s.snapshotEnd = clEnd
	s.recovery.SnapshotQueues = len(entries)
	s.log.Info("consume queues restored from the snapshot", "queues", len(entries),
		"queuesWithoutFile", len(pend), "took", time.Since(t0))
	return true
}

// boundaryAt reports whether off is where a commit-log record starts or the
// data ends: the end of the last file, the end of data (zeros), a BLANK
// filler or a valid record whose PHYSICALOFFSET is off.
func (s *Store) boundaryAt(off int64) bool {
	files := s.commitLog.snapshot()
	if len(files) == 0 {
		return false
	}
	last := files[len(files)-1]
	if off == last.fromOffset+last.size {
		return true
	}
	f := s.commitLog.find(off, false)
	if f == nil {
		return false
	}
	r, _, why := s.checkRecord(f, off-f.fromOffset)
	return r != recordInvalid || why == "end of data"
}

// syncDir makes the directory's entries durable (after a rename); errors
// are ignored: the caller's data is already synced, only the name could be
// lost, and a lost snapshot only makes the next start slower.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
