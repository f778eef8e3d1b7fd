package pop

import (
	"container/heap"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// QueueKey names one consumer group's view of one queue.
type QueueKey struct {
	Group   string
	Topic   string
	QueueID int32
}

// MaxBatch is the most messages one checkpoint holds (a pop returns at most
// 32 messages; RocketMQ refuses more).
const MaxBatch = 32

// ErrClosed is returned after Close.
var ErrClosed = errors.New("pop: store closed")

// ErrReadOnly is returned by a state-changing method while the store is
// read-only (SetReadOnly): a slave's copy of its master's state.
var ErrReadOnly = errors.New("pop: store is read-only")

// Options configure a Store.
type Options struct {
	// Dir holds the log files (created if missing).
	Dir string
	// CompactBytes: the active log is rewritten as a snapshot once it grows
	// past max(CompactBytes, 4 x its last snapshot). Default 64 MiB.
	CompactBytes int64
	Logger       *slog.Logger
}

// Store is the POP state of one broker. Its methods are safe for
// concurrent use; each state-changing method appends its record before it
// returns.
type Store struct {
	opts   Options
	logger *slog.Logger

	// popLocks holds one flag per queue being popped (TryLockQueue): pops of
	// one group on one queue are serialised, others skip the queue.
	popLocks sync.Map // QueueKey -> *atomic.Bool

	// wmu serialises writes to the log file (and its swap by compaction).
	// Lock order: wmu before mu. Records are framed into pending under mu
	// (so their order is the order of the state changes) and written by
	// whichever caller takes wmu first: concurrent acks share one write.
	wmu sync.Mutex

	mu       sync.Mutex
	closed   bool                // guarded by mu
	pending  []byte              // framed records not yet written; guarded by mu
	spare    []byte              // the previous pending buffer, for reuse; guarded by mu
	enqueued uint64              // records framed so far; guarded by mu
	written  uint64              // records written (or folded into a snapshot); guarded by mu
	log      *logFile            // guarded by mu
	snapSize int64               // size of the active file's snapshot; guarded by mu
	queues   map[QueueKey]*queue // guarded by mu
	// byTopic indexes queues by topic (every queue of queues is in its
	// topic's slice, and only those), so dropping a topic, or one group's
	// state on one, costs the queues of that topic rather than a pass over
	// every queue: a lite topic expiring among 10^6 others. Guarded by mu.
	byTopic  map[string][]*queue
	deadline ckHeap         // unrevived checkpoints by deadline; guarded by mu
	sticky   error          // first append error; refuses writes after; guarded by mu
	readOnly bool           // local changes refused (SetReadOnly); guarded by mu
	inFlight int64          // unacked messages in checkpoints; guarded by mu
	repl     replState      // frames kept for replicas (repl.go); guarded by mu
	replica  replicaState   // following a master (repl.go); guarded by mu
	recovery RecoveryReport // set by Open
}

// queue is the state of one QueueKey. Guarded by Store.mu.
type queue struct {
	key       QueueKey
	popOffset int64 // next offset to pop; -1 = never popped
	cks       map[ckKey]*checkpoint
	order     *orderQueue // FIFO state; nil until an orderly pop
	// reported is the low watermark LowWatermarks last handed out
	// (math.MinInt64 before the first), so an unchanged queue costs its
	// caller nothing.
	reported int64
}

type ckKey struct{ start, popTime int64 }

// checkpoint is one pop of one queue: n messages at start+diff[i]
// (diffs nil = contiguous), invisible until deadline. Guarded by Store.mu.
type checkpoint struct {
	q       *queue
	start   int64
	popTime int64
	diffs   *[]uint32 // nil when contiguous; a pointer keeps the struct at 48 bytes
	invis   uint32    // invisible time in ms (clamped to 49 days); deadline() = popTime + invis
	acked   uint32    // bit i: message i acked
	heapIdx int32     // index in Store.deadline; -1 when not in it
	n       uint8
	// reviving: handed out by TakeExpired, not yet Revived.
	reviving bool
}

func (c *checkpoint) deadline() int64 { return c.popTime + int64(c.invis) }

func (c *checkpoint) offset(i int) int64 {
	if c.diffs == nil {
		return c.start + int64(i)
	}
	return c.start + int64((*c.diffs)[i])
}

func (c *checkpoint) index(offset int64) int {
	for i := 0; i < int(c.n); i++ {
		if c.offset(i) == offset {
			return i
		}
	}
	return -1
}

// allAcked: for n == 32 the shift gives 0 and 0-1 is all ones.
func (c *checkpoint) allAcked() bool { return c.acked == uint32(1)<<c.n-1 }

func (c *checkpoint) unacked() int {
	k := 0
	for i := 0; i < int(c.n); i++ {
		if c.acked&(1<<i) == 0 {
			k++
		}
	}
	return k
}

// RecoveryReport says what Open found.
type RecoveryReport struct {
	File        string
	Records     int
	TruncatedAt int64 // -1 when the file ended cleanly
	Dropped     int64 // bytes cut from a torn or corrupt tail
	Checkpoints int
	InFlight    int64
}

// Open replays the newest complete log in opts.Dir (creating an empty one
// when there is none) and returns the store ready for use.
func Open(opts Options) (*Store, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.CompactBytes <= 0 {
		opts.CompactBytes = defaultSegments
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("pop: %w", err)
	}
	s := &Store{opts: opts, logger: opts.Logger, queues: make(map[QueueKey]*queue), repl: replState{session: newSession()}}
	if err := s.recover(); err != nil {
		return nil, err
	}
	return s, nil
}

// Recovery returns what Open replayed.
func (s *Store) Recovery() RecoveryReport { return s.recovery }

// Close writes what is pending, syncs and closes the log. Later calls
// fail with ErrClosed.
func (s *Store) Close() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var err error
	if len(s.pending) > 0 && s.sticky == nil {
		_, err = s.log.f.Write(s.pending)
		s.pending, s.written = nil, s.enqueued
	}
	if serr := s.log.f.Sync(); err == nil {
		err = serr
	}
	if cerr := s.log.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pop: close: %w", err)
	}
	return nil
}

