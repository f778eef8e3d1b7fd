package store

import (
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
)

// PutStatus is the outcome of a put, as RocketMQ's PutMessageStatus. The
// broker maps it to a response code (docs/broker.md §5.1).
type PutStatus int

const (
	PutOK PutStatus = iota
	FlushDiskTimeout
	FlushSlaveTimeout
	SlaveNotAvailable
	ServiceNotAvailable
	CreateMappedFileFailed
	MessageIllegal
	PropertiesSizeExceeded
	OSPageCacheBusy
	UnknownError
	// InSyncReplicasNotEnough: the write gate (controller mode) found the
	// SyncStateSet smaller than minInSyncReplicas; nothing was written.
	InSyncReplicasNotEnough
)

var putStatusNames = [...]string{
	PutOK:                   "PUT_OK",
	FlushDiskTimeout:        "FLUSH_DISK_TIMEOUT",
	FlushSlaveTimeout:       "FLUSH_SLAVE_TIMEOUT",
	SlaveNotAvailable:       "SLAVE_NOT_AVAILABLE",
	ServiceNotAvailable:     "SERVICE_NOT_AVAILABLE",
	CreateMappedFileFailed:  "CREATE_MAPPED_FILE_FAILED",
	MessageIllegal:          "MESSAGE_ILLEGAL",
	PropertiesSizeExceeded:  "PROPERTIES_SIZE_EXCEEDED",
	OSPageCacheBusy:         "OS_PAGE_CACHE_BUSY",
	UnknownError:            "UNKNOWN_ERROR",
	InSyncReplicasNotEnough: "IN_SYNC_REPLICAS_NOT_ENOUGH",
}

func (s PutStatus) String() string {
	if s >= 0 && int(s) < len(putStatusNames) {
		return putStatusNames[s]
	}
	return "UNKNOWN_ERROR"
}

// Stored reports whether the message was written (possibly without the
// requested durability): PUT_OK and the three "stored but not acknowledged"
// statuses of 3.4.
func (s PutStatus) Stored() bool {
	return s == PutOK || s == FlushDiskTimeout || s == FlushSlaveTimeout || s == SlaveNotAvailable
}

// PutResult is delivered to a put's done callback.
type PutResult struct {
	Status         PutStatus
	WroteOffset    int64  // commit-log offset of the (first) record
	WroteBytes     int32  // bytes appended (all records of a batch)
	MsgID          string // a batch's offset message ids, comma-joined; "" for a single put (OffsetMsgID(StoreHost, WroteOffset), built by its reader)
	StoreTimestamp int64
	QueueOffset    int64 // queue offset of the (first) message
	MsgNum         int32
	// Remark explains a failure (disk full, sticky flush error ...).
	Remark string
}

// Record positions the append path patches in place (stored layout,
// docs/storage.md §2.3). Part of the on-disk format; never change.
const (
	recTotalSize      = 0
	recMagic          = 4
	recStoreTsV4Born  = 56
	recStoreTsV6Born  = 68
	blankRecordSize   = 8
	maxRecordOverhead = 64 << 10
)

// recMeta describes one encoded record inside an append.
type recMeta struct {
	size      int32
	storeTsAt int32
	assignQO  bool // false for prepared/rollback transaction records (queue offset 0)
}

// PutMessage appends one message asynchronously. It returns at once; done
// runs exactly once with the outcome: on the caller's goroutine for
// immediate failures, for SYNC_FLUSH puts with WAIT=false and for
// ASYNC_FLUSH puts with the transient pool; on the staged committer once
// the record is in the file for other ASYNC_FLUSH puts; otherwise on the
// flush (or replication) goroutine once the record is durable. done must
// not block. PutMessage writes into m (StoreHost, StoreTimestamp, offsets,
// sysflag host bits, the delay rewrite below) and does not retain it after
// returning; the caller must not use m concurrently.
//
// Delay-level messages (DELAY > 0, not prepared/rollback) are rewritten here
// as RocketMQ's CommitLog does: topic SCHEDULE_TOPIC_XXXX, queue level-1,
// REAL_TOPIC/REAL_QID kept; the consume-queue tag becomes the delivery time.
func (s *Store) PutMessage(m *message.Ext, done func(PutResult)) {
	s.putMessage(m, "", nil, false, time.Time{}, false, done)
}

