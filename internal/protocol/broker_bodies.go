package protocol

// JSON bodies served by the broker (remoting.md §5.3.7, §5.3.11). Property
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
// (storage-and-broker.md §8.6).
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
