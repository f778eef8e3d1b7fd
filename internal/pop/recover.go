package pop

import (
	"fmt"
	"os"
)

// recover replays the newest complete log, deletes the others and opens it
// for appending; with no log it writes an empty snapshot as the first.
func (s *Store) recover() error {
	s.recovery.TruncatedAt = -1
	seqs, err := listLogs(s.opts.Dir)
	if err != nil {
		return err
	}
	chosen := -1
	var data []byte
	for i := len(seqs) - 1; i >= 0; i-- {
		b, err := os.ReadFile(logName(s.opts.Dir, seqs[i]))
		if err != nil {
			return fmt.Errorf("pop: read log: %w", err)
		}
		if snapshotComplete(b) {
			chosen, data = i, b
			break
		}
		s.logger.Warn("pop log without a complete snapshot ignored", "file", logName(s.opts.Dir, seqs[i]))
	}
	for i, seq := range seqs {
		if i != chosen {
			if err := os.Remove(logName(s.opts.Dir, seq)); err != nil {
				return fmt.Errorf("pop: remove stale log: %w", err)
			}
		}
	}
	if chosen < 0 {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.writeSnapshotLocked(1)
	}
	seq := seqs[chosen]
	path := logName(s.opts.Dir, seq)
	good, records, err := s.replay(data)
	if err != nil {
		return fmt.Errorf("pop: replay %s: %w", path, err)
	}
	if good < int64(len(data)) {
		s.recovery.TruncatedAt, s.recovery.Dropped = good, int64(len(data))-good
		s.logger.Warn("pop log tail truncated", "file", path, "offset", good, "bytes", s.recovery.Dropped)
		if err := os.Truncate(path, good); err != nil {
			return fmt.Errorf("pop: truncate %s: %w", path, err)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("pop: open %s: %w", path, err)
	}
	s.log = &logFile{f: f, seq: seq, size: good, path: path}
	s.snapSize = snapshotLen(data)
	s.recovery.File, s.recovery.Records = path, records
	st := s.Stats()
	s.recovery.Checkpoints, s.recovery.InFlight = st.Checkpoints, st.InFlight
	return nil
}

// snapshotComplete reports whether b begins with a snapshot that ends.
func snapshotComplete(b []byte) bool { return snapshotLen(b) > 0 }

// snapshotLen is the byte length of b's leading snapshot, 0 if incomplete.
func snapshotLen(b []byte) int64 {
	pos := 0
	first := true
	for {
		p, n := nextFrame(b[pos:])
		if n == 0 {
			return 0
		}
		pos += n
		if first && p[0] != recSnapshotBegin {
			return 0
		}
		first = false
		if p[0] == recSnapshotEnd {
			return int64(pos)
		}
	}
}

// replay applies every valid frame of b and returns the length of the
// valid prefix. A frame that decodes badly ends the valid prefix, like a
// torn one.
func (s *Store) replay(b []byte) (good int64, records int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pos := 0
	for {
		p, n := nextFrame(b[pos:])
		if n == 0 {
			return int64(pos), records, nil
		}
		if err := s.applyRecordLocked(p); err != nil {
			s.logger.Warn("pop log record does not decode; replay stops", "offset", pos, "err", err)
			return int64(pos), records, nil
		}
		pos += n
		records++
	}
}

// applyRecordLocked applies one payload. REQUIRES: s.mu held.
func (s *Store) applyRecordLocked(p []byte) error {
	d := &dec{b: p[1:]}
	switch typ := p[0]; typ {
	case recSnapshotBegin:
		d.u()
		s.queues = make(map[QueueKey]*queue)
		s.byTopic = make(map[string][]*queue)
		s.deadline = nil
		s.inFlight = 0
	case recSnapshotEnd:
	case recCheckpoint:
		k := d.key()
		start, popTime, invisible, next := d.v(), d.v(), d.v(), d.v()
		n := d.u()
		if d.err != nil || n > MaxBatch {
			return ErrCorrupt
		}
		offs := make([]int64, 0, n)
		for i := 0; i < int(n); i++ {
			offs = append(offs, start+int64(d.u()))
		}
		acked := d.u()
		if d.err != nil || checkOffsets(start, offs) != nil {
			return ErrCorrupt
		}
		s.applyCheckpointLocked(s.queueLocked(k), start, popTime, invisible, next, offs, uint32(acked))
	case recAck, recChange:
		k := d.key()
		start, popTime, offset := d.v(), d.v(), d.v()
		var newPopTime, newInvisible int64
		if typ == recChange {
			newPopTime, newInvisible = d.v(), d.v()
		}
		if d.err != nil {
			return d.err
		}
		q := s.queueLocked(k)
		c := q.cks[ckKey{start, popTime}]
		if c == nil {
			return nil
		}
		i := c.index(offset)
		if i < 0 {
			return nil
		}
		if typ == recAck {
			s.ackLocked(c, i)
		} else {
			s.applyChangeLocked(q, c, i, offset, newPopTime, newInvisible)
		}
	case recAckBits:
		k := d.key()
		start, popTime, bits := d.v(), d.v(), d.u()
		if d.err != nil || bits > 1<<MaxBatch-1 {
			return ErrCorrupt
		}
		if q := s.queues[k]; q != nil {
			if c := q.cks[ckKey{start, popTime}]; c != nil {
				s.ackBitsLocked(c, uint32(bits))
			}
		}
	case recDrop:
		kind, name := d.byte(), d.s()
		if d.err != nil || kind != dropTopic && kind != dropGroup && kind != dropGroupTopic {
			return ErrCorrupt
		}
		s.applyDropLocked(kind, name)
	case recRevived:
		k := d.key()
		start, popTime := d.v(), d.v()
		if d.err != nil {
			return d.err
		}
		if q := s.queues[k]; q != nil {
			if c := q.cks[ckKey{start, popTime}]; c != nil {
				s.dropLocked(c)
			}
		}
	case recPopOffset:
		k := d.key()
		off := d.v()
		if d.err != nil {
			return d.err
		}
		s.queueLocked(k).popOffset = off
	case recOrderPop, recOrderAck, recOrderChange, recOrderCommit:
		return s.orderReplay(typ, d)
	default:
		return fmt.Errorf("%w: record type %d", ErrCorrupt, typ)
	}
	return d.err
}

// maybeCompactLocked rewrites the log as a snapshot once it has grown past
// its threshold. A failure is logged and retried at a later append; the
// current file stays active. REQUIRES: s.wmu and s.mu held.
func (s *Store) maybeCompactLocked() {
	if s.log.size < max(s.opts.CompactBytes, 4*s.snapSize) {
		return
	}
	if err := s.writeSnapshotLocked(s.log.seq + 1); err != nil {
		s.logger.Error("pop log compaction failed", "err", err)
		s.snapSize = s.log.size // back off until the file doubles again
	}
}

// Compact rewrites the log as a snapshot now.
func (s *Store) Compact() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return s.writeSnapshotLocked(s.log.seq + 1)
}

