package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
)

// dispatchRequest is what the dispatchers need from one record. Byte
// slices alias the commit-log mapping and are valid only during dispatch.
type dispatchRequest struct {
	topic          []byte
	queueID        int32
	phyOffset      int64
	size           int32
	tagsCode       int64
	storeTimestamp int64
	queueOffset    int64
	keys           []byte // raw KEYS property (space separated)
	uniqKey        []byte
	sysFlag        int32
	view           message.StoredView
}

// dispatchEnd is the confirm offset dispatch may not pass (4.4): flushed
// under SYNC_FLUSH, readable end under ASYNC_FLUSH, or the HA confirm
// offset when one is set.
func (s *Store) dispatchEnd() int64 {
	if c := s.confirmOffset.Load(); c >= 0 {
		return min(c, s.commitLog.maxOffset())
	}
	if s.cfg.syncFlush() {
		return s.commitLog.flushedWhere.Load()
	}
	return s.commitLog.maxOffset()
}

// runDispatch is ReputMessageService: one ordered pass over the commit log.
// Woken by every append (ASYNC) or by the flusher every 64 KiB or 1 ms of
// flushed data (SYNC, dispatchWaker); a 10 ms timer covers missed wake-ups.
func (s *Store) runDispatch() {
	t := time.NewTimer(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			s.dispatchMu.Lock()
			s.doReput(true)
			s.dispatchMu.Unlock()
			return
		case <-s.wakeDispatch:
		case <-t.C:
		}
		s.dispatchMu.Lock()
		s.doReput(true)
		s.dispatchMu.Unlock()
		t.Reset(10 * time.Millisecond)
	}
}

// doReput dispatches every complete record below the confirm offset.
func (s *Store) doReput(notify bool) {
	for {
		from := s.reputFrom.Load()
		if min := s.commitLog.minOffset(); min > from {
			s.reputFrom.Store(min)
			from = min
		}
		end := s.dispatchEnd()
		if from >= end {
			return
		}
		f := s.commitLog.findHeld(from)
		if f == nil {
			return
		}
		next, progressed := s.dispatchFile(f, from, end, notify)
		f.release()
		s.reputFrom.Store(next)
		if !progressed {
			return
		}
	}
}

// dispatchFile dispatches records of f from offset from up to end and
// returns the new frontier.
func (s *Store) dispatchFile(f *mappedFile, from, end int64, notify bool) (int64, bool) {
	limit := min(f.readPosition(), end-f.fromOffset)
	pos := from - f.fromOffset
	start := pos
	for pos+8 <= limit {
		size := int64(int32(binary.BigEndian.Uint32(f.data[pos:])))
		magic := binary.BigEndian.Uint32(f.data[pos+4:])
		if magic == message.BlankMagic {
			return f.fromOffset + f.size, true
		}
		if size <= 0 || pos+size > limit {
			if size <= 0 || pos+size > f.size {
				s.log.Error("dispatch: unreadable record skipped to end of readable data", "offset", f.fromOffset+pos, "size", size)
				return f.fromOffset + limit, true
			}
			break
		}
		if err := s.dispatchRecord(f.data[pos:pos+size], f.fromOffset+pos, notify); err != nil {
			if errors.Is(err, errDispatchRetry) {
				// Consume queue not writable: stay on this record and retry
				// on the next pass (the store refuses writes meanwhile).
				return f.fromOffset + pos, false
			}
			s.log.Error("dispatch: bad record skipped", "offset", f.fromOffset+pos, "err", err)
		}
		pos += size
	}
	if limit == f.size && pos+blankRecordSize > f.size {
		// Defensive: a file ending without a blank record.
		return f.fromOffset + f.size, true
	}
	return f.fromOffset + pos, pos > start
}

