package broker

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/pop"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// Long polling of POP_MESSAGE and NOTIFICATION (RocketMQ's
// PopLongPollingService). A pop or notification that finds nothing is
// parked until a message arrives on its topic or its group's retry topic
// (the store's arrival listener; the revive loop's writes are arrivals
// too), a FIFO queue may have unblocked (an orderly ack or change), or its
// deadline (bornTime + pollTime) comes; then the hold loop re-executes it.
// A re-execution that still finds nothing parks again with the same
// deadline, so a request is answered with POLLING_TIMEOUT at its deadline
// at the latest, never after it.

type heldKind uint8

const (
	heldPopMessage heldKind = iota
	heldNotification
	heldPopLite // POP_LITE_MESSAGE (lite_pop.go): topic is the LITE parent
)

type heldPop struct {
	conn     *remoting.Conn
	req      *protocol.Command
	topic    string
	group    string
	queueID  int32
	order    bool
	deadline time.Time
	kind     heldKind
	client   string // heldPopLite: the client id whose subscriptions it pops
}

type parkResult uint8

const (
	parkHeld parkResult = iota
	parkFull            // POLLING_FULL
	parkNo              // not held (closing)
)

// popHold owns the held requests; its run loop is the only goroutine that
// re-executes them. onArrival runs on the store's dispatch goroutine and
// only records the topic.
type popHold struct {
	p    *popService
	wake chan struct{} // capacity 1, non-blocking send
	// any mirrors total > 0 so the store's arrival listener (called for
	// every dispatched message) skips the lock while nothing is held.
	any atomic.Bool

	mu      sync.Mutex
	held    map[string][]*heldPop // by requested topic; guarded by mu
	total   int                   // guarded by mu
	woken   map[string]bool       // topics with arrivals since the loop last looked; guarded by mu
	orderAt time.Time             // next periodic scan of the held requests; guarded by mu
	closed  bool                  // guarded by mu
}

func newPopHold(p *popService) *popHold {
	return &popHold{p: p, wake: make(chan struct{}, 1), held: make(map[string][]*heldPop), woken: make(map[string]bool)}
}

func (h *popHold) signal() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// park holds r. The per-(topic, group) limit is popPollingSize, the total
// maxPopPollingSize.
func (h *popHold) park(r *heldPop) parkResult {
	cfg := &h.p.b.cfg
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return parkNo
	}
	if h.total >= cfg.MaxPopPollingSize {
		return parkFull
	}
	same := 0
	for _, x := range h.held[r.topic] {
		if x.group == r.group {
			same++
		}
	}
	if same > cfg.PopPollingSize {
		return parkFull
	}
	h.held[r.topic] = append(h.held[r.topic], r)
	h.total++
	h.any.Store(true)
	h.signal() // the loop re-arms its timer for the new deadline
	return parkHeld
}

// onArrival is the store's arrival listener.
func (h *popHold) onArrival(topic string, _ int32, _ int64, _ int64, _ int64) {
	h.notify(topic)
}

// notify wakes the held requests of topic (a normal or a pop retry topic).
func (h *popHold) notify(topic string) {
	if !h.any.Load() {
		return
	}
	h.mu.Lock()
	if h.total == 0 {
		h.mu.Unlock()
		return
	}
	h.woken[topic] = true
	h.mu.Unlock()
	h.signal()
}

// pollingNum counts the requests held for topic, group and queue (-1 any).
func (h *popHold) pollingNum(topic, group string, queueID int32) int32 {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := int32(0)
	for _, r := range h.held[topic] {
		if r.group == group && (queueID < 0 || r.queueID == queueID || r.queueID < 0) {
			n++
		}
	}
	return n
}

// run re-executes held requests until ctx ends.
func (h *popHold) run(ctx context.Context) {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			h.mu.Lock()
			h.closed = true
			h.mu.Unlock()
			return
		case <-h.wake:
		case <-t.C:
		}
		next := h.process(h.p.b.now())
		t.Reset(max(time.Until(next), time.Millisecond))
	}
}

