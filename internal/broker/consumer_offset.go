package broker

import (
	"context"
	"strconv"
	"strings"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/store"
)

// processQueryConsumerOffset serves QUERY_CONSUMER_OFFSET (14; header
// consumerGroup, topic, queueId, setZeroIfNotFound) in RocketMQ 5's order:
// the stored offset; else QUERY_NOT_FOUND when the client asked not to
// start at zero; else 0 for a young queue (min offset 0, first message in
// memory) so a new group starts at the beginning (docs/protocol.md §9.4
// #33); else QUERY_NOT_FOUND. Neither the group nor the topic has to exist.
func (b *Broker) processQueryConsumerOffset(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.QueryConsumerOffsetRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	off, ok := b.Offsets.Query(h.ConsumerGroup, h.Topic, h.QueueID)
	if !ok {
		switch {
		case h.SetZeroIfNotFound != nil && !*h.SetZeroIfNotFound:
			return protocol.NewResponse(req, protocol.QueryNotFound, "Not found, do not set to zero, maybe this group boot first"), nil
		case b.Store.MinOffsetInQueue(h.Topic, h.QueueID) > 0 || !b.firstMessageHot(h.Topic, h.QueueID):
			return protocol.NewResponse(req, protocol.QueryNotFound, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"), nil
		}
		off = 0
	}
	return offsetResponse(req, off), nil
}

// firstMessageHot is Java's checkInMemByConsumeOffset(topic, queueId, 0):
// the queue's first message lies within the store's in-memory window
// (accessMessageInMemoryMaxRatio of RAM behind the commit log's end). An
// empty queue counts as hot: its first message will be.
func (b *Broker) firstMessageHot(topic string, queueID int32) bool {
	res := b.Store.GetMessage("", topic, queueID, 0, 1, 0, nil)
	if res.Status != store.Found {
		return true
	}
	return !res.SuggestPullingFromSlave
}

// updateOffsetHeader is UPDATE_CONSUMER_OFFSET's header as RocketMQ reads
// it: every field must be present (else SYSTEM_ERROR from the decoder), but
// a queueId or commitOffset that is not a number decodes to null and is
// refused with INVALID_PARAMETER only after the group and topic checks.
type updateOffsetHeader struct {
	ConsumerGroup string `ext:"consumerGroup,req"`
	Topic         string `ext:"topic,req"`
	QueueID       string `ext:"queueId,req"`
	CommitOffset  string `ext:"commitOffset,req"`
}

// processUpdateConsumerOffset serves UPDATE_CONSUMER_OFFSET (15) with
// RocketMQ 5's checks in its order: the group must exist (it is not
// created here: a consumer's heartbeat creates it), then the topic, then
// queueId and commitOffset must be numbers. While a server-side reset is
// pending for the queue (resets are always server-side here), the commit is ignored
// and answered SUCCESS "Offset has been previously reset". Go sends it
// every 5 s per queue without the oneway bit and does not wait.
func (b *Broker) processUpdateConsumerOffset(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h updateOffsetHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	if _, ok := b.Groups.Get(h.ConsumerGroup); !ok || h.ConsumerGroup == "" {
		return protocol.NewResponse(req, protocol.SubscriptionGroupNotExist, "Group "+h.ConsumerGroup+" not exist!"), nil
	}
	if !b.Topics.Contains(h.Topic) {
		return protocol.NewResponse(req, protocol.TopicNotExist, "Topic "+h.Topic+" not exist!"), nil
	}
	queueID, err := strconv.ParseInt(h.QueueID, 10, 32)
	if err != nil {
		return protocol.NewResponse(req, protocol.InvalidParameter, "QueueId is null, topic is "+h.Topic), nil
	}
	offset, err := strconv.ParseInt(h.CommitOffset, 10, 64)
	if err != nil {
		return protocol.NewResponse(req, protocol.InvalidParameter, "Offset is null, topic is "+h.Topic), nil
	}
	if b.Offsets.ResetPending(h.ConsumerGroup, h.Topic, int32(queueID)) {
		return protocol.NewResponse(req, protocol.Success, "Offset has been previously reset"), nil
	}
	b.Offsets.Commit(h.ConsumerGroup, h.Topic, int32(queueID), offset)
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

// processGetMaxOffset serves GET_MAX_OFFSET (30; topic, queueId): the next
// offset to be written, 0 for unknown queues. Go reads `offset` without
// checking the code.
func (b *Broker) processGetMaxOffset(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.QueueHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	return offsetResponse(req, max(b.Store.MaxOffsetInQueue(h.Topic, h.QueueID), 0)), nil
}

// processGetMinOffset serves GET_MIN_OFFSET (31; topic, queueId).
func (b *Broker) processGetMinOffset(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.QueueHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	return offsetResponse(req, max(b.Store.MinOffsetInQueue(h.Topic, h.QueueID), 0)), nil
}

// processGetEarliestMsgStoreTime serves GET_EARLIEST_MSG_STORETIME (32).
func (b *Broker) processGetEarliestMsgStoreTime(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.QueueHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	ts, err := b.Store.EarliestMessageTime(h.Topic, h.QueueID)
	if err != nil {
		ts = -1
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.ExtFields = protocol.EncodeHeader(&protocol.TimestampResponseHeader{Timestamp: ts}, false)
	return resp, nil
}

// processSearchOffset serves SEARCH_OFFSET_BY_TIMESTAMP (29; topic, queueId,
// timestamp, boundaryType).
func (b *Broker) processSearchOffset(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.SearchOffsetRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	upper := strings.EqualFold(h.BoundaryType, "upper")
	return offsetResponse(req, max(b.Store.OffsetByTimeBoundary(h.Topic, h.QueueID, h.Timestamp, upper), 0)), nil
}

func offsetResponse(req *protocol.Command, off int64) *protocol.Command {
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.ExtFields = map[string]string{"offset": strconv.FormatInt(off, 10)}
	return resp
}
