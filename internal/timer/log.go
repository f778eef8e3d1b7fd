package timer

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// Timer log record layout (doc.go). Part of the on-disk format; never change.
const (
	recordSize   = 52
	recordMagic  = 1      // MAGIC_DEFAULT
	magicDelete  = 1 << 2 // MAGIC_DELETE: the record cancels a timer of its slot
	offPrevPos   = 4
	offMagic     = 12
	offWriteMs   = 16
	offDelayMs   = 24
	offPhyOffset = 28
	offMsgSize   = 36
	offTopicHash = 40
	offQueueOff  = 44
)

// record is one decoded timer log record.
type record struct {
	magic       int32 // recordMagic, optionally | magicDelete
	prevPos     int64
	writeMs     int64
	slotMs      int64 // writeMs + delayMs
	phyOffset   int64
	msgSize     int32
	topicHash   int32
	queueOffset int64
}

func (r *record) encode(b []byte) {
	binary.BigEndian.PutUint32(b[0:], recordSize)
	binary.BigEndian.PutUint64(b[offPrevPos:], uint64(r.prevPos))
	magic := r.magic
	if magic == 0 {
		magic = recordMagic
	}
	binary.BigEndian.PutUint32(b[offMagic:], uint32(magic))
	binary.BigEndian.PutUint64(b[offWriteMs:], uint64(r.writeMs))
	binary.BigEndian.PutUint32(b[offDelayMs:], uint32(int32(r.slotMs-r.writeMs)))
	binary.BigEndian.PutUint64(b[offPhyOffset:], uint64(r.phyOffset))
	binary.BigEndian.PutUint32(b[offMsgSize:], uint32(r.msgSize))
	binary.BigEndian.PutUint32(b[offTopicHash:], uint32(r.topicHash))
	binary.BigEndian.PutUint64(b[offQueueOff:], uint64(r.queueOffset))
}

// decodeRecord parses a record; ok is false for anything that is not a
// complete default record (zeroes past the end, damage).
func decodeRecord(b []byte) (record, bool) {
	if len(b) < recordSize || binary.BigEndian.Uint32(b) != recordSize {
		return record{}, false
	}
	magic := int32(binary.BigEndian.Uint32(b[offMagic:]))
	if magic&recordMagic == 0 || magic&^(recordMagic|magicDelete) != 0 {
		return record{}, false
	}
	r := record{
		magic:       magic,
		prevPos:     int64(binary.BigEndian.Uint64(b[offPrevPos:])),
		writeMs:     int64(binary.BigEndian.Uint64(b[offWriteMs:])),
		phyOffset:   int64(binary.BigEndian.Uint64(b[offPhyOffset:])),
		msgSize:     int32(binary.BigEndian.Uint32(b[offMsgSize:])),
		topicHash:   int32(binary.BigEndian.Uint32(b[offTopicHash:])),
		queueOffset: int64(binary.BigEndian.Uint64(b[offQueueOff:])),
	}
	r.slotMs = r.writeMs + int64(int32(binary.BigEndian.Uint32(b[offDelayMs:])))
	return r, true
}

// segment is one timer log file.
type segment struct {
	base    int64 // global position of the file's first byte
	f       *os.File
	maxSlot int64 // latest slot of any record in the file (for deletion)
	dirty   bool  // written since the last sync
}

// timerLog is the sequence of timer log files. Not safe for concurrent
// use: the Timer serialises access with its mutex, except reads, which
// only touch files that are never deleted while a dequeue runs (deletion
// happens on the dequeue goroutine's side of the flush, see Timer.flush).
type timerLog struct {
	dir      string
	fileSize int64 // usable bytes per file: a multiple of recordSize
	segs     []*segment
	writePos int64 // next record position
}

func segmentName(base int64) string { return fmt.Sprintf("%020d", base) }