// dispatchRecord builds the consume queue unit and index entries of one
// record and notifies arrival notifiers and listeners. It reads the record
// through a zero-copy view: no allocation unless a queue is new or
// listeners (which want the properties) exist.
func (s *Store) dispatchRecord(rec []byte, phy int64, notify bool) error {
	v, _, err := message.ViewStored(rec)
	if err != nil {
		return err
	}
	if v.CommitLogOffset() != phy {
		return errors.New("store: record physical offset field does not match its position")
	}
	r := dispatchRequest{
		topic:          v.Topic(),
		queueID:        v.QueueID(),
		phyOffset:      phy,
		size:           int32(len(rec)),
		storeTimestamp: v.StoreTimestamp(),
		queueOffset:    v.QueueOffset(),
		sysFlag:        v.SysFlag(),
		view:           v,
	}
	// One pass over the properties for the three dispatch wants; the keys
	// are for the index only.
	uniq, keys, tags := v.DispatchProperties()
	if s.index != nil {
		r.uniqKey, r.keys = uniq, keys
	}
	r.tagsCode = s.tagsCode(&r, tags)
	tt := message.TransactionType(r.sysFlag)
	consumable := tt == message.SysFlagTransactionNotType || tt == message.SysFlagTransactionCommitType
	var cq *consumeQueue
	if consumable {
		cq = s.findOrCreateQueueBytes(r.topic, r.queueID)
		if err := s.putUnitWithRetry(cq, &r); err != nil {
			return err
		}
	}
	if s.index != nil && tt != message.SysFlagTransactionRollbackType {
		s.indexRecord(&r)
	}
	s.cp.logicsMsgTimestamp.Store(r.storeTimestamp)
	s.stats.dispatched.Add(1)
	if notify && consumable {
		s.notifyArrival(cq.topic, &r)
	}
	return nil
}

// notifyArrival tells the arrival notifiers and listeners about a
// dispatched record. The topic is the consume queue's string (no
// allocation); the properties are decoded only when a listener that wants
// them is registered: the broker's long polling, POP and timer wake-ups use
// notifiers, so the hot path decodes nothing.
func (s *Store) notifyArrival(topic string, r *dispatchRequest) {
	if p := s.notifiers.Load(); p != nil {
		for _, n := range *p {
			n(topic, r.queueID, r.queueOffset, r.tagsCode, r.storeTimestamp)
		}
	}
	if p := s.listeners.Load(); p != nil && len(*p) > 0 {
		props := message.DecodeProperties(string(r.view.RawProperties()))
		for _, l := range *p {
			l(topic, r.queueID, r.queueOffset, r.tagsCode, r.storeTimestamp, props)
		}
	}
}

// errDispatchRetry marks a dispatch failure that must not be skipped.
var errDispatchRetry = errors.New("store: consume queue write failed")

// putUnitWithRetry writes the unit; on failure the store becomes
// non-writable (WRITE_LOGICS_QUEUE_ERROR) until a retry succeeds.
func (s *Store) putUnitWithRetry(cq *consumeQueue, r *dispatchRequest) error {
	u := cqUnit{PhyOffset: r.phyOffset, Size: r.size, TagsCode: r.tagsCode}
	if err := cq.putUnit(u, r.queueOffset, r.storeTimestamp); err != nil {
		why := err.Error()
		s.logicsErrReason.Store(&why)
		if s.logicsError.CompareAndSwap(false, true) {
			s.log.Error("consume queue write failed; writes refused until it succeeds", "topic", string(r.topic),
				"queueId", r.queueID, "err", err)
		}
		return fmt.Errorf("%w: %w", errDispatchRetry, err)
	}
	if s.logicsError.Load() && s.logicsError.CompareAndSwap(true, false) {
		s.log.Info("consume queue writable again", "topic", string(r.topic), "queueId", r.queueID)
	}
	return nil
}

// creatorError is the queue creator's report: a failure makes the store
// refuse writes (as a failed unit write does) until a creation succeeds.
func (s *Store) creatorError(err error) {
	if err != nil {
		why := err.Error()
		s.logicsErrReason.Store(&why)
		if s.logicsError.CompareAndSwap(false, true) {
			s.log.Error("consume queue file creation failed; writes refused until it succeeds", "err", err)
		}
		return
	}
	if s.logicsError.Load() && s.logicsError.CompareAndSwap(true, false) {
		s.log.Info("consume queue files can be created again")
	}
}