// PutMessageRawProperties is PutMessage with the record's properties given
// as an already encoded properties string, written verbatim; m.Properties is
// ignored, followed by the extra name/value pairs (name, value, ...; see
// message.AppendStoredRawProperties; extra is not retained). It is the
// broker's send fast path (no map decode and re-encode). The string must hold
// canonical pairs only (message.NextProperty) and no DELAY: a delay-level
// message must go through PutMessage, which rewrites it. The WAIT property
// is read from properties.
func (s *Store) PutMessageRawProperties(m *message.Ext, properties string, extra []string, done func(PutResult)) {
	s.putMessage(m, properties, extra, true, time.Time{}, false, done)
}

// PutMessageRawPropertiesAt is PutMessageRawProperties for a caller that
// already read the clock when it began processing the put (the broker's
// request start): start stands for the put's start in the put-latency
// histogram and the SYNC_FLUSH deadline, so the store reads the clock only
// once per put, for the store timestamp under the append lock. A zero
// start makes the store read the clock itself.
func (s *Store) PutMessageRawPropertiesAt(m *message.Ext, properties string, extra []string, start time.Time, done func(PutResult)) {
	s.putMessage(m, properties, extra, true, start, false, done)
}

// PutMessageRawPropertiesDeferred is PutMessageRawPropertiesAt for a caller
// that commits staged puts itself before it next waits for anything: when
// it returns true the put is staged (ASYNC_FLUSH without the transient
// pool) and the staged committer was not woken for it, so the caller must
// call CommitStaged before it blocks; done runs there (or earlier, if
// another put's commit covered it). When it returns false the put took its
// usual course and there is nothing to do.
//
// It is the broker's send on a connection's read loop: the read loop
// commits once, after the last request of a read, and a lone synchronous
// sender's answer then needs no other goroutine (the committer's wake-up
// and the hand-off back cost more than the write itself).
func (s *Store) PutMessageRawPropertiesDeferred(m *message.Ext, properties string, extra []string, start time.Time, done func(PutResult)) bool {
	return s.putMessage(m, properties, extra, true, start, true, done)
}

// CommitStaged writes what is staged to the commit-log file and completes
// the puts it covers, on the calling goroutine (their done callbacks run
// here). It is the commit a deferred put (PutMessageRawPropertiesDeferred)
// leaves to its caller; the staged committer does the same for every other
// put. The caller must then call DispatchNow (after sending its answers,
// if it likes) so that consumers see the messages. It is safe to call at
// any time and from any goroutine; without staged appends it does nothing.
func (s *Store) CommitStaged() {
	if s.stage == nil {
		return
	}
	end, err := s.commitStagedOnce()
	var buf [8]flushWaiter // a small read's puts: no allocation
	clear(s.releaseStaged(buf[:0], end, err != nil))
}

// DispatchNow runs a dispatch pass (consume queues, index, arrival
// notices) on the calling goroutine, or wakes the dispatch goroutine if a
// pass is running: the dispatch of what CommitStaged wrote, without
// waking another goroutine for it.
func (s *Store) DispatchNow() {
	if s.dispatchMu.TryLock() {
		s.doReput(true)
		s.dispatchMu.Unlock()
		return
	}
	wake(s.wakeDispatch)
}