// Sync fsyncs the active log.
func (s *Store) Sync() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	closed, f := s.closed, s.log.f
	s.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if err := f.Sync(); err != nil {
		s.mu.Lock()
		s.sticky = fmt.Errorf("pop: fsync: %w", err)
		s.mu.Unlock()
		return err
	}
	return nil
}

// SetReadOnly refuses (on) or allows local state changes: while on, every
// state-changing method fails with ErrReadOnly and changes nothing, and
// only ApplyReplicated changes the state. A slave keeps its copy of the
// master's state read-only unless it acts as master; because the flag is
// read under mu, like every change, a snapshot taken after SetReadOnly(true)
// returned holds every local change there will be.
func (s *Store) SetReadOnly(on bool) {
	s.mu.Lock()
	s.readOnly = on
	s.mu.Unlock()
}

// TryLockQueue takes k's pop lock; false means another pop holds it.
func (s *Store) TryLockQueue(k QueueKey) bool {
	v, ok := s.popLocks.Load(k)
	if !ok { // allocate the flag only for a queue's first pop
		v, _ = s.popLocks.LoadOrStore(k, new(atomic.Bool))
	}
	return v.(*atomic.Bool).CompareAndSwap(false, true)
}

// UnlockQueue releases TryLockQueue.
func (s *Store) UnlockQueue(k QueueKey) {
	if v, ok := s.popLocks.Load(k); ok {
		v.(*atomic.Bool).Store(false)
	}
}

// queueLocked finds or creates k's state. REQUIRES: s.mu held.
func (s *Store) queueLocked(k QueueKey) *queue {
	q := s.queues[k]
	if q == nil {
		q = &queue{key: k, popOffset: -1, reported: math.MinInt64}
		s.queues[k] = q
		if s.byTopic == nil {
			s.byTopic = make(map[string][]*queue)
		}
		s.byTopic[k.Topic] = append(s.byTopic[k.Topic], q)
	}
	return q
}

// matchingLocked returns the queues a drop of kind and name removes:
// through byTopic for a topic drop and a group-and-topic drop, by a pass
// over every queue for a group drop (an admin deleting a group).
// REQUIRES: s.mu held.
func (s *Store) matchingLocked(kind byte, name string) []*queue {
	var out []*queue
	switch kind {
	case dropTopic:
		out = append(out, s.byTopic[name]...)
	case dropGroupTopic:
		if i := strings.IndexByte(name, 0); i >= 0 {
			for _, q := range s.byTopic[name[i+1:]] {
				if _, ok := dropMatch(kind, name, q.key); ok {
					out = append(out, q)
				}
			}
		}
	default:
		for k, q := range s.queues {
			if _, ok := dropMatch(kind, name, k); ok {
				out = append(out, q)
			}
		}
	}
	return out
}

