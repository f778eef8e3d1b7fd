package broker

import (
	"context"
	"sort"
	"strconv"

	"github.com/apogeemq/apogee/internal/lite"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// maxListedLiteTopics bounds GET_PARENT_TOPIC_INFO's liteTopics list.
const maxListedLiteTopics = 1000

// registerLiteAdmin serves RocketMQ 5.5's lite admin requests on the admin
// pool: GET_BROKER_LITE_INFO, GET_PARENT_TOPIC_INFO, GET_LITE_TOPIC_INFO,
// GET_LITE_CLIENT_INFO, GET_LITE_GROUP_INFO, TRIGGER_LITE_DISPATCH.
func (b *Broker) registerLiteAdmin(s *remoting.Server, pool remoting.PoolConfig) {
	s.RegisterProcessorShared([]protocol.RequestCode{protocol.GetBrokerLiteInfo, protocol.GetParentTopicInfo, protocol.GetLiteTopicInfo,
		protocol.GetLiteClientInfo, protocol.GetLiteGroupInfo, protocol.TriggerLiteDispatch},
		b.dispatch(map[protocol.RequestCode]remoting.Processor{
			protocol.GetBrokerLiteInfo:   b.processGetBrokerLiteInfo,
			protocol.GetParentTopicInfo:  b.processGetParentTopicInfo,
			protocol.GetLiteTopicInfo:    b.processGetLiteTopicInfo,
			protocol.GetLiteClientInfo:   b.processGetLiteClientInfo,
			protocol.GetLiteGroupInfo:    b.processGetLiteGroupInfo,
			protocol.TriggerLiteDispatch: b.processTriggerLiteDispatch,
		}), pool)
}

// maxLiteClientTopics bounds GET_LITE_CLIENT_INFO's liteTopicSet whatever
// maxCount asks (RocketMQ's MAX_RETURN_COUNT).
const maxLiteClientTopics = 10000

// processGetLiteClientInfo answers one client's lite subscriptions under a
// parent and its last pops (RocketMQ's LiteManagerProcessor): TOPIC_NOT_EXIST
// or INVALID_PARAMETER for the parent, SUBSCRIPTION_GROUP_NOT_EXIST, and
// INVALID_PARAMETER for a group bound to another parent.
func (b *Broker) processGetLiteClientInfo(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.GetLiteClientInfoRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	if _, present := req.ExtFields["maxCount"]; !present {
		h.MaxCount = 1000
	}
	if h.MaxCount <= 0 {
		return nil, protocol.Errorf(protocol.SystemError, "[maxCount] field invalid")
	}
	if _, err := b.parentTopic(h.ParentTopic); err != nil {
		return nil, err
	}
	if _, err := b.liteAdminGroup(h.Group, h.ParentTopic); err != nil {
		return nil, err
	}
	body := protocol.GetLiteClientInfoResponseBody{ParentTopic: h.ParentTopic, Group: h.Group, ClientID: h.ClientID,
		LiteTopicCount: -1, LastAccessTime: -1, LastConsumeTime: -1}
	if g, par, _, n, queues, ok := b.lite.subs.Client(h.ClientID, min(int(h.MaxCount), maxLiteClientTopics)); ok && g == h.Group && par == h.ParentTopic {
		body.LiteTopicCount, body.LiteTopicSet = n, queues
	}
	if acc, con, ok := b.lite.disp.events.Access(h.ClientID); ok {
		body.LastAccessTime, body.LastConsumeTime = acc, con
	}
	return jsonResponse(req, body)
}

// liteAdminGroup returns the LITE parent a group consumes for the lite
// admin requests: its lite.bind.topic (which must be parent, when parent is
// given), else (Apogee also takes groups without it) the parent of its
// subscribed clients. SUBSCRIPTION_GROUP_NOT_EXIST; INVALID_PARAMETER for a
// group bound elsewhere or that is no lite group.
func (b *Broker) liteAdminGroup(group, parent string) (string, error) {
	gc, ok := b.Groups.Get(group)
	if !ok {
		return "", protocol.Errorf(protocol.SubscriptionGroupNotExist, "Group [%s] not exist.", group)
	}
	bind := gc.Attributes[attrLiteBindTopic]
	if bind == "" {
		for _, c := range b.lite.subs.ClientsOf(group) {
			if _, p, _, _, _, ok := b.lite.subs.Client(c, 1); ok {
				bind = p
				break
			}
		}
	}
	switch {
	case parent != "" && bind != "" && bind != parent:
		return "", protocol.Errorf(protocol.InvalidParameter, "Subscription [%s]-[%s] not match.", group, parent)
	case parent != "":
		return parent, nil
	case bind == "":
		return "", protocol.Errorf(protocol.InvalidParameter, "Group [%s] is not a LITE group.", group)
	}
	return bind, nil
}

// processGetLiteGroupInfo answers a lite group's lag (RocketMQ's
// LiteManagerProcessor): of one lite topic (its offsets; -1 lag for a lite
// topic without messages), or the total over the parent's lite topics the
// group committed offsets on with the topK by lag count and by the age of
// the first unconsumed message.
func (b *Broker) processGetLiteGroupInfo(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.GetLiteGroupInfoRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	parent, err := b.liteAdminGroup(h.Group, "")
	if err != nil {
		return nil, err
	}
	body := protocol.GetLiteGroupInfoResponseBody{Group: h.Group, ParentTopic: parent, LiteTopic: h.LiteTopic,
		EarliestUnconsumedTimestamp: -1}
	if h.LiteTopic != "" {
		q := lite.QueueName(parent, h.LiteTopic)
		maxO := int64(0)
		if b.lite.registry.Exists(q) {
			maxO = b.Store.MaxOffsetInQueue(q, 0)
		}
		if maxO <= 0 {
			body.TotalLagCount = -1
			return jsonResponse(req, body)
		}
		if committed, ok := b.Offsets.Query(h.Group, q, 0); ok && committed >= 0 {
			body.TotalLagCount = max(maxO-committed, 0)
			if ts, err := b.Store.StoreTimeByQueueOffset(q, 0, committed); err == nil && ts > 0 {
				body.EarliestUnconsumedTimestamp = ts
			}
			w := &protocol.OffsetWrapper{BrokerOffset: maxO, ConsumerOffset: committed}
			if committed > 0 {
				if ts, err := b.Store.StoreTimeByQueueOffset(q, 0, committed-1); err == nil {
					w.LastTimestamp = ts
				}
			}
			body.LiteTopicOffsetWrapper = w
		}
		return jsonResponse(req, body)
	}
	var lags []protocol.LiteLagInfo
	for _, q := range b.Offsets.TopicsOfGroup(h.Group) {
		p, name, ok := lite.SplitQueueName(q)
		if !ok || p != parent || !b.lite.registry.Exists(q) {
			continue
		}
		committed, ok := b.Offsets.Query(h.Group, q, 0)
		if !ok || committed < 0 {
			continue
		}
		lag := b.Store.MaxOffsetInQueue(q, 0) - committed
		if lag <= 0 {
			continue
		}
		info := protocol.LiteLagInfo{LiteTopic: name, LagCount: lag, EarliestUnconsumedTimestamp: -1}
		if ts, err := b.Store.StoreTimeByQueueOffset(q, 0, committed); err == nil && ts > 0 {
			info.EarliestUnconsumedTimestamp = ts
			if body.EarliestUnconsumedTimestamp < 0 || ts < body.EarliestUnconsumedTimestamp {
				body.EarliestUnconsumedTimestamp = ts
			}
		}
		body.TotalLagCount += lag
		lags = append(lags, info)
	}
	k := int(max(h.TopK, 0))
	sort.Slice(lags, func(i, j int) bool { return lags[i].LagCount > lags[j].LagCount })
	body.LagCountTopK = append([]protocol.LiteLagInfo(nil), lags[:min(k, len(lags))]...)
	var aged []protocol.LiteLagInfo
	for _, l := range lags {
		if l.EarliestUnconsumedTimestamp > 0 {
			aged = append(aged, l)
		}
	}
	sort.Slice(aged, func(i, j int) bool { return aged[i].EarliestUnconsumedTimestamp < aged[j].EarliestUnconsumedTimestamp })
	body.LagTimestampTopK = aged[:min(k, len(aged))]
	return jsonResponse(req, body)
}

// processTriggerLiteDispatch queues again the backlog of a lite group's
// clients (RocketMQ's TRIGGER_LITE_DISPATCH): a full dispatch of the named
// client, or of every client of the group.
func (b *Broker) processTriggerLiteDispatch(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.TriggerLiteDispatchRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	if _, err := b.liteAdminGroup(h.Group, ""); err != nil {
		return nil, err
	}
	n := 0
	if h.ClientID != "" {
		n = b.lite.disp.fullDispatchClient(h.ClientID, h.Group)
	} else {
		n = b.lite.disp.fullDispatchGroup(h.Group)
	}
	b.logger.Info("lite dispatch triggered", "group", h.Group, "client", h.ClientID, "queued", n)
	return protocol.NewResponse(req, protocol.Success, ""), nil
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

// processGetBrokerLiteInfo answers the broker's lite topic count, its
// quota, the count per LITE parent, the lite subscriptions and event
// queues, and the groups bound to each parent.
func (b *Broker) processGetBrokerLiteInfo(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	groups := map[string][]string{}
	for name, gc := range b.Groups.Wrapper().SubscriptionGroupTable {
		if bind := gc.Attributes[attrLiteBindTopic]; bind != "" {
			groups[bind] = append(groups[bind], name)
		}
	}
	for _, g := range groups {
		sort.Strings(g)
	}
	return jsonResponse(req, protocol.GetBrokerLiteInfoResponseBody{StoreType: "default",
		MaxLmqNum: b.cfg.MaxLmqConsumeQueueNum, CurrentLmqNum: b.lite.registry.Len(),
		LiteSubscriptionCount: b.lite.subs.Count(), EventMapSize: b.lite.disp.events.Clients(),
		TopicMeta: b.lite.registry.Parents(), GroupMeta: groups})
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
