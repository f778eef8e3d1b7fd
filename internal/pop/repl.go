package pop

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
)

// Replication: a slave's Store follows its master's so that a slave
// promoted to master (controller mode) knows every pop, ack and change the
// master made, as RocketMQ's slaves do by replicating the revive topic in
// the commit log. The master's records form a stream; ReadReplication
// returns the frames after a position (or a full snapshot when the
// position is not in the retained window, or names another session), and
// ApplyReplicated on the slave applies them and appends them to the
// slave's own log in the same format, so a restart of the slave, as the
// new master, recovers them like its own.
//
// The stream holds frames in the order the master applied them (they are
// copied when framed, under mu, before they reach the master's file). A
// session is one Open of the master's Store: positions of another session
// mean nothing, so a slave that followed an earlier master (or an earlier
// run of this one) starts over from a snapshot.

// replMaxBuffer bounds the frames kept for replicas; a replica further
// behind than this gets a snapshot instead.
const replMaxBuffer = 8 << 20

// replState is the master side of replication. Guarded by Store.mu.
type replState struct {
	on      bool   // a replica asked once: frames are kept from then on
	session uint64 // random, per Open and per replaced state
	base    int64  // stream position of buf[0]
	buf     []byte // frames since base
	// snap is the last snapshot handed out, kept while replicas fetch it in
	// parts (a snapshot can exceed one answer); snapAt is the stream
	// position it stands for. Dropped once that position left the window.
	snap   []byte
	snapAt int64
}

// replicaState is the replica side: what to ask next and the parts of a
// snapshot received so far. Guarded by Store.mu.
type replicaState struct {
	next ReplRequest
	snap []byte // len(snap) == next.SnapshotOffset while a snapshot is under way
}

func newSession() uint64 { return rand.Uint64() | 1 }

// ReplRequest is a replica's position in its master's stream. The zero
// value asks for a snapshot.
type ReplRequest struct {
	Session uint64
	Pos     int64
	// SnapshotOffset > 0 continues the snapshot for Pos at this byte.
	SnapshotOffset int64
}

// ReplChunk is one answer of ReadReplication.
type ReplChunk struct {
	Session uint64
	// From is the stream position of Data's first byte (of a snapshot: the
	// position it stands for); Next the position after it.
	From, Next int64
	// Snapshot: Data is the part at SnapshotOffset of a snapshot of
	// SnapshotSize bytes (records 10 ... 11) that, once complete, replaces
	// the replica's state.
	Snapshot                     bool
	SnapshotOffset, SnapshotSize int64
	Data                         []byte
}

// ReadReplication answers a replica: up to about max bytes of whole frames
// after req's position, the next part of a snapshot being fetched, or the
// first part of a new snapshot when req's position is not in this
// session's retained window (a first request, a replica too far behind,
// a master that restarted).
func (s *Store) ReadReplication(req ReplRequest, max int) (ReplChunk, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ReplChunk{}, ErrClosed
	}
	r := &s.repl
	if !r.on {
		r.on, r.base, r.buf = true, 0, nil
	}
	end := r.base + int64(len(r.buf))
	if req.SnapshotOffset > 0 && req.Session == r.session && r.snap != nil && req.Pos == r.snapAt &&
		req.SnapshotOffset < int64(len(r.snap)) {
		return s.snapshotPartLocked(req.SnapshotOffset, max), nil
	}
	if req.SnapshotOffset > 0 || req.Session != r.session || req.Pos < r.base || req.Pos > end {
		r.snap, r.snapAt = s.encodeSnapshotLocked(0), end
		return s.snapshotPartLocked(0, max), nil
	}
	rest := r.buf[req.Pos-r.base:]
	n := wholeFrames(rest, max)
	return ReplChunk{Session: r.session, From: req.Pos, Next: req.Pos + int64(n), Data: append([]byte(nil), rest[:n]...)}, nil
}

// snapshotPartLocked cuts the cached snapshot at off. REQUIRES: s.mu held.
func (s *Store) snapshotPartLocked(off int64, max int) ReplChunk {
	r := &s.repl
	rest := r.snap[off:]
	n := wholeFrames(rest, max)
	return ReplChunk{Session: r.session, From: r.snapAt, Next: r.snapAt, Snapshot: true, SnapshotOffset: off,
		SnapshotSize: int64(len(r.snap)), Data: append([]byte(nil), rest[:n]...)}
}

// wholeFrames is the length of the longest run of whole frames at the
// start of b not over max bytes, but at least one frame.
func wholeFrames(b []byte, max int) int {
	n := 0
	for n < len(b) {
		l := frameLen(b[n:])
		if l == 0 || n > 0 && n+l > max {
			break
		}
		n += l
	}
	return n
}

// frameLen is the length of the frame at the start of b from its header
// (0 when b is shorter than it says).
func frameLen(b []byte) int {
	if len(b) < frameHeader {
		return 0
	}
	l := frameHeader + int(binary.BigEndian.Uint32(b))
	if l > len(b) {
		return 0
	}
	return l
}

// replAppendLocked keeps a framed record for replicas. REQUIRES: s.mu held.
func (s *Store) replAppendLocked(frame []byte) {
	r := &s.repl
	if !r.on {
		return
	}
	r.buf = append(r.buf, frame...)
	if len(r.buf) <= replMaxBuffer {
		return
	}
	cut := 0
	for cut < len(r.buf)/2 {
		cut += frameLen(r.buf[cut:])
	}
	r.base += int64(cut)
	r.buf = append([]byte(nil), r.buf[cut:]...)
	if r.snap != nil && r.snapAt < r.base {
		r.snap = nil // its replicas could not continue after it any more
	}
}