// appendLocked frames one record into pending and sets *seq to its
// sequence number; the caller's deferred commit writes it once s.mu is
// released. REQUIRES: s.mu held.
func (s *Store) appendLocked(e *enc, seq *uint64) error {
	if s.closed {
		return ErrClosed
	}
	if s.readOnly {
		return ErrReadOnly
	}
	if s.sticky != nil {
		return s.sticky
	}
	at := len(s.pending)
	s.pending = appendFrame(s.pending, e.b)
	s.replAppendLocked(s.pending[at:])
	s.enqueued++
	*seq = s.enqueued
	return nil
}

// commit writes the records up to seq before a state-changing method
// returns; deferred before the method takes s.mu, so it runs after the
// unlock. A method that failed or wrote nothing (seq 0) passes through.
func (s *Store) commit(seq *uint64, err *error) {
	if *err == nil && *seq > 0 {
		*err = s.flush(*seq)
	}
}

// flush writes every pending record if record seq is not written yet, then
// compacts the log when it outgrew its threshold.
func (s *Store) flush(seq uint64) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	if s.written >= seq {
		err := s.sticky
		s.mu.Unlock()
		return err
	}
	buf, target, lf := s.pending, s.enqueued, s.log
	s.pending = s.spare[:0]
	s.mu.Unlock()
	_, werr := lf.f.Write(buf)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spare = buf[:0]
	s.written = target
	if werr != nil {
		if s.sticky == nil {
			s.sticky = fmt.Errorf("pop: append %s: %w", lf.path, werr)
		}
		return s.sticky
	}
	lf.size += int64(len(buf))
	s.maybeCompactLocked()
	return nil
}

// PopOffset returns the next offset to pop of k; ok is false when the group
// never popped the queue.
func (s *Store) PopOffset(k QueueKey) (offset int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.queues[k]; q != nil && q.popOffset >= 0 {
		return q.popOffset, true
	}
	return -1, false
}

// SetPopOffset sets k's next pop offset (first pop of a queue, a reset).
func (s *Store) SetPopOffset(k QueueKey, offset int64) (err error) {
	var seq uint64
	defer s.commit(&seq, &err)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := enc{b: make([]byte, 0, 64)}
	e.byte(recPopOffset)
	e.key(k)
	e.v(offset)
	if err := s.appendLocked(&e, &seq); err != nil {
		return err
	}
	s.queueLocked(k).popOffset = offset
	return nil
}

// Checkpoint describes one pop of one queue.
type Checkpoint struct {
	Key QueueKey
	// StartOffset is the queue offset the pop started reading at (the
	// ckQueueOffset of its receipt handles); at most Offsets[0].
	StartOffset   int64
	PopTime       int64   // ms epoch
	InvisibleTime int64   // ms
	Offsets       []int64 // ascending queue offsets handed out, at most MaxBatch; may be empty
	NextOffset    int64   // the queue's pop offset after this pop; < 0 leaves it unchanged
}

// checkOffsets: ascending, at or after start, within 2^32 of it.
func checkOffsets(start int64, offs []int64) error {
	if len(offs) > MaxBatch {
		return fmt.Errorf("pop: %d offsets in one checkpoint, at most %d", len(offs), MaxBatch)
	}
	for i, o := range offs {
		if o < start || o-start > 1<<32-1 || i > 0 && o <= offs[i-1] {
			return fmt.Errorf("pop: checkpoint offsets %v not ascending within 2^32 of %d", offs, start)
		}
	}
	return nil
}

