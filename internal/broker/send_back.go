package broker

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"strconv"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/store"
)

// processSendBack serves CONSUMER_SEND_MSG_BACK (36; header offset, group,
// delayLevel, originMsgId, originTopic, maxReconsumeTimes), the retry and
// dead-letter flow of docs/broker.md §1.10: the consumed message is
// re-stored to %RETRY%<group> with a delay level (the store moves it to
// SCHEDULE_TOPIC_XXXX; the schedule service delivers it back), or to
// %DLQ%<group> once its retries are used up. Answered from the store's
// completion callback.
func (b *Broker) processSendBack(_ context.Context, conn *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.ConsumerSendMsgBackRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	gc, ok, err := b.Groups.FindOrCreate(h.Group, b.dyn.autoCreateGroup.Load())
	if err != nil {
		b.logger.Error("persist auto-created group", "group", h.Group, "err", err)
	}
	if !ok {
		return nil, protocol.Errorf(protocol.SubscriptionGroupNotExist, "subscription group not exist, %s", h.Group)
	}
	if b.dyn.brokerPermission.Load()&protocol.PermWrite == 0 {
		return nil, protocol.Errorf(protocol.NoPermission, "the broker[%s] sending message is forbidden", b.addr)
	}
	if gc.RetryQueueNums <= 0 {
		return protocol.NewResponse(req, protocol.Success, ""), nil
	}
	retryTopic := names.RetryTopic(h.Group)
	tc, err := b.Topics.CreateIfAbsent(retryTopic, gc.RetryQueueNums, protocol.PermRead|protocol.PermWrite, 0)
	if err != nil {
		b.logger.Error("persist retry topic", "topic", retryTopic, "err", err)
	}
	if tc.Perm&protocol.PermWrite == 0 {
		return nil, protocol.Errorf(protocol.NoPermission, "the topic[%s] sending message is forbidden", retryTopic)
	}
	orig, err := b.Store.LookMessageByOffset(h.Offset)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			b.logger.Warn("send back: look message", "offset", h.Offset, "err", err)
		}
		return nil, protocol.Errorf(protocol.SystemError, "look message by offset failed, %d", h.Offset)
	}
	props := maps.Clone(orig.Properties)
	if props == nil {
		props = map[string]string{}
	}
	if props[message.PropertyRetryTopic] == "" {
		props[message.PropertyRetryTopic] = orig.Topic
	}
	if props[message.PropertyOriginMessageID] == "" {
		id := h.OriginMsgID
		if id == "" {
			id = orig.UniqKey()
		}
		if id == "" {
			id = message.OffsetMsgID(orig.StoreHost, orig.CommitLogOffset)
		}
		props[message.PropertyOriginMessageID] = id
	}
	props[message.PropertyWaitStoreMsgOK] = "false"

	maxTimes := gc.RetryMaxTimes
	if req.Version >= 121 && h.MaxReconsumeTimes != nil {
		maxTimes = *h.MaxReconsumeTimes
	}
	topic := retryTopic
	queueID := rand.Int32N(max(tc.WriteQueueNums, 1))
	delay := h.DelayLevel
	if orig.ReconsumeTimes >= maxTimes || delay < 0 {
		topic, queueID = names.DLQTopic(h.Group), 0
		dlq, err := b.Topics.CreateIfAbsent(topic, 1, protocol.PermRead|protocol.PermWrite, 0)
		if err != nil {
			b.logger.Error("persist DLQ topic", "topic", topic, "err", err)
		}
		if dlq.Perm&protocol.PermWrite == 0 {
			return nil, protocol.Errorf(protocol.NoPermission, "the topic[%s] sending message is forbidden", topic)
		}
		delete(props, message.PropertyDelayTimeLevel)
		b.logger.Info("message moved to the dead-letter queue", "group", h.Group, "topic", orig.Topic,
			"reconsumeTimes", orig.ReconsumeTimes, "maxReconsumeTimes", maxTimes)
	} else {
		if delay == 0 {
			delay = 3 + orig.ReconsumeTimes
		}
		props[message.PropertyDelayTimeLevel] = strconv.Itoa(int(delay))
	}
	ext := &message.Ext{
		Message: message.Message{
			Topic:      topic,
			Flag:       orig.Flag,
			Body:       orig.Body,
			Properties: props,
		},
		QueueID:        queueID,
		SysFlag:        orig.SysFlag,
		BornTimestamp:  orig.BornTimestamp,
		BornHost:       orig.BornHost,
		StoreHost:      b.storeHost,
		ReconsumeTimes: orig.ReconsumeTimes + 1,
	}
	var dlq *groupMeter
	if topic != retryTopic {
		dlq = b.meters.group(props[message.PropertyRetryTopic], h.Group) // meters.go: the original topic
	}
	b.Store.PutMessage(ext, func(res store.PutResult) {
		resp := protocol.NewResponse(req, protocol.Success, "")
		if res.Status.Stored() && dlq != nil {
			dlq.dlq.Add(1)
		}
		if !res.Status.Stored() {
			resp.Code, resp.Remark = int32(protocol.SystemError), res.Status.String()
		}
		if err := conn.WriteResponse(resp); err != nil {
			b.logger.Debug("write send-back response", "addr", conn.RemoteAddr(), "err", err)
		}
	})
	return nil, nil
}
