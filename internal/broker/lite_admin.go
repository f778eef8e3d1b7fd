package broker

import (
	"context"
	"strconv"

	"github.com/apogeemq/apogee/internal/lite"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// maxListedLiteTopics bounds GET_PARENT_TOPIC_INFO's liteTopics list.
const maxListedLiteTopics = 1000

// registerLiteAdmin serves RocketMQ 5.5's lite admin requests on the admin
// pool: GET_BROKER_LITE_INFO, GET_PARENT_TOPIC_INFO, GET_LITE_TOPIC_INFO.
func (b *Broker) registerLiteAdmin(s *remoting.Server, pool remoting.PoolConfig) {
	s.RegisterProcessorShared([]protocol.RequestCode{protocol.GetBrokerLiteInfo, protocol.GetParentTopicInfo, protocol.GetLiteTopicInfo},
		b.dispatch(map[protocol.RequestCode]remoting.Processor{
			protocol.GetBrokerLiteInfo:  b.processGetBrokerLiteInfo,
			protocol.GetParentTopicInfo: b.processGetParentTopicInfo,
			protocol.GetLiteTopicInfo:   b.processGetLiteTopicInfo,
		}), pool)
}

func jsonResponse(req *protocol.Command, v any) (*protocol.Command, error) {
	body, err := protocol.MarshalJSON(v)
	if err != nil {
		return nil, err
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = body
	return resp, nil
}

// processGetBrokerLiteInfo answers the broker's lite topic count, its quota
// and the count per LITE parent.
func (b *Broker) processGetBrokerLiteInfo(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	return jsonResponse(req, protocol.GetBrokerLiteInfoResponseBody{StoreType: "default",
		MaxLmqNum: b.cfg.MaxLmqConsumeQueueNum, CurrentLmqNum: b.lite.registry.Len(), TopicMeta: b.lite.registry.Parents()})
}

// parentTopic returns a LITE parent's config: TOPIC_NOT_EXIST, or
// INVALID_PARAMETER for a topic of another type.
func (b *Broker) parentTopic(topic string) (protocol.TopicConfig, error) {
	tc, ok := b.Topics.Get(topic)
	if !ok || lite.IsQueueName(topic) {
		return tc, protocol.Errorf(protocol.TopicNotExist, "topic[%s] not exist", topic)
	}
	if !isLiteTopic(&tc) {
		return tc, protocol.Errorf(protocol.InvalidParameter, "topic[%s] is not a LITE topic", topic)
	}
	return tc, nil
}

// processGetParentTopicInfo answers a LITE parent's TTL, lite topic count
// and (Apogee's) its first lite topic names.
func (b *Broker) processGetParentTopicInfo(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.GetParentTopicInfoRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	tc, err := b.parentTopic(h.Topic)
	if err != nil {
		return nil, err
	}
	ttl, perr := strconv.Atoi(tc.Attributes[attrLiteExpiration])
	if perr != nil {
		ttl = -1
	}
	listed := b.lite.registry.List(h.Topic, maxListedLiteTopics)
	names := make([]string, len(listed))
	for i, t := range listed {
		names[i] = t.Name
	}
	return jsonResponse(req, protocol.GetParentTopicInfoResponseBody{Topic: h.Topic, TTL: ttl,
		LmqNum: b.lite.registry.Len(), LiteTopicCount: b.lite.registry.Count(h.Topic), LiteTopics: names})
}

// processGetLiteTopicInfo describes one lite topic: its queue's offsets and
// last write.
func (b *Broker) processGetLiteTopicInfo(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.GetLiteTopicInfoRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	if _, err := b.parentTopic(h.ParentTopic); err != nil {
		return nil, err
	}
	q := lite.QueueName(h.ParentTopic, h.LiteTopic)
	last, ok := b.lite.registry.LastWrite(q)
	if !ok {
		return nil, protocol.Errorf(protocol.TopicNotExist, "lite topic[%s] of topic[%s] not exist", h.LiteTopic, h.ParentTopic)
	}
	return jsonResponse(req, protocol.GetLiteTopicInfoResponseBody{ParentTopic: h.ParentTopic, LiteTopic: h.LiteTopic,
		TopicOffset: protocol.LiteTopicOffset{MinOffset: max(b.Store.MinOffsetInQueue(q, 0), 0),
			MaxOffset: max(b.Store.MaxOffsetInQueue(q, 0), 0), LastUpdateTimestamp: last},
		ShardingToBroker: true})
}
