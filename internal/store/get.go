package store

import (
	"encoding/binary"
	"fmt"

	"github.com/apogeemq/apogee/internal/message"
)

// GetStatus is RocketMQ's GetMessageStatus.
type GetStatus int

const (
	Found GetStatus = iota
	NoMatchedMessage
	MessageWasRemoving
	OffsetFoundNull
	OffsetOverflowBadly
	OffsetOverflowOne
	OffsetTooSmall
	NoMatchedLogicQueue
	NoMessageInQueue
)

var getStatusNames = [...]string{
	Found: "FOUND", NoMatchedMessage: "NO_MATCHED_MESSAGE", MessageWasRemoving: "MESSAGE_WAS_REMOVING",
	OffsetFoundNull: "OFFSET_FOUND_NULL", OffsetOverflowBadly: "OFFSET_OVERFLOW_BADLY",
	OffsetOverflowOne: "OFFSET_OVERFLOW_ONE", OffsetTooSmall: "OFFSET_TOO_SMALL",
	NoMatchedLogicQueue: "NO_MATCHED_LOGIC_QUEUE", NoMessageInQueue: "NO_MESSAGE_IN_QUEUE",
}

func (s GetStatus) String() string {
	if s >= 0 && int(s) < len(getStatusNames) {
		return getStatusNames[s]
	}
	return fmt.Sprintf("GetStatus(%d)", int(s))
}

// MessageFilter selects messages during GetMessage. MatchTagsCode is
// checked on the consume-queue unit first (cheap); MatchProperties on the
// decoded properties of the record. A nil filter matches everything.
// A filter that also implements PropertiesFilterless (returning true) lets
// GetMessage skip decoding properties.
type MessageFilter interface {
	MatchTagsCode(tagsCode int64) bool
	MatchProperties(props map[string]string) bool
}

// PropertiesFilterless is optionally implemented by a MessageFilter whose
// MatchProperties always returns true (tag filters).
type PropertiesFilterless interface {
	PropertiesFilterless() bool
}

// GetResult is the outcome of GetMessage. Messages are raw stored records
// (layout in doc.go), copied out of the mapping: they stay valid however
// long the caller keeps them, until it calls Release.
type GetResult struct {
	Status          GetStatus
	NextBeginOffset int64
	MinOffset       int64
	MaxOffset       int64
	Messages        [][]byte
	// Buffer holds every returned record back to back (Messages are
	// sub-slices of it): a pull response can use it as its body as is.
	Buffer                  []byte
	TotalBytes              int
	SuggestPullingFromSlave bool

	buf   *[]byte     // Buffer's storage, from pool (nil: nothing to release)
	pool  *getBufPool // where Release returns buf
	class int         // buf's class in pool
}