// openLog opens the files in dir, drops those at or past truncateAt and
// truncates the one containing it.
func openLog(dir string, fileSize, truncateAt int64) (*timerLog, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("timer: %w", err)
	}
	l := &timerLog{dir: dir, fileSize: fileSize / recordSize * recordSize}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("timer: %w", err)
	}
	var bases []int64
	for _, e := range entries {
		if b, err := strconv.ParseInt(e.Name(), 10, 64); err == nil && len(e.Name()) == 20 && !e.IsDir() {
			bases = append(bases, b)
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	for _, b := range bases {
		path := filepath.Join(dir, segmentName(b))
		if b >= truncateAt {
			if err := os.Remove(path); err != nil {
				return nil, fmt.Errorf("timer: drop unsynced log file: %w", err)
			}
			continue
		}
		if b%l.fileSize != 0 {
			l.close()
			return nil, fmt.Errorf("timer: log file %s does not start at a multiple of the file size %d (mappedFileSizeTimerLog changed?)", path, l.fileSize)
		}
		f, err := os.OpenFile(path, os.O_RDWR, 0o644)
		if err != nil {
			l.close()
			return nil, fmt.Errorf("timer: %w", err)
		}
		if end := truncateAt - b; end < l.fileSize {
			if err := f.Truncate(max(end, 0)); err != nil {
				f.Close()
				l.close()
				return nil, fmt.Errorf("timer: truncate %s: %w", path, err)
			}
		}
		l.segs = append(l.segs, &segment{base: b, f: f, maxSlot: -1 << 62})
	}
	l.writePos = truncateAt
	if len(l.segs) > 0 {
		last := l.segs[len(l.segs)-1]
		if l.writePos < last.base {
			l.writePos = last.base
		}
	} else {
		// Nothing retained: continue at the file boundary at or after the
		// checkpoint, so positions stay monotonic.
		l.writePos = (truncateAt + l.fileSize - 1) / l.fileSize * l.fileSize
	}
	return l, nil
}

func (l *timerLog) close() {
	for _, s := range l.segs {
		s.f.Close()
	}
	l.segs = nil
}

// firstPos is the position of the oldest retained record.
func (l *timerLog) firstPos() int64 {
	if len(l.segs) == 0 {
		return l.writePos
	}
	return l.segs[0].base
}

// append writes one record and returns its position.
func (l *timerLog) append(r *record) (int64, error) {
	within := l.writePos % l.fileSize
	if within+recordSize > l.fileSize {
		l.writePos += l.fileSize - within
	}
	seg := l.segmentFor(l.writePos)
	if seg == nil {
		base := l.writePos - l.writePos%l.fileSize
		f, err := os.OpenFile(filepath.Join(l.dir, segmentName(base)), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return 0, fmt.Errorf("timer: create log file: %w", err)
		}
		seg = &segment{base: base, f: f, maxSlot: -1 << 62}
		l.segs = append(l.segs, seg)
	}
	var buf [recordSize]byte
	r.encode(buf[:])
	if _, err := seg.f.WriteAt(buf[:], l.writePos-seg.base); err != nil {
		return 0, fmt.Errorf("timer: write log: %w", err)
	}
	seg.dirty = true
	seg.maxSlot = max(seg.maxSlot, r.slotMs)
	pos := l.writePos
	l.writePos += recordSize
	return pos, nil
}

// segmentFor finds the file holding pos, or nil.
func (l *timerLog) segmentFor(pos int64) *segment {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > pos }) - 1
	if i < 0 || pos >= l.segs[i].base+l.fileSize {
		return nil
	}
	return l.segs[i]
}

// read reads the record at pos.
func (l *timerLog) read(pos int64) (record, error) {
	seg := l.segmentFor(pos)
	if seg == nil {
		return record{}, fmt.Errorf("timer: log position %d not retained", pos)
	}
	var buf [recordSize]byte
	if _, err := seg.f.ReadAt(buf[:], pos-seg.base); err != nil {
		return record{}, fmt.Errorf("timer: read log at %d: %w", pos, err)
	}
	r, ok := decodeRecord(buf[:])
	if !ok {
		return record{}, fmt.Errorf("timer: bad log record at %d", pos)
	}
	return r, nil
}

// scan calls fn for every record from the first retained file up to end,
// reading each file sequentially in large chunks.
func (l *timerLog) scan(end int64, fn func(pos int64, r record)) error {
	buf := make([]byte, 0, 1<<20/recordSize*recordSize)
	for _, seg := range l.segs {
		limit := min(l.fileSize, end-seg.base)
		for off := int64(0); off+recordSize <= limit; {
			n := min(int64(cap(buf)), limit-off) / recordSize * recordSize
			b := buf[:n]
			got, err := seg.f.ReadAt(b, off)
			got = got / recordSize * recordSize
			for i := 0; i < got; i += recordSize {
				r, ok := decodeRecord(b[i : i+recordSize])
				if !ok {
					return fmt.Errorf("timer: bad log record at %d (before the synced end %d)", seg.base+off+int64(i), end)
				}
				fn(seg.base+off+int64(i), r)
			}
			if err != nil || got == 0 {
				if int64(got) < n {
					return fmt.Errorf("timer: log file %s shorter than its synced end %d", segmentName(seg.base), end)
				}
			}
			off += int64(got)
		}
	}
	return nil
}

// sync fsyncs the files written since the last sync.
func (l *timerLog) sync() error { return syncFiles(l.takeDirty()) }

// takeDirty returns the files written since the last call and marks them
// clean; the caller syncs them (syncFiles), possibly without the lock that
// guards the log, as files are only closed by dropBefore and close.
func (l *timerLog) takeDirty() []*os.File {
	var out []*os.File
	for _, s := range l.segs {
		if s.dirty {
			out = append(out, s.f)
			s.dirty = false
		}
	}
	return out
}

func syncFiles(files []*os.File) error {
	for _, f := range files {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("timer: sync log: %w", err)
		}
	}
	return nil
}

// dropBefore deletes the files (never the one being written) whose every
// slot is before doneMs. It returns how many it deleted.
func (l *timerLog) dropBefore(doneMs int64) (int, error) {
	n := 0
	for len(l.segs) > 1 && l.segs[0].maxSlot < doneMs && l.segs[0].base+l.fileSize <= l.writePos {
		s := l.segs[0]
		s.f.Close()
		if err := os.Remove(filepath.Join(l.dir, segmentName(s.base))); err != nil {
			return n, fmt.Errorf("timer: delete log file: %w", err)
		}
		l.segs = l.segs[1:]
		n++
	}
	return n, nil
}

// diskBytes is the size of the retained files.
func (l *timerLog) diskBytes() int64 {
	if len(l.segs) == 0 {
		return 0
	}
	return l.writePos - l.segs[0].base
}