// process takes the requests to re-execute (woken topics, deadlines due,
// FIFO re-checks each second, closed connections dropped), runs them, and
// returns when to look again.
func (h *popHold) process(now time.Time) time.Time {
	var run []*heldPop
	next := now.Add(time.Second)
	h.mu.Lock()
	// Once a second every held request is checked against the queues, as
	// RocketMQ's hold services scan: this covers an arrival listener lost
	// with a store reopened on a role change, and FIFO blocks that expired.
	scanDue := !now.Before(h.orderAt)
	if scanDue {
		h.orderAt = now.Add(time.Second)
	}
	woken := h.woken
	h.woken = make(map[string]bool)
	for topic, list := range h.held {
		hit := woken[topic]
		if !hit {
			for w := range woken {
				if retryTopicOf(w, topic) {
					hit = true
					break
				}
			}
		}
		keep := list[:0]
		for _, r := range list {
			select {
			case <-r.conn.Closed():
				h.total--
				continue
			default:
			}
			rhit := hit
			if r.kind == heldPopLite {
				rhit = h.p.liteWoken(r.client, woken)
			}
			if rhit || !now.Before(r.deadline) || scanDue && h.p.mayHaveMessage(r, now) {
				run = append(run, r)
				h.total--
				continue
			}
			if r.deadline.Before(next) {
				next = r.deadline
			}
			keep = append(keep, r)
		}
		if len(keep) == 0 {
			delete(h.held, topic)
		} else {
			h.held[topic] = keep
		}
	}
	h.any.Store(h.total > 0)
	h.mu.Unlock()
	for _, r := range run {
		h.reexecute(r)
	}
	return next
}

// retryTopicOf reports whether w is a pop retry topic of topic for some
// group (v2 %RETRY%g+topic, v1 %RETRY%g_topic).
func retryTopicOf(w, topic string) bool {
	if !strings.HasPrefix(w, names.RetryGroupTopicPrefix) {
		return false
	}
	return strings.HasSuffix(w, "+"+topic) || strings.HasSuffix(w, "_"+topic)
}

// reexecute runs a held request again and writes its answer, unless it was
// parked again.
func (h *popHold) reexecute(r *heldPop) {
	var resp *protocol.Command
	var err error
	switch r.kind {
	case heldPopMessage:
		resp, err = h.p.serve(r.conn, r.req, r.deadline)
	case heldNotification:
		resp, err = h.p.notification(r.conn, r.req, r.deadline)
	case heldPopLite:
		resp, err = h.p.serveLite(r.conn, r.req, r.deadline)
	}
	if err != nil {
		var pe *protocol.Error
		if !errors.As(err, &pe) {
			pe = protocol.Errorf(protocol.SystemError, "%v", err)
		}
		resp = protocol.NewResponse(r.req, pe.Code, pe.Remark)
	}
	if resp == nil {
		return
	}
	if werr := r.conn.WriteResponse(resp); werr != nil {
		h.p.b.logger.Debug("pop: write held response", "addr", r.conn.RemoteAddr(), "err", werr)
	}
}

// processNotification serves NOTIFICATION (200054): answers hasMsg=true as
// soon as the group has a message to pop on the topic (one queue, or any
// with queueId -1, its retry topics included), holding the request up to
// bornTime+pollTime otherwise (then hasMsg=false); pollingFull=true when
// the hold table is full.
func (b *Broker) processNotification(_ context.Context, conn *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	return b.pop.notification(conn, req, time.Time{})
}