// GetMessage reads up to maxMsgNums messages (and about maxBytes) from a
// consume queue starting at offset (4.5). It never blocks writers.
//
// Pass 1 (unitScan) walks the consume queue and picks the units to
// return, never stepping over a unit it did not read (see unitScan); pass
// 2 (copyPicked) copies the picked records into one exactly sized buffer.
func (s *Store) GetMessage(group, topic string, queueID int32, offset int64, maxMsgNums int32, maxBytes int32, filter MessageFilter) *GetResult {
	res := &GetResult{}
	if s.state.Load() != stateRunning {
		res.Status = NoMatchedLogicQueue
		return res
	}
	cq := s.getQueue(topic, queueID)
	if cq == nil {
		res.Status = NoMatchedLogicQueue
		return res
	}
	res.MinOffset, res.MaxOffset = cq.minOffset(), cq.maxOffset()
	if st, next, ok := checkQueueOffset(offset, res.MinOffset, res.MaxOffset); !ok {
		res.Status, res.NextBeginOffset = st, next
		return res
	}
	maxMsgNums = max(maxMsgNums, 1)
	maxTotal := int64(maxBytes)
	if maxTotal <= 0 || maxTotal > 128<<20 {
		maxTotal = 128 << 20
	}
	memLimit := s.totalMemory * int64(s.cfg.AccessMessageInMemoryMaxRatio) / 100
	maxFilter := max(s.cfg.MaxFilterMessageSize, int(maxMsgNums)*CQUnitSize) / CQUnitSize

	sc := newUnitScan(storeRecords{s}, filter, int(maxMsgNums))
	sc.fileSize, sc.memLimit = s.cfg.MappedFileSizeCommitLog, memLimit
	sc.full = func(total int64, count int, size int64, inDisk bool) bool {
		return s.batchFull(total, count, size, int(maxMsgNums), maxTotal, inDisk)
	}
	if cq.scan(offset, maxFilter, sc.step) == 0 {
		res.Status = OffsetFoundNull
		res.NextBeginOffset = offset
		if offset < cq.minOffset() || cq.files.find(offset*CQUnitSize, false) == nil {
			// The consume-queue file holding offset is gone.
			res.NextBeginOffset = s.rollNextCQFile(cq, offset)
		}
		return res
	}
	next := offset + int64(sc.examined)
	if sc.total > 0 {
		res.buf, res.class = s.getBufs.get(sc.total)
		res.pool = &s.getBufs
		res.Buffer, res.Messages, next = s.copyPicked(*res.buf, sc.picked, next)
		*res.buf = res.Buffer
	} else {
		res.Buffer, res.Messages, next = s.copyPicked(nil, sc.picked, next)
	}
	status := sc.status
	if sc.unreadable && sc.examined == 0 {
		status = OffsetFoundNull // retried from the same offset
	}
	if len(res.Messages) == 0 && status == Found {
		status = MessageWasRemoving // removed between the passes
	}
	res.Status = status
	res.NextBeginOffset = next
	res.TotalBytes = len(res.Buffer)
	res.SuggestPullingFromSlave = sc.maxPhy-sc.maxPhyPulling > memLimit
	s.stats.gets.Add(1)
	s.stats.getMessages.Add(int64(len(res.Messages)))
	return res
}

// checkQueueOffset answers a request for offset outside [minO, maxO) the
// way RocketMQ does: the status and the offset to pull next, and ok false.
func checkQueueOffset(offset, minO, maxO int64) (status GetStatus, next int64, ok bool) {
	switch {
	case maxO == 0:
		return NoMessageInQueue, 0, false
	case offset < minO:
		return OffsetTooSmall, minO, false
	case offset == maxO:
		return OffsetOverflowOne, offset, false
	case offset > maxO:
		// RocketMQ 5 corrects to the max offset even when the queue still
		// starts at 0 (4.x went back to 0 there, replaying the queue).
		return OffsetOverflowBadly, maxO, false
	}
	return 0, 0, true
}

// copyPicked is GetMessage's second pass: it copies the picked records
// into buf (empty, with room for all of them), holding each commit-log file while
// consecutive units fall in it. next is where the batch ends after pass 1;
// a picked unit that is no longer readable but not deleted ends the batch
// before it (next becomes its queue offset: never stepped over), and a
// deleted one is dropped.
func (s *Store) copyPicked(buf []byte, picked []pickedUnit, next int64) (_ []byte, msgs [][]byte, nextOut int64) {
	msgs = make([][]byte, 0, len(picked))
	var cur *mappedFile
	for _, u := range picked {
		if cur == nil || u.PhyOffset < cur.fromOffset || u.PhyOffset >= cur.fromOffset+cur.size {
			if cur != nil {
				cur.release()
			}
			if cur = s.commitLog.findHeld(u.PhyOffset); cur == nil {
				if u.PhyOffset >= s.commitLog.minOffset() {
					next = u.q // not deleted, so not skippable: stop before it
					break
				}
				continue // deleted between the passes
			}
		}
		pos := u.PhyOffset - cur.fromOffset
		if pos+int64(u.Size) > cur.readPosition() {
			next = u.q // pass 1 saw it readable; never step over it
			break
		}
		n := len(buf)
		buf = append(buf, cur.data[pos:pos+int64(u.Size)]...)
		msgs = append(msgs, buf[n:len(buf):len(buf)])
	}
	if cur != nil {
		cur.release()
	}
	return buf, msgs, next
}