// ReplicaRequest is what a replica asks its master next (the zero value at
// first and after a failed chunk: a snapshot).
func (s *Store) ReplicaRequest() ReplRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.replica.next
}

// ApplyReplicated makes a replica follow its master with one answer of
// ReadReplication: snapshot parts are collected until the snapshot is
// complete, which then replaces the whole state (written as a fresh log
// file); other chunks are applied record by record and appended to the
// log, each written before the call returns, as the master's own changes
// are. A chunk whose frames do not check out, a part out of sequence, or a
// record that does not apply is an error, after which ReplicaRequest asks
// for a new snapshot; a bad chunk changes nothing, a bad record stops
// there.
func (s *Store) ApplyReplicated(c ReplChunk) (err error) {
	defer func() {
		s.mu.Lock()
		if err != nil {
			s.replica = replicaState{}
		}
		s.mu.Unlock()
	}()
	if c.Snapshot {
		return s.applySnapshotPart(c)
	}
	if err := checkFrames(c.Data, false); err != nil {
		return err
	}
	var seq uint64
	defer s.commit(&seq, &err)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.sticky != nil {
		return s.sticky
	}
	for pos := 0; pos < len(c.Data); {
		p, n := nextFrame(c.Data[pos:])
		if err := s.applyRecordLocked(p); err != nil {
			return fmt.Errorf("pop: replicated record at %d: %w", c.From+int64(pos), err)
		}
		frame := c.Data[pos : pos+n]
		s.pending = append(s.pending, frame...)
		s.enqueued++
		seq = s.enqueued
		s.replAppendLocked(frame)
		pos += n
	}
	s.replica = replicaState{next: ReplRequest{Session: c.Session, Pos: c.Next}}
	return nil
}

// applySnapshotPart collects one part; the last one replaces the state.
func (s *Store) applySnapshotPart(c ReplChunk) error {
	if len(c.Data) == 0 || c.SnapshotOffset < 0 || c.SnapshotOffset+int64(len(c.Data)) > c.SnapshotSize {
		return fmt.Errorf("%w: replicated snapshot part %d+%d of %d", ErrCorrupt, c.SnapshotOffset, len(c.Data), c.SnapshotSize)
	}
	s.mu.Lock()
	rs := &s.replica
	if c.SnapshotOffset == 0 {
		rs.snap = rs.snap[:0] // a first part: a new snapshot (the master may have cut a newer one)
	} else if c.SnapshotOffset != int64(len(rs.snap)) || c.Session != rs.next.Session || c.From != rs.next.Pos {
		s.mu.Unlock()
		return fmt.Errorf("%w: replicated snapshot part at %d, have %d bytes", ErrCorrupt, c.SnapshotOffset, len(rs.snap))
	}
	rs.snap = append(rs.snap, c.Data...)
	if int64(len(rs.snap)) < c.SnapshotSize {
		rs.next = ReplRequest{Session: c.Session, Pos: c.From, SnapshotOffset: int64(len(rs.snap))}
		s.mu.Unlock()
		return nil
	}
	snap := rs.snap
	rs.snap = nil
	s.mu.Unlock()
	if err := checkFrames(snap, true); err != nil {
		return err
	}
	if err := s.replaceState(snap); err != nil {
		return err
	}
	s.mu.Lock()
	s.replica = replicaState{next: ReplRequest{Session: c.Session, Pos: c.Next}}
	s.mu.Unlock()
	return nil
}

// checkFrames: b is a whole number of valid frames; a snapshot is exactly
// one complete snapshot, anything else holds no snapshot record.
func checkFrames(b []byte, snapshot bool) error {
	if snapshot {
		if snapshotLen(b) != int64(len(b)) {
			return fmt.Errorf("%w: replicated snapshot is not one complete snapshot", ErrCorrupt)
		}
		return nil
	}
	for pos := 0; pos < len(b); {
		p, n := nextFrame(b[pos:])
		if n == 0 {
			return fmt.Errorf("%w: replicated frame at %d", ErrCorrupt, pos)
		}
		if p[0] == recSnapshotBegin || p[0] == recSnapshotEnd {
			return fmt.Errorf("%w: snapshot record among replicated changes", ErrCorrupt)
		}
		pos += n
	}
	return nil
}

// replaceState rebuilds the state from a snapshot (replayed into a scratch
// Store first, so a snapshot that does not apply changes nothing) and
// writes it as the active log.
func (s *Store) replaceState(snap []byte) error {
	t := &Store{logger: s.logger, queues: make(map[QueueKey]*queue)}
	good, _, err := t.replay(snap)
	if err != nil || good != int64(len(snap)) {
		return fmt.Errorf("%w: replicated snapshot does not apply", ErrCorrupt)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.queues, s.byTopic, s.deadline, s.inFlight = t.queues, t.byTopic, t.deadline, t.inFlight
	// Downstream replicas of this store must start over too.
	s.repl.session, s.repl.base, s.repl.buf = newSession(), 0, nil
	if err := s.writeSnapshotLocked(s.log.seq + 1); err != nil {
		s.sticky = err
		return err
	}
	return nil
}
