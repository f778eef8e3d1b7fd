package broker

import (
	"context"
	"errors"
	"maps"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// processRelayToConsumer serves GET_CONSUMER_RUNNING_INFO (307) and
// CONSUME_MESSAGE_DIRECTLY (309; msgId = offset id): the broker forwards
// the admin's request to the consumer's connection and returns the
// client's answer unchanged (docs/protocol.md §3.6). CONSUME_MSG_TIMEOUT when
// the client does not answer within 10 s.
func (b *Broker) processRelayToConsumer(ctx context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	group, clientID := req.Ext("consumerGroup"), req.Ext("clientId")
	info, ok := b.Clients.ConsumerGroup(group)
	var target *ClientChannel
	if ok {
		for i := range info.Channels {
			if info.Channels[i].ClientID == clientID {
				target = &info.Channels[i]
				break
			}
		}
	}
	if target == nil {
		return nil, protocol.Errorf(protocol.SystemError, "The Consumer <%s> <%s> not online", group, clientID)
	}
	if target.Conn == nil {
		return nil, protocol.Errorf(protocol.SystemError, "The Consumer <%s> <%s> is a gRPC client: it does not answer %d", group, clientID, req.Code)
	}
	if target.Version < 62 {
		return nil, protocol.Errorf(protocol.SystemError, "The Consumer <%s> Version <%d> too low to finish, please upgrade it", clientID, target.Version)
	}
	fwd := protocol.NewRequest(protocol.RequestCode(req.Code), maps.Clone(req.ExtFields), req.Body)
	if protocol.RequestCode(req.Code) == protocol.ConsumeMessageDirectly {
		_, offset, err := message.ParseOffsetMsgID(req.Ext("msgId"))
		if err != nil {
			return nil, protocol.Errorf(protocol.SystemError, "bad msgId %q", req.Ext("msgId"))
		}
		m, err := b.Store.LookMessageByOffset(offset)
		if err != nil {
			return nil, protocol.Errorf(protocol.SystemError, "can not find message by the msgId %s", req.Ext("msgId"))
		}
		raw, err := b.Store.ReadRawByOffset(offset, m.StoreSize)
		if err != nil {
			return nil, protocol.Errorf(protocol.SystemError, "can not find message by the msgId %s", req.Ext("msgId"))
		}
		fwd.Body = raw
		fwd.SetExt("brokerName", b.cfg.BrokerName)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := b.server.InvokeSync(cctx, target.Conn, fwd)
	if err != nil {
		if errors.Is(err, remoting.ErrTimeout) {
			return nil, protocol.Errorf(protocol.ConsumeMsgTimeout, "consumer <%s> <%s> Timeout", group, clientID)
		}
		return nil, protocol.Errorf(protocol.SystemError, "invoke consumer <%s> <%s> failed: %v", group, clientID, err)
	}
	out := protocol.NewResponse(req, protocol.ResponseCode(resp.Code), resp.Remark)
	out.ExtFields, out.Body = resp.ExtFields, resp.Body
	return out, nil
}

// processResetOffset serves INVOKE_BROKER_TO_RESET_OFFSET (222; topic,
// group, timestamp (-1 = max offset), isForce, queueId, offset): the
// server-side reset of docs/protocol.md §7.6. Each queue's target offset is
// committed and parked; UPDATE_CONSUMER_OFFSET is ignored for it until the
// group's next pull of the queue, which is answered PULL_OFFSET_MOVED with
// the target. The body lists the new offsets.
func (b *Broker) processResetOffset(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.ResetOffsetRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	tc, ok := b.Topics.Get(h.Topic)
	if !ok {
		return nil, protocol.Errorf(protocol.TopicNotExist, "[reset-offset] topic %s not exist", h.Topic)
	}
	if _, ok := b.Groups.Get(h.Group); !ok {
		return nil, protocol.Errorf(protocol.SubscriptionGroupNotExist, "[reset-offset] subscription group %s not exist", h.Group)
	}
	var entries []protocol.QueueValue[int64]
	for q := range tc.ReadQueueNums {
		if h.QueueID != nil && *h.QueueID >= 0 && *h.QueueID != q {
			continue
		}
		var target int64
		switch {
		case h.Offset != nil && *h.Offset >= 0 && h.QueueID != nil:
			target = *h.Offset
		case h.Timestamp == -1:
			target = b.Store.MaxOffsetInQueue(h.Topic, q)
		default:
			target = b.Store.OffsetByTime(h.Topic, q, h.Timestamp)
		}
		minO, maxO := b.Store.MinOffsetInQueue(h.Topic, q), b.Store.MaxOffsetInQueue(h.Topic, q)
		target = min(max(target, max(minO, 0)), max(maxO, 0))
		if cur, ok := b.Offsets.Query(h.Group, h.Topic, q); ok && !h.IsForce && target >= cur {
			target = cur // without force only move backwards
		}
		b.Offsets.Reset(h.Group, h.Topic, q, target)
		entries = append(entries, protocol.QueueValue[int64]{Queue: b.mq(h.Topic, q), Value: target})
	}
	body, err := protocol.EncodeResetOffsetBody(entries)
	if err != nil {
		return nil, err
	}
	b.logger.Info("consumer offsets reset", "group", h.Group, "topic", h.Topic, "timestamp", h.Timestamp, "queues", len(entries))
	return bodyResponse(req, body), nil
}