// batchFull is RocketMQ's isTheBatchFull.
func (s *Store) batchFull(bufTotal int64, msgTotal int, size int64, maxMsgNums int, maxTotal int64, inDisk bool) bool {
	if bufTotal == 0 || msgTotal == 0 {
		return false
	}
	if msgTotal >= maxMsgNums || bufTotal+size > maxTotal {
		return true
	}
	if inDisk {
		return bufTotal+size > int64(s.cfg.MaxTransferBytesOnMessageInDisk) ||
			msgTotal > s.cfg.MaxTransferCountOnMessageInDisk-1
	}
	return bufTotal+size > int64(s.cfg.MaxTransferBytesOnMessageInMemory) ||
		msgTotal > s.cfg.MaxTransferCountOnMessageInMemory-1
}

// nextFileStart is the start of the file after the one holding off, for
// files of size bytes.
func nextFileStart(off, size int64) int64 { return off + size - off%size }

// rollNextCQFile is the first queue offset of the next consume-queue file.
func (s *Store) rollNextCQFile(cq *consumeQueue, q int64) int64 {
	per := s.cfg.MappedFileSizeConsumeQueue / CQUnitSize
	return q + per - q%per
}

// readRaw appends the n bytes at commit-log offset off to dst.
func (s *Store) readRaw(dst []byte, off, n int64) ([]byte, bool) {
	f := s.commitLog.findHeld(off)
	if f == nil {
		return dst, false
	}
	defer f.release()
	pos := off - f.fromOffset
	if pos+n > f.readPosition() {
		return dst, false
	}
	return append(dst, f.data[pos:pos+n]...), true
}

// MaxOffsetInQueue is the exclusive max queue offset (0 if unknown).
func (s *Store) MaxOffsetInQueue(topic string, queueID int32) int64 {
	if cq := s.getQueue(topic, queueID); cq != nil {
		return cq.maxOffset()
	}
	return 0
}

// MinOffsetInQueue is the first readable queue offset (0 if unknown).
func (s *Store) MinOffsetInQueue(topic string, queueID int32) int64 {
	if cq := s.getQueue(topic, queueID); cq != nil {
		return cq.minOffset()
	}
	return 0
}

// storeTimeAt reads the store timestamp of the record at commit-log offset.
func (s *Store) storeTimeAt(phy int64) (int64, bool) {
	f := s.commitLog.findHeld(phy)
	if f == nil {
		return 0, false
	}
	defer f.release()
	pos := phy - f.fromOffset
	if pos+recStoreTsV6Born+8 > f.readPosition() {
		return 0, false
	}
	sysFlag := int32(binary.BigEndian.Uint32(f.data[pos+message.OffsetSysFlag:]))
	at := int64(message.StoreTimestampOffset(sysFlag))
	return int64(binary.BigEndian.Uint64(f.data[pos+at:])), true
}

// StoreTimeByQueueOffset is the store time of the message at queue offset.
func (s *Store) StoreTimeByQueueOffset(topic string, queueID int32, offset int64) (int64, error) {
	cq := s.getQueue(topic, queueID)
	if cq == nil {
		return -1, ErrNotFound
	}
	u, ok := cq.unitAt(offset)
	if !ok || u.blank() {
		return -1, ErrNotFound
	}
	ts, ok := s.storeTimeAt(u.PhyOffset)
	if !ok {
		return -1, ErrNotFound
	}
	return ts, nil
}

// EarliestMessageTime is the store time of the queue's first readable message.
func (s *Store) EarliestMessageTime(topic string, queueID int32) (int64, error) {
	return s.StoreTimeByQueueOffset(topic, queueID, s.MinOffsetInQueue(topic, queueID))
}

