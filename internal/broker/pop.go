package broker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/pop"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/run"
	"github.com/apogeemq/apogee/internal/store"
)

// popService is the broker side of POP consumption (docs/grpc.md §8,
// docs/broker.md §1.14): the processors of pop.go, pop_ack.go and
// pop_hold.go, the revive loop of pop_revive.go, over the durable state of
// internal/pop (<root>/pop). DESIGN.md ("POP consumption") has the design.
type popService struct {
	b     *Broker
	state *pop.Store
	hold  *popHold
	group *run.Group // revive and hold loops; stopped in close

	// reviveWake asks the revive loop to look again before its next
	// scheduled round (a change to a short invisible time). Capacity 1.
	reviveWake chan struct{}

	acked   atomic.Int64 // messages acked
	revived atomic.Int64 // messages written to a retry topic by the revive loop
	dlq     atomic.Int64 // messages moved to %DLQ% by the revive loop

	priorities priorityStates // priority.go: per (group, topic) priority-mode state

	replica popReplica // a slave's progress following its master (pop_repl.go)
}

// startPop opens the POP state and starts its loops (broker start, after the
// store). A slave serves no pops (they go to the master) but follows the
// master's POP state (pop_repl.go), for when it becomes master.
func (b *Broker) startPop() error {
	st, err := pop.Open(pop.Options{Dir: filepath.Join(b.cfg.Store.StorePathRootDir, "pop"),
		Logger: b.logger.With("component", "pop")})
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	if rep := st.Recovery(); rep.Records > 0 {
		b.logger.Info("pop state recovered", "file", rep.File, "records", rep.Records,
			"checkpoints", rep.Checkpoints, "inFlight", rep.InFlight, "truncatedAt", rep.TruncatedAt)
	}
	p := &popService{b: b, state: st, group: run.NewGroup("broker-pop"), reviveWake: make(chan struct{}, 1)}
	p.hold = newPopHold(p)
	b.pop = p
	b.initActingMaster(st) // acting_master.go
	b.Store.AddArrivalNotifier(p.hold.onArrival)
	p.group.Go("pop-hold", p.hold.run)
	p.group.Go("pop-revive", p.reviveLoop)
	if b.cfg.isSlave() {
		p.group.Go("pop-replica", p.replicaLoop)
	}
	return nil
}

// closePop stops the loops, answers held pops and closes the state (after
// the servers closed: no processor runs any more).
func (b *Broker) closePop() error {
	p := b.pop
	if p == nil {
		return nil
	}
	p.group.Close()
	return p.state.Close()
}

// popFilter is a pop's expression: a tag filter for the store and the
// subscription it came from.
type popFilter struct {
	sub   protocol.SubscriptionData
	store store.MessageFilter
}

// newPopFilter builds the filter of expType/exp ("TAG" and "*" when empty).
func (b *Broker) newPopFilter(topic, expType, exp string) (*popFilter, *protocol.Error) {
	if exp == "" {
		exp = protocol.SubAll
	}
	sub := normalizeSubscription(protocol.SubscriptionData{Topic: topic, SubString: exp, ExpressionType: expType})
	if sub.IsTag() {
		return &popFilter{sub: sub, store: newTagFilter(&sub)}, nil
	}
	f, perr := b.newSQLFilter(&sub)
	if perr != nil {
		return nil, protocol.Errorf(protocol.SubscriptionParseFailed, "parse the consumer's subscription failed")
	}
	return &popFilter{sub: sub, store: f}, nil
}

// popCheck validates what POP_MESSAGE and PEEK_MESSAGE share: broker read
// permission, the topic and queue, the group. It returns the topic's
// config.
func (b *Broker) popCheck(group, topic string, queueID int32) (protocol.TopicConfig, *protocol.Error) {
	if !b.popServes() {
		// POP state lives on the master; a slave serves it only while it
		// acts as master (acting_master.go).
		return protocol.TopicConfig{}, b.popRefusal("pop")
	}
	if b.dyn.brokerPermission.Load()&protocol.PermRead == 0 {
		return protocol.TopicConfig{}, protocol.Errorf(protocol.NoPermission, "the broker[%s] pop message is forbidden", b.cfg.BrokerIP1)
	}
	tc, ok := b.Topics.Get(topic)
	if !ok {
		return tc, protocol.Errorf(protocol.TopicNotExist, "topic[%s] not exist, apply first please!", topic)
	}
	if tc.Perm&protocol.PermRead == 0 {
		return tc, protocol.Errorf(protocol.NoPermission, "the topic[%s] peeking message is forbidden", topic)
	}
	if queueID >= tc.ReadQueueNums {
		return tc, protocol.Errorf(protocol.InvalidParameter, "queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d]",
			queueID, topic, tc.ReadQueueNums)
	}
	gc, ok, err := b.Groups.FindOrCreate(group, b.dyn.autoCreateGroup.Load())
	if err != nil {
		b.logger.Error("persist auto-created group", "group", group, "err", err)
	}
	if !ok {
		return tc, protocol.Errorf(protocol.SubscriptionGroupNotExist, "subscription group [%s] does not exist", group)
	}
	if !gc.ConsumeEnable {
		return tc, protocol.Errorf(protocol.NoPermission, "subscription group no permission, %s", group)
	}
	return tc, nil
}

