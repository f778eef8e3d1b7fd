package broker

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apogeemq/apogee/internal/lite"
	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/pop"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// Lite consumption over remoting (RocketMQ 5.5's LITE_SUBSCRIPTION_CTL and
// POP_LITE_MESSAGE; docs/priority-and-lite.md).
//
// A lite consumer (a proxy, or a remoting client) registers its lite
// subscriptions with LITE_SUBSCRIPTION_CTL under its client id; the broker
// keeps them in liteService.subs (memory: a session of the connection,
// re-sent by the client with COMPLETE_ADD). One POP_LITE_MESSAGE then pops,
// in FIFO mode, the lite topics named by the client's queued events
// (lite_events.go) until the batch is full; with nothing to pop it is held
// (popHold, kind heldPopLite) until an event is queued for the client (a
// message arrived on one of its lite topics, one of them unblocked: an ack
// or an invisible time ending) or its poll time ends. Acks and invisible-time changes are the ordinary
// ACK_MESSAGE / CHANGE_MESSAGE_INVISIBLETIME on the lite topic's queue
// (%LMQ%$parent$lite, queue 0) with an orderly ExtraInfo.
//
// The broker tells a client with NOTIFY_UNSUBSCRIBE_LITE (oneway, on the
// connection of its last subscription change) when it loses a lite topic:
// the lite topic expired, or another client of an exclusive group
// (lite.sub.model=Exclusive) subscribed it.

// Group attributes of lite consumption (RocketMQ's names).
const (
	attrLiteBindTopic          = "lite.bind.topic"
	attrLiteSubModel           = "lite.sub.model" // Shared (default) or Exclusive
	attrLiteResetOnExclusive   = "lite.sub.reset.offset.exclusive"
	attrLiteResetOnUnsubscribe = "lite.sub.reset.offset.unsubscribe"
	attrLiteWildcard           = "lite.sub.wildcard" // present: the group consumes every lite topic of its parent
)

// registerLitePop serves LITE_SUBSCRIPTION_CTL and POP_LITE_MESSAGE. The
// other lite requests RocketMQ 5.5 numbers (ACK_LITE_MESSAGE,
// GET_LITE_CLIENT_INFO, GET_LITE_GROUP_INFO, TRIGGER_LITE_DISPATCH) are not
// registered: the server answers REQUEST_CODE_NOT_SUPPORTED.
func (b *Broker) registerLitePop(s *remoting.Server, popPool, adminPool remoting.PoolConfig) {
	s.RegisterProcessor(protocol.PopLiteMessage, b.processPopLiteMessage, popPool)
	s.RegisterProcessor(protocol.LiteSubscriptionCtl, b.processLiteSubscriptionCtl, adminPool)
}