// putMessage is the single put; start is the put's start (zero: now). With
// deferCommit a staged put does not wake the staged committer and
// putMessage reports true (PutMessageRawPropertiesDeferred).
func (s *Store) putMessage(m *message.Ext, rawProps string, extra []string, raw bool, start time.Time,
	deferCommit bool, done func(PutResult)) bool {
	if start.IsZero() {
		start = time.Now()
	}
	s.inflight.Add(1)
	defer s.inflight.Add(-1)
	if st, remark := s.checkWritable(); st != PutOK {
		s.stats.putFailures.Add(1)
		done(PutResult{Status: st, Remark: remark})
		return false
	}
	if st := s.checkMessage(&m.Message); st != PutOK {
		s.stats.putFailures.Add(1)
		done(PutResult{Status: st})
		return false
	}
	if !raw {
		s.applyDelayLevel(m)
	}
	s.prepareHosts(m)
	var res PutResult
	var locked time.Time
	if raw && s.stage != nil {
		// Staged appends: the record is encoded under the append lock
		// straight into the stage ring (appendRecords), not into a buffer
		// copied there; its size, limits and body CRC are settled here.
		size, st := s.sizeRaw(m, rawProps, extra)
		if st != PutOK {
			s.stats.putFailures.Add(1)
			done(PutResult{Status: st})
			return false
		}
		m.StoreTimestamp, m.QueueOffset, m.CommitLogOffset = 0, 0, 0
		m.BodyCRC = message.BodyCRC(m.Body)
		metas := [1]recMeta{s.metaFor(m, size)}
		res, locked = s.appendRecords(nil, metas[:], m.Topic, m.QueueID, &rawRecord{m: m, props: rawProps, extra: extra})
	} else {
		bp := s.encodePool.Get().(*[]byte)
		var rec []byte
		var st PutStatus
		if raw {
			rec, st = s.encodeRaw((*bp)[:0], m, rawProps, extra)
		} else {
			rec, st = s.encode((*bp)[:0], m)
		}
		if st != PutOK {
			s.encodePool.Put(bp)
			s.stats.putFailures.Add(1)
			done(PutResult{Status: st})
			return false
		}
		metas := [1]recMeta{s.metaFor(m, len(rec))}
		res, locked = s.appendRecords(rec, metas[:], m.Topic, m.QueueID, nil)
		s.putEncodeBuf(bp, rec)
	}
	if res.Status == PutOK { // MsgID stays empty: see PutResult
		m.StoreTimestamp = res.StoreTimestamp
	}
	wait := true
	if raw {
		if v, ok := message.LookupProperty(rawProps, message.PropertyWaitStoreMsgOK); ok {
			wait = strings.EqualFold(v, "true")
		}
	} else {
		wait = m.WaitStoreMsgOK()
	}
	return s.finishPut(res, wait, start, locked, deferCommit, done)
}

// PutMessages appends a batch (SEND_BATCH_MESSAGE): every message shares the
// first one's topic and queue, gets a consecutive queue offset, and all
// records are written contiguously under one append lock (a batch never
// spans two files). Batches may not be transactional or delayed.
func (s *Store) PutMessages(batch []*message.Ext, done func(PutResult)) {
	s.putMessages(batch, nil, done)
}

// PutMessagesRawProperties is PutMessages with each message's properties
// already encoded: props[i] is written verbatim as batch[i]'s properties
// (its Properties map is ignored), as PutMessageRawProperties does for one
// message. len(props) must equal len(batch).
func (s *Store) PutMessagesRawProperties(batch []*message.Ext, props []string, done func(PutResult)) {
	if len(props) != len(batch) {
		done(PutResult{Status: MessageIllegal, Remark: "batch properties do not match its messages"})
		return
	}
	s.putMessages(batch, props, done)
}