// processPopMessage serves POP_MESSAGE (200050; PopMessageRequestHeader):
// up to maxMsgNums (<= 32) messages of one queue or, with queueId -1, of
// every queue of the topic on this broker, plus the group's pop retry
// topic, each made invisible to the group for invisibleTime ms. Found
// messages answer SUCCESS with the records as body (retry messages
// re-encoded with the original topic and their POP_CK); none found with
// pollTime > 0 parks the request (pop_hold.go) until a message arrives or
// bornTime+pollTime, then POLLING_TIMEOUT. Java's DefaultMQPushConsumer
// in POP mode and RocketMQ 5 proxies send it; the broker's own gRPC
// endpoint calls the same code.
func (b *Broker) processPopMessage(_ context.Context, conn *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	return b.pop.serve(conn, req, time.Time{})
}

// serve runs one pop. deadline is zero on the first execution; a held
// request re-executed after an arrival carries its hold deadline.
func (p *popService) serve(conn *remoting.Conn, req *protocol.Command, deadline time.Time) (*protocol.Command, error) {
	b := p.b
	var h protocol.PopMessageRequestHeader
	if err := protocol.DecodePopHeader(req.ExtFields, &h); err != nil {
		return nil, err
	}
	nowT := b.now()
	now := nowT.UnixMilli()
	if h.BornTime <= 0 {
		h.BornTime = now
	}
	if deadline.IsZero() && h.PollTime > 0 && now-h.BornTime-h.PollTime > 500 {
		return nil, protocol.Errorf(protocol.PollingTimeout, "the broker[%s] pop message is timeout too much", b.cfg.BrokerIP1)
	}
	if h.MaxMsgNums > pop.MaxBatch {
		return nil, protocol.Errorf(protocol.InvalidParameter, "the broker[%s] pop message's num is greater than 32", b.cfg.BrokerIP1)
	}
	if h.MaxMsgNums <= 0 {
		h.MaxMsgNums = 1
	}
	if h.InvisibleTime <= 0 || h.InvisibleTime > b.cfg.PopInvisibleTimeMaxMs {
		return nil, protocol.Errorf(protocol.InvalidParameter, "the invisible time %d ms is out of range (0, %d]",
			h.InvisibleTime, b.cfg.PopInvisibleTimeMaxMs)
	}
	if h.QueueID < 0 {
		h.QueueID = -1
	}
	tc, perr := b.popCheck(h.ConsumerGroup, h.Topic, h.QueueID)
	if perr != nil {
		return nil, perr
	}
	filter, perr := b.newPopFilter(h.Topic, h.ExpType, h.Exp)
	if perr != nil {
		return nil, perr
	}
	res := p.popOnce(&h, tc, filter, now)
	if res.count == 0 && h.PollTime > 0 {
		first := deadline.IsZero()
		if first {
			deadline = time.UnixMilli(min(h.BornTime, now) + h.PollTime)
		}
		if nowT.Before(deadline) {
			switch p.hold.park(&heldPop{conn: conn, req: req, topic: h.Topic, group: h.ConsumerGroup, queueID: h.QueueID,
				order: h.Order, deadline: deadline, kind: heldPopMessage}) {
			case parkHeld:
				// A message that arrived after the pop looked and before the
				// request was parked woke nobody: look once more.
				if first && p.hasMessage(h.ConsumerGroup, h.Topic, h.QueueID, tc.ReadQueueNums, h.Order, now) {
					p.hold.notify(h.Topic)
				}
				return nil, nil
			case parkFull:
				return p.popResponse(req, &h, res, protocol.PollingFull, now), nil
			}
		}
	}
	code := protocol.Success
	if res.count == 0 {
		code = protocol.PollingTimeout
	}
	return p.popResponse(req, &h, res, code, now), nil
}

