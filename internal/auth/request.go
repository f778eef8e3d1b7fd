package auth

import (
	"encoding/json"
	"strings"

	"github.com/apogeemq/apogee/internal/protocol"
)

// What each remoting request code asks (RocketMQ 5.3's
// DefaultAuthorizationContextBuilder and the @RocketMQAction annotations
// of its request headers, with three deliberate differences):
//
//   - offset lookups a consumer makes at start (GET_MAX_OFFSET,
//     GET_MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP,
//     GET_EARLIEST_MSG_STORETIME) accept Sub as well as Get, so Sub on
//     topic and group is all a consumer needs;
//   - a %DLQ% topic, like a %RETRY% topic, is checked as its group;
//   - codes the table does not know are admin requests needing Update on
//     Cluster:<cluster> (RocketMQ lets unannotated codes through).
//
// Codes with no checks (noChecks) still need authentication.

// field is a header field holding a resource name.
type field struct {
	name    string
	typ     ResourceType
	actions []Action
	split   string // "" = one name; else names separated by it
}

func topicField(name string, actions []Action) field {
	return field{name: name, typ: ResourceTopic, actions: actions}
}

func groupField(name string, actions []Action) field {
	return field{name: name, typ: ResourceGroup, actions: actions}
}

// fieldRules maps codes whose resources are plain header fields. A topic
// field holding a retry or DLQ topic is checked as its group; an absent
// or empty field is skipped.
var fieldRules = map[protocol.RequestCode][]field{
	protocol.QueryMessage:                    {topicField("topic", actSubGet)},
	protocol.UpdateAndCreateTopic:            {topicField("topic", actCreate)},
	protocol.DeleteTopicInBroker:             {topicField("topic", actDelete)},
	protocol.GetTopicConfig:                  {topicField("topic", actGet)},
	protocol.GetTopicStatsInfo:               {topicField("topic", actGet)},
	protocol.QueryTopicConsumeByWho:          {topicField("topic", actGet)},
	protocol.GetMaxOffset:                    {topicField("topic", actSubGet)},
	protocol.GetMinOffset:                    {topicField("topic", actSubGet)},
	protocol.SearchOffsetByTimestamp:         {topicField("topic", actSubGet)},
	protocol.GetEarliestMsgStoreTime:         {topicField("topic", actSubGet)},
	protocol.ViewMessageByID:                 {topicField("topic", actSubGet)},
	protocol.RecallMessage:                   {topicField("topic", actPub)},
	protocol.ResumeCheckHalfMessage:          {topicField("topic", actUpdate)},
	protocol.ConsumerSendMsgBack:             {groupField("group", actSub)},
	protocol.GetConsumerListByGroup:          {groupField("consumerGroup", actSubGet)},
	protocol.GetConsumerConnectionList:       {groupField("consumerGroup", actGet)},
	protocol.GetConsumerRunningInfo:          {groupField("consumerGroup", actGet)},
	protocol.ConsumeMessageDirectly:          {groupField("consumerGroup", actSub)},
	protocol.DeleteSubscriptionGroup:         {groupField("groupName", actDelete)},
	protocol.GetSubscriptionGroupConfig:      {groupField("group", actGet)},
	protocol.QueryTopicsByConsumer:           {groupField("group", actGet)},
	protocol.QueryConsumerOffset:             {topicField("topic", actSubGet), groupField("consumerGroup", actSubGet)},
	protocol.UpdateConsumerOffset:            {topicField("topic", actSubUpdate), groupField("consumerGroup", actSubUpdate)},
	protocol.GetConsumeStats:                 {topicField("topic", actGet), groupField("consumerGroup", actGet)},
	protocol.InvokeBrokerToResetOffset:       {topicField("topic", actUpdate), groupField("group", actUpdate)},
	protocol.InvokeBrokerToGetConsumerStatus: {topicField("topic", actGet), groupField("group", actGet)},
	protocol.QueryConsumeTimeSpan:            {topicField("topic", actGet), groupField("group", actGet)},
	protocol.QueryConsumeQueue:               {topicField("topic", actGet), groupField("consumerGroup", actGet)},
	protocol.QuerySubscriptionByConsumer:     {topicField("topic", actGet), groupField("group", actGet)},
	protocol.CloneGroupOffset:                {topicField("topic", actUpdate), groupField("destGroup", actUpdate)},
	protocol.UpdateAndGetGroupForbidden:      {topicField("topic", actUpdate), groupField("group", actUpdate)},
	protocol.QueryCorrectionOffset: {topicField("topic", actGet), groupField("compareGroup", actGet),
		{name: "filterGroups", typ: ResourceGroup, actions: actGet, split: ","}},
	protocol.PopMessage:                 {topicField("topic", actSub), groupField("consumerGroup", actSub)},
	protocol.AckMessage:                 {topicField("topic", actSub), groupField("consumerGroup", actSub)},
	protocol.PeekMessage:                {topicField("topic", actSub), groupField("consumerGroup", actSub)},
	protocol.ChangeMessageInvisibleTime: {topicField("topic", actSub), groupField("consumerGroup", actSub)},
	protocol.Notification:               {topicField("topic", actSub), groupField("consumerGroup", actSub)},
	protocol.PollingInfo:                {topicField("topic", actSub), groupField("consumerGroup", actSub)},
}

