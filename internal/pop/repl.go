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
}

func newSession() uint64 { return rand.Uint64() | 1 }

// ReplChunk is one answer of ReadReplication.
type ReplChunk struct {
	Session uint64
	// From is the stream position of Data's first byte; Next the position
	// after Data, for the replica's next request.
	From, Next int64
	// Snapshot: Data is a complete snapshot (records 10 ... 11) that
	// replaces the replica's state; Next is the stream position it
	// corresponds to.
	Snapshot bool
	Data     []byte
}

// ReadReplication returns up to about max bytes of frames after position
// pos of session, or a snapshot when pos is not in the retained window of
// this session (a replica's first request passes session 0).
func (s *Store) ReadReplication(session uint64, pos int64, max int) (ReplChunk, error) {
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
	if session != r.session || pos < r.base || pos > end {
		return ReplChunk{Session: r.session, From: end, Next: end, Snapshot: true, Data: s.encodeSnapshotLocked(0)}, nil
	}
	rest := r.buf[pos-r.base:]
	n := 0
	for n < len(rest) && (n == 0 || n < max) {
		l := frameLen(rest[n:])
		if l == 0 {
			break // cannot happen: buf holds whole frames
		}
		n += l
	}
	return ReplChunk{Session: r.session, From: pos, Next: pos + int64(n), Data: append([]byte(nil), rest[:n]...)}, nil
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
}

// ApplyReplicated makes a replica follow its master: a snapshot chunk
// replaces the whole state (and is written as a fresh log file); other
// chunks are applied record by record and appended to the log, each
// written before the call returns, as the master's own changes are. A
// chunk whose frames do not check out changes nothing and is an error; a
// record that does not apply stops there with an error (the replica then
// asks for a snapshot).
func (s *Store) ApplyReplicated(c ReplChunk) (err error) {
	if err := checkFrames(c.Data, c.Snapshot); err != nil {
		return err
	}
	if c.Snapshot {
		return s.replaceState(c.Data)
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
	s.queues, s.deadline, s.inFlight = t.queues, t.deadline, t.inFlight
	// Downstream replicas of this store must start over too.
	s.repl.session, s.repl.base, s.repl.buf = newSession(), 0, nil
	if err := s.writeSnapshotLocked(s.log.seq + 1); err != nil {
		s.sticky = err
		return err
	}
	return nil
}
