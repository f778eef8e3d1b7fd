package protocol

import (
	"encoding/json"
	"fmt"
)

// RocketMQ 5.5's lite-topic requests (docs/priority-and-lite.md).
// Part of the wire protocol; never change a value.
const (
	PopLiteMessage        RequestCode = 200070 // header PopLiteMessageRequestHeader
	LiteSubscriptionCtl   RequestCode = 200071 // body LiteSubscriptionCtlRequestBody
	AckLiteMessage        RequestCode = 200072 // not served (acks use ACK_MESSAGE)
	NotifyUnsubscribeLite RequestCode = 200073 // broker to client; header NotifyUnsubscribeLiteRequestHeader
	GetBrokerLiteInfo     RequestCode = 200074 // body GetBrokerLiteInfoResponseBody
	GetParentTopicInfo    RequestCode = 200075 // header GetParentTopicInfoRequestHeader
	GetLiteTopicInfo      RequestCode = 200076 // header GetLiteTopicInfoRequestHeader
	GetLiteClientInfo     RequestCode = 200077 // header GetLiteClientInfoRequestHeader
	GetLiteGroupInfo      RequestCode = 200078 // header GetLiteGroupInfoRequestHeader
	TriggerLiteDispatch   RequestCode = 200079 // header TriggerLiteDispatchRequestHeader
)

// PopLiteMessageRequestHeader is POP_LITE_MESSAGE's header: one pop over
// every lite topic the client subscribed under the parent Topic.
type PopLiteMessageRequestHeader struct {
	ClientID      string `ext:"clientId,req"`
	ConsumerGroup string `ext:"consumerGroup,req"`
	Topic         string `ext:"topic,req"`
	MaxMsgNum     int32  `ext:"maxMsgNum,req"`
	InvisibleTime int64  `ext:"invisibleTime,req"`
	PollTime      int64  `ext:"pollTime,req"`
	BornTime      int64  `ext:"bornTime,req"`
	AttemptID     string `ext:"attemptId,omitempty"`
}

// PopLiteMessageResponseHeader answers POP_LITE_MESSAGE. ReviveQid is
// PopOrderReviveQueue (lite topics are consumed in order); OrderCountInfo
// is each message's earlier deliveries, ';'-separated in body order. A
// message's ExtraInfo is rebuilt from these and the record's own topic,
// queue and offset (startOffsetInfo / msgOffsetInfo are not sent: one pop
// reads many queues).
type PopLiteMessageResponseHeader struct {
	PopTime         int64  `ext:"popTime"`
	InvisibleTime   int64  `ext:"invisibleTime"`
	ReviveQid       int32  `ext:"reviveQid"`
	StartOffsetInfo string `ext:"startOffsetInfo,omitempty"`
	MsgOffsetInfo   string `ext:"msgOffsetInfo,omitempty"`
	OrderCountInfo  string `ext:"orderCountInfo,omitempty"`
}

// NotifyUnsubscribeLiteRequestHeader is the broker's NOTIFY_UNSUBSCRIBE_LITE
// to a client: it no longer holds the lite topic (expired, or taken by
// another client of an exclusive group).
type NotifyUnsubscribeLiteRequestHeader struct {
	LiteTopic     string `ext:"liteTopic,req"`
	ConsumerGroup string `ext:"consumerGroup,req"`
	ClientID      string `ext:"clientId,req"`
}

// Lite subscription actions (LiteSubscriptionDTO.action, by name).
const (
	LiteActionPartialAdd     = "PARTIAL_ADD"
	LiteActionPartialRemove  = "PARTIAL_REMOVE"
	LiteActionCompleteAdd    = "COMPLETE_ADD"
	LiteActionCompleteRemove = "COMPLETE_REMOVE"
)

// LiteSubscriptionCtlRequestBody is LITE_SUBSCRIPTION_CTL's body.
type LiteSubscriptionCtlRequestBody struct {
	SubscriptionSet []LiteSubscriptionDTO `json:"subscriptionSet"`
}

// LiteSubscriptionDTO is one change of one client's lite subscriptions.
// LiteTopicSet names lite topics (not queue names).
type LiteSubscriptionDTO struct {
	Action       string            `json:"action"`
	ClientID     string            `json:"clientId"`
	Group        string            `json:"group"`
	Topic        string            `json:"topic"`
	LiteTopicSet []string          `json:"liteTopicSet,omitempty"`
	OffsetOption *LiteOffsetOption `json:"offsetOption,omitempty"`
	Version      int64             `json:"version,omitempty"`
}

// LiteOffsetOption is where a new lite subscription starts (RocketMQ's
// OffsetOption): Type POLICY with Value 0 (keep), 1 (the queue's start) or
// 2 (its end); OFFSET with the offset; TAIL_N with how many messages back
// from the group's current offset; TIMESTAMP is accepted and ignored, as
// RocketMQ 5.5 does.
type LiteOffsetOption struct {
	Type  string `json:"type"`
	Value int64  `json:"value"`
}