// clusterGet: admin reads of broker-wide state: Get on Cluster:<cluster>.
var clusterGet = map[protocol.RequestCode]bool{
	protocol.GetAllTopicConfig: true, protocol.GetTopicConfigList: true, protocol.GetTopicNameList: true,
	protocol.GetBrokerConfig: true, protocol.GetBrokerRuntimeInfo: true, protocol.GetAllConsumerOffset: true,
	protocol.GetAllDelayOffset: true, protocol.GetAllSubscriptionGroupConfig: true,
	protocol.GetProducerConnectionList: true, protocol.GetSystemTopicListFromBroker: true,
	protocol.ViewBrokerStatsData: true, protocol.GetBrokerConsumeStats: true, protocol.GetAllProducerInfo: true,
	protocol.GetTimerCheckPoint: true, protocol.GetTimerMetrics: true, protocol.GetBrokerMemberGroup: true,
	protocol.GetBrokerHAStatus: true, protocol.QueryBrokerOffset: true,
	protocol.AuthGetUser: true, protocol.AuthListUser: true, protocol.AuthGetACL: true, protocol.AuthListACL: true,
	protocol.GetKVConfig: true, protocol.GetKVListByNamespace: true, protocol.GetNamesrvConfig: true,
	protocol.GetAllTopicListFromNameServer: true, protocol.GetTopicsByCluster: true,
	protocol.GetSystemTopicListFromNS: true, protocol.QueryDataVersion: true,
}

// noChecks: requests any authenticated user may make (no resource).
var noChecks = map[protocol.RequestCode]bool{
	protocol.CheckClientConfig: true, protocol.GetClientConfig: true, protocol.QueryAssignment: true,
	protocol.SetMessageRequestMode: true, protocol.BatchAckMessage: true,
	protocol.GetRouteInfoByTopic: true, protocol.GetBrokerClusterInfo: true,
}