// processLiteSubscriptionCtl serves LITE_SUBSCRIPTION_CTL (200071; body
// LiteSubscriptionCtlRequestBody): each entry changes one client's
// subscriptions. ILLEGAL_OPERATION for a missing or empty body, a group
// that may not consume, a partial add to a wildcard group;
// LITE_SUBSCRIPTION_QUOTA_EXCEEDED when an add passes
// maxLiteSubscriptionCount. Entries with a blank client id, group or topic
// are skipped, as are invalid lite topic names.
func (b *Broker) processLiteSubscriptionCtl(_ context.Context, conn *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	if len(req.Body) == 0 {
		return nil, protocol.Errorf(protocol.IllegalOperation, "Request body is null.")
	}
	body, err := protocol.DecodeLiteSubscriptionCtlBody(req.Body)
	if err != nil {
		return nil, protocol.Errorf(protocol.IllegalOperation, "%v", err)
	}
	if len(body.SubscriptionSet) == 0 {
		return nil, protocol.Errorf(protocol.IllegalOperation, "LiteSubscriptionCtlRequestBody is empty.")
	}
	l := b.lite
	now := b.now().UnixMilli()
	var tell []lite.Eviction
	defer func() {
		for _, ev := range tell {
			l.notifyUnsubscribe(ev)
		}
	}()
	for i := range body.SubscriptionSet {
		e := &body.SubscriptionSet[i]
		if strings.TrimSpace(e.ClientID) == "" || strings.TrimSpace(e.Group) == "" || strings.TrimSpace(e.Topic) == "" {
			b.logger.Debug("lite: subscription entry without client, group or topic", "entry", e.Action)
			continue
		}
		queues := liteQueues(e.Topic, e.LiteTopicSet)
		switch e.Action {
		case protocol.LiteActionPartialAdd, protocol.LiteActionCompleteAdd:
			gc, perr := b.liteConsumerGroup(e.Group, e.Topic)
			if perr != nil {
				return nil, perr
			}
			_, wildcard := gc.Attributes[attrLiteWildcard]
			l.setConn(e.ClientID, conn)
			if e.Action == protocol.LiteActionCompleteAdd {
				var patterns []string
				if wildcard { // the set holds patterns (lite.ValidPattern), not names
					for _, p := range e.LiteTopicSet {
						if lite.ValidPattern(p) {
							patterns = append(patterns, p)
						}
					}
					if len(e.LiteTopicSet) > 0 && len(patterns) == 0 {
						return nil, protocol.Errorf(protocol.IllegalOperation, "all wildcard patterns are invalid, group:%s, topic:%s", e.Group, e.Topic)
					}
				}
				g, par, was, _, _, _ := l.subs.Client(e.ClientID, 1)
				fresh := !was || g != e.Group || par != e.Topic || !slices.Equal(l.subs.Patterns(e.ClientID), patterns)
				added, again := l.subs.Replace(e.ClientID, e.Group, e.Topic, queues, wildcard, patterns, now)
				tell = append(tell, again...)
				l.disp.onSubscribe(e.Group, added, wildcard && fresh)
				continue
			}
			if wildcard {
				return nil, protocol.Errorf(protocol.IllegalOperation, "subscribe lite operation is not supported for this group")
			}
			exclusive := strings.EqualFold(gc.Attributes[attrLiteSubModel], "Exclusive")
			added, evicted, err := l.subs.Add(e.ClientID, e.Group, e.Topic, queues, exclusive, b.cfg.MaxLiteSubscriptionCount, now)
			if err != nil {
				return nil, protocol.Errorf(protocol.LiteSubscriptionQuotaExceeded, "lite subscription quota exceeded %d", b.cfg.MaxLiteSubscriptionCount)
			}
			tell = append(tell, evicted...)
			if len(evicted) > 0 && gc.Attributes[attrLiteResetOnExclusive] == "true" {
				for _, ev := range evicted {
					b.resetLiteOffset(ev.Group, ev.Queue, &protocol.LiteOffsetOption{Type: protocol.LiteOffsetPolicy, Value: protocol.LiteOffsetPolicyMin})
				}
			}
			if e.OffsetOption != nil {
				for _, q := range queues {
					b.resetLiteOffset(e.Group, q, e.OffsetOption)
				}
				added = queues
			}
			l.disp.onSubscribe(e.Group, added, false)
		case protocol.LiteActionPartialRemove:
			removed := l.subs.Remove(e.ClientID, queues, now)
			if gc, ok := b.Groups.Get(e.Group); ok && gc.Attributes[attrLiteResetOnUnsubscribe] == "true" {
				for _, q := range removed {
					b.resetLiteOffset(e.Group, q, &protocol.LiteOffsetOption{Type: protocol.LiteOffsetPolicy, Value: protocol.LiteOffsetPolicyMin})
				}
			}
		case protocol.LiteActionCompleteRemove:
			l.subs.Drop(e.ClientID)
			l.setConn(e.ClientID, nil)
			l.disp.onDrop(e.ClientID)
		}
	}
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

// liteQueues maps lite topic names to their queue names, skipping invalid
// names.
func liteQueues(parent string, names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if lite.ValidateName(n) == nil {
			out = append(out, lite.QueueName(parent, n))
		}
	}
	return out
}

