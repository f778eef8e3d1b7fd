package protocol

// JSON bodies served by the broker (docs/protocol.md §5.3.7, §5.3.11). Property
// names follow the Java getters; see §5.1 for the fastjson quirks.

// SubscriptionGroupConfig is one consumer group's broker-side settings
// (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP 200 body, GET_SUBSCRIPTIONGROUP_CONFIG
// 352 response, subscriptionGroup.json entries).
type SubscriptionGroupConfig struct {
	GroupName                      string              `json:"groupName"`
	ConsumeEnable                  bool                `json:"consumeEnable"`
	ConsumeFromMinEnable           bool                `json:"consumeFromMinEnable"`
	ConsumeBroadcastEnable         bool                `json:"consumeBroadcastEnable"`
	ConsumeMessageOrderly          bool                `json:"consumeMessageOrderly"`
	RetryQueueNums                 int32               `json:"retryQueueNums"`
	RetryMaxTimes                  int32               `json:"retryMaxTimes"`
	GroupRetryPolicy               *GroupRetryPolicy   `json:"groupRetryPolicy,omitempty"`
	BrokerID                       int64               `json:"brokerId"`
	WhichBrokerWhenConsumeSlowly   int64               `json:"whichBrokerWhenConsumeSlowly"`
	NotifyConsumerIdsChangedEnable bool                `json:"notifyConsumerIdsChangedEnable"`
	GroupSysFlag                   int32               `json:"groupSysFlag"`
	ConsumeTimeoutMinute           int32               `json:"consumeTimeoutMinute"`
	SubscriptionDataSet            []GroupSubscription `json:"subscriptionDataSet,omitempty"`
	Attributes                     map[string]string   `json:"attributes"`
}

// GroupSubscription is an entry of SubscriptionGroupConfig.subscriptionDataSet.
type GroupSubscription struct {
	Topic          string `json:"topic"`
	ExpressionType string `json:"expressionType"`
	Expression     string `json:"expression"`
	Version        int64  `json:"version,omitempty"`
}

// GroupRetryPolicy selects the POP/5.x retry delays.
type GroupRetryPolicy struct {
	Type                   string                  `json:"type"`
	ExponentialRetryPolicy *ExponentialRetryPolicy `json:"exponentialRetryPolicy,omitempty"`
	CustomizedRetryPolicy  *CustomizedRetryPolicy  `json:"customizedRetryPolicy,omitempty"`
}

// ExponentialRetryPolicy: delay = min(initial * multiplier^n, max), ms.
type ExponentialRetryPolicy struct {
	Initial    int64 `json:"initial"`
	Max        int64 `json:"max"`
	Multiplier int64 `json:"multiplier"`
}

// CustomizedRetryPolicy lists the delays, ms.
type CustomizedRetryPolicy struct {
	Next []int64 `json:"next"`
}

// NewSubscriptionGroupConfig returns a group with RocketMQ's defaults
// (docs/broker.md §1.6).
func NewSubscriptionGroupConfig(group string) SubscriptionGroupConfig {
	return SubscriptionGroupConfig{
		GroupName:                      group,
		ConsumeEnable:                  true,
		ConsumeFromMinEnable:           true,
		ConsumeBroadcastEnable:         true,
		RetryQueueNums:                 1,
		RetryMaxTimes:                  16,
		GroupRetryPolicy:               &GroupRetryPolicy{Type: "CUSTOMIZED"},
		WhichBrokerWhenConsumeSlowly:   1,
		NotifyConsumerIdsChangedEnable: true,
		ConsumeTimeoutMinute:           15,
		Attributes:                     map[string]string{},
	}
}

// SubscriptionGroupWrapper is GET_ALL_SUBSCRIPTIONGROUP_CONFIG's (201) body
// and the content of subscriptionGroup.json.
type SubscriptionGroupWrapper struct {
	SubscriptionGroupTable map[string]*SubscriptionGroupConfig `json:"subscriptionGroupTable"`
	ForbiddenTable         map[string]map[string]int32         `json:"forbiddenTable"`
	DataVersion            DataVersion                         `json:"dataVersion"`
}

// GroupForbidden is UPDATE_AND_GET_GROUP_FORBIDDEN's (353) response body:
// whether group may read topic.
type GroupForbidden struct {
	Group    string `json:"group"`
	Readable bool   `json:"readable"`
	Topic    string `json:"topic"`
}

// SubscriptionGroupList is UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST's (225) body.
type SubscriptionGroupList struct {
	GroupConfigList []SubscriptionGroupConfig `json:"groupConfigList"`
}

// GroupList is a list of group names (QUERY_TOPIC_CONSUME_BY_WHO 300).
type GroupList struct {
	GroupList []string `json:"groupList"`
}

// ConsumerOffsetWrapper is consumerOffset.json and GET_ALL_CONSUMER_OFFSET's
// (43) body: "topic@group" -> queueId -> next offset to consume. Java writes
// the queue ids as bare numbers; readers must normalise them first.
type ConsumerOffsetWrapper struct {
	OffsetTable map[string]map[int32]int64 `json:"offsetTable"`
	DataVersion *DataVersion               `json:"dataVersion,omitempty"`
}

// DelayOffsetWrapper is delayOffset.json and GET_ALL_DELAY_OFFSET's (45)
// body: delay level -> next schedule-queue offset.
type DelayOffsetWrapper struct {
	OffsetTable map[int32]int64 `json:"offsetTable"`
	DataVersion *DataVersion    `json:"dataVersion,omitempty"`
}

// TopicOffset is one queue's entry of TopicStatsTable (GET_TOPIC_STATS_INFO 202).
type TopicOffset struct {
	MinOffset           int64 `json:"minOffset"`
	MaxOffset           int64 `json:"maxOffset"`
	LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"`
}

