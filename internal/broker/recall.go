package broker

import (
	"context"
	"strconv"
	"strings"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/store"
)

// recallTag tags the delete message a recall parks in the timer wheel.
const recallTag = "_RECALL_TAG_"

// recallHandleOf returns the recall handle of a single message the timer
// interceptor just parked in the timer wheel (RocketMQ's
// attachRecallHandle): the real topic, this broker, the slot time + 1
// (aligning it again lands on the same slot) and the UNIQ_KEY. Other
// messages (not parked, retry topics, no UNIQ_KEY) have none.
func (b *Broker) recallHandleOf(m *message.Ext) string {
	if m.Topic != names.TopicTimerWheel {
		return ""
	}
	out, real, id := m.Properties[message.PropertyTimerOutMS], m.Properties[message.PropertyRealTopic], m.UniqKey()
	if out == "" || real == "" || id == "" || strings.HasPrefix(real, names.RetryGroupTopicPrefix) {
		return ""
	}
	slot, err := strconv.ParseInt(out, 10, 64)
	if err != nil {
		return ""
	}
	return protocol.EncodeRecallHandle(protocol.RecallHandle{Topic: real, BrokerName: b.cfg.BrokerName,
		DeliverTimeMs: slot + 1, MessageID: id})
}

// processRecallMessage serves RECALL_MESSAGE (370; producerGroup, topic,
// recallHandle): it cancels a timer (delay) message that has not been
// delivered yet by parking a delete record for the same slot (TIMER_DEL_UNIQKEY
// = topic+UNIQ_KEY), so the timer never delivers it. Answers: NO_PERMISSION
// when recallMessageEnable is off, SLAVE_NOT_AVAILABLE on a slave,
// TOPIC_NOT_EXIST, ILLEGAL_OPERATION for a handle that does not decode,
// names another topic or broker, or whose time has passed (or is beyond
// timerMaxDelaySec); SUCCESS with the message id otherwise (also for a
// handle recalled before: recall is idempotent).
func (b *Broker) processRecallMessage(_ context.Context, conn *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.RecallMessageRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	if !b.cfg.RecallMessageEnable {
		return nil, protocol.Errorf(protocol.NoPermission, "recall failed, operation is forbidden")
	}
	if b.cfg.Store.BrokerRole == store.RoleSlave {
		return nil, protocol.Errorf(protocol.SlaveNotAvailable, "recall failed, broker service not available")
	}
	if !b.Topics.Contains(h.Topic) {
		return nil, protocol.Errorf(protocol.TopicNotExist, "recall failed, the topic[%s] not exist", h.Topic)
	}
	rh, err := protocol.ParseRecallHandle(h.RecallHandle)
	if err != nil {
		return nil, protocol.Errorf(protocol.IllegalOperation, "recall handle is invalid")
	}
	if rh.Topic != h.Topic {
		return nil, protocol.Errorf(protocol.IllegalOperation, "recall failed, topic not match")
	}
	if rh.BrokerName != b.cfg.BrokerName {
		return nil, protocol.Errorf(protocol.IllegalOperation, "recall failed, broker service not available")
	}
	now := b.now().UnixMilli()
	if left := rh.DeliverTimeMs - now; left <= 0 || left >= b.cfg.TimerMaxDelaySec*1000 {
		return nil, protocol.Errorf(protocol.IllegalOperation, "recall failed, timestamp invalid")
	}
	props := map[string]string{
		message.PropertyTags:                      recallTag,
		message.PropertyTimerDelUniqKey:           rh.Topic + "+" + rh.MessageID,
		message.PropertyUniqClientMessageIDKeyidx: rh.MessageID,
		message.PropertyTimerDeliverMS:            strconv.FormatInt(rh.DeliverTimeMs, 10),
		message.PropertyBornTimestamp:             strconv.FormatInt(now, 10),
	}
	if h.ProducerGroup != "" {
		props[message.PropertyProducerGroup] = h.ProducerGroup
	}
	m := &message.Ext{
		Message:       message.Message{Topic: rh.Topic, Body: []byte("0"), Properties: props},
		BornTimestamp: now,
		BornHost:      bornHostOf(conn),
		StoreHost:     b.storeHost,
	}
	if err := b.interceptTimer(m); err != nil {
		return nil, err
	}
	if m.Topic != names.TopicTimerWheel {
		return nil, protocol.Errorf(protocol.IllegalOperation, "recall failed, timestamp invalid")
	}
	b.Store.PutMessage(m, func(res store.PutResult) {
		resp := protocol.NewResponse(req, protocol.Success, "")
		if res.Status.Stored() {
			resp.ExtList = protocol.AppendHeader(nil, &protocol.RecallMessageResponseHeader{MsgID: rh.MessageID}, false)
		} else {
			resp.Code, resp.Remark = int32(protocol.SystemError), "recall failed, execute error"
		}
		if err := conn.WriteResponse(resp); err != nil {
			b.logger.Debug("write recall response", "addr", conn.RemoteAddr(), "err", err)
		}
	})
	return nil, nil
}