// OffsetByTime returns the first queue offset whose message was stored at
// or after ts (RocketMQ BoundaryType.LOWER), by binary search; the max
// offset if every message is older, the min offset if every one is newer.
func (s *Store) OffsetByTime(topic string, queueID int32, ts int64) int64 {
	return s.OffsetByTimeBoundary(topic, queueID, ts, false)
}

// OffsetByTimeBoundary is OffsetByTime with RocketMQ's boundary type:
// upper=true returns the last offset stored at or before ts.
func (s *Store) OffsetByTimeBoundary(topic string, queueID int32, ts int64, upper bool) int64 {
	cq := s.getQueue(topic, queueID)
	if cq == nil {
		return 0
	}
	lo, hi := cq.minOffset(), cq.maxOffset()-1
	if hi < lo {
		return cq.minOffset()
	}
	minPhy := s.commitLog.minOffset()
	timeAt := func(q int64) (int64, bool) {
		u, ok := cq.unitAt(q)
		if !ok || u.blank() || u.PhyOffset < minPhy {
			return 0, false
		}
		return s.storeTimeAt(u.PhyOffset)
	}
	// Skip leading units whose records are gone.
	for lo <= hi {
		if _, ok := timeAt(lo); ok {
			break
		}
		lo++
	}
	if lo > hi {
		return cq.maxOffset()
	}
	if !upper {
		// first q with time >= ts
		l, h, ans := lo, hi, hi+1
		for l <= h {
			mid := l + (h-l)/2
			t, ok := timeAt(mid)
			if !ok || t >= ts {
				ans, h = mid, mid-1
			} else {
				l = mid + 1
			}
		}
		return ans
	}
	l, h, ans := lo, hi, lo
	for l <= h {
		mid := l + (h-l)/2
		t, ok := timeAt(mid)
		if ok && t <= ts {
			ans, l = mid, mid+1
		} else {
			h = mid - 1
		}
	}
	return ans
}

// LookMessageByOffset decodes the record at a commit-log offset (body
// included, decompression left to the caller).
func (s *Store) LookMessageByOffset(commitLogOffset int64) (*message.Ext, error) {
	f := s.commitLog.findHeld(commitLogOffset)
	if f == nil {
		return nil, fmt.Errorf("store: offset %d: %w", commitLogOffset, ErrNotFound)
	}
	pos := commitLogOffset - f.fromOffset
	rp := f.readPosition()
	if pos+8 > rp {
		f.release()
		return nil, fmt.Errorf("store: offset %d: %w", commitLogOffset, ErrNotFound)
	}
	size := int64(int32(binary.BigEndian.Uint32(f.data[pos:])))
	f.release()
	if size <= 0 {
		return nil, fmt.Errorf("store: offset %d: %w", commitLogOffset, ErrNotFound)
	}
	raw, err := s.ReadRawByOffset(commitLogOffset, int32(size))
	if err != nil {
		return nil, err
	}
	ext, _, err := message.DecodeStored(raw, message.DecodeOptions{})
	if err != nil {
		return nil, fmt.Errorf("store: decode record at %d: %w", commitLogOffset, err)
	}
	return ext, nil
}

// ReadRawByOffset copies size bytes of the commit log at offset (one record).
func (s *Store) ReadRawByOffset(commitLogOffset int64, size int32) ([]byte, error) {
	if size <= 0 {
		return nil, fmt.Errorf("store: bad size %d: %w", size, ErrNotFound)
	}
	b, ok := s.readRaw(make([]byte, 0, size), commitLogOffset, int64(size))
	if !ok {
		return nil, fmt.Errorf("store: offset %d size %d: %w", commitLogOffset, size, ErrNotFound)
	}
	return b, nil
}