// OffsetWrapper is one queue's entry of ConsumeStats (GET_CONSUME_STATS 208).
type OffsetWrapper struct {
	BrokerOffset   int64 `json:"brokerOffset"`
	ConsumerOffset int64 `json:"consumerOffset"`
	PullOffset     int64 `json:"pullOffset"`
	LastTimestamp  int64 `json:"lastTimestamp"`
}

// QueueValue pairs a queue with its value in a Map<MessageQueue, X> body.
type QueueValue[V any] struct {
	Queue MessageQueue
	Value V
}

// appendQueueMap writes entries as fastjson's object-keyed map (docs/protocol.md §5.1 #8).
func appendQueueMap[V any](dst []byte, entries []QueueValue[V]) ([]byte, error) {
	fe := make([]FastJSONEntry, len(entries))
	for i, e := range entries {
		fe[i] = FastJSONEntry{Key: e.Queue, Value: e.Value}
	}
	return AppendObjectKeyMap(dst, fe)
}

// EncodeTopicStatsTable renders TopicStatsTable:
// {"offsetTable":{{mq}:TopicOffset,...},"topicPutTps":x}.
func EncodeTopicStatsTable(entries []QueueValue[TopicOffset], putTps float64) ([]byte, error) {
	b := []byte(`{"offsetTable":`)
	b, err := appendQueueMap(b, entries)
	if err != nil {
		return nil, err
	}
	tps, err := MarshalJSON(putTps)
	if err != nil {
		return nil, err
	}
	b = append(append(append(b, `,"topicPutTps":`...), tps...), '}')
	return b, nil
}

// EncodeConsumeStats renders ConsumeStats:
// {"consumeTps":x,"offsetTable":{{mq}:OffsetWrapper,...}}.
func EncodeConsumeStats(entries []QueueValue[OffsetWrapper], consumeTps float64) ([]byte, error) {
	tps, err := MarshalJSON(consumeTps)
	if err != nil {
		return nil, err
	}
	b := append(append([]byte(`{"consumeTps":`), tps...), `,"offsetTable":`...)
	b, err = appendQueueMap(b, entries)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// EncodeResetOffsetBody renders ResetOffsetBody {"offsetTable":{{mq}:offset}}
// compactly, the layout the Go client's string-splitting parser and Java
// read (docs/protocol.md §5.2).
func EncodeResetOffsetBody(entries []QueueValue[int64]) ([]byte, error) {
	b, err := appendQueueMap([]byte(`{"offsetTable":`), entries)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// Connection is one client connection in connection-list bodies.
type Connection struct {
	ClientID   string `json:"clientId"`
	ClientAddr string `json:"clientAddr"`
	Language   string `json:"language"`
	Version    int32  `json:"version"`
}

// ConsumerConnection is GET_CONSUMER_CONNECTION_LIST's (203) body.
type ConsumerConnection struct {
	ConnectionSet     []Connection                `json:"connectionSet"`
	SubscriptionTable map[string]SubscriptionData `json:"subscriptionTable"`
	ConsumeType       string                      `json:"consumeType,omitempty"`
	MessageModel      string                      `json:"messageModel,omitempty"`
	ConsumeFromWhere  string                      `json:"consumeFromWhere,omitempty"`
}

// ProducerConnection is GET_PRODUCER_CONNECTION_LIST's (204) body.
type ProducerConnection struct {
	ConnectionSet []Connection `json:"connectionSet"`
}

// ResetOffsetRequestHeader is INVOKE_BROKER_TO_RESET_OFFSET's (222) header.
type ResetOffsetRequestHeader struct {
	Topic     string `ext:"topic,req"`
	Group     string `ext:"group,req"`
	Timestamp int64  `ext:"timestamp,req"` // ms; -1 = to the max offset
	IsForce   bool   `ext:"isForce"`
	QueueID   *int32 `ext:"queueId"`
	Offset    *int64 `ext:"offset"`
}

// ConsumerRunningInfoRequestHeader is GET_CONSUMER_RUNNING_INFO's (307)
// header, relayed by the broker to the client.
type ConsumerRunningInfoRequestHeader struct {
	ConsumerGroup string `ext:"consumerGroup,req"`
	ClientID      string `ext:"clientId,req"`
	JstackEnable  bool   `ext:"jstackEnable"`
}

// MessageRequestMode is SET_MESSAGE_REQUEST_MODE's (401) body
// (SetMessageRequestModeRequestBody) and an entry of
// messageRequestMode.json: how a group consumes a topic, "PULL" or "POP".
type MessageRequestMode struct {
	Topic            string `json:"topic"`
	ConsumerGroup    string `json:"consumerGroup"`
	Mode             string `json:"mode"`
	PopShareQueueNum int    `json:"popShareQueueNum"`
}

// QueryAssignmentRequestBody is QUERY_ASSIGNMENT's (400) body.
type QueryAssignmentRequestBody struct {
	Topic         string `json:"topic"`
	ConsumerGroup string `json:"consumerGroup"`
	ClientID      string `json:"clientId"`
	StrategyName  string `json:"strategyName"`
	MessageModel  string `json:"messageModel"`
}

// MessageQueueAssignment is one queue of a QUERY_ASSIGNMENT answer.
type MessageQueueAssignment struct {
	MessageQueue MessageQueue      `json:"messageQueue"`
	Mode         string            `json:"mode"`
	Attachments  map[string]string `json:"attachments,omitempty"`
}

// QueryAssignmentResponseBody is QUERY_ASSIGNMENT's (400) answer.
type QueryAssignmentResponseBody struct {
	MessageQueueAssignments []MessageQueueAssignment `json:"messageQueueAssignments"`
}
