package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/store"
)

// opsProcessors are the operations requests mqadmin's tools send beyond the
// core admin set: a broker-wide consume-stats report, resuming the check of
// a half message, the broker's topic names, an immediate file cleanup and
// which groups consumed a message.
func (b *Broker) opsProcessors() map[protocol.RequestCode]remoting.Processor {
	return map[protocol.RequestCode]remoting.Processor{
		protocol.GetBrokerConsumeStats:      b.processBrokerConsumeStats,
		protocol.ResumeCheckHalfMessage:     b.processResumeCheckHalfMessage,
		protocol.GetTopicNameList:           b.processTopicNameList,
		protocol.TriggerDeleteFiles:         b.processTriggerDeleteFiles,
		protocol.WhoConsumeTheMessage:       b.processWhoConsumeTheMessage,
		protocol.UpdateAndGetGroupForbidden: b.processGroupForbidden,           // admin_group.go
		protocol.GetAllMessageRequestMode:   b.processGetAllMessageRequestMode, // request_mode.go
	}
}

// processBrokerConsumeStats is GET_BROKER_CONSUME_STATS (317, mqadmin
// brokerConsumeStats): for every subscription group, one ConsumeStats per
// topic it has offsets for (only ordered topics when isOrder), with the
// broker's total lag. The body is RocketMQ's ConsumeStatsList.
func (b *Broker) processBrokerConsumeStats(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	isOrder := req.ExtBool("isOrder")
	// ConsumeStats bodies are fastjson (MessageQueue objects as map keys),
	// so the list around them is written by hand, not by encoding/json.
	body := append(make([]byte, 0, 4096), `{"brokerAddr":`...)
	body = strconv.AppendQuote(body, b.addr)
	body = append(body, `,"consumeStatsList":[`...)
	var totalDiff int64
	groups := b.Groups.Names()
	slices.Sort(groups)
	for i, group := range groups {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, '{')
		body = strconv.AppendQuote(body, group)
		body = append(body, ":["...)
		topics := b.Offsets.TopicsOfGroup(group)
		slices.Sort(topics)
		n := 0
		for _, topic := range topics {
			tc, ok := b.Topics.Get(topic)
			if !ok || (isOrder && !tc.Order) {
				continue
			}
			var entries []protocol.QueueValue[protocol.OffsetWrapper]
			for q := range tc.WriteQueueNums {
				w := protocol.OffsetWrapper{BrokerOffset: max(b.Store.MaxOffsetInQueue(topic, q), 0)}
				if off, ok := b.Offsets.Query(group, topic, q); ok && off > 0 {
					w.ConsumerOffset = off
				}
				w.PullOffset = w.ConsumerOffset
				if w.ConsumerOffset > 0 {
					if ts, err := b.Store.StoreTimeByQueueOffset(topic, q, w.ConsumerOffset-1); err == nil {
						w.LastTimestamp = ts
					}
				}
				totalDiff += max(w.BrokerOffset-w.ConsumerOffset, 0)
				entries = append(entries, protocol.QueueValue[protocol.OffsetWrapper]{Queue: b.mq(topic, q), Value: w})
			}
			cs, err := protocol.EncodeConsumeStats(entries, 0)
			if err != nil {
				return nil, err
			}
			if n > 0 {
				body = append(body, ',')
			}
			body = append(body, cs...)
			n++
		}
		body = append(body, "]}"...)
	}
	body = append(body, `],"totalDiff":`...)
	body = strconv.AppendInt(body, totalDiff, 10)
	body = append(body, `,"totalInflightDiff":0}`...)
	return bodyResponse(req, body), nil
}