// Offset option types and POLICY values.
const (
	LiteOffsetPolicy    = "POLICY"
	LiteOffsetOffset    = "OFFSET"
	LiteOffsetTailN     = "TAIL_N"
	LiteOffsetTimestamp = "TIMESTAMP"

	LiteOffsetPolicyLast = 0
	LiteOffsetPolicyMin  = 1
	LiteOffsetPolicyMax  = 2
)

// DecodeLiteSubscriptionCtlBody parses LITE_SUBSCRIPTION_CTL's body (JSON,
// fastjson's dialect accepted). Enum fields may come as names or ordinals.
func DecodeLiteSubscriptionCtlBody(data []byte) (LiteSubscriptionCtlRequestBody, error) {
	var raw struct {
		SubscriptionSet []struct {
			Action       json.RawMessage `json:"action"`
			ClientID     string          `json:"clientId"`
			Group        string          `json:"group"`
			Topic        string          `json:"topic"`
			LiteTopicSet []string        `json:"liteTopicSet"`
			OffsetOption *struct {
				Type  json.RawMessage `json:"type"`
				Value int64           `json:"value"`
			} `json:"offsetOption"`
			Version int64 `json:"version"`
		} `json:"subscriptionSet"`
	}
	var out LiteSubscriptionCtlRequestBody
	if err := UnmarshalFastJSON(data, &raw); err != nil {
		return out, fmt.Errorf("protocol: lite subscription body: %w", err)
	}
	actions := []string{LiteActionPartialAdd, LiteActionPartialRemove, LiteActionCompleteAdd, LiteActionCompleteRemove}
	types := []string{LiteOffsetPolicy, LiteOffsetOffset, LiteOffsetTailN, LiteOffsetTimestamp}
	for i, e := range raw.SubscriptionSet {
		a, err := enumName(e.Action, actions)
		if err != nil {
			return out, fmt.Errorf("protocol: lite subscription %d: action: %w", i, err)
		}
		d := LiteSubscriptionDTO{Action: a, ClientID: e.ClientID, Group: e.Group, Topic: e.Topic,
			LiteTopicSet: e.LiteTopicSet, Version: e.Version}
		if e.OffsetOption != nil {
			t, err := enumName(e.OffsetOption.Type, types)
			if err != nil {
				return out, fmt.Errorf("protocol: lite subscription %d: offset option: %w", i, err)
			}
			d.OffsetOption = &LiteOffsetOption{Type: t, Value: e.OffsetOption.Value}
		}
		out.SubscriptionSet = append(out.SubscriptionSet, d)
	}
	return out, nil
}

// enumName reads a Java enum written by name or by ordinal.
func enumName(raw json.RawMessage, names []string) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		for _, n := range names {
			if n == s {
				return n, nil
			}
		}
		return "", fmt.Errorf("unknown value %q", s)
	}
	var n int
	if err := json.Unmarshal(raw, &n); err == nil && n >= 0 && n < len(names) {
		return names[n], nil
	}
	return "", fmt.Errorf("unknown value %s", string(raw))
}

// GetParentTopicInfoRequestHeader names the LITE parent topic.
type GetParentTopicInfoRequestHeader struct {
	Topic string `ext:"topic,req"`
}

// GetLiteTopicInfoRequestHeader names one lite topic.
type GetLiteTopicInfoRequestHeader struct {
	ParentTopic string `ext:"parentTopic,req"`
	LiteTopic   string `ext:"liteTopic,req"`
}

// GetBrokerLiteInfoResponseBody is GET_BROKER_LITE_INFO's answer (RocketMQ's
// field names). topicMeta maps each LITE parent to its lite topic count,
// groupMeta each parent to the groups bound to it (lite.bind.topic);
// eventMapSize is the number of clients with a lite event queue.
type GetBrokerLiteInfoResponseBody struct {
	StoreType             string              `json:"storeType"`
	MaxLmqNum             int                 `json:"maxLmqNum"`
	CurrentLmqNum         int                 `json:"currentLmqNum"`
	LiteSubscriptionCount int                 `json:"liteSubscriptionCount"`
	EventMapSize          int                 `json:"eventMapSize"`
	TopicMeta             map[string]int      `json:"topicMeta"`
	GroupMeta             map[string][]string `json:"groupMeta,omitempty"`
}

// GetParentTopicInfoResponseBody is GET_PARENT_TOPIC_INFO's answer:
// RocketMQ's fields (ttl in minutes, as lite.topic.expiration) and
// Apogee's liteTopics, the first names in order (at most 1000).
type GetParentTopicInfoResponseBody struct {
	Topic          string   `json:"topic"`
	TTL            int      `json:"ttl"`
	LmqNum         int      `json:"lmqNum"`
	LiteTopicCount int      `json:"liteTopicCount"`
	LiteTopics     []string `json:"liteTopics,omitempty"`
}

// LiteTopicOffset is RocketMQ's TopicOffset of a lite topic's queue.
type LiteTopicOffset struct {
	MinOffset           int64 `json:"minOffset"`
	MaxOffset           int64 `json:"maxOffset"`
	LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"`
}