// ReadCommitLog copies up to max readable bytes starting at offset, never
// crossing a file boundary (replication streams use this).
func (s *Store) ReadCommitLog(offset int64, max int) ([]byte, error) {
	f := s.commitLog.findHeld(offset)
	if f == nil {
		return nil, fmt.Errorf("store: commit-log offset %d: %w", offset, ErrNotFound)
	}
	defer f.release()
	pos := offset - f.fromOffset
	end := min(f.readPosition(), pos+int64(max))
	if end <= pos {
		return nil, nil
	}
	return append([]byte(nil), f.data[pos:end]...), nil
}

// QueryMessage finds messages by key (KEYS token or UNIQ_KEY) stored within
// [begin, end] (ms). Results may include hash collisions: callers re-check.
func (s *Store) QueryMessage(topic, key string, maxNum int, begin, end int64) ([]*message.Ext, error) {
	r, err := s.QueryMessageRaw(topic, key, maxNum, begin, end)
	if err != nil {
		return nil, err
	}
	out := make([]*message.Ext, 0, len(r.Messages))
	for _, raw := range r.Messages {
		ext, _, err := message.DecodeStored(raw, message.DecodeOptions{})
		if err == nil {
			out = append(out, ext)
		}
	}
	return out, nil
}

// QueryResult is QueryMessageRaw's answer, with the fields QUERY_MESSAGE
// returns (indexLastUpdateTimestamp, indexLastUpdatePhyoffset).
type QueryResult struct {
	Messages                 [][]byte
	IndexLastUpdateTimestamp int64
	IndexLastUpdatePhyoffset int64
}

// QueryMessageRaw is QueryMessage returning raw records.
func (s *Store) QueryMessageRaw(topic, key string, maxNum int, begin, end int64) (*QueryResult, error) {
	if s.index == nil {
		return nil, fmt.Errorf("store: message index disabled: %w", ErrNotFound)
	}
	maxNum = min(max(maxNum, 1), s.cfg.MaxMsgsNumBatch)
	res := &QueryResult{}
	for attempt := 0; attempt < 3; attempt++ {
		offs, lastTs, lastPhy := s.index.query(topic, key, maxNum, begin, end)
		res.IndexLastUpdateTimestamp, res.IndexLastUpdatePhyoffset = lastTs, lastPhy
		for _, off := range offs {
			ext, err := s.LookMessageByOffset(off)
			if err != nil {
				continue
			}
			raw, err := s.ReadRawByOffset(off, ext.StoreSize)
			if err == nil {
				res.Messages = append(res.Messages, raw)
			}
		}
		if len(res.Messages) > 0 || len(offs) == 0 {
			break
		}
		if ts, ok := s.storeTimeAt(offs[0]); ok {
			end = ts - 1
		} else {
			break
		}
	}
	return res, nil
}

// MaxPhyOffset is the end of readable commit-log data.
func (s *Store) MaxPhyOffset() int64 { return s.commitLog.maxOffset() }

// MinPhyOffset is the first commit-log offset still held.
func (s *Store) MinPhyOffset() int64 { return max(0, s.commitLog.minOffset()) }

// FlushedOffset is the commit-log flush frontier.
func (s *Store) FlushedOffset() int64 { return s.commitLog.flushedWhere.Load() }

// ConfirmOffset is the offset up to which data is confirmed (dispatchable):
// the HA-set value if any, else the flushed offset (SYNC_FLUSH) or the max
// offset (ASYNC_FLUSH).
func (s *Store) ConfirmOffset() int64 {
	if s.commitLog == nil {
		return 0
	}
	return s.dispatchEnd()
}

// SetConfirmOffset sets the confirm offset (HA); a negative value reverts
// to the derived one.
func (s *Store) SetConfirmOffset(off int64) {
	if off < 0 {
		off = -1
	}
	s.confirmOffset.Store(off)
	if s.cp != nil && off >= 0 {
		s.cp.confirmPhyOffset.Store(off)
	}
	wake(s.wakeDispatch)
}