// putMessages is PutMessages; with raw set, raw[i] are batch[i]'s encoded
// properties.
func (s *Store) putMessages(batch []*message.Ext, raw []string, done func(PutResult)) {
	start := time.Now()
	s.inflight.Add(1)
	defer s.inflight.Add(-1)
	if len(batch) == 0 {
		done(PutResult{Status: MessageIllegal, Remark: "empty batch"})
		return
	}
	if st, remark := s.checkWritable(); st != PutOK {
		s.stats.putFailures.Add(1)
		done(PutResult{Status: st, Remark: remark})
		return
	}
	topic, qid := batch[0].Topic, batch[0].QueueID
	// The batch is encoded into a pooled buffer, as a single put is: the
	// records are copied into the commit log under the append lock and
	// the buffer is free again once appendRecords returns.
	bp := s.encodePool.Get().(*[]byte)
	buf := (*bp)[:0]
	defer func() {
		if cap(buf) <= 2*(s.cfg.MaxMessageSize+maxRecordOverhead) {
			*bp = buf[:0]
			s.encodePool.Put(bp)
		}
	}()
	metas := make([]recMeta, 0, len(batch))
	for i, m := range batch {
		if m.Topic != topic || m.QueueID != qid {
			done(PutResult{Status: MessageIllegal, Remark: "batch mixes topics or queues"})
			return
		}
		tt := message.TransactionType(m.SysFlag)
		delayed := m.Properties[message.PropertyDelayTimeLevel] != "" && m.DelayTimeLevel() > 0
		if raw != nil {
			lvl, _ := message.LookupProperty(raw[i], message.PropertyDelayTimeLevel)
			n, _ := strconv.Atoi(lvl)
			delayed = n > 0
		}
		if tt == message.SysFlagTransactionPreparedType || tt == message.SysFlagTransactionRollbackType || delayed {
			done(PutResult{Status: MessageIllegal, Remark: "batch message cannot be transactional or delayed"})
			return
		}
		if st := s.checkMessage(&m.Message); st != PutOK {
			done(PutResult{Status: st})
			return
		}
		s.prepareHosts(m)
		n := len(buf)
		var st PutStatus
		if raw != nil {
			buf, st = s.encodeRaw(buf, m, raw[i], nil)
		} else {
			buf, st = s.encode(buf, m)
		}
		if st != PutOK {
			done(PutResult{Status: st})
			return
		}
		metas = append(metas, s.metaFor(m, len(buf)-n))
	}
	// RocketMQ's batch encoder throws when the whole batch exceeds
	// maxMessageSize; the send answers SYSTEM_ERROR (2.5).
	if len(buf) > s.cfg.MaxMessageSize || len(buf)+blankRecordSize > int(s.cfg.MappedFileSizeCommitLog) {
		done(PutResult{Status: UnknownError, Remark: "message body size exceeded"})
		return
	}
	res, locked := s.appendRecords(buf, metas, topic, qid, nil)
	if res.Status == PutOK {
		for _, m := range batch {
			m.StoreTimestamp = res.StoreTimestamp
		}
		ids := make([]string, 0, len(metas))
		off := res.WroteOffset
		for _, mt := range metas {
			ids = append(ids, message.OffsetMsgID(s.cfg.StoreHost, off))
			off += int64(mt.size)
		}
		res.MsgID = strings.Join(ids, ",")
	}
	wait := batch[0].WaitStoreMsgOK()
	if raw != nil {
		if v, ok := message.LookupProperty(raw[0], message.PropertyWaitStoreMsgOK); ok {
			wait = strings.EqualFold(v, "true")
		}
	}
	s.finishPut(res, wait, start, locked, false, done)
}

// createFailed answers a put whose commit-log file could not be created.
// A full disk is SERVICE_NOT_AVAILABLE at once (checked here rather than
// left to the next cleanup pass, which may be a minute away after start);
// anything else is CREATE_MAPPED_FILE_FAILED.
func (s *Store) createFailed(err error) PutResult {
	s.checkDiskSpace()
	if s.diskFull.Load() || isNoSpace(err) {
		s.log.Warn("create commit-log file failed: disk full", "err", err, "disk", s.DiskUtil())
		return PutResult{Status: ServiceNotAvailable, Remark: "store is not writable: disk full"}
	}
	s.log.Error("create commit-log file failed", "err", err)
	return PutResult{Status: CreateMappedFileFailed, Remark: err.Error()}
}