// liteConsumerGroup checks that the group may consume the LITE parent: it
// exists (or is auto-created) and may consume, and its lite.bind.topic, when
// set, names the parent. RocketMQ requires lite.bind.topic; Apogee also
// takes a group without it, as auto-created groups have none.
func (b *Broker) liteConsumerGroup(group, parent string) (protocol.SubscriptionGroupConfig, *protocol.Error) {
	gc, ok, err := b.Groups.FindOrCreate(group, b.dyn.autoCreateGroup.Load())
	if err != nil {
		b.logger.Error("persist auto-created group", "group", group, "err", err)
	}
	if !ok || !gc.ConsumeEnable {
		return gc, protocol.Errorf(protocol.IllegalOperation, "Consumer group is not allowed to consume.")
	}
	if bind := gc.Attributes[attrLiteBindTopic]; bind != "" && bind != parent {
		return gc, protocol.Errorf(protocol.InvalidParameter, "subscription bind topic not match, %s", group)
	}
	return gc, nil
}

// resetLiteOffset moves the group's position in a lite topic's queue as the
// offset option says (RocketMQ's resetOffset): POLICY MIN -> the queue's
// start, MAX -> its end, LAST -> unchanged; OFFSET -> the value; TAIL_N ->
// value messages before the group's current position, when it has one;
// TIMESTAMP is ignored (RocketMQ 5.5 disables it). The group's FIFO state
// on the queue is dropped, so its next pop starts at the target.
func (b *Broker) resetLiteOffset(group, queue string, opt *protocol.LiteOffsetOption) {
	cur, had := b.Offsets.Query(group, queue, 0)
	if b.pop != nil {
		if v := b.pop.state.OrderView(pop.QueueKey{Group: group, Topic: queue}, b.now().UnixMilli()); v.Commit >= 0 {
			cur, had = v.Commit, true
		}
	}
	minO, maxO := max(b.Store.MinOffsetInQueue(queue, 0), 0), max(b.Store.MaxOffsetInQueue(queue, 0), 0)
	target, set := int64(0), false
	switch opt.Type {
	case protocol.LiteOffsetPolicy:
		switch opt.Value {
		case protocol.LiteOffsetPolicyMin:
			target, set = minO, true
		case protocol.LiteOffsetPolicyMax:
			target, set = maxO, true
		}
	case protocol.LiteOffsetOffset:
		target, set = opt.Value, true
	case protocol.LiteOffsetTailN:
		if had {
			target, set = max(cur-opt.Value, 0), true
		}
	}
	if !set || had && target == cur {
		return
	}
	target = min(max(target, minO), maxO)
	b.Offsets.Commit(group, queue, 0, target)
	if b.pop != nil {
		if _, err := b.pop.state.DropGroupTopic(group, queue); err != nil {
			b.logger.Warn("lite: drop pop state for an offset reset", "group", group, "queue", queue, "err", err)
		}
	}
	b.logger.Info("lite offset reset", "group", group, "queue", queue, "option", opt.Type, "value", opt.Value, "offset", target)
}

// processPopLiteMessage serves POP_LITE_MESSAGE (200070;
// PopLiteMessageRequestHeader).
func (b *Broker) processPopLiteMessage(_ context.Context, conn *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	return b.pop.serveLite(conn, req, time.Time{})
}

