package timer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/run"
	"github.com/apogeemq/apogee/internal/store"
)

// consumerGroup is the group name the enqueue service reads the timer
// topic with.
const consumerGroup = "rmq_sys_timer_consumer"

// slot is one occupied wheel slot: the head of its record list.
type slot struct {
	last int64 // position of the newest record; records link backwards
	num  int32 // records in this list
}

// Timer is the timer-message store. New opens nothing; Start recovers and
// starts the enqueue, dequeue and flush goroutines; Close stops them,
// syncs and writes the checkpoint. A Timer cannot be restarted.
type Timer struct {
	cfg    Config
	st     *store.Store
	logger *slog.Logger

	// mu guards the wheel, the log and the progress fields below. It is
	// never held while putting messages or calling the store.
	mu    sync.Mutex
	log   *timerLog
	wheel map[int64]slot // slot time (ms) -> list head
	// extra holds further lists of a slot. Only a restart with a changed
	// timerPrecisionMs produces them: records of several old slots then
	// fall into one slot of the new grid. Usually empty.
	extra       map[int64][]slot
	pending     int64 // records linked in the wheel
	readMs      int64 // next slot the dequeue goroutine takes
	doneMs      int64 // first slot not fully delivered (<= readMs)
	queueOffset int64 // next timer-topic unit to enqueue
	flushedPos  int64 // timer log synced and checkpointed up to here
	inFlight    int64 // records of the slot being delivered
	stalls      int   // enqueue rounds without progress; enqueue goroutine only

	enqueued  atomic.Int64
	delivered atomic.Int64
	dropped   atomic.Int64
	cancelled atomic.Int64

	wake chan struct{} // capacity 1: a unit arrived in the timer topic
	// routines owns the enqueue, dequeue and flush goroutines; quit is its
	// Done channel. A Close racing Start stops it first, so Start's Go
	// refuses instead of adding to a group being waited on.
	routines *run.Group
	quit     <-chan struct{}
	state    atomic.Int32 // 0 new, 1 running, 2 closed
	closed   sync.Once
}