// RemotingChecks appends to dst what req asks and returns it. cluster
// names the Cluster resource of admin requests. A body that cannot be
// parsed (HEART_BEAT, LOCK_BATCH_MQ) is a refusal, as RocketMQ's "parse
// authorization context error.".
func RemotingChecks(dst []Check, req *protocol.Command, cluster string) ([]Check, error) {
	code := protocol.RequestCode(req.Code)
	switch code {
	case protocol.SendMessage, protocol.SendReplyMessage:
		return appendSend(dst, req.Ext("topic")), nil
	case protocol.SendMessageV2, protocol.SendBatchMessage, protocol.SendReplyMessageV2:
		return appendSend(dst, req.Ext("b")), nil
	case protocol.EndTransaction:
		if t := req.Ext("topic"); t != "" {
			dst = append(dst, Check{Topic(t), actPub})
		}
		return dst, nil
	case protocol.PullMessage, protocol.LitePullMessage:
		if t := req.Ext("topic"); !isRetryTopic(t) && !isDLQTopic(t) {
			dst = append(dst, Check{Topic(t), actSub})
		}
		return append(dst, Check{Group(groupOf(req.Ext("consumerGroup"))), actSub}), nil
	case protocol.HeartBeat:
		hb, err := protocol.DecodeHeartbeat(req.Body)
		if err != nil {
			return dst, refusef("parse authorization context error.")
		}
		for _, c := range hb.ConsumerDataSet {
			dst = append(dst, Check{Group(groupOf(c.GroupName)), actSub})
			for _, s := range c.SubscriptionDataSet {
				if !isRetryTopic(s.Topic) && !isDLQTopic(s.Topic) {
					dst = append(dst, Check{Topic(s.Topic), actSub})
				}
			}
		}
		return dst, nil
	case protocol.UnregisterClient:
		if g := req.Ext("consumerGroup"); g != "" {
			dst = append(dst, Check{Group(groupOf(g)), actSub})
		}
		return dst, nil
	case protocol.LockBatchMQ, protocol.UnlockBatchMQ:
		var body protocol.LockBatchRequestBody
		if err := json.Unmarshal(req.Body, &body); err != nil {
			return dst, refusef("parse authorization context error.")
		}
		dst = append(dst, Check{Group(groupOf(body.ConsumerGroup)), actSub})
		for _, mq := range body.MQSet {
			if !isRetryTopic(mq.Topic) && !isDLQTopic(mq.Topic) {
				dst = append(dst, Check{Topic(mq.Topic), actSub})
			}
		}
		return dst, nil
	case protocol.UpdateAndCreateSubscriptionGroup:
		var body struct {
			GroupName string `json:"groupName"`
		}
		if err := json.Unmarshal(req.Body, &body); err != nil || body.GroupName == "" {
			return dst, refusef("parse authorization context error.")
		}
		return append(dst, Check{Group(groupOf(body.GroupName)), actCreate}), nil
	}
	if fs, ok := fieldRules[code]; ok {
		for _, f := range fs {
			dst = appendField(dst, f, req.Ext(f.name))
		}
		return dst, nil
	}
	if noChecks[code] {
		return dst, nil
	}
	if clusterGet[code] {
		return append(dst, Check{Cluster(cluster), actGet}), nil
	}
	return append(dst, Check{Cluster(cluster), actUpdate}), nil
}

// appendSend: a send to a retry (or DLQ) topic is a consumer's send-back
// and needs Sub on the group the topic belongs to; any other send needs
// Pub on the topic. (RocketMQ checks the request's producer group instead,
// which for the clients' fallback send-back is CLIENT_INNER_PRODUCER, a
// group nobody is granted.)
func appendSend(dst []Check, topic string) []Check {
	if isRetryTopic(topic) || isDLQTopic(topic) {
		return append(dst, Check{Group(groupOf(topic)), actSub})
	}
	return append(dst, Check{Topic(topic), actPub})
}

func appendField(dst []Check, f field, value string) []Check {
	if value == "" {
		return dst
	}
	names := []string{value}
	if f.split != "" {
		names = strings.Split(value, f.split)
	}
	for _, n := range names {
		if n == "" {
			continue
		}
		switch {
		case f.typ == ResourceTopic && (isRetryTopic(n) || isDLQTopic(n)):
			dst = append(dst, Check{Group(groupOf(n)), f.actions})
		case f.typ == ResourceGroup:
			dst = append(dst, Check{Group(groupOf(n)), f.actions})
		default:
			dst = append(dst, Check{Resource{Type: f.typ, Name: n}, f.actions})
		}
	}
	return dst
}