// AddCheckpoint records a pop: the messages at ck.Offsets are invisible to
// the group until PopTime+InvisibleTime, and the queue's pop offset becomes
// ck.NextOffset. The checkpoint is named by (Key, Offsets[0], PopTime), the
// ckQueueOffset and popTime of its receipt handles; a second checkpoint
// with the same name is refused.
func (s *Store) AddCheckpoint(ck Checkpoint) (err error) {
	var seq uint64
	defer s.commit(&seq, &err)
	if len(ck.Offsets) == 0 {
		ck.StartOffset = max(ck.StartOffset, 0)
	}
	if err := checkOffsets(ck.StartOffset, ck.Offsets); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.readOnly { // before queueLocked: a refused change leaves no trace
		return ErrReadOnly
	}
	q := s.queueLocked(ck.Key)
	if len(ck.Offsets) > 0 {
		if _, dup := q.cks[ckKey{ck.StartOffset, ck.PopTime}]; dup {
			return fmt.Errorf("pop: checkpoint %v@%d pop time %d exists", ck.Key, ck.StartOffset, ck.PopTime)
		}
	}
	e := enc{b: make([]byte, 0, 64+len(ck.Key.Group)+len(ck.Key.Topic)+2*len(ck.Offsets))}
	encodeCheckpoint(&e, ck.Key, ck.StartOffset, ck.PopTime, ck.InvisibleTime, ck.NextOffset, ck.Offsets, 0)
	if err := s.appendLocked(&e, &seq); err != nil {
		return err
	}
	s.applyCheckpointLocked(q, ck.StartOffset, ck.PopTime, ck.InvisibleTime, ck.NextOffset, ck.Offsets, 0)
	return nil
}

func encodeCheckpoint(e *enc, k QueueKey, start, popTime, invisible, next int64, offs []int64, acked uint32) {
	e.byte(recCheckpoint)
	e.key(k)
	e.v(start)
	e.v(popTime)
	e.v(invisible)
	e.v(next)
	e.u(uint64(len(offs)))
	for _, o := range offs {
		e.u(uint64(o - start))
	}
	e.u(uint64(acked))
}

// applyCheckpointLocked installs a checkpoint. REQUIRES: s.mu held.
func (s *Store) applyCheckpointLocked(q *queue, start, popTime, invisible, next int64, offs []int64, acked uint32) {
	if next >= 0 {
		q.popOffset = next
	}
	if len(offs) == 0 {
		return
	}
	c := &checkpoint{q: q, start: start, popTime: popTime, invis: uint32(min(max(invisible, 0), math.MaxUint32)),
		n: uint8(len(offs)), acked: acked, heapIdx: -1}
	if offs[0] != start || offs[len(offs)-1]-start != int64(len(offs)-1) {
		d := make([]uint32, len(offs))
		for i, o := range offs {
			d[i] = uint32(o - start)
		}
		c.diffs = &d
	}
	if c.allAcked() {
		return
	}
	if q.cks == nil {
		q.cks = make(map[ckKey]*checkpoint, 1)
	}
	if old := q.cks[ckKey{c.start, popTime}]; old != nil {
		s.dropLocked(old)
	}
	q.cks[ckKey{c.start, popTime}] = c
	heap.Push(&s.deadline, c)
	s.inFlight += int64(c.unacked())
}

// dropLocked removes a checkpoint. REQUIRES: s.mu held.
func (s *Store) dropLocked(c *checkpoint) {
	delete(c.q.cks, ckKey{c.start, c.popTime})
	if c.heapIdx >= 0 {
		heap.Remove(&s.deadline, int(c.heapIdx))
	}
	s.inFlight -= int64(c.unacked())
}

// ackLocked sets the bit of offset in c. REQUIRES: s.mu held.
func (s *Store) ackLocked(c *checkpoint, i int) {
	if c.acked&(1<<i) != 0 {
		return
	}
	c.acked |= 1 << i
	s.inFlight--
	if c.allAcked() {
		s.dropLocked(c) // subtracts unacked() == 0
	}
}

// AckResult says what an ack found.
type AckResult int

const (
	// Acked: the message was in flight and is now acked.
	Acked AckResult = iota
	// AlreadyAcked: the checkpoint exists but the message was acked before.
	AlreadyAcked
	// NotFound: no such checkpoint (acked in full, revived after its
	// invisible time, or never issued), or the offset is not in it.
	NotFound
)

// Ack acks the message at offset of the checkpoint (k, ckStart, popTime).
// Nothing is written unless the message was in flight.
func (s *Store) Ack(k QueueKey, ckStart, popTime, offset int64) (_ AckResult, err error) {
	var seq uint64
	defer s.commit(&seq, &err)
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[k]
	if q == nil {
		return NotFound, nil
	}
	c := q.cks[ckKey{ckStart, popTime}]
	if c == nil {
		return NotFound, nil
	}
	i := c.index(offset)
	if i < 0 {
		return NotFound, nil
	}
	if c.acked&(1<<i) != 0 {
		return AlreadyAcked, nil
	}
	e := enc{b: make([]byte, 0, 64)}
	e.byte(recAck)
	e.key(k)
	e.v(ckStart)
	e.v(popTime)
	e.v(offset)
	if err := s.appendLocked(&e, &seq); err != nil {
		return NotFound, err
	}
	s.ackLocked(c, i)
	return Acked, nil
}