func (p *popService) popResponse(req *protocol.Command, h *protocol.PopMessageRequestHeader, res *popResult, code protocol.ResponseCode, now int64) *protocol.Command {
	resp := protocol.NewResponse(req, code, "")
	if code == protocol.Success {
		resp.Remark = "FOUND"
		resp.Body = res.body
		resp.BodyDone = res.bodyDone()
		p.b.stats.messagesOut.Add(int64(res.count))
		p.b.stats.bytesOut.Add(int64(len(res.body)))
	} else {
		resp.Remark = "NO_MESSAGE_IN_QUEUE"
	}
	rh := protocol.PopMessageResponseHeader{PopTime: now, InvisibleTime: h.InvisibleTime, ReviveQid: res.reviveQid,
		RestNum: res.restNum, StartOffsetInfo: string(res.startInfo), MsgOffsetInfo: string(res.msgInfo)}
	if h.Order {
		rh.OrderCountInfo = string(res.orderInfo)
	}
	resp.ExtList = protocol.AppendPopResponseHeader(nil, &rh)
	return resp
}

// popResult collects one pop's messages over its queues.
type popResult struct {
	body                          []byte
	count                         int
	restNum                       int64
	reviveQid                     int32
	startInfo, msgInfo, orderInfo []byte
	// held is the store read whose pooled buffer body starts as (the
	// first queue's records laid out back to back); the response gives it
	// back once written (bodyDone). Reads copied into body are given back
	// at once.
	held *store.GetResult
	// lite is set for POP_LITE_MESSAGE, whose response carries none of
	// the offset infos: they are not built.
	lite bool
}

// bodyDone is the response's BodyDone: nil when body owns its bytes.
func (r *popResult) bodyDone() func() {
	if r.held == nil {
		return nil
	}
	return r.held.Release
}

// appendRecords appends recs to the body, growing it once for them and
// for the messages the batch may still take (want in all) at their mean
// size, instead of by repeated doubling over 32 small queues.
func (r *popResult) appendRecords(recs [][]byte, want int) {
	n := 0
	for _, rec := range recs {
		n += len(rec)
	}
	if len(recs) > 0 && cap(r.body)-len(r.body) < n {
		more := max(want-r.count-len(recs), 0) * (n / len(recs))
		r.body = slices.Grow(r.body, n+more)
	}
	for _, rec := range recs {
		r.body = append(r.body, rec...)
	}
}

// retryTopics returns the group's pop retry topics that exist (v2 first).
func (p *popService) retryTopics(topic, group string) []string {
	var out []string
	for _, rt := range []string{protocol.PopRetryTopicV2(topic, group), protocol.PopRetryTopicV1(topic, group)} {
		if p.b.Topics.Contains(rt) {
			out = append(out, rt)
		}
	}
	return out
}

// popOnce pops from the topic's queues (and, unless in order mode, the
// retry topics: first with popFromRetryProbability %, else only when the
// normal queues did not fill the batch).
func (p *popService) popOnce(h *protocol.PopMessageRequestHeader, tc protocol.TopicConfig, f *popFilter, now int64) *popResult {
	res := &popResult{reviveQid: int32(now % int64(max(p.b.cfg.ReviveQueueNum, 1)))}
	if h.Order {
		res.reviveQid = protocol.PopOrderReviveQueue
	}
	randomQ := rand.IntN(100)
	need := func() int32 { return h.MaxMsgNums - int32(res.count) }
	retryProbability := p.b.cfg.PopFromRetryProbability
	priorityAt, prob, priorityMode := p.priorityOrder(h, &tc, now) // priority.go
	if priorityMode {
		retryProbability = prob
	}
	popTopic := func(topic string, queues int32) {
		if h.QueueID >= 0 && topic == h.Topic {
			p.popQueue(h, topic, h.QueueID, need(), f, now, res)
			return
		}
		// Separate retry queues (useSeparateRetryQueue) are levels too.
		levels := priorityMode && (topic == h.Topic || p.b.cfg.UseSeparateRetryQueue && queues == tc.ReadQueueNums)
		for i := int32(0); i < queues && need() > 0; i++ {
			q := (int32(randomQ) + i) % queues
			if levels {
				q = priorityAt(i)
			}
			p.popQueue(h, topic, q, need(), f, now, res)
		}
	}
	retry := func() {
		for _, rt := range p.retryTopics(h.Topic, h.ConsumerGroup) {
			if need() <= 0 {
				return
			}
			rtc, ok := p.b.Topics.Get(rt)
			if ok {
				popTopic(rt, max(rtc.ReadQueueNums, 1))
			}
		}
	}
	retryFirst := !h.Order && randomQ < retryProbability
	if retryFirst {
		retry()
	}
	popTopic(h.Topic, tc.ReadQueueNums)
	if !retryFirst && !h.Order && need() > 0 {
		retry()
	}
	return res
}