// checkWritable is RocketMQ's put-hook pre-check (2.4 step 1).
func (s *Store) checkWritable() (PutStatus, string) {
	switch {
	case s.state.Load() != stateRunning:
		return ServiceNotAvailable, "store is not running"
	case s.cfg.BrokerRole == RoleSlave:
		return ServiceNotAvailable, "broker role is SLAVE"
	}
	if g := s.writeGate.Load(); g != nil {
		if st, why := (*g)(); st != PutOK {
			return st, why
		}
	}
	switch {
	case s.flushFailed.Load():
		return ServiceNotAvailable, "store is not writable: a disk flush failed"
	case s.diskFull.Load():
		return ServiceNotAvailable, "store is not writable: disk full"
	case s.logicsError.Load():
		if why := s.logicsErrReason.Load(); why != nil {
			return ServiceNotAvailable, "store is not writable: consume queue or index write failed: " + *why
		}
		return ServiceNotAvailable, "store is not writable: consume queue or index write failed"
	case s.IsOSPageCacheBusy():
		s.stats.pageCacheBusy.Add(1)
		return OSPageCacheBusy, "[PC_SYNCHRONIZED]broker busy, start flow control for a while"
	}
	return PutOK, ""
}

func (s *Store) checkMessage(m *message.Message) PutStatus {
	if m.Body == nil || len(m.Body) > s.cfg.MaxMessageSize {
		return MessageIllegal
	}
	if len(m.Topic) == 0 || len(m.Topic) > names.MaxRetryTopicLength || !safeTopicPath(m.Topic) {
		return MessageIllegal
	}
	return PutOK
}

// safeTopicPath reports whether topic can name a consume-queue directory:
// the broker validates topic characters, but the store never lets a topic
// escape consumequeue/ whatever the caller checked.
func safeTopicPath(topic string) bool {
	if topic == "." || topic == ".." {
		return false
	}
	for i := 0; i < len(topic); i++ {
		if c := topic[i]; c == '/' || c == '\\' || c == 0 {
			return false
		}
	}
	return true
}

// IsOSPageCacheBusy reports whether an append has held the append lock for
// longer than osPageCacheBusyTimeOutMills (2.8).
func (s *Store) IsOSPageCacheBusy() bool {
	begin := s.beginTimeInLock.Load()
	if begin == 0 {
		return false
	}
	diff := s.cfg.now().UnixMilli() - begin
	return diff > s.cfg.OSPageCacheBusyTimeOutMills.Milliseconds() && diff < 10_000_000
}

// applyDelayLevel rewrites a delay-level message to the schedule topic.
func (s *Store) applyDelayLevel(m *message.Ext) {
	if m.Properties[message.PropertyDelayTimeLevel] == "" {
		return
	}
	tt := message.TransactionType(m.SysFlag)
	if tt != message.SysFlagTransactionNotType && tt != message.SysFlagTransactionCommitType {
		return
	}
	level := m.DelayTimeLevel()
	if level <= 0 || len(s.delayLevels) == 0 {
		return
	}
	if level > len(s.delayLevels) {
		level = len(s.delayLevels)
		m.SetDelayTimeLevel(level)
	}
	m.SetProperty(message.PropertyRealTopic, m.Topic)
	m.SetProperty(message.PropertyRealQueueID, itoa32(m.QueueID))
	m.Topic = names.TopicSchedule
	m.QueueID = int32(level - 1)
}

func (s *Store) prepareHosts(m *message.Ext) {
	m.StoreHost = s.cfg.StoreHost
	m.SysFlag = message.HostSysFlag(m.SysFlag, m.BornHost, m.StoreHost)
}

// encode appends the record to dst outside every lock; offsets and the
// store timestamp are left zero here and patched under the append lock
// (appendRecords), which is where the store reads the clock.
func (s *Store) encode(dst []byte, m *message.Ext) ([]byte, PutStatus) {
	return s.encodeWith(dst, m, "", nil, false)
}

// encodeRaw is encode with properties written verbatim.
func (s *Store) encodeRaw(dst []byte, m *message.Ext, props string, extra []string) ([]byte, PutStatus) {
	return s.encodeWith(dst, m, props, extra, true)
}

