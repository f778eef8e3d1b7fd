package store

import (
	"encoding/binary"
	"fmt"

	"github.com/apogeemq/apogee/internal/message"
)

// checkResult classifies the record at a position during recovery.
type checkResult int

const (
	recordValid   checkResult = iota
	recordBlank               // end-of-file filler: continue with the next file
	recordInvalid             // torn or damaged: recovery stops here
)

// checkRecord is RocketMQ's checkMessageAndReturnSize, stricter: the
// PHYSICALOFFSET field must equal the record's position, so stale records
// beyond an old truncation point are never taken for new ones.
func (s *Store) checkRecord(f *mappedFile, pos int64) (checkResult, int64, string) {
	remaining := f.size - pos
	if remaining < 8 {
		return recordInvalid, 0, "fewer than 8 bytes left in file"
	}
	d := f.data[pos:]
	size := int64(int32(binary.BigEndian.Uint32(d)))
	magic := binary.BigEndian.Uint32(d[4:])
	if magic == message.BlankMagic {
		if size != remaining {
			return recordInvalid, 0, fmt.Sprintf("blank record size %d, %d bytes left", size, remaining)
		}
		return recordBlank, size, ""
	}
	if magic != message.MagicV1 && magic != message.MagicV2 {
		if size == 0 && magic == 0 {
			return recordInvalid, 0, "end of data"
		}
		return recordInvalid, 0, fmt.Sprintf("bad magic code %#x", magic)
	}
	if size <= 8 || size > remaining {
		return recordInvalid, 0, fmt.Sprintf("record size %d exceeds the %d bytes left (torn tail)", size, remaining)
	}
	v, n, err := message.ViewStored(d[:size])
	if err != nil {
		return recordInvalid, 0, fmt.Sprintf("undecodable record: %v", err)
	}
	if int64(n) != size {
		return recordInvalid, 0, fmt.Sprintf("record length %d differs from TOTALSIZE %d", n, size)
	}
	if s.cfg.CheckCRCOnRecover {
		if err := v.VerifyCRC(); err != nil {
			return recordInvalid, 0, err.Error()
		}
	}
	if v.CommitLogOffset() != f.fromOffset+pos {
		return recordInvalid, 0, fmt.Sprintf("PHYSICALOFFSET %d differs from position %d (stale data)", v.CommitLogOffset(), f.fromOffset+pos)
	}
	if v.StoreTimestamp() == 0 {
		return recordInvalid, 0, "zero store timestamp"
	}
	return recordValid, size, ""
}

// firstRecordTime returns the store time of a file's first record if valid.
func (s *Store) firstRecordTime(f *mappedFile) (int64, bool) {
	r, _, _ := s.checkRecord(f, 0)
	if r != recordValid {
		return 0, false
	}
	ts, ok := s.storeTimeAtFile(f, 0)
	return ts, ok && ts > 0
}

func (s *Store) storeTimeAtFile(f *mappedFile, pos int64) (int64, bool) {
	d := f.data[pos:]
	if int64(len(d)) < recStoreTsV6Born+8 {
		return 0, false
	}
	at := message.StoreTimestampOffset(int32(binary.BigEndian.Uint32(d[message.OffsetSysFlag:])))
	return int64(binary.BigEndian.Uint64(d[at:])), true
}