// New validates cfg; it opens nothing.
func New(cfg Config, st *store.Store, logger *slog.Logger) (*Timer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if st == nil {
		return nil, errors.New("timer: a store is required")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	routines := run.NewGroup("timer")
	return &Timer{
		cfg:      cfg,
		st:       st,
		logger:   logger.With("component", "timer"),
		wheel:    make(map[int64]slot),
		wake:     make(chan struct{}, 1),
		routines: routines,
		quit:     routines.Done(),
	}, nil
}

// Start loads the checkpoint, rebuilds the wheel from the timer log and
// starts the services. The store must be started.
func (t *Timer) Start() error {
	if !t.state.CompareAndSwap(0, 1) {
		return errors.New("timer: already started or closed")
	}
	cp, ok, err := loadCheckpoint(t.cfg.CheckpointPath)
	if err != nil {
		return err
	}
	if !ok {
		cp = checkpoint{doneMs: t.alignedNow()}
	}
	l, err := openLog(t.cfg.Dir, t.cfg.LogFileSize, cp.flushPos)
	if err != nil {
		return err
	}
	t.log = l
	t.flushedPos = cp.flushPos
	// The grid of slots follows the current precision (it may have changed
	// since the checkpoint).
	p := t.cfg.PrecisionMs
	t.doneMs, t.readMs, t.queueOffset = cp.doneMs-cp.doneMs%p, cp.doneMs-cp.doneMs%p, cp.queueOffset
	start := time.Now()
	lists := map[int64]slot{} // record slot time -> its list, as written
	err = l.scan(cp.flushPos, func(pos int64, r record) {
		if seg := l.segmentFor(pos); seg != nil {
			seg.maxSlot = max(seg.maxSlot, r.slotMs)
		}
		if r.slotMs < cp.doneMs {
			return
		}
		s := lists[r.slotMs]
		lists[r.slotMs] = slot{last: pos, num: s.num + 1}
		t.pending++
	})
	if err != nil {
		l.close()
		return err
	}
	for slotMs, list := range lists {
		key := slotMs - slotMs%p
		if _, ok := t.wheel[key]; ok {
			if t.extra == nil {
				t.extra = map[int64][]slot{}
			}
			t.extra[key] = append(t.extra[key], list)
		} else {
			t.wheel[key] = list
		}
	}
	t.logger.Info("timer started", "pending", t.pending, "slots", len(t.wheel), "doneMs", cp.doneMs,
		"queueOffset", cp.queueOffset, "logBytes", l.diskBytes(), "rebuild", time.Since(start))
	t.st.AddArrivalNotifier(func(topic string, _ int32, _ int64, _ int64, _ int64) {
		if topic == names.TopicTimerWheel {
			select {
			case t.wake <- struct{}{}:
			default:
			}
		}
	})
	t.routines.Go("timer-enqueue", func(context.Context) { t.runEnqueue() })
	t.routines.Go("timer-dequeue", func(context.Context) { t.runDequeue() })
	t.routines.Every("timer-flush", t.cfg.FlushInterval, func(context.Context) {
		if err := t.flush(); err != nil {
			t.logger.Error("timer: flush failed", "err", err)
		}
	})
	return nil
}

// Close stops the services, syncs the log and writes the checkpoint. It is
// idempotent and returns after every goroutine exited.
func (t *Timer) Close() error {
	var err error
	t.closed.Do(func() {
		if t.state.Swap(2) != 1 {
			t.routines.Stop()
			return
		}
		t.routines.Close()
		if t.log == nil { // Start failed before opening the log
			return
		}
		err = t.flush()
		t.mu.Lock()
		t.log.close()
		t.mu.Unlock()
		t.logger.Info("timer stopped", "pending", t.pending)
	})
	return err
}

func (t *Timer) alignedNow() int64 {
	now := t.cfg.now().UnixMilli()
	return now - now%t.cfg.PrecisionMs
}

// runEnqueue reads the timer topic's consume queue and links every unit
// into the wheel. It wakes on arrivals and every 100 ms.
func (t *Timer) runEnqueue() {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		for t.enqueueBatch() {
			select {
			case <-t.quit:
				return
			default:
			}
		}
		select {
		case <-t.quit:
			return
		case <-t.wake:
		case <-tick.C:
		}
	}
}

// enqueueBatch enqueues one GetMessage worth of units; it reports whether
// there may be more.
func (t *Timer) enqueueBatch() bool {
	t.mu.Lock()
	offset := t.queueOffset
	t.mu.Unlock()
	res := t.st.GetMessage(consumerGroup, names.TopicTimerWheel, 0, offset, 64, 0, nil)
	switch res.Status {
	case store.Found:
	case store.OffsetTooSmall, store.OffsetOverflowBadly:
		t.logger.Warn("timer queue offset corrected", "offset", offset, "nextBeginOffset", res.NextBeginOffset, "status", res.Status.String())
		t.mu.Lock()
		t.queueOffset = res.NextBeginOffset
		t.mu.Unlock()
		return false
	default:
		return false
	}
	nowMs := t.cfg.now().UnixMilli()
	t.mu.Lock()
	defer t.mu.Unlock()
	gapAt := int64(-1) // first returned offset past a unit the store did not return
	for _, raw := range res.Messages {
		m, _, err := message.DecodeStored(raw, message.DecodeOptions{SkipBody: true})
		if err != nil {
			t.logger.Warn("timer: undecodable unit skipped", "offset", t.queueOffset, "err", err)
			t.queueOffset++
			continue
		}
		if m.QueueOffset < t.queueOffset { // already enqueued
			continue
		}
		if m.QueueOffset > t.queueOffset {
			// The store skipped a unit (not readable yet, or a hole):
			// never step over a timer; ask again from the missing one.
			gapAt = m.QueueOffset
			break
		}
		slotMs, err := strconv.ParseInt(m.Properties[message.PropertyTimerOutMS], 10, 64)
		if err != nil {
			slotMs = t.readMs // no usable time: deliver at once
		}
		magic := int32(recordMagic)
		if m.Properties[message.PropertyTimerDelUniqKey] != "" {
			magic |= magicDelete
		}
		if err := t.addLocked(nowMs, slotMs, magic, m.CommitLogOffset, m.StoreSize, int32(message.TagsHashCode(m.Properties[message.PropertyRealTopic])), m.QueueOffset); err != nil {
			t.logger.Error("timer: append to the timer log failed; retrying", "err", err)
			return false
		}
		t.queueOffset = m.QueueOffset + 1
	}
	if t.queueOffset > offset {
		t.stalls = 0
		return true
	}
	// No progress: the unit at queueOffset was not returned. Wait for it
	// (it is usually just not readable yet); after a few seconds treat it
	// as a hole and step over it, loudly.
	t.stalls++
	if t.stalls < maxEnqueueStalls {
		return false
	}
	next := res.NextBeginOffset
	if gapAt >= 0 {
		next = gapAt
	}
	if next > t.queueOffset {
		t.logger.Warn("timer: timer-topic units never readable, skipped", "from", t.queueOffset, "to", next)
		t.queueOffset = next
	}
	t.stalls = 0
	return false
}