// initOffset is where a group that never popped a queue starts: its
// consumer offset when it has one, else the queue's minimum with
// initMode MIN (and always for retry topics); with MAX the queue's start
// when it still begins at 0, else its last message (RocketMQ's
// getInitOffset with initPopOffsetByCheckMsgInMem).
func (p *popService) initOffset(group, topic string, queueID int32, initMode int32) int64 {
	if off, ok := p.b.Offsets.Query(group, topic, queueID); ok && off >= 0 {
		return off
	}
	minO := max(p.b.Store.MinOffsetInQueue(topic, queueID), 0)
	if initMode == protocol.PopInitModeMin || protocol.PopTopicTypeOf(topic).IsRetry() || minO == 0 {
		return minO
	}
	return max(p.b.Store.MaxOffsetInQueue(topic, queueID)-1, minO)
}

// popQueue pops up to need messages of one queue into res. A queue another
// pop of the group holds is skipped.
func (p *popService) popQueue(h *protocol.PopMessageRequestHeader, topic string, queueID, need int32, f *popFilter, now int64, res *popResult) {
	if need <= 0 {
		return
	}
	b := p.b
	k := pop.QueueKey{Group: h.ConsumerGroup, Topic: topic, QueueID: queueID}
	if !p.state.TryLockQueue(k) {
		return
	}
	defer p.state.UnlockQueue(k)
	if h.Order {
		p.popQueueOrder(h, k, need, f, now, res)
		return
	}
	offset, ok := p.state.PopOffset(k)
	if !ok {
		offset = p.initOffset(k.Group, topic, queueID, h.InitMode)
	}
	gr := b.Store.GetMessage(k.Group, topic, queueID, offset, need, 0, f.store)
	if gr.Status == store.OffsetTooSmall || gr.Status == store.OffsetOverflowBadly {
		offset = gr.NextBeginOffset
		gr = b.Store.GetMessage(k.Group, topic, queueID, offset, need, 0, f.store)
	}
	defer func() {
		if res.held != gr {
			gr.Release() // copied into the body, or not used
		}
	}()
	if gr.MaxOffset > gr.NextBeginOffset {
		res.restNum += gr.MaxOffset - gr.NextBeginOffset
	}
	next := gr.NextBeginOffset
	if gr.Status != store.Found || len(gr.Messages) == 0 {
		if next > offset { // filtered or removed messages skipped: move on
			_ = p.state.AddCheckpoint(pop.Checkpoint{Key: k, StartOffset: offset, PopTime: now, NextOffset: next})
		}
		return
	}
	offs := make([]int64, 0, len(gr.Messages))
	recs := gr.Messages
	for _, rec := range recs {
		v, _, err := message.ViewStored(rec)
		if err != nil {
			b.logger.Warn("pop: undecodable record", "topic", topic, "queueId", queueID, "err", err)
			offs = nil
			break
		}
		offs = append(offs, v.QueueOffset())
	}
	if len(offs) == 0 {
		return
	}
	err := p.state.AddCheckpoint(pop.Checkpoint{Key: k, StartOffset: offset, PopTime: now,
		InvisibleTime: h.InvisibleTime, Offsets: offs, NextOffset: next})
	if err != nil {
		b.logger.Error("pop: append checkpoint", "group", k.Group, "topic", topic, "queueId", queueID, "err", err)
		return
	}
	tt := protocol.PopTopicTypeOf(topic)
	res.startInfo = protocol.AppendStartOffsetInfo(res.startInfo, tt, queueID, offset)
	res.msgInfo = protocol.AppendMsgOffsetInfo(res.msgInfo, tt, queueID, offs)
	if !tt.IsRetry() && len(res.body) == 0 && len(gr.Buffer) == gr.TotalBytes {
		// The store laid the records out back to back: use them as the body.
		res.body = gr.Buffer
		res.held = gr
		res.count += len(offs)
		return
	}
	if tt.IsRetry() {
		for i, rec := range recs {
			ck := protocol.ReceiptHandle{CkQueueOffset: offset, PopTime: now, InvisibleTime: h.InvisibleTime,
				ReviveQueueID: res.reviveQid, TopicType: tt, BrokerName: b.cfg.BrokerName, QueueID: queueID, QueueOffset: offs[i]}
			res.body = p.appendRetryRecord(res.body, rec, h.Topic, ck.ExtraInfo())
		}
	} else {
		res.appendRecords(recs, int(h.MaxMsgNums))
	}
	res.count += len(offs)
}