// GetLiteTopicInfoResponseBody is GET_LITE_TOPIC_INFO's answer.
type GetLiteTopicInfoResponseBody struct {
	ParentTopic      string          `json:"parentTopic"`
	LiteTopic        string          `json:"liteTopic"`
	TopicOffset      LiteTopicOffset `json:"topicOffset"`
	ShardingToBroker bool            `json:"shardingToBroker"`
}

// GetLiteClientInfoRequestHeader asks for one client's lite subscriptions
// under a parent (GET_LITE_CLIENT_INFO). MaxCount bounds the names
// answered: absent means 1000, and it must be > 0 (RocketMQ's check).
type GetLiteClientInfoRequestHeader struct {
	ParentTopic string `ext:"parentTopic"`
	Group       string `ext:"group"`
	ClientID    string `ext:"clientId"`
	MaxCount    int32  `ext:"maxCount,omitempty"`
}

// GetLiteClientInfoResponseBody answers GET_LITE_CLIENT_INFO (RocketMQ's
// field names). LiteTopicCount is -1 for a client without subscriptions;
// LiteTopicSet holds the subscribed lite topics' queue names
// (%LMQ%$parent$lite), at most maxCount. The times are ms, -1 when the
// client never popped.
type GetLiteClientInfoResponseBody struct {
	ParentTopic     string   `json:"parentTopic"`
	Group           string   `json:"group"`
	ClientID        string   `json:"clientId"`
	LastAccessTime  int64    `json:"lastAccessTime"`
	LastConsumeTime int64    `json:"lastConsumeTime"`
	LiteTopicCount  int      `json:"liteTopicCount"`
	LiteTopicSet    []string `json:"liteTopicSet"`
}

// GetLiteGroupInfoRequestHeader asks for a lite group's lag
// (GET_LITE_GROUP_INFO): of one lite topic when LiteTopic is set, else
// the total and the TopK lite topics by lag count and by age.
type GetLiteGroupInfoRequestHeader struct {
	Group     string `ext:"group,req"`
	LiteTopic string `ext:"liteTopic,omitempty"`
	TopK      int32  `ext:"topK,omitempty"`
}

// LiteLagInfo is one lite topic's lag in GET_LITE_GROUP_INFO's TopK lists.
type LiteLagInfo struct {
	LiteTopic                   string `json:"liteTopic"`
	LagCount                    int64  `json:"lagCount"`
	EarliestUnconsumedTimestamp int64  `json:"earliestUnconsumedTimestamp"`
}

// GetLiteGroupInfoResponseBody answers GET_LITE_GROUP_INFO (RocketMQ's
// field names). For one lite topic: TotalLagCount and
// EarliestUnconsumedTimestamp are its own (-1 both for a lite topic
// without messages) and LiteTopicOffsetWrapper its offsets (absent when
// the group never committed one).
type GetLiteGroupInfoResponseBody struct {
	Group                       string         `json:"group"`
	ParentTopic                 string         `json:"parentTopic"`
	LiteTopic                   string         `json:"liteTopic,omitempty"`
	EarliestUnconsumedTimestamp int64          `json:"earliestUnconsumedTimestamp"`
	TotalLagCount               int64          `json:"totalLagCount"`
	LiteTopicOffsetWrapper      *OffsetWrapper `json:"liteTopicOffsetWrapper,omitempty"`
	LagCountTopK                []LiteLagInfo  `json:"lagCountTopK,omitempty"`
	LagTimestampTopK            []LiteLagInfo  `json:"lagTimestampTopK,omitempty"`
}

// TriggerLiteDispatchRequestHeader asks the broker to queue the backlog of
// a lite group's clients again (TRIGGER_LITE_DISPATCH): of one client when
// ClientID is set, else of every client of the group.
type TriggerLiteDispatchRequestHeader struct {
	Group    string `ext:"group,req"`
	ClientID string `ext:"clientId,omitempty"`
}

// DecodeGetLiteClientInfoBody decodes GET_LITE_CLIENT_INFO's answer (fastjson
// as RocketMQ's broker writes it).
func DecodeGetLiteClientInfoBody(data []byte) (GetLiteClientInfoResponseBody, error) {
	var b GetLiteClientInfoResponseBody
	if err := UnmarshalFastJSON(data, &b); err != nil {
		return b, fmt.Errorf("protocol: GetLiteClientInfoResponseBody: %w", err)
	}
	return b, nil
}

// DecodeGetLiteGroupInfoBody decodes GET_LITE_GROUP_INFO's answer (fastjson).
func DecodeGetLiteGroupInfoBody(data []byte) (GetLiteGroupInfoResponseBody, error) {
	var b GetLiteGroupInfoResponseBody
	if err := UnmarshalFastJSON(data, &b); err != nil {
		return b, fmt.Errorf("protocol: GetLiteGroupInfoResponseBody: %w", err)
	}
	return b, nil
}
