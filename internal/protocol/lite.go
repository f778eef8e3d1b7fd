package protocol

// RocketMQ 5.5's lite-topic admin requests (docs/priority-and-lite.md).
// Part of the wire protocol; never change a value.
const (
	GetBrokerLiteInfo  RequestCode = 200074 // body GetBrokerLiteInfoResponseBody
	GetParentTopicInfo RequestCode = 200075 // header GetParentTopicInfoRequestHeader
	GetLiteTopicInfo   RequestCode = 200076 // header GetLiteTopicInfoRequestHeader
)

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
// field names). topicMeta maps each LITE parent to its lite topic count.
type GetBrokerLiteInfoResponseBody struct {
	StoreType     string         `json:"storeType"`
	MaxLmqNum     int            `json:"maxLmqNum"`
	CurrentLmqNum int            `json:"currentLmqNum"`
	TopicMeta     map[string]int `json:"topicMeta"`
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
