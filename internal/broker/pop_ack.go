package broker

import (
	"context"

	"github.com/apogeemq/apogee/internal/lite"
	"github.com/apogeemq/apogee/internal/pop"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// ackTarget validates the topic, queue and offset an ack or change names
// (RocketMQ's AckMessageProcessor / ChangeInvisibleTimeProcessor checks:
// TOPIC_NOT_EXIST, MESSAGE_ILLEGAL for a queue id out of range, NO_MESSAGE
// for an offset outside the queue) and parses the ExtraInfo (a malformed
// one is SYSTEM_ERROR, as the Java parser's exception gives).
// offsetLimitInclusive: an ack may name the max offset, a change may not.
func (b *Broker) ackTarget(topic string, queueID int32, offset int64, extraInfo string, offsetLimitInclusive bool) (protocol.ReceiptHandle, *protocol.Error) {
	if perr := b.popStateWritable(); perr != nil {
		return protocol.ReceiptHandle{}, perr
	}
	tc, ok := b.Topics.Get(topic)
	if !ok {
		return protocol.ReceiptHandle{}, protocol.Errorf(protocol.TopicNotExist, "topic[%s] not exist, apply first please!", topic)
	}
	if queueID < 0 || queueID >= tc.ReadQueueNums {
		return protocol.ReceiptHandle{}, protocol.Errorf(protocol.MessageIllegal, "queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d]",
			queueID, topic, tc.ReadQueueNums)
	}
	minO, maxO := b.Store.MinOffsetInQueue(topic, queueID), b.Store.MaxOffsetInQueue(topic, queueID)
	if offset < minO || offset > maxO || !offsetLimitInclusive && offset == maxO {
		return protocol.ReceiptHandle{}, protocol.Errorf(protocol.NoMessage, "offset is illegal, key:%s@%d, commit:%d, store:%d~%d",
			topic, queueID, offset, minO, maxO)
	}
	ei, err := protocol.ParseExtraInfo(extraInfo)
	if err != nil {
		return ei, protocol.Errorf(protocol.SystemError, "%v", err)
	}
	return ei, nil
}

// popStateWritable refuses acks and changes on a slave: its POP state is
// its master's copy (pop_repl.go), and RocketMQ's slave store refuses the
// revive-topic writes an ack makes; a slave acting as master
// (acting_master.go) accepts them.
func (b *Broker) popStateWritable() *protocol.Error {
	if !b.popServes() {
		return b.popRefusal("ack")
	}
	return nil
}

// processAckMessage serves ACK_MESSAGE (200051; AckMessageRequestHeader:
// the real topic, the message's queue and offset, its ExtraInfo). An ack
// of a message that is not in flight (acked before, revived after its
// invisible time, a forged checkpoint) changes nothing and still answers
// SUCCESS, as RocketMQ's broker does (acks are idempotent); the remark
// then says so. For an orderly handle (reviveQid 999) the group's consumer
// offset advances past the messages acked in sequence.
func (b *Broker) processAckMessage(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.AckMessageRequestHeader
	if err := protocol.DecodeAckHeader(req.ExtFields, &h); err != nil {
		return nil, err
	}
	ei, perr := b.ackTarget(h.Topic, h.QueueID, h.Offset, h.ExtraInfo, true)
	if perr != nil {
		return nil, perr
	}
	r, err := b.pop.ack(pop.QueueKey{Group: h.ConsumerGroup, Topic: h.Topic, QueueID: h.QueueID}, &ei, []int64{h.Offset})
	if err != nil {
		b.logger.Error("pop: append ack", "group", h.ConsumerGroup, "topic", h.Topic, "err", err)
		return nil, protocol.Errorf(protocol.SystemError, "append ack failed")
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	if r == 0 {
		resp.Remark = "the message is not in flight"
	}
	return resp, nil
}

// ack acks offsets of one checkpoint (or FIFO batch) and returns how many
// were in flight. A FIFO ack that moves the commit offset commits it to
// the consumer offset table and wakes held pops (the queue may unblock).
func (p *popService) ack(k pop.QueueKey, ei *protocol.ReceiptHandle, offsets []int64) (int, error) {
	b := p.b
	if !ei.IsOrder() {
		n, err := p.state.AckBatch(k, ei.CkQueueOffset, ei.PopTime, offsets)
		if n > 0 {
			p.acked.Add(int64(n))
		}
		return n, err
	}
	n := 0
	for _, off := range offsets {
		r, commit, err := p.state.OrderAck(k, ei.PopTime, off)
		if err != nil {
			return n, err
		}
		if r == pop.Acked {
			n++
			b.Offsets.Commit(k.Group, k.Topic, k.QueueID, commit)
		}
	}
	if n > 0 {
		p.acked.Add(int64(n))
		p.hold.notify(k.Topic)
		if lite.IsQueueName(k.Topic) {
			b.lite.disp.onUnblockable(k.Group, k.Topic) // lite_events.go
		}
	}
	return n, nil
}

// processBatchAckMessage serves BATCH_ACK_MESSAGE (200151; body
// BatchAckMessageRequestBody): each entry acks the offsets of its bit set
// in one checkpoint. Offsets outside the queue are skipped; an empty body
// is NO_MESSAGE, one that does not decode SYSTEM_ERROR.
func (b *Broker) processBatchAckMessage(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	if len(req.Body) == 0 {
		return nil, protocol.Errorf(protocol.NoMessage, "batch ack without acks")
	}
	body, err := protocol.DecodeBatchAckBody(req.Body)
	if err != nil {
		return nil, protocol.Errorf(protocol.SystemError, "%v", err)
	}
	if len(body.Acks) == 0 {
		return nil, protocol.Errorf(protocol.NoMessage, "batch ack without acks")
	}
	if perr := b.popStateWritable(); perr != nil {
		return nil, perr
	}
	for i := range body.Acks {
		a := &body.Acks[i]
		tt, err := a.TopicType()
		if err != nil {
			return nil, protocol.Errorf(protocol.SystemError, "%v", err)
		}
		offs, err := a.Offsets()
		if err != nil {
			return nil, protocol.Errorf(protocol.SystemError, "%v", err)
		}
		topic := tt.RealTopic(a.Topic, a.ConsumerGroup)
		minO, maxO := b.Store.MinOffsetInQueue(topic, a.QueueID), b.Store.MaxOffsetInQueue(topic, a.QueueID)
		if minO < 0 || maxO < 0 {
			continue
		}
		in := offs[:0]
		for _, o := range offs {
			if o >= minO && o <= maxO {
				in = append(in, o)
			}
		}
		ei := protocol.ReceiptHandle{CkQueueOffset: a.StartOffset, PopTime: a.PopTime, InvisibleTime: a.InvisibleTime,
			ReviveQueueID: a.ReviveQueueID, TopicType: tt, BrokerName: body.BrokerName, QueueID: a.QueueID}
		if _, err := b.pop.ack(pop.QueueKey{Group: a.ConsumerGroup, Topic: topic, QueueID: a.QueueID}, &ei, in); err != nil {
			b.logger.Error("pop: append batch ack", "group", a.ConsumerGroup, "topic", topic, "err", err)
			return nil, protocol.Errorf(protocol.SystemError, "append ack failed")
		}
	}
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

// processChangeInvisibleTime serves CHANGE_MESSAGE_INVISIBLETIME (200053):
// the message becomes visible again invisibleTime ms from now (0 = at once:
// a nack; the revive loop then writes it to the retry topic within a
// moment). The response header carries the new popTime, invisibleTime and
// reviveQid, from which the new ExtraInfo (checkpoint start = the message's
// offset) is built; the old handle stops acking. A handle whose message is
// not in flight any more (acked, or revived after its invisible time)
// answers NO_MESSAGE, so no second copy is created. For an orderly handle
// the pop time stays and only the message's next visible time moves.
func (b *Broker) processChangeInvisibleTime(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.ChangeInvisibleTimeRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	if h.InvisibleTime < 0 || h.InvisibleTime > b.cfg.PopInvisibleTimeMaxMs {
		return nil, protocol.Errorf(protocol.InvalidParameter, "the invisible time %d ms is out of range [0, %d]",
			h.InvisibleTime, b.cfg.PopInvisibleTimeMaxMs)
	}
	ei, perr := b.ackTarget(h.Topic, h.QueueID, h.Offset, h.ExtraInfo, false)
	if perr != nil {
		return nil, perr
	}
	k := pop.QueueKey{Group: h.ConsumerGroup, Topic: h.Topic, QueueID: h.QueueID}
	now := b.now().UnixMilli()
	rh := protocol.ChangeInvisibleTimeResponseHeader{ReviveQid: ei.ReviveQueueID}
	var r pop.AckResult
	var err error
	if ei.IsOrder() {
		r, err = b.pop.state.OrderChange(k, ei.PopTime, h.Offset, now+h.InvisibleTime)
		rh.PopTime, rh.InvisibleTime = ei.PopTime, now+h.InvisibleTime-ei.PopTime
		if r == pop.Acked {
			b.pop.hold.notify(h.Topic) // the queue may unblock at the new time
			if lite.IsQueueName(h.Topic) {
				b.lite.disp.unblockAt(h.ConsumerGroup, h.Topic, now+h.InvisibleTime) // lite_events.go
			}
		}
	} else {
		var popTime int64
		r, popTime, err = b.pop.state.ChangeInvisible(k, ei.CkQueueOffset, ei.PopTime, h.Offset, now, h.InvisibleTime)
		rh.PopTime, rh.InvisibleTime = popTime, h.InvisibleTime
		if r == pop.Acked {
			b.pop.wakeRevive(popTime + h.InvisibleTime)
		}
	}
	if err != nil {
		b.logger.Error("pop: append change", "group", h.ConsumerGroup, "topic", h.Topic, "err", err)
		return nil, protocol.Errorf(protocol.SystemError, "append checkpoint failed")
	}
	if r != pop.Acked {
		return nil, protocol.Errorf(protocol.NoMessage, "the message %s@%d:%d is not in flight for group %s (acked, or its invisible time passed)",
			h.Topic, h.QueueID, h.Offset, h.ConsumerGroup)
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.ExtList = protocol.AppendHeader(nil, &rh, false)
	return resp, nil
}