func (p *popService) notification(conn *remoting.Conn, req *protocol.Command, deadline time.Time) (*protocol.Command, error) {
	b := p.b
	var h protocol.NotificationRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	if h.QueueID < 0 {
		h.QueueID = -1
	}
	tc, perr := b.popCheck(h.ConsumerGroup, h.Topic, h.QueueID)
	if perr != nil {
		return nil, perr
	}
	nowT := b.now()
	has := p.hasMessage(h.ConsumerGroup, h.Topic, h.QueueID, tc.ReadQueueNums, h.Order, nowT.UnixMilli())
	rh := protocol.NotificationResponseHeader{HasMsg: has}
	if !has && h.PollTime > 0 {
		first := deadline.IsZero()
		if first {
			born := h.BornTime
			if born <= 0 {
				born = nowT.UnixMilli()
			}
			deadline = time.UnixMilli(min(born, nowT.UnixMilli()) + h.PollTime)
		}
		if nowT.Before(deadline) {
			switch p.hold.park(&heldPop{conn: conn, req: req, topic: h.Topic, group: h.ConsumerGroup, queueID: h.QueueID,
				order: h.Order, deadline: deadline, kind: heldNotification}) {
			case parkHeld:
				if first && p.hasMessage(h.ConsumerGroup, h.Topic, h.QueueID, tc.ReadQueueNums, h.Order, nowT.UnixMilli()) {
					p.hold.notify(h.Topic) // arrived while parking (see serve)
				}
				return nil, nil
			case parkFull:
				rh.PollingFull = true
			}
		}
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.ExtList = protocol.AppendHeader(nil, &rh, false)
	return resp, nil
}

// hasMessage reports whether a pop of the group would find a message
// (ignoring its filter): a queue whose pop position is below its end and,
// in order mode, not blocked; or a non-empty retry topic.
func (p *popService) hasMessage(group, topic string, queueID, queues int32, order bool, now int64) bool {
	check := func(t string, q int32) bool {
		k := pop.QueueKey{Group: group, Topic: t, QueueID: q}
		maxO := p.b.Store.MaxOffsetInQueue(t, q)
		var off int64
		if order {
			v := p.state.OrderView(k, now)
			if v.Blocked {
				return false
			}
			off = v.Commit
		} else if o, ok := p.state.PopOffset(k); ok {
			off = o
		} else {
			off = -1
		}
		if off < 0 {
			off = p.initOffset(group, t, q, protocol.PopInitModeMin)
		}
		return off < maxO
	}
	for q := int32(0); q < queues; q++ {
		if (queueID < 0 || q == queueID) && check(topic, q) {
			return true
		}
	}
	if !order {
		for _, rt := range p.retryTopics(topic, group) {
			if rtc, ok := p.b.Topics.Get(rt); ok {
				for q := int32(0); q < rtc.ReadQueueNums; q++ {
					if check(rt, q) {
						return true
					}
				}
			}
		}
	}
	return false
}

// processPollingInfo serves POLLING_INFO (200055): how many pops and
// notifications are held for the topic, group and queue.
func (b *Broker) processPollingInfo(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.PollingInfoRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	if _, perr := b.popCheck(h.ConsumerGroup, h.Topic, h.QueueID); perr != nil {
		return nil, perr
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.ExtList = protocol.AppendHeader(nil, &protocol.PollingInfoResponseHeader{PollingNum: b.pop.hold.pollingNum(h.Topic, h.ConsumerGroup, h.QueueID)}, false)
	return resp, nil
}

// mayHaveMessage is the periodic scan's test: whether a pop of r's group
// could find something now (FIFO blocks included). REQUIRES: popHold.mu
// held (it only reads the store and the POP state, which lock their own).
func (p *popService) mayHaveMessage(r *heldPop, now time.Time) bool {
	if r.kind == heldPopLite {
		return p.liteHasMessage(r.client)
	}
	tc, ok := p.b.Topics.Get(r.topic)
	if !ok {
		return true // answer it: the topic is gone
	}
	return p.hasMessage(r.group, r.topic, r.queueID, tc.ReadQueueNums, r.order, now.UnixMilli())
}