// processResumeCheckHalfMessage is RESUME_CHECK_HALF_MESSAGE (323): the
// half message named by msgId (an offset message id) is appended to the
// half topic again with its check count reset to 0, so the transaction
// check starts over for it.
func (b *Broker) processResumeCheckHalfMessage(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	id := req.Ext("msgId")
	_, off, err := message.ParseOffsetMsgID(id)
	if err != nil {
		return nil, protocol.Errorf(protocol.SystemError, "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC. bad msgId %q", id)
	}
	m, err := b.Store.LookMessageByOffset(off)
	if err != nil || m.Topic != names.TopicTransHalf {
		return nil, protocol.Errorf(protocol.SystemError, "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC. no half message at %s", id)
	}
	props := maps.Clone(m.Properties)
	props[message.PropertyTransactionCheckTimes] = "0"
	cp := &message.Ext{
		Message:        message.Message{Topic: names.TopicTransHalf, Flag: m.Flag, Body: m.Body, Properties: props},
		QueueID:        0,
		SysFlag:        m.SysFlag,
		BornTimestamp:  m.BornTimestamp,
		BornHost:       m.BornHost,
		StoreHost:      b.storeHost,
		ReconsumeTimes: m.ReconsumeTimes,
	}
	done := make(chan store.PutResult, 1)
	b.Store.PutMessage(cp, func(r store.PutResult) { done <- r })
	select {
	case res := <-done:
		if !res.Status.Stored() {
			return nil, protocol.Errorf(protocol.SystemError, "Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed.")
		}
	case <-b.quit:
		return nil, protocol.Errorf(protocol.SystemError, "Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed.")
	}
	b.logger.Info("half message put back for checking", "msgId", id, "realTopic", props[message.PropertyRealTopic])
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

// processTopicNameList is GET_TOPIC_NAME_LIST (23): the names of every
// topic this broker has, as a TopicList body.
func (b *Broker) processTopicNameList(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	topics := b.Topics.Names()
	slices.Sort(topics)
	l := protocol.TopicList{TopicList: topics, BrokerAddr: b.addr}
	body, err := l.Encode()
	if err != nil {
		return nil, err
	}
	return bodyResponse(req, body), nil
}

// processTriggerDeleteFiles is TRIGGER_DELETE_FILES (27): expired
// commit-log files are deleted now, whatever deleteWhen says, and the
// consume queues and index follow; the answer comes after that pass.
func (b *Broker) processTriggerDeleteFiles(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	before := b.Store.Stats().FilesDeleted
	b.Store.DeleteExpiredFilesManually()
	b.Store.CleanupOnce()
	deleted := b.Store.Stats().FilesDeleted - before
	return protocol.NewResponse(req, protocol.Success, fmt.Sprintf("%d commit-log files deleted", deleted)), nil
}

// processWhoConsumeTheMessage is WHO_CONSUME_THE_MESSAGE (214), which
// RocketMQ defines but does not serve: given an offset message id (msgId),
// the groups whose committed offset on the message's queue is past it, as
// a GroupList body.
func (b *Broker) processWhoConsumeTheMessage(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	id := req.Ext("msgId")
	_, off, err := message.ParseOffsetMsgID(id)
	if err != nil {
		return nil, protocol.Errorf(protocol.SystemError, "bad msgId %q: %v", id, err)
	}
	m, err := b.Store.LookMessageByOffset(off)
	if err != nil {
		return nil, protocol.Errorf(protocol.NoMessage, "no message %s", id)
	}
	var consumed []string
	for _, g := range b.Offsets.GroupsOfTopic(m.Topic) {
		if o, ok := b.Offsets.Query(g, m.Topic, m.QueueID); ok && o > m.QueueOffset {
			consumed = append(consumed, g)
		}
	}
	slices.Sort(consumed)
	body, err := json.Marshal(protocol.GroupList{GroupList: consumed})
	if err != nil {
		return nil, err
	}
	resp := bodyResponse(req, body)
	resp.ExtFields = map[string]string{"topic": m.Topic, "queueId": strconv.Itoa(int(m.QueueID)),
		"queueOffset": strconv.FormatInt(m.QueueOffset, 10)}
	return resp, nil
}