// encodeSnapshotLocked frames the live state as a snapshot (records 10,
// 5, 9, 1, 6-8, 11). REQUIRES: s.mu held.
func (s *Store) encodeSnapshotLocked(seq uint64) []byte {
	// Sized from the last snapshot (or ~120 B a queue): growing by doubling
	// copied a 10^5-queue snapshot several times over while s.mu was held.
	buf := make([]byte, 0, max(s.snapSize+s.snapSize/8, int64(len(s.queues))*128, 4096))
	e := enc{b: make([]byte, 0, 256)}
	offs := make([]int64, 0, MaxBatch)
	var deliveries []int32
	frame := func() {
		buf = appendFrame(buf, e.b)
		e.b = e.b[:0]
	}
	e.byte(recSnapshotBegin)
	e.u(seq)
	frame()
	for k, q := range s.queues {
		if q.popOffset >= 0 {
			e.byte(recPopOffset)
			e.key(k)
			e.v(q.popOffset)
			frame()
		}
		for _, c := range q.cks {
			offs = offs[:0]
			for i := 0; i < int(c.n); i++ {
				offs = append(offs, c.offset(i))
			}
			encodeCheckpoint(&e, k, c.start, c.popTime, int64(c.invis), -1, offs, c.acked)
			frame()
		}
		if o := q.order; o != nil {
			e.byte(recOrderCommit)
			e.key(k)
			e.v(o.commit)
			frame()
			if len(o.msgs) > 0 {
				b := OrderBatch{Key: k, PopTime: o.popTime, InvisibleTime: 0, AttemptID: o.attemptID, NextOffset: o.next, Offsets: offs[:0]}
				deliveries = deliveries[:0]
				for _, m := range o.msgs {
					b.Offsets = append(b.Offsets, m.offset)
					deliveries = append(deliveries, m.deliveries)
				}
				encodeOrderPop(&e, b, deliveries)
				frame()
				for _, m := range o.msgs {
					if m.acked {
						e.byte(recOrderAck)
						e.key(k)
						e.v(o.popTime)
						e.v(m.offset)
					} else {
						e.byte(recOrderChange)
						e.key(k)
						e.v(o.popTime)
						e.v(m.offset)
						e.v(m.nextVisible)
					}
					frame()
				}
			}
		}
	}
	e.byte(recSnapshotEnd)
	frame()
	return buf
}

// writeSnapshotLocked writes the live state as log seq, fsyncs it, makes it
// the active log and deletes the previous one. Pending records are already
// part of the in-memory state the snapshot holds, so they are dropped and
// count as written. REQUIRES: s.wmu and s.mu held (or no concurrency, in
// Open).
func (s *Store) writeSnapshotLocked(seq uint64) error {
	path := logName(s.opts.Dir, seq)
	buf := s.encodeSnapshotLocked(seq)

	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("pop: create %s: %w", path, err)
	}
	fail := func(err error) error {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("pop: write snapshot %s: %w", path, err)
	}
	if _, err := f.Write(buf); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := syncDir(s.opts.Dir); err != nil {
		return fail(err)
	}
	old := s.log
	s.log = &logFile{f: f, seq: seq, size: int64(len(buf)), path: path}
	s.pending, s.written = s.pending[:0], s.enqueued
	s.snapSize = int64(len(buf))
	if old != nil {
		old.f.Close()
		if err := os.Remove(old.path); err != nil {
			s.logger.Warn("pop: remove compacted log", "file", old.path, "err", err)
		}
	}
	return nil
}