// serveLite runs one lite pop; deadline is zero on the first execution, a
// held request's hold deadline on a re-execution.
func (p *popService) serveLite(conn *remoting.Conn, req *protocol.Command, deadline time.Time) (*protocol.Command, error) {
	b := p.b
	var h protocol.PopLiteMessageRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
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
	if h.MaxMsgNum > 32 {
		return nil, protocol.Errorf(protocol.InvalidParameter, "the broker[%s] pop message's num is greater than 32", b.cfg.BrokerIP1)
	}
	if h.MaxMsgNum <= 0 {
		h.MaxMsgNum = 1
	}
	if h.InvisibleTime <= 0 || h.InvisibleTime > b.cfg.PopInvisibleTimeMaxMs {
		return nil, protocol.Errorf(protocol.InvalidParameter, "the invisible time %d ms is out of range (0, %d]",
			h.InvisibleTime, b.cfg.PopInvisibleTimeMaxMs)
	}
	tc, perr := b.popCheck(h.ConsumerGroup, h.Topic, -1)
	if perr != nil {
		return nil, perr
	}
	if !isLiteTopic(&tc) {
		return nil, protocol.Errorf(protocol.InvalidParameter, "the topic [%s] message type not match", h.Topic)
	}
	if gc, ok := b.Groups.Get(h.ConsumerGroup); ok {
		if bind := gc.Attributes[attrLiteBindTopic]; bind != "" && bind != h.Topic {
			return nil, protocol.Errorf(protocol.InvalidParameter, "subscription bind topic not match, %s", h.ConsumerGroup)
		}
	}
	res := p.popLite(&h, now)
	if res.count == 0 && h.PollTime > 0 {
		first := deadline.IsZero()
		if first {
			deadline = time.UnixMilli(min(h.BornTime, now) + h.PollTime)
		}
		if nowT.Before(deadline) {
			switch p.hold.park(&heldPop{conn: conn, req: req, topic: h.Topic, group: h.ConsumerGroup, queueID: -1,
				order: true, deadline: deadline, kind: heldPopLite, client: h.ClientID}) {
			case parkHeld:
				if first && p.liteHasMessage(h.ClientID) {
					p.hold.notify(h.Topic) // arrived while parking (see serve)
				}
				return nil, nil
			case parkFull:
				return p.liteResponse(req, &h, res, protocol.PollingFull, now), nil
			}
		}
	}
	code := protocol.Success
	if res.count == 0 {
		code = protocol.PollingTimeout
	}
	return p.liteResponse(req, &h, res, code, now), nil
}

func (p *popService) liteResponse(req *protocol.Command, h *protocol.PopLiteMessageRequestHeader, res *popResult, code protocol.ResponseCode, now int64) *protocol.Command {
	resp := protocol.NewResponse(req, code, "NO_MESSAGE_IN_QUEUE")
	rh := protocol.PopLiteMessageResponseHeader{PopTime: now, InvisibleTime: h.InvisibleTime, ReviveQid: protocol.PopOrderReviveQueue}
	if code == protocol.Success {
		resp.Remark = "FOUND"
		resp.Body = res.body
		resp.BodyDone = res.bodyDone()
		p.b.stats.messagesOut.Add(int64(res.count))
		p.b.stats.bytesOut.Add(int64(len(res.body)))
		rh.OrderCountInfo = liteOrderCountInfo(res.body)
	}
	resp.ExtList = protocol.AppendHeader(nil, &rh, false)
	return resp
}

// liteOrderCountInfo is each record's earlier deliveries (its reconsume
// times), ';'-separated in body order: the uniform form RocketMQ's
// POP_LITE_MESSAGE answers.
func liteOrderCountInfo(body []byte) string {
	var sb strings.Builder
	for len(body) > 0 {
		v, n, err := message.ViewStored(body)
		if err != nil || n <= 0 {
			break
		}
		if sb.Len() > 0 {
			sb.WriteByte(';')
		}
		sb.WriteString(strconv.Itoa(int(v.ReconsumeTimes())))
		body = body[n:]
	}
	return sb.String()
}