func (s *Store) encodeWith(dst []byte, m *message.Ext, props string, extra []string, raw bool) ([]byte, PutStatus) {
	m.StoreTimestamp, m.QueueOffset, m.CommitLogOffset, m.BodyCRC = 0, 0, 0, 0
	n := len(dst)
	var out []byte
	var err error
	if raw {
		out, err = message.AppendStoredRawProperties(dst, m, props, extra...)
	} else {
		out, err = message.AppendStored(dst, m)
	}
	switch {
	case errors.Is(err, message.ErrPropertiesTooLarge):
		return dst, PropertiesSizeExceeded
	case err != nil:
		return dst, MessageIllegal
	case len(out)-n > s.cfg.MaxMessageSize+maxRecordOverhead:
		return dst, MessageIllegal
	}
	return out, PutOK
}

// sizeRaw is encodeRaw's size and checks without the encoding: the
// record's length, or the status encodeRaw would fail with.
func (s *Store) sizeRaw(m *message.Ext, props string, extra []string) (int, PutStatus) {
	size, err := message.StoredSizeRawProperties(m, props, extra...)
	switch {
	case errors.Is(err, message.ErrPropertiesTooLarge):
		return 0, PropertiesSizeExceeded
	case err != nil:
		return 0, MessageIllegal
	case size > s.cfg.MaxMessageSize+maxRecordOverhead:
		return 0, MessageIllegal
	}
	return size, PutOK
}

// putEncodeBuf returns an encode buffer, now holding rec, to the pool
// unless a huge record grew it.
func (s *Store) putEncodeBuf(bp *[]byte, rec []byte) {
	*bp = rec
	if cap(rec) <= 2*(s.cfg.MaxMessageSize+maxRecordOverhead) {
		s.encodePool.Put(bp)
	}
}

// rawRecord is a single put appendRecords encodes itself, under the append
// lock (message.AppendStoredRawProperties of m, props and extra), straight
// into the stage ring when the ring has the room in one piece. putMessage
// checked its size and limits (sizeRaw) and set its body CRC.
type rawRecord struct {
	m     *message.Ext
	props string
	extra []string
}

func (s *Store) metaFor(m *message.Ext, size int) recMeta {
	tt := message.TransactionType(m.SysFlag)
	return recMeta{size: int32(size), storeTsAt: int32(message.StoreTimestampOffset(m.SysFlag)),
		assignQO: tt == message.SysFlagTransactionNotType || tt == message.SysFlagTransactionCommitType}
}

type tqKey struct {
	topic   string
	queueID int32
}

