package pop

import "fmt"

// FIFO (orderly) pops, RocketMQ's ConsumerOrderInfoManager: a queue holds
// at most one batch per group; the queue is blocked for the group until
// every message of the batch is acked or visible again. The commit offset
// advances only past messages acked in sequence, so after an expiry the
// next pop starts again at the first unacked message, with its delivery
// count increased. No checkpoint is revived: re-delivery is the next pop.

// orderQueue is one queue's FIFO state. Guarded by Store.mu.
type orderQueue struct {
	commit    int64 // every offset below is acked; -1 = never popped in order
	popTime   int64 // of the current batch
	next      int64 // pop offset after the batch (its scan end)
	attemptID string
	msgs      []orderMsg // the current batch, ascending offsets
}

type orderMsg struct {
	offset      int64
	nextVisible int64 // ms epoch
	deliveries  int32 // including the current one
	acked       bool
}

// OrderView is a queue's FIFO state as a pop needs it.
type OrderView struct {
	// Commit is where the next pop starts (every offset below is acked);
	// -1 when the group never popped the queue in order.
	Commit int64
	// Blocked: the current batch has a message neither acked nor visible.
	Blocked bool
	// AttemptID and PopTime of the current batch.
	AttemptID string
	PopTime   int64
	// Pending are the current batch's unacked offsets (ascending), for a
	// retry with the same attempt id.
	Pending []int64
	// Acked are the current batch's acked offsets at or past Commit: a new
	// batch skips them.
	Acked []int64
}

// OrderView returns k's FIFO state at now.
func (s *Store) OrderView(k QueueKey, now int64) OrderView {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := OrderView{Commit: -1}
	q := s.queues[k]
	if q == nil || q.order == nil {
		return v
	}
	o := q.order
	v.Commit, v.AttemptID, v.PopTime = o.commit, o.attemptID, o.popTime
	for _, m := range o.msgs {
		switch {
		case m.acked:
			if m.offset >= o.commit {
				v.Acked = append(v.Acked, m.offset)
			}
		default:
			v.Pending = append(v.Pending, m.offset)
			if m.nextVisible > now {
				v.Blocked = true
			}
		}
	}
	return v
}

// OrderBatch describes one orderly pop of one queue.
type OrderBatch struct {
	Key           QueueKey
	PopTime       int64
	InvisibleTime int64
	AttemptID     string
	Offsets       []int64 // ascending, at most MaxBatch; may be empty
	NextOffset    int64   // offset after the scanned range
}

// OrderPop records a new batch for k, replacing the previous one, and
// returns each message's delivery count (1 for a first delivery; one more
// than before for a message of the previous batch, the same when the batch
// repeats the previous one's attempt id). When the batch is
// empty the commit offset moves to NextOffset if nothing before it is
// pending.
func (s *Store) OrderPop(b OrderBatch) (_ []int32, err error) {
	var seq uint64
	defer s.commit(&seq, &err)
	start := int64(0)
	if len(b.Offsets) > 0 {
		start = b.Offsets[0]
	}
	if err := checkOffsets(start, b.Offsets); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.readOnly { // before queueLocked: a refused change leaves no trace
		return nil, ErrReadOnly
	}
	q := s.queueLocked(b.Key)
	deliveries := make([]int32, len(b.Offsets))
	var prev []orderMsg
	again := int32(1) // a retry of the same attempt (a lost response) is not a new delivery
	if q.order != nil {
		prev = q.order.msgs
		if b.AttemptID != "" && b.AttemptID == q.order.attemptID {
			again = 0
		}
	}
	for i, off := range b.Offsets {
		deliveries[i] = 1
		for _, m := range prev {
			if m.offset == off {
				deliveries[i] = max(m.deliveries+again, 1)
			}
		}
	}
	e := enc{b: make([]byte, 0, 96)}
	encodeOrderPop(&e, b, deliveries)
	if err := s.appendLocked(&e, &seq); err != nil {
		return nil, err
	}
	s.applyOrderPopLocked(q, b, deliveries)
	return deliveries, nil
}

func encodeOrderPop(e *enc, b OrderBatch, deliveries []int32) {
	e.byte(recOrderPop)
	e.key(b.Key)
	e.v(b.PopTime)
	e.v(b.InvisibleTime)
	e.v(b.NextOffset)
	e.s(b.AttemptID)
	e.u(uint64(len(b.Offsets)))
	if len(b.Offsets) > 0 {
		e.v(b.Offsets[0])
	}
	for i, o := range b.Offsets {
		e.u(uint64(o - b.Offsets[0]))
		e.u(uint64(deliveries[i]))
	}
}

// applyOrderPopLocked: REQUIRES s.mu held.
func (s *Store) applyOrderPopLocked(q *queue, b OrderBatch, deliveries []int32) {
	o := q.order
	if o == nil {
		o = &orderQueue{commit: -1}
		q.order = o
	}
	o.popTime, o.next, o.attemptID = b.PopTime, b.NextOffset, b.AttemptID
	o.msgs = o.msgs[:0]
	for i, off := range b.Offsets {
		o.msgs = append(o.msgs, orderMsg{offset: off, nextVisible: b.PopTime + b.InvisibleTime, deliveries: deliveries[i]})
	}
	if len(b.Offsets) == 0 {
		o.commit = max(o.commit, b.NextOffset)
	} else if o.commit < 0 || o.commit > b.Offsets[0] {
		o.commit = b.Offsets[0]
	}
	s.advanceOrderLocked(o)
}