// AckBatch acks several messages of one checkpoint with a single record
// (one ack record for one message, else one ack-bits record) and returns
// how many were in flight.
func (s *Store) AckBatch(k QueueKey, ckStart, popTime int64, offsets []int64) (_ int, err error) {
	var seq uint64
	defer s.commit(&seq, &err)
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[k]
	if q == nil {
		return 0, nil
	}
	c := q.cks[ckKey{ckStart, popTime}]
	if c == nil {
		return 0, nil
	}
	var bits uint32
	n, last := 0, int64(0)
	for _, off := range offsets {
		i := c.index(off)
		if i < 0 || (c.acked|bits)&(1<<i) != 0 {
			continue
		}
		bits |= 1 << i
		n, last = n+1, off
	}
	if n == 0 {
		return 0, nil
	}
	e := enc{b: make([]byte, 0, 32+len(k.Group)+len(k.Topic))}
	if n == 1 {
		e.byte(recAck)
		e.key(k)
		e.v(ckStart)
		e.v(popTime)
		e.v(last)
	} else {
		e.byte(recAckBits)
		e.key(k)
		e.v(ckStart)
		e.v(popTime)
		e.u(uint64(bits))
	}
	if err := s.appendLocked(&e, &seq); err != nil {
		return 0, err
	}
	s.ackBitsLocked(c, bits)
	return n, nil
}

// ackBitsLocked acks every message of c whose bit is set in bits (bits
// beyond c's count are ignored). REQUIRES: s.mu held.
func (s *Store) ackBitsLocked(c *checkpoint, bits uint32) {
	for i := 0; i < int(c.n); i++ {
		if bits&(1<<i) != 0 && c.acked&(1<<i) == 0 {
			s.ackLocked(c, i)
			if c.allAcked() {
				return // dropped
			}
		}
	}
}

// ChangeInvisible acks offset in the checkpoint (k, ckStart, popTime) and
// puts it in a new one-message checkpoint (k, offset, newPopTime') that is
// invisible until newPopTime'+newInvisible, in one record, and returns
// newPopTime': newPopTime, or the next free millisecond when a checkpoint
// of that name exists. It returns NotFound or AlreadyAcked (and changes
// nothing) when the message is not in flight there.
func (s *Store) ChangeInvisible(k QueueKey, ckStart, popTime, offset, newPopTime, newInvisible int64) (_ AckResult, _ int64, err error) {
	var seq uint64
	defer s.commit(&seq, &err)
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[k]
	if q == nil {
		return NotFound, 0, nil
	}
	c := q.cks[ckKey{ckStart, popTime}]
	if c == nil {
		return NotFound, 0, nil
	}
	i := c.index(offset)
	if i < 0 {
		return NotFound, 0, nil
	}
	if c.acked&(1<<i) != 0 {
		return AlreadyAcked, 0, nil
	}
	for q.cks[ckKey{offset, newPopTime}] != nil {
		newPopTime++
	}
	e := enc{b: make([]byte, 0, 80)}
	e.byte(recChange)
	e.key(k)
	e.v(ckStart)
	e.v(popTime)
	e.v(offset)
	e.v(newPopTime)
	e.v(newInvisible)
	if err := s.appendLocked(&e, &seq); err != nil {
		return NotFound, 0, err
	}
	s.applyChangeLocked(q, c, i, offset, newPopTime, newInvisible)
	return Acked, newPopTime, nil
}

// applyChangeLocked: REQUIRES s.mu held.
func (s *Store) applyChangeLocked(q *queue, c *checkpoint, i int, offset, newPopTime, newInvisible int64) {
	s.ackLocked(c, i)
	s.applyCheckpointLocked(q, offset, newPopTime, newInvisible, -1, []int64{offset}, 0)
}

// Expired is a checkpoint whose invisible time passed, with the offsets of
// its messages that were not acked.
type Expired struct {
	Key           QueueKey
	StartOffset   int64
	PopTime       int64
	InvisibleTime int64
	Offsets       []int64
}