// behindError is the write-behind's report, as creatorError.
func (s *Store) behindError(err error) {
	if err != nil {
		why := err.Error()
		s.logicsErrReason.Store(&why)
		if s.logicsError.CompareAndSwap(false, true) {
			s.log.Error("consume queue write-behind failed; writes refused until it succeeds", "err", err)
		}
		return
	}
	if s.logicsError.Load() && s.logicsError.CompareAndSwap(true, false) {
		s.log.Info("consume queue write-behind writes again")
	}
}

// tagsCode is the consume-queue tag field: the hash of tags (the record's
// TAGS value), or for the schedule topic the delivery time (8.8).
func (s *Store) tagsCode(r *dispatchRequest, tags []byte) int64 {
	if string(r.topic) == names.TopicSchedule {
		if lvl, _ := r.view.Property(message.PropertyDelayTimeLevel); len(lvl) > 0 && len(s.delayLevels) > 0 {
			if n := atoiSafe(lvl); n > 0 {
				n = min(n, len(s.delayLevels))
				return r.storeTimestamp + s.delayLevels[n-1].Milliseconds()
			}
		}
	}
	return message.TagsHashCodeBytes(tags)
}

func atoiSafe(s []byte) int {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' || n > 1<<20 {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// indexRecord adds the index entries of one dispatched record. Records
// dispatched while no index file could be created (or whose file a crash
// dropped) form a gap that is re-indexed from the commit log as soon as a
// file can be had, before this record, so that entries stay in offset
// order and no stored message is left out of the index for good.
// REQUIRES: the dispatch goroutine (or recovery, before it starts).
func (s *Store) indexRecord(r *dispatchRequest) {
	ix := s.index
	if ix.gapFrom >= 0 {
		if _, err := ix.current(); err != nil {
			ix.skip()
			return
		}
		from := ix.gapFrom
		ix.gapFrom = -1
		if !s.reindex(from, r.phyOffset) {
			ix.skip()
			return
		}
	}
	if err := ix.build(r); err != nil {
		if errors.Is(err, errIndexUnavailable) {
			ix.gapFrom = r.phyOffset
			ix.skip()
			return
		}
		s.log.Error("index build failed", "offset", r.phyOffset, "err", err)
	}
}

// reindex indexes the commit-log records in [from, to) again (the index
// skips those it already has). It returns false when the index became
// unavailable midway; the gap then starts at the first record left out.
func (s *Store) reindex(from, to int64) bool {
	n := int64(0)
	defer func() {
		if n > 0 {
			s.index.reindexed.Add(n)
			s.log.Info("index rebuilt from the commit log", "from", from, "to", to, "records", n)
		}
	}()
	for _, f := range s.commitLog.snapshot() {
		if f.fromOffset+f.size <= from || f.fromOffset >= to {
			continue
		}
		pos := max(from-f.fromOffset, 0)
		for pos < f.size && f.fromOffset+pos < to {
			res, size, _ := s.checkRecord(f, pos)
			if res != recordValid {
				break // blank: the next file; invalid: nothing valid follows in this file
			}
			phy := f.fromOffset + pos
			pos += size
			v, _, err := message.ViewStored(f.data[phy-f.fromOffset : phy-f.fromOffset+size])
			if err != nil || message.TransactionType(v.SysFlag()) == message.SysFlagTransactionRollbackType {
				continue
			}
			r := dispatchRequest{topic: v.Topic(), queueID: v.QueueID(), phyOffset: phy, size: int32(size),
				storeTimestamp: v.StoreTimestamp(), queueOffset: v.QueueOffset(), sysFlag: v.SysFlag(), view: v}
			r.uniqKey, r.keys, _ = v.DispatchProperties()
			if err := s.index.build(&r); err != nil {
				if errors.Is(err, errIndexUnavailable) {
					s.index.gapFrom = phy
					return false
				}
				s.log.Error("index build failed", "offset", phy, "err", err)
				continue
			}
			n++
		}
	}
	return true
}