// advanceOrderLocked moves commit past the acked prefix of the batch.
// REQUIRES: s.mu held.
func (s *Store) advanceOrderLocked(o *orderQueue) {
	for _, m := range o.msgs {
		if !m.acked {
			o.commit = max(o.commit, m.offset)
			return
		}
	}
	if len(o.msgs) > 0 {
		o.commit = max(o.commit, o.next)
	}
}

// OrderAck acks offset of k's batch popped at popTime and returns the new
// commit offset. NotFound: no such batch (popTime differs: an older batch)
// or offset not in it; AlreadyAcked: acked before or below the commit
// offset.
func (s *Store) OrderAck(k QueueKey, popTime, offset int64) (_ AckResult, _ int64, err error) {
	var seq uint64
	defer s.commit(&seq, &err)
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[k]
	if q == nil || q.order == nil {
		return NotFound, -1, nil
	}
	o := q.order
	if offset < o.commit {
		return AlreadyAcked, o.commit, nil
	}
	if o.popTime != popTime {
		return NotFound, o.commit, nil
	}
	i := orderIndex(o, offset)
	if i < 0 {
		return NotFound, o.commit, nil
	}
	if o.msgs[i].acked {
		return AlreadyAcked, o.commit, nil
	}
	e := enc{b: make([]byte, 0, 64)}
	e.byte(recOrderAck)
	e.key(k)
	e.v(popTime)
	e.v(offset)
	if err := s.appendLocked(&e, &seq); err != nil {
		return NotFound, o.commit, err
	}
	o.msgs[i].acked = true
	s.advanceOrderLocked(o)
	return Acked, o.commit, nil
}

func orderIndex(o *orderQueue, offset int64) int {
	for i := range o.msgs {
		if o.msgs[i].offset == offset {
			return i
		}
	}
	return -1
}

// OrderChange moves the next visible time of offset in k's batch popped at
// popTime (the pop time stays: a FIFO handle keeps its checkpoint).
func (s *Store) OrderChange(k QueueKey, popTime, offset, nextVisible int64) (_ AckResult, err error) {
	var seq uint64
	defer s.commit(&seq, &err)
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[k]
	if q == nil || q.order == nil || q.order.popTime != popTime {
		return NotFound, nil
	}
	o := q.order
	i := orderIndex(o, offset)
	if i < 0 {
		return NotFound, nil
	}
	if o.msgs[i].acked {
		return AlreadyAcked, nil
	}
	e := enc{b: make([]byte, 0, 64)}
	e.byte(recOrderChange)
	e.key(k)
	e.v(popTime)
	e.v(offset)
	e.v(nextVisible)
	if err := s.appendLocked(&e, &seq); err != nil {
		return NotFound, err
	}
	o.msgs[i].nextVisible = nextVisible
	return Acked, nil
}

// OrderDeliveries returns the delivery count of offset in k's current
// batch, or 0.
func (s *Store) OrderDeliveries(k QueueKey, offset int64) int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.queues[k]; q != nil && q.order != nil {
		if i := orderIndex(q.order, offset); i >= 0 {
			return q.order.msgs[i].deliveries
		}
	}
	return 0
}

// orderReplay applies an order record during recovery. REQUIRES s.mu held.
func (s *Store) orderReplay(typ byte, d *dec) error {
	k := d.key()
	q := s.queueLocked(k)
	switch typ {
	case recOrderPop:
		b := OrderBatch{Key: k, PopTime: d.v(), InvisibleTime: d.v(), NextOffset: d.v(), AttemptID: d.s()}
		n := d.u()
		if n > MaxBatch {
			return fmt.Errorf("%w: order batch of %d", ErrCorrupt, n)
		}
		first := int64(0)
		if n > 0 {
			first = d.v()
		}
		deliveries := make([]int32, n)
		for i := range deliveries {
			b.Offsets = append(b.Offsets, first+int64(d.u()))
			deliveries[i] = int32(d.u())
		}
		if d.err != nil {
			return d.err
		}
		s.applyOrderPopLocked(q, b, deliveries)
	case recOrderAck, recOrderChange:
		popTime, offset := d.v(), d.v()
		var nextVisible int64
		if typ == recOrderChange {
			nextVisible = d.v()
		}
		if d.err != nil {
			return d.err
		}
		o := q.order
		if o == nil || o.popTime != popTime {
			return nil
		}
		if i := orderIndex(o, offset); i >= 0 {
			if typ == recOrderAck {
				o.msgs[i].acked = true
				s.advanceOrderLocked(o)
			} else {
				o.msgs[i].nextVisible = nextVisible
			}
		}
	case recOrderCommit:
		c := d.v()
		if d.err != nil {
			return d.err
		}
		if q.order == nil {
			q.order = &orderQueue{commit: -1}
		}
		q.order.commit = c
	}
	return d.err
}