// TakeExpired returns up to max checkpoints whose deadline is at or before
// now, oldest first, and marks them reviving: they are not returned again
// until Revived removes them or a restart forgets the mark (then they are
// re-delivered again: at least once). Acks still apply to them meanwhile.
func (s *Store) TakeExpired(now int64, max int) []Expired {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Expired
	for len(out) < max && len(s.deadline) > 0 && s.deadline[0].deadline() <= now {
		c := heap.Pop(&s.deadline).(*checkpoint)
		c.reviving = true
		ex := Expired{Key: c.q.key, StartOffset: c.start, PopTime: c.popTime, InvisibleTime: int64(c.invis)}
		for i := 0; i < int(c.n); i++ {
			if c.acked&(1<<i) == 0 {
				ex.Offsets = append(ex.Offsets, c.offset(i))
			}
		}
		out = append(out, ex)
	}
	return out
}

// NextDeadline returns the earliest deadline of a checkpoint not yet taken
// (ms epoch), or -1 when there is none.
func (s *Store) NextDeadline() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.deadline) == 0 {
		return -1
	}
	return s.deadline[0].deadline()
}

// Revived records that the expired checkpoint's messages were re-delivered
// (written to the retry topic or the DLQ) and forgets it.
func (s *Store) Revived(ex Expired) (err error) {
	var seq uint64
	defer s.commit(&seq, &err)
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[ex.Key]
	if q == nil {
		return nil
	}
	c := q.cks[ckKey{ex.StartOffset, ex.PopTime}]
	if c == nil {
		return nil
	}
	e := enc{b: make([]byte, 0, 64)}
	e.byte(recRevived)
	e.key(ex.Key)
	e.v(ex.StartOffset)
	e.v(ex.PopTime)
	if err := s.appendLocked(&e, &seq); err != nil {
		return err
	}
	s.dropLocked(c)
	return nil
}

// Release puts an expired checkpoint back for a later TakeExpired (its
// re-delivery failed).
func (s *Store) Release(ex Expired) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.queues[ex.Key]; q != nil {
		if c := q.cks[ckKey{ex.StartOffset, ex.PopTime}]; c != nil && c.heapIdx < 0 {
			c.reviving = false
			heap.Push(&s.deadline, c)
		}
	}
}

// InFlight reports whether the message at offset of the checkpoint
// (k, ckStart, popTime) is popped and neither acked nor revived.
func (s *Store) InFlight(k QueueKey, ckStart, popTime, offset int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[k]
	if q == nil {
		return false
	}
	c := q.cks[ckKey{ckStart, popTime}]
	if c == nil {
		return false
	}
	i := c.index(offset)
	return i >= 0 && c.acked&(1<<i) == 0
}

// LowWatermarks calls fn, outside the lock, for every queue with a pop
// offset whose low watermark changed since the previous call (every such
// queue on the first): the lowest offset still to be consumed there (its
// oldest unacked popped message, else its pop offset). FIFO queues report
// their commit offset. A consumer that knows nothing else (a new master
// after a failover) starts there and loses nothing. Only changes are
// handed out because the broker calls this every second: with 10^5 lite
// queues popped, re-committing every unchanged mark cost an idle broker
// about 12 % of a core.
func (s *Store) LowWatermarks(fn func(k QueueKey, offset int64)) {
	type mark struct {
		k   QueueKey
		off int64
	}
	s.mu.Lock()
	var marks []mark
	for k, q := range s.queues {
		if q.order != nil && q.order.commit >= 0 {
			if q.order.commit != q.reported {
				q.reported = q.order.commit
				marks = append(marks, mark{k, q.order.commit})
			}
			continue
		}
		if q.popOffset < 0 {
			continue
		}
		low := q.popOffset
		for _, c := range q.cks {
			for i := 0; i < int(c.n); i++ {
				if c.acked&(1<<i) == 0 {
					low = min(low, c.offset(i))
					break
				}
			}
		}
		if low != q.reported {
			q.reported = low
			marks = append(marks, mark{k, low})
		}
	}
	s.mu.Unlock()
	for _, m := range marks {
		fn(m.k, m.off)
	}
}

// Drop kinds of the drop record (doc.go). Part of the on-disk format.
const (
	dropTopic      byte = 1
	dropGroup      byte = 2
	dropGroupTopic byte = 3 // name is group + "\x00" + topic
)

