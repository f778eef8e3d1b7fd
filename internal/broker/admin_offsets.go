package broker

import (
	"context"
	"slices"
	"strings"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// processQuerySubscription serves QUERY_SUBSCRIPTION_BY_CONSUMER (345;
// group, topic): the group's registered subscription of the topic.
func (b *Broker) processQuerySubscription(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	group, topic := req.Ext("group"), req.Ext("topic")
	out := struct {
		Group            string                     `json:"group"`
		Topic            string                     `json:"topic"`
		SubscriptionData *protocol.SubscriptionData `json:"subscriptionData,omitempty"`
	}{Group: group, Topic: topic}
	if s, ok := b.Clients.Subscription(group, topic); ok {
		out.SubscriptionData = s
	}
	body, err := protocol.MarshalJSON(&out)
	if err != nil {
		return nil, err
	}
	return bodyResponse(req, body), nil
}

// processCloneGroupOffset serves CLONE_GROUP_OFFSET (314; srcGroup,
// destGroup, topic optional, offline): dest gets src's offsets.
func (b *Broker) processCloneGroupOffset(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	src, dst, topic := req.Ext("srcGroup"), req.Ext("destGroup"), req.Ext("topic")
	if src == "" || dst == "" {
		return nil, protocol.Errorf(protocol.InvalidParameter, "srcGroup and destGroup are required")
	}
	topics := []string{topic}
	if topic == "" {
		topics = b.Offsets.TopicsOfGroup(src)
	}
	for _, t := range topics {
		for q, off := range b.Offsets.QueryAll(src, t) {
			b.Offsets.Commit(dst, t, q, off)
		}
	}
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

// queueTimeSpan is one entry of QUERY_CONSUME_TIME_SPAN's body.
type queueTimeSpan struct {
	MessageQueue     protocol.MessageQueue `json:"messageQueue"`
	MinTimeStamp     int64                 `json:"minTimeStamp"`
	MaxTimeStamp     int64                 `json:"maxTimeStamp"`
	ConsumeTimeStamp int64                 `json:"consumeTimeStamp"`
	DelayTime        int64                 `json:"delayTime"`
}

// processConsumeTimeSpan serves QUERY_CONSUME_TIME_SPAN (303; topic,
// group): per queue the store times of the first, last and last consumed
// messages.
func (b *Broker) processConsumeTimeSpan(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	topic, group := req.Ext("topic"), req.Ext("group")
	tc, ok := b.Topics.Get(topic)
	if !ok {
		return nil, protocol.Errorf(protocol.TopicNotExist, "topic[%s] not exist", topic)
	}
	var spans []queueTimeSpan
	for q := range tc.WriteQueueNums {
		s := queueTimeSpan{MessageQueue: b.mq(topic, q)}
		minO, maxO := b.Store.MinOffsetInQueue(topic, q), b.Store.MaxOffsetInQueue(topic, q)
		if ts, err := b.Store.StoreTimeByQueueOffset(topic, q, max(minO, 0)); err == nil {
			s.MinTimeStamp = ts
		}
		if maxO > 0 {
			if ts, err := b.Store.StoreTimeByQueueOffset(topic, q, maxO-1); err == nil {
				s.MaxTimeStamp = ts
			}
		}
		if off, ok := b.Offsets.Query(group, topic, q); ok && off > 0 {
			if ts, err := b.Store.StoreTimeByQueueOffset(topic, q, off-1); err == nil {
				s.ConsumeTimeStamp = ts
			}
			if off < maxO {
				if ts, err := b.Store.StoreTimeByQueueOffset(topic, q, off); err == nil {
					s.DelayTime = b.now().UnixMilli() - ts
				}
			}
		}
		spans = append(spans, s)
	}
	body, err := protocol.MarshalJSON(struct {
		ConsumeTimeSpanSet []queueTimeSpan `json:"consumeTimeSpanSet"`
	}{spans})
	if err != nil {
		return nil, err
	}
	return bodyResponse(req, body), nil
}

// processGetAllProducerInfo serves GET_ALL_PRODUCER_INFO (328):
// {"data":{group:[ProducerInfo...]}}.
func (b *Broker) processGetAllProducerInfo(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	type producerInfo struct {
		ClientID            string `json:"clientId"`
		RemoteIP            string `json:"remoteIP"`
		Language            string `json:"language"`
		Version             int32  `json:"version"`
		LastUpdateTimestamp int64  `json:"lastUpdateTimestamp"`
	}
	data := map[string][]producerInfo{}
	for _, g := range b.Clients.ProducerGroups() {
		chans := b.Clients.ProducerChannels(g)
		slices.SortFunc(chans, func(a, c ClientChannel) int { return strings.Compare(a.ClientID, c.ClientID) })
		for _, c := range chans {
			data[g] = append(data[g], producerInfo{ClientID: c.ClientID, RemoteIP: c.RemoteAddr(),
				Language: c.Language.String(), Version: c.Version, LastUpdateTimestamp: c.LastUpdate.UnixMilli()})
		}
	}
	body, err := protocol.MarshalJSON(struct {
		Data map[string][]producerInfo `json:"data"`
	}{data})
	if err != nil {
		return nil, err
	}
	return bodyResponse(req, body), nil
}