// popLite pops the lite topics named by the client's queued events
// (lite_events.go), oldest first, in FIFO mode until the batch is full. An
// event whose lite topic the client no longer consumes, or that has
// nothing to deliver (blocked, or consumed), is dropped: the ack or the end
// of the invisible time that unblocks it queues a new one. An event queued
// again during this pop stays for the next.
func (p *popService) popLite(h *protocol.PopLiteMessageRequestHeader, now int64) *popResult {
	res := &popResult{reviveQid: protocol.PopOrderReviveQueue, lite: true}
	l := p.b.lite
	g, par, _, _, _, ok := l.subs.Client(h.ClientID, 1)
	if !ok || g != h.ConsumerGroup || par != h.Topic {
		return res
	}
	var f *popFilter
	ph := protocol.PopMessageRequestHeader{ConsumerGroup: h.ConsumerGroup, QueueID: 0, MaxMsgNums: h.MaxMsgNum,
		InvisibleTime: h.InvisibleTime, BornTime: h.BornTime, InitMode: protocol.PopInitModeMax, Order: true, AttemptID: h.AttemptID}
	var seen map[string]struct{}
	var again []string
	for res.count < int(h.MaxMsgNum) {
		q, ok := l.disp.events.Poll(h.ClientID, now)
		if !ok {
			break
		}
		if _, dup := seen[q]; dup {
			again = append(again, q)
			continue
		}
		if seen == nil {
			seen = map[string]struct{}{}
		}
		seen[q] = struct{}{}
		if !l.registry.Exists(q) || !l.subs.Wants(h.ClientID, q) {
			continue
		}
		if f == nil {
			f, _ = p.b.newPopFilter(h.Topic, "", "")
		}
		before := res.count
		ph.Topic = q
		p.popQueue(&ph, q, 0, h.MaxMsgNum-int32(res.count), f, now, res)
		if res.count > before {
			l.disp.unblockAt(h.ConsumerGroup, q, now+h.InvisibleTime)
		}
	}
	if len(again) > 0 {
		capacity, _ := l.disp.capacity(h.ConsumerGroup)
		for _, q := range again {
			l.disp.events.Offer(h.ClientID, h.ConsumerGroup, q, capacity, now)
		}
	}
	return res
}

// liteHasMessage reports whether a lite pop of the client may find a
// message: it has a queued event (the hold's re-checks).
func (p *popService) liteHasMessage(client string) bool {
	return p.b.lite.disp.events.Has(client)
}

// liteWoken reports whether a held lite pop of client has something to
// look at after arrivals (woken): an event was queued for it.
func (p *popService) liteWoken(client string, woken map[string]bool) bool {
	return len(woken) > 0 && p.b.lite.disp.events.Has(client)
}

// setConn records (or, with nil, forgets) the connection a client's lite
// notifications go to.
func (l *liteService) setConn(client string, c *remoting.Conn) {
	l.connMu.Lock()
	defer l.connMu.Unlock()
	if c == nil {
		delete(l.conns, client)
		return
	}
	l.conns[client] = c
}

// dropClosedClients forgets the subscriptions of clients whose connection
// closed (the expiry loop calls it).
func (l *liteService) dropClosedClients() {
	l.connMu.Lock()
	var gone []string
	for id, c := range l.conns {
		select {
		case <-c.Closed():
			gone = append(gone, id)
			delete(l.conns, id)
		default:
		}
	}
	l.connMu.Unlock()
	for _, id := range gone {
		l.subs.Drop(id)
		l.disp.onDrop(id)
	}
}

// notifyUnsubscribe sends NOTIFY_UNSUBSCRIBE_LITE (oneway) to the client
// that lost a lite topic, if its connection is known and open.
func (l *liteService) notifyUnsubscribe(ev lite.Eviction) {
	l.connMu.Lock()
	c := l.conns[ev.Client]
	l.connMu.Unlock()
	_, name, ok := lite.SplitQueueName(ev.Queue)
	if c == nil || !ok {
		return
	}
	h := protocol.NotifyUnsubscribeLiteRequestHeader{LiteTopic: name, ConsumerGroup: ev.Group, ClientID: ev.Client}
	req := protocol.NewRequest(protocol.NotifyUnsubscribeLite, protocol.EncodeHeader(&h, false), nil)
	req.Flag |= protocol.FlagOneway
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := l.b.invokeOneway(ctx, c, req); err != nil {
		l.b.logger.Debug("lite: notify unsubscribe", "client", ev.Client, "liteTopic", name, "err", err)
	}
}