// appendRetryRecord re-encodes a record of a pop retry topic as the
// original topic's message carrying its POP_CK, as RocketMQ's broker does
// (popResponseReturnActualRetryTopic=false); the record is kept as is when
// it does not decode.
func (p *popService) appendRetryRecord(dst, rec []byte, topic, extraInfo string) []byte {
	m, _, err := message.DecodeStored(rec, message.DecodeOptions{})
	if err != nil {
		return append(dst, rec...)
	}
	m.Topic = topic
	if m.Properties == nil {
		m.Properties = map[string]string{}
	}
	if _, ok := m.Properties[message.PropertyPopCK]; !ok {
		m.Properties[message.PropertyPopCK] = extraInfo
	}
	m.BodyCRC = 0
	out, err := message.AppendStored(dst, m)
	if err != nil {
		return append(dst, rec...)
	}
	return out
}

// popQueueOrder is popQueue in order mode (RocketMQ's
// ConsumerOrderInfoManager): a queue whose batch is neither acked nor
// expired is skipped (unless the request retries that batch's attempt id);
// otherwise the batch starts at the first unacked offset, skipping
// messages the previous batch had acked, and each record's reconsume times
// is its earlier deliveries.
func (p *popService) popQueueOrder(h *protocol.PopMessageRequestHeader, k pop.QueueKey, need int32, f *popFilter, now int64, res *popResult) {
	b := p.b
	v := p.state.OrderView(k, now)
	if v.Blocked && (h.AttemptID == "" || h.AttemptID != v.AttemptID) {
		return
	}
	offset := v.Commit
	if offset < 0 {
		offset = p.initOffset(k.Group, k.Topic, k.QueueID, h.InitMode)
	}
	skip := make(map[int64]bool, len(v.Acked))
	for _, o := range v.Acked {
		skip[o] = true
	}
	var recs [][]byte
	var offs []int64
	// The reads' buffers go back to the store's pool once their records
	// are copied into the body (or not used).
	var reads []*store.GetResult
	defer func() {
		for i := range reads {
			reads[i].Release()
		}
	}()
	scan, next := offset, offset
	for len(offs) < int(need) {
		want := need - int32(len(offs)) + int32(len(skip))
		gr := b.Store.GetMessage(k.Group, k.Topic, k.QueueID, scan, want, 0, f.store)
		if gr.Status == store.OffsetTooSmall || gr.Status == store.OffsetOverflowBadly {
			scan = gr.NextBeginOffset
			if len(offs) == 0 {
				offset, next = scan, scan
			}
			gr = b.Store.GetMessage(k.Group, k.Topic, k.QueueID, scan, want, 0, f.store)
		}
		reads = append(reads, gr)
		if gr.Status != store.Found || len(gr.Messages) == 0 {
			next = max(next, gr.NextBeginOffset)
			break
		}
		full := false
		for _, rec := range gr.Messages {
			vw, _, err := message.ViewStored(rec)
			if err != nil {
				full = true // stop before the bad record
				break
			}
			o := vw.QueueOffset()
			if skip[o] {
				next = o + 1
				continue
			}
			if len(offs) == int(need) {
				full = true
				break
			}
			offs = append(offs, o)
			recs = append(recs, rec)
			next = o + 1
		}
		if !full {
			next = max(next, gr.NextBeginOffset)
		}
		adv := gr.NextBeginOffset
		if full || adv <= scan {
			break
		}
		scan = adv
	}
	res.restNum += max(b.Store.MaxOffsetInQueue(k.Topic, k.QueueID)-next, 0)
	if len(offs) == 0 {
		if next > offset && !v.Blocked {
			if _, err := p.state.OrderPop(pop.OrderBatch{Key: k, PopTime: now, InvisibleTime: h.InvisibleTime, NextOffset: next}); err == nil {
				b.Offsets.Commit(k.Group, k.Topic, k.QueueID, next)
			}
		}
		return
	}
	deliveries, err := p.state.OrderPop(pop.OrderBatch{Key: k, PopTime: now, InvisibleTime: h.InvisibleTime,
		AttemptID: h.AttemptID, Offsets: offs, NextOffset: next})
	if err != nil {
		b.logger.Error("pop: append order batch", "group", k.Group, "topic", k.Topic, "queueId", k.QueueID, "err", err)
		return
	}
	tt := protocol.PopTopicTypeOf(k.Topic)
	if !res.lite {
		res.startInfo = protocol.AppendStartOffsetInfo(res.startInfo, tt, k.QueueID, offs[0])
		res.msgInfo = protocol.AppendMsgOffsetInfo(res.msgInfo, tt, k.QueueID, offs)
	}
	start := len(res.body)
	res.appendRecords(recs, int(h.MaxMsgNums))
	for i, rec := range recs {
		times := deliveries[i] - 1
		if !res.lite {
			res.orderInfo = protocol.AppendOrderCountInfo(res.orderInfo, tt, k.QueueID, offs[i], times)
		}
		if times > 0 {
			setReconsumeTimes(res.body[start:], times)
		}
		start += len(rec)
	}
	res.count += len(offs)
}