// maxEnqueueStalls is how many enqueue rounds (100 ms apart) a missing
// timer-topic unit is waited for before it is skipped.
const maxEnqueueStalls = 50

// addLocked appends a record and links it into its slot. A slot already
// taken by the dequeue goroutine is replaced by the next one to fire.
// REQUIRES: t.mu held.
func (t *Timer) addLocked(nowMs, slotMs int64, magic int32, phyOffset int64, size int32, topicHash int32, queueOffset int64) error {
	slotMs = max(slotMs-slotMs%t.cfg.PrecisionMs, t.readMs) // on the grid, never behind the reader
	s := t.wheel[slotMs]
	prev := int64(-1)
	if s.num > 0 {
		prev = s.last
	}
	r := record{magic: magic, prevPos: prev, writeMs: nowMs, slotMs: slotMs, phyOffset: phyOffset, msgSize: size,
		topicHash: topicHash, queueOffset: queueOffset}
	pos, err := t.log.append(&r)
	if err != nil {
		return err
	}
	t.wheel[slotMs] = slot{last: pos, num: s.num + 1}
	t.pending++
	t.enqueued.Add(1)
	return nil
}

// runDequeue fires due slots: slot s once now >= s + precision.
func (t *Timer) runDequeue() {
	period := min(100*time.Millisecond, time.Duration(t.cfg.PrecisionMs)*time.Millisecond/4)
	period = max(period, 5*time.Millisecond)
	run.Every(t.routines.Context(), period, func(ctx context.Context) {
		for ctx.Err() == nil && t.fireNext() {
		}
	})
}

// fireNext delivers the next due slot; it reports whether one was due.
func (t *Timer) fireNext() bool {
	nowMs := t.cfg.now().UnixMilli()
	p := t.cfg.PrecisionMs
	t.mu.Lock()
	if t.readMs+p > nowMs {
		t.mu.Unlock()
		return false
	}
	if len(t.wheel) == 0 {
		// Nothing pending: jump to the latest due slot at once.
		t.readMs = max(t.readMs, nowMs-nowMs%p-p)
		t.doneMs = t.readMs
	}
	slotMs := t.readMs
	s, ok := t.wheel[slotMs]
	lists := append([]slot{s}, t.extra[slotMs]...)
	delete(t.wheel, slotMs)
	delete(t.extra, slotMs)
	t.readMs = slotMs + p
	var recs []record
	if ok {
		total := int64(0)
		for _, list := range lists {
			total += int64(list.num)
		}
		recs = make([]record, 0, total)
		for _, list := range lists {
			pos := list.last
			for i := int32(0); i < list.num && pos >= 0; i++ {
				r, err := t.log.read(pos)
				if err != nil {
					t.logger.Error("timer: slot list broken; rest of the list skipped", "slotMs", slotMs, "pos", pos, "err", err)
					t.dropped.Add(int64(list.num - i))
					break
				}
				recs = append(recs, r)
				pos = r.prevPos
			}
		}
		t.pending -= total
		t.inFlight = int64(len(recs))
	}
	t.mu.Unlock()

	// Oldest first, in the order the timer topic received them (a list
	// runs newest to oldest).
	slices.SortFunc(recs, func(a, b record) int { return cmp.Compare(a.queueOffset, b.queueOffset) })
	complete := t.deliver(recs)
	t.mu.Lock()
	if complete {
		t.doneMs = slotMs + p
	}
	t.inFlight = 0
	t.mu.Unlock()
	return complete
}