// recover implements 6.3-6.5: consume queues first, then a verifying scan
// of the commit log from a safe starting file, re-dispatching records, then
// truncation of everything after the last verified record.
func (s *Store) recover(lastExitOK bool) error {
	rep := &s.recovery
	rep.Abnormal = !lastExitOK
	queues := s.allQueues()
	dispatchFrom := int64(-1)
	fromSnapshot := s.snapshotEnd >= 0 && lastExitOK
	for _, cq := range queues {
		if !fromSnapshot {
			if err := cq.recover(); err != nil {
				return err
			}
		}
		dispatchFrom = max(dispatchFrom, cq.maxPhysicOffset.Load())
	}
	files := s.commitLog.snapshot()
	if len(files) == 0 {
		for _, cq := range queues {
			cq.files.destroyAll()
		}
		s.queuesMu.Lock()
		s.queues = make(map[string]topicQueues)
		s.queueList, s.queueDead, s.queueCount = nil, 0, 0
		s.queuesMu.Unlock()
		s.commitLog.flushedWhere.Store(0)
		s.commitLog.committedWhere.Store(0)
		s.reputFrom.Store(0)
		return nil
	}

	idx := 0
	if lastExitOK {
		// Newest file the consume queues already cover (normal recovery
		// starts from one of the last three files). Queues restored from
		// the snapshot cover everything up to the end it records; the
		// scan still verifies the same files (a damaged tail found there
		// cuts the queues below).
		idx = max(0, len(files)-3)
		for i := len(files) - 1; i > idx; i-- {
			if ts, ok := s.firstRecordTime(files[i]); ok && ts > 0 {
				first := files[i].fromOffset
				if first <= dispatchFrom && (!s.cfg.MessageIndexEnable || !s.cfg.MessageIndexSafe || ts <= s.cp.indexMsgTimestamp.Load()) {
					idx = i
					break
				}
			}
		}
	} else {
		minTs := s.cp.minTimestamp()
		if s.cfg.MessageIndexEnable && s.cfg.MessageIndexSafe {
			minTs = s.cp.minTimestampIndex()
		}
		for i := len(files) - 1; i >= 0; i-- {
			if ts, ok := s.firstRecordTime(files[i]); ok && ts <= minTs {
				idx = i
				break
			}
		}
	}
	rep.StartOffset = files[idx].fromOffset

	// A crash drops the newest index file (its entries are newer than the
	// checkpoint): index the records it covered again before the scan, so
	// query by key finds every recovered message (the scan below indexes
	// only what it re-dispatches).
	if s.index != nil && s.index.gapFrom >= 0 {
		end := rep.StartOffset
		if lastExitOK {
			end = max(end, dispatchFrom)
		}
		from := s.index.gapFrom
		s.index.gapFrom = -1
		if from < end {
			s.reindex(from, end)
		}
	}

	processOffset := rep.StartOffset
	var reason string
scan:
	for i := idx; i < len(files); i++ {
		f := files[i]
		pos := int64(0)
		for pos < f.size {
			r, size, why := s.checkRecord(f, pos)
			switch r {
			case recordBlank:
				processOffset = f.fromOffset + f.size
				continue scan
			case recordInvalid:
				processOffset = f.fromOffset + pos
				reason = why
				break scan
			}
			phy := f.fromOffset + pos
			if !lastExitOK || phy >= dispatchFrom {
				if err := s.dispatchRecord(f.data[pos:pos+size], phy, false); err != nil {
					s.log.Warn("recovery: dispatch failed", "offset", phy, "err", err)
				}
			}
			rep.Messages++
			pos += size
			processOffset = f.fromOffset + pos
		}
	}
	if s.cfg.TruncateOnStart && s.cfg.TruncateOffset >= 0 && s.cfg.TruncateOffset < processOffset {
		s.log.Warn("recovery: truncating the commit log as asked (controller mode rejoin)",
			"from", processOffset, "to", s.cfg.TruncateOffset)
		processOffset = max(s.cfg.TruncateOffset, s.commitLog.minOffset())
		reason = "truncated to the last common epoch boundary"
	}
	rep.ValidEnd = processOffset

	// Measure what lies beyond the valid end (the dropped part) and zero it,
	// so later appends can never be followed by stale records.
	rep.DroppedBytes = s.zeroTail(processOffset)
	if reason != "" && reason != "end of data" {
		rep.Reason = reason
	}
	if rep.DroppedBytes > 0 || rep.Reason != "" {
		s.log.Warn("recovery: commit log truncated after the last verified message",
			"offset", processOffset, "droppedBytes", rep.DroppedBytes, "reason", rep.Reason, "abnormal", rep.Abnormal)
	}

	for _, cq := range s.allQueues() {
		rep.TruncatedQueueUnits += cq.truncateDirtyLogic(processOffset)
	}
	s.commitLog.truncateDirty(processOffset)
	s.commitLog.flushedWhere.Store(processOffset)
	s.commitLog.committedWhere.Store(processOffset)
	if last := s.commitLog.last(); last != nil {
		if ts, ok := s.lastStoreTime(last); ok {
			last.storeTimestamp.Store(ts)
		}
	}
	s.flushConsumeQueues(0)

	// Rebuild the topic-queue table from the consume queues (6.3 step 5).
	minPhy := max(0, s.commitLog.minOffset())
	all := s.allQueues()
	if len(s.topicQueueTable) == 0 {
		s.topicQueueTable = make(map[tqKey]*int64, len(all))
	}
	slots := make([]int64, len(all)) // one allocation for the new entries
	for i, cq := range all {
		key := tqKey{cq.topic, cq.queueID}
		if p := s.topicQueueTable[key]; p != nil {
			*p = cq.maxOffset()
		} else {
			slots[i] = cq.maxOffset()
			s.topicQueueTable[key] = &slots[i]
		}
		if !fromSnapshot {
			// A snapshot records the min offsets of the clean stop
			// (corrected by cleanup while running; a clean stop deletes
			// no commit-log file after that).
			cq.correctMinOffset(minPhy) // also skips leading pre-blank units
		}
	}
	s.reputFrom.Store(processOffset)
	s.cp.confirmPhyOffset.Store(processOffset)
	if err := s.cp.persist(); err != nil {
		return err
	}
	if rep.Abnormal {
		s.log.Warn("recovered after abnormal exit", "startOffset", rep.StartOffset, "validEnd", rep.ValidEnd,
			"messages", rep.Messages, "truncatedQueueUnits", rep.TruncatedQueueUnits, "indexFilesDropped", rep.IndexFilesDropped)
	}
	return nil
}