// DropTopic forgets the state of every group on topic (the topic was
// deleted): pop offsets, checkpoints (never revived) and FIFO blocks. It
// returns the groups that had state there. The drop is one record, so a
// restart does not bring the state back, and a topic created again with
// the name starts from nothing.
func (s *Store) DropTopic(topic string) ([]string, error) {
	return s.drop(dropTopic, topic)
}

// DropGroup forgets the group's state on every topic (the subscription
// group was deleted) and returns the topics it had state on.
func (s *Store) DropGroup(group string) ([]string, error) {
	return s.drop(dropGroup, group)
}

// DropGroupTopic forgets one group's state on one topic (pop offsets,
// checkpoints, FIFO blocks), so its next pop starts from the consumer
// offset table: a lite subscription's offset reset (OffsetOption) uses it.
// It reports whether the group had state there.
func (s *Store) DropGroupTopic(group, topic string) (bool, error) {
	other, err := s.drop(dropGroupTopic, group+"\x00"+topic)
	return len(other) > 0, err
}

func (s *Store) drop(kind byte, name string) (other []string, err error) {
	var seq uint64
	defer s.commit(&seq, &err)
	s.mu.Lock()
	defer s.mu.Unlock()
	match := s.matchingLocked(kind, name)
	if len(match) == 0 {
		return nil, nil
	}
	seen := map[string]bool{}
	for _, q := range match {
		if x, _ := dropMatch(kind, name, q.key); !seen[x] {
			seen[x] = true
			other = append(other, x)
		}
	}
	e := enc{b: make([]byte, 0, 8+len(name))}
	e.byte(recDrop)
	e.byte(kind)
	e.s(name)
	if err := s.appendLocked(&e, &seq); err != nil {
		return nil, err
	}
	s.applyDropLocked(kind, name)
	slices.Sort(other)
	return other, nil
}

// GroupsOf returns the groups with state on topic.
func (s *Store) GroupsOf(topic string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, q := range s.byTopic[topic] {
		if !slices.Contains(out, q.key.Group) {
			out = append(out, q.key.Group)
		}
	}
	return out
}

// dropMatch reports whether k falls under the drop and returns the other
// half of its name (the group of a topic drop, the topic of a group drop).
func dropMatch(kind byte, name string, k QueueKey) (string, bool) {
	switch {
	case kind == dropTopic && k.Topic == name:
		return k.Group, true
	case kind == dropGroup && k.Group == name:
		return k.Topic, true
	case kind == dropGroupTopic && len(name) == len(k.Group)+1+len(k.Topic) &&
		name[:len(k.Group)] == k.Group && name[len(k.Group)] == 0 && name[len(k.Group)+1:] == k.Topic:
		return k.Topic, true
	}
	return "", false
}

// applyDropLocked removes the matching queues. REQUIRES: s.mu held.
func (s *Store) applyDropLocked(kind byte, name string) {
	for _, q := range s.matchingLocked(kind, name) {
		k := q.key
		for _, c := range q.cks {
			s.dropLocked(c)
		}
		delete(s.queues, k)
		list := slices.DeleteFunc(s.byTopic[k.Topic], func(x *queue) bool { return x == q })
		if len(list) == 0 {
			delete(s.byTopic, k.Topic)
		} else {
			s.byTopic[k.Topic] = list
		}
		if v, ok := s.popLocks.Load(k); ok && !v.(*atomic.Bool).Load() {
			s.popLocks.Delete(k)
		}
	}
}

// Stats is a snapshot of the store's size.
type Stats struct {
	Queues      int
	Checkpoints int
	InFlight    int64 // popped messages neither acked nor revived
	LogBytes    int64
}

// Stats returns the current sizes.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Queues: len(s.queues), InFlight: s.inFlight}
	for _, q := range s.queues {
		st.Checkpoints += len(q.cks)
	}
	if s.log != nil {
		st.LogBytes = s.log.size
	}
	return st
}

// ckHeap orders checkpoints by deadline (container/heap).
type ckHeap []*checkpoint

func (h ckHeap) Len() int           { return len(h) }
func (h ckHeap) Less(i, j int) bool { return h[i].deadline() < h[j].deadline() }
func (h ckHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx, h[j].heapIdx = int32(i), int32(j)
}
func (h *ckHeap) Push(x any) {
	c := x.(*checkpoint)
	c.heapIdx = int32(len(*h))
	*h = append(*h, c)
}
func (h *ckHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	c.heapIdx = -1
	return c
}