// appendRecords is the critical section (2.4 step 7): under the append lock
// it only assigns the queue and physical offsets, patches them and the store
// timestamp into the encoded records, and copies them into the last file.
// The store timestamp is the clock read under the lock (RocketMQ's
// beginLockTimestamp), so it never decreases along the commit log; that
// read is the put's only one when its caller gave the start, and it is
// returned (locked) for the put-latency histogram.
//
// With enc set, recs is nil and metas holds enc's one record, which is
// encoded here: into the stage ring's slot at the write position when the
// ring has it in one piece (no copy), else into a pooled buffer appended as
// usual.
func (s *Store) appendRecords(recs []byte, metas []recMeta, topic string, queueID int32, enc *rawRecord) (res PutResult, locked time.Time) {
	s.putMu.Lock()
	locked = s.cfg.now()
	now := locked.UnixMilli()
	s.beginTimeInLock.Store(now)
	defer func() {
		s.beginTimeInLock.Store(0)
		s.putMu.Unlock()
	}()
	f, err := s.commitLog.lastOrCreate(0)
	if err != nil {
		return s.createFailed(err), locked
	}
	total := int64(len(recs))
	if enc != nil {
		total = int64(metas[0].size)
	}
	if total+blankRecordSize > f.size-f.wrote.Load() {
		// End of file: a BLANK record fills the rest; retry in a new file.
		s.writeBlankLocked(f, now)
		if f, err = s.commitLog.lastOrCreate(0); err != nil {
			return s.createFailed(err), locked
		}
		if total+blankRecordSize > f.size-f.wrote.Load() {
			return PutResult{Status: MessageIllegal, Remark: "record larger than a commit-log file"}, locked
		}
	}
	qp := s.topicQueueTable[tqKey{topic, queueID}]
	var qo int64
	if qp != nil {
		qo = *qp
	}
	phy := f.fromOffset + f.wrote.Load()
	var slot []byte
	var bp *[]byte
	if enc != nil {
		if slot = f.stagedSlot(total); slot != nil {
			recs, _ = message.AppendStoredRawProperties(slot, enc.m, enc.props, enc.extra...)
		} else {
			bp = s.encodePool.Get().(*[]byte)
			recs, _ = message.AppendStoredRawProperties((*bp)[:0], enc.m, enc.props, enc.extra...)
			defer s.putEncodeBuf(bp, recs)
		}
		if int64(len(recs)) != total || slot != nil && &recs[0] != &slot[:1][0] {
			// sizeRaw and the encoder disagree: nothing is published.
			return PutResult{Status: UnknownError, Remark: "record size changed while encoding"}, locked
		}
	}
	be := binary.BigEndian
	pos := int64(0)
	next := qo
	for _, mt := range metas {
		r := recs[pos : pos+int64(mt.size)]
		if mt.assignQO {
			be.PutUint64(r[message.OffsetQueueOffset:], uint64(next))
			next++
		} else {
			be.PutUint64(r[message.OffsetQueueOffset:], 0)
		}
		be.PutUint64(r[message.OffsetPhysicalOffset:], uint64(phy+pos))
		be.PutUint64(r[mt.storeTsAt:], uint64(now))
		pos += int64(mt.size)
	}
	if slot != nil {
		f.advanceStaged(total)
	} else if err := f.appendBytes(recs); err != nil {
		// Nothing was appended; a write error is treated like a failed
		// flush: the store refuses writes from now on.
		s.setFlushFailed(err)
		return PutResult{Status: UnknownError, Remark: err.Error()}, locked
	}
	f.storeTimestamp.Store(now)
	s.maybeWakePrefault(f)
	if next != qo {
		if qp == nil {
			qp = new(int64)
			*qp = next
			s.topicQueueTable[tqKey{topic, queueID}] = qp
		} else {
			*qp = next
		}
	}
	return PutResult{Status: PutOK, WroteOffset: phy, WroteBytes: int32(total),
		StoreTimestamp: now, QueueOffset: qo, MsgNum: int32(len(metas))}, locked
}

// writeBlankLocked closes f with a BLANK record. REQUIRES: s.putMu held.
func (s *Store) writeBlankLocked(f *mappedFile, now int64) {
	rest := f.size - f.wrote.Load()
	if rest <= 0 {
		return
	}
	var b [blankRecordSize]byte
	binary.BigEndian.PutUint32(b[recTotalSize:], uint32(rest))
	binary.BigEndian.PutUint32(b[recMagic:], message.BlankMagic)
	if err := f.fillToEnd(b[:min(rest, blankRecordSize)]); err != nil {
		s.setFlushFailed(err)
	}
	f.storeTimestamp.Store(now)
}