// lastStoreTime returns the store time of the last record of f (scanning).
func (s *Store) lastStoreTime(f *mappedFile) (int64, bool) {
	var ts int64
	var ok bool
	w := f.wrote.Load()
	for pos := int64(0); pos+8 <= w; {
		size := int64(int32(binary.BigEndian.Uint32(f.data[pos:])))
		if size <= 0 || binary.BigEndian.Uint32(f.data[pos+4:]) == message.BlankMagic {
			break
		}
		ts, ok = s.storeTimeAtFile(f, pos)
		pos += size
	}
	return ts, ok
}

// zeroTail zeroes every non-zero page after off in the file containing it
// and returns the number of bytes from off to the end of the last non-zero
// page (0 when the tail was already clean).
func (s *Store) zeroTail(off int64) int64 {
	f := s.commitLog.find(off, false)
	if f == nil {
		// off is at a file boundary or beyond: later files are destroyed.
		return 0
	}
	pos := off - f.fromOffset
	var dropped int64
	// Only ranges holding data can hold stale records: SEEK_DATA skips
	// holes and fallocated blocks never written (reading those through
	// the mapping would fault in every page of the rest of a 1 GiB file,
	// seconds at every restart).
	for _, r := range dataRanges(f.path, pos, f.size) {
		for p := r[0]; p < r[1]; {
			end := min((p/pageSize+1)*pageSize, r[1])
			chunk := f.data[p:end]
			if !allZero(chunk) {
				clear(chunk)
				dropped = end - pos
			}
			p = end
		}
	}
	// Later files (if any) are counted as dropped too.
	for _, g := range s.commitLog.snapshot() {
		if g.fromOffset > f.fromOffset && !allZero(g.data[:8]) {
			dropped += g.size
		}
	}
	return dropped
}

func allZero(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