// deliver puts every record's message back to its real topic and waits
// until all are stored; failed puts are retried every 100 ms until Close.
// It reports false when Close interrupted it.
func (t *Timer) deliver(recs []record) bool {
	const window = 512 // puts in flight at once
	recs, cancelled := t.splitCancels(recs)
	for len(recs) > 0 {
		n := min(len(recs), window)
		batch := recs[:n]
		recs = recs[n:]
		for len(batch) > 0 {
			failed := t.putAll(batch, cancelled)
			if len(failed) == 0 {
				break
			}
			batch = failed
			select {
			case <-t.quit:
				// Not delivered: the checkpoint's doneMs stays on this slot,
				// so the next start delivers it again.
				return false
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return true
}

// putAll puts the batch concurrently and returns the records whose put
// failed (and may be retried).
func (t *Timer) putAll(batch []record, cancelled map[string]bool) []record {
	type outcome struct {
		i  int
		ok bool
	}
	done := make(chan outcome, len(batch))
	issued := 0
	nowMs := t.cfg.now().UnixMilli()
	for i := range batch {
		out, err := t.convert(&batch[i], nowMs)
		if err == nil && cancelled[out.Topic+"+"+out.Properties[message.PropertyUniqClientMessageIDKeyidx]] {
			t.cancelled.Add(1)
			continue
		}
		if err != nil {
			t.logger.Warn("timer: message dropped", "commitLogOffset", batch[i].phyOffset, "err", err)
			t.dropped.Add(1)
			continue
		}
		issued++
		t.st.PutMessage(out, func(r store.PutResult) { done <- outcome{i, r.Status.Stored()} })
	}
	var failed []record
	for range issued {
		o := <-done
		if o.ok {
			t.delivered.Add(1)
		} else {
			failed = append(failed, batch[o.i])
		}
	}
	if len(failed) > 0 {
		t.logger.Warn("timer: delivery failed, retrying", "count", len(failed))
	}
	return failed
}

// splitCancels separates a slot's delete records from its timers and
// returns the keys (REAL_TOPIC+"+"+UNIQ_KEY) they cancel.
func (t *Timer) splitCancels(recs []record) ([]record, map[string]bool) {
	var cancelled map[string]bool
	kept := recs[:0:0]
	for i := range recs {
		if recs[i].magic&magicDelete == 0 {
			kept = append(kept, recs[i])
			continue
		}
		if cancelled == nil {
			cancelled = map[string]bool{}
			kept = make([]record, 0, len(recs))
			kept = append(kept, recs[:i]...)
		}
		raw, err := t.st.ReadRawByOffset(recs[i].phyOffset, recs[i].msgSize)
		if err != nil {
			t.logger.Warn("timer: cancel message unreadable", "commitLogOffset", recs[i].phyOffset, "err", err)
			continue
		}
		m, _, err := message.DecodeStored(raw, message.DecodeOptions{SkipBody: true})
		if err != nil {
			continue
		}
		if key := m.Properties[message.PropertyTimerDelUniqKey]; key != "" {
			cancelled[key] = true
		}
	}
	if cancelled == nil {
		return recs, nil
	}
	return kept, cancelled
}

// convert reads the parked message and builds the message for its real
// topic: REAL_TOPIC/REAL_QID restored and removed, TIMER_ENQUEUE_MS and
// TIMER_DEQUEUE_MS added (docs/broker.md §1.9).
func (t *Timer) convert(r *record, nowMs int64) (*message.Ext, error) {
	raw, err := t.st.ReadRawByOffset(r.phyOffset, r.msgSize)
	if err != nil {
		return nil, fmt.Errorf("timer: read parked message: %w", err)
	}
	m, _, err := message.DecodeStored(raw, message.DecodeOptions{})
	if err != nil {
		return nil, fmt.Errorf("timer: decode parked message: %w", err)
	}
	props := maps.Clone(m.Properties)
	realTopic := props[message.PropertyRealTopic]
	if realTopic == "" {
		return nil, errors.New("timer: parked message without REAL_TOPIC")
	}
	qid, err := strconv.Atoi(props[message.PropertyRealQueueID])
	if err != nil || qid < 0 {
		qid = 0
	}
	delete(props, message.PropertyRealTopic)
	delete(props, message.PropertyRealQueueID)
	props[message.PropertyTimerEnqueueMS] = strconv.FormatInt(r.writeMs, 10)
	props[message.PropertyTimerDequeueMS] = strconv.FormatInt(nowMs, 10)
	return &message.Ext{
		Message:                   message.Message{Topic: realTopic, Flag: m.Flag, Body: m.Body, Properties: props},
		QueueID:                   int32(qid),
		SysFlag:                   m.SysFlag,
		BornTimestamp:             m.BornTimestamp,
		BornHost:                  m.BornHost,
		ReconsumeTimes:            m.ReconsumeTimes,
		PreparedTransactionOffset: m.PreparedTransactionOffset,
	}, nil
}

// flush captures a consistent (doneMs, flushPos, queueOffset), syncs the
// log up to flushPos, writes the checkpoint, then deletes log files whose
// slots are all delivered.
func (t *Timer) flush() error {
	t.mu.Lock()
	cp := checkpoint{doneMs: t.doneMs, flushPos: t.log.writePos, queueOffset: t.queueOffset}
	dirty := t.log.takeDirty()
	t.mu.Unlock()
	// Synced without mu (enqueue keeps appending past flushPos meanwhile):
	// files are closed only by dropBefore below and by Close, both on this
	// goroutine or after it stopped.
	if err := syncFiles(dirty); err != nil {
		t.mu.Lock()
		for _, s := range t.log.segs { // retry them next time
			s.dirty = true
		}
		t.mu.Unlock()
		return err
	}
	if err := storeCheckpoint(t.cfg.CheckpointPath, cp); err != nil {
		return err
	}
	t.mu.Lock()
	t.flushedPos = cp.flushPos
	n, err := t.log.dropBefore(cp.doneMs)
	t.mu.Unlock()
	if n > 0 {
		t.logger.Debug("timer log files deleted", "count", n)
	}
	return err
}

// Stats is a snapshot of the timer's counters.
type Stats struct {
	Pending     int64 // timers linked in the wheel (not yet due or in delivery)
	InFlight    int64 // timers of the slot being delivered
	Slots       int   // occupied wheel slots
	Enqueued    int64 // records appended since start
	Delivered   int64 // messages put back to their real topic since start
	Dropped     int64 // timers lost (parked message unreadable)
	Cancelled   int64 // timers skipped because a TIMER_DEL_UNIQKEY message cancelled them
	LogBytes    int64 // retained timer log bytes
	LogFlushPos int64 // timer log position synced and checkpointed
	ReadMs      int64 // next slot to fire
	QueueOffset int64 // next timer-topic unit to enqueue
	// QueueBehind is how many timer-topic units wait to be enqueued.
	QueueBehind int64
}

// Stats returns a snapshot.
func (t *Timer) Stats() Stats {
	t.mu.Lock()
	s := Stats{Pending: t.pending, InFlight: t.inFlight, Slots: len(t.wheel), ReadMs: t.readMs, QueueOffset: t.queueOffset,
		LogFlushPos: t.flushedPos}
	if t.log != nil {
		s.LogBytes = t.log.diskBytes()
	}
	t.mu.Unlock()
	s.Enqueued, s.Delivered, s.Dropped, s.Cancelled = t.enqueued.Load(), t.delivered.Load(), t.dropped.Load(), t.cancelled.Load()
	if t.state.Load() == 1 {
		s.QueueBehind = max(0, t.st.MaxOffsetInQueue(names.TopicTimerWheel, 0)-s.QueueOffset)
	}
	return s
}