// finishPut routes a completed append through the completion pipeline:
// flush stage (group commit under SYNC_FLUSH with WAIT=true), then the
// replication stage. The put-latency histogram gets start to the append
// lock's clock read (locked): no clock read of its own.
func (s *Store) finishPut(res PutResult, wait bool, start, locked time.Time, deferCommit bool, done func(PutResult)) (deferred bool) {
	if res.Status != PutOK {
		s.stats.putFailures.Add(1)
		done(res)
		return false
	}
	s.stats.puts.Add(int64(res.MsgNum))
	s.stats.putBytes.Add(int64(res.WroteBytes))
	if s.cfg.Now != nil {
		s.stats.observePutLatency(time.Since(start)) // an injected clock: locked is not comparable
	} else {
		s.stats.observePutLatency(max(locked.Sub(start), 0))
	}
	if s.pool != nil && (s.cfg.WakeCommitWhenPutMessage || s.cfg.syncFlush()) {
		wake(s.wakeCommit)
	}
	if s.cfg.syncFlush() {
		if wait {
			s.group.add(flushWaiter{
				next:     res.WroteOffset + int64(res.WroteBytes),
				deadline: start.Add(s.cfg.SyncFlushTimeout).UnixNano(),
				res:      res,
				done:     done,
			})
			wake(s.wakeFlush)
			return false
		}
		if s.stage != nil {
			// WAIT=false is acknowledged without the sync but, as through
			// the mapping, only once its bytes are in the page cache.
			if end, err := s.commitStagedOnce(); err != nil || end < res.WroteOffset+int64(res.WroteBytes) {
				s.stats.putFailures.Add(1)
				res = PutResult{Status: UnknownError, Remark: "commit-log write failed"}
			}
		}
		wake(s.wakeFlush)
		s.replicate(res, wait, done)
		return false
	}
	if s.cfg.WakeFlushWhenPutMessage && !s.cfg.FlushCommitLogTimed {
		wake(s.wakeFlush)
	}
	if s.stage != nil {
		// Staged: acknowledged once the bytes are in the file (page
		// cache), so a killed process loses nothing it acknowledged, as
		// with appends into the mapping.
		s.staged.add(flushWaiter{next: res.WroteOffset + int64(res.WroteBytes), res: res, done: done, noWait: !wait})
		if deferCommit {
			return true // the caller commits (CommitStaged)
		}
		wake(s.wakeCommit)
		return false
	}
	wake(s.wakeDispatch)
	s.replicate(res, wait, done)
	return false
}

// replicate is the second completion stage.
func (s *Store) replicate(res PutResult, wait bool, done func(PutResult)) {
	r := s.replicator.Load()
	if r == nil || !wait || res.Status != PutOK && res.Status != FlushDiskTimeout {
		done(res)
		return
	}
	awaitReplicated(*r, res, done)
}

// awaitReplicated is replicate's wait, apart so that only puts that wait
// for a replica move their result to the heap (the closure captures it).
func awaitReplicated(r Replicator, res PutResult, done func(PutResult)) {
	r.AwaitReplicated(res.WroteOffset+int64(res.WroteBytes), func(st PutStatus) {
		if st != PutOK {
			res.Status = st // the replica status wins (3.4)
		}
		done(res)
	})
}

// Replicator is the replication completion stage (HA). AwaitReplicated
// calls done once the offset is acknowledged by enough replicas, or with
// FlushSlaveTimeout / SlaveNotAvailable. done must not block.
type Replicator interface {
	AwaitReplicated(nextOffset int64, done func(PutStatus))
}

// WriteGate is consulted before every put (after the running and role
// checks): a status other than PutOK refuses the put with that status and
// remark, before anything is written. Controller mode uses it for the
// master's lease (fencing) and minInSyncReplicas. It must be cheap and
// must not block.
type WriteGate func() (PutStatus, string)

// SetWriteGate installs the write gate (nil removes it).
func (s *Store) SetWriteGate(g WriteGate) {
	if g == nil {
		s.writeGate.Store(nil)
		return
	}
	s.writeGate.Store(&g)
}

// SetReplicator installs the replication stage (nil removes it).
func (s *Store) SetReplicator(r Replicator) {
	if r == nil {
		s.replicator.Store(nil)
		return
	}
	s.replicator.Store(&r)
}

func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func itoa32(v int32) string {
	var b [12]byte
	i := len(b)
	neg := v < 0
	u := int64(v)
	if neg {
		u = -u
	}
	for {
		i--
		b[i] = byte('0' + u%10)
		u /= 10
		if u == 0 {
			break
		}
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