// setReconsumeTimes patches a stored record's RECONSUMETIMES field.
func setReconsumeTimes(rec []byte, times int32) {
	sysFlag := int32(uint32(rec[message.OffsetSysFlag])<<24 | uint32(rec[message.OffsetSysFlag+1])<<16 |
		uint32(rec[message.OffsetSysFlag+2])<<8 | uint32(rec[message.OffsetSysFlag+3]))
	at := message.ReconsumeTimesOffset(sysFlag)
	if at+4 <= len(rec) {
		rec[at], rec[at+1], rec[at+2], rec[at+3] = byte(times>>24), byte(times>>16), byte(times>>8), byte(times)
	}
}

// processPeekMessage serves PEEK_MESSAGE (200052): up to maxMsgNums
// messages from the group's pop position of one queue (or every queue with
// queueId -1) without changing any state. None found answers
// PULL_NOT_FOUND.
func (b *Broker) processPeekMessage(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.PeekMessageRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	if h.MaxMsgNums > pop.MaxBatch {
		return nil, protocol.Errorf(protocol.InvalidParameter, "the broker[%s] peek message's num is greater than 32", b.cfg.BrokerIP1)
	}
	if h.MaxMsgNums <= 0 {
		h.MaxMsgNums = 1
	}
	if h.QueueID < 0 {
		h.QueueID = -1
	}
	tc, perr := b.popCheck(h.ConsumerGroup, h.Topic, h.QueueID)
	if perr != nil {
		return nil, perr
	}
	var body []byte
	count := int32(0)
	var rest int64
	queues := []int32{h.QueueID}
	if h.QueueID < 0 {
		queues = queues[:0]
		for q := int32(0); q < tc.ReadQueueNums; q++ {
			queues = append(queues, q)
		}
	}
	for _, q := range queues {
		if count >= h.MaxMsgNums {
			break
		}
		k := pop.QueueKey{Group: h.ConsumerGroup, Topic: h.Topic, QueueID: q}
		offset, ok := b.pop.state.PopOffset(k)
		if !ok {
			offset = b.pop.initOffset(k.Group, h.Topic, q, protocol.PopInitModeMin)
		}
		gr := b.Store.GetMessage(h.ConsumerGroup, h.Topic, q, offset, h.MaxMsgNums-count, 0, nil)
		if gr.Status == store.Found {
			for _, m := range gr.Messages {
				body = append(body, m...)
			}
			count += int32(len(gr.Messages))
		}
		if gr.MaxOffset > gr.NextBeginOffset {
			rest += gr.MaxOffset - gr.NextBeginOffset
		}
	}
	now := b.now().UnixMilli()
	resp := protocol.NewResponse(req, protocol.Success, "FOUND")
	if count == 0 {
		resp.Code, resp.Remark = int32(protocol.PullNotFound), "NO_MESSAGE_IN_QUEUE"
	}
	resp.Body = body
	resp.ExtList = protocol.AppendHeader(nil, &protocol.PopMessageResponseHeader{PopTime: now, RestNum: rest}, false)
	return resp, nil
}
