package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// HeartbeatData is the HEART_BEAT (34) request body (docs/protocol.md §5.3.4).
type HeartbeatData struct {
	ClientID        string         `json:"clientID"`
	ProducerDataSet []ProducerData `json:"producerDataSet"`
	ConsumerDataSet []ConsumerData `json:"consumerDataSet"`
	// HeartbeatFingerprint and WithoutSub are heartbeat v2 (Java only); a
	// zero fingerprint means v1.
	HeartbeatFingerprint int64 `json:"heartbeatFingerprint,omitempty"`
	WithoutSub           bool  `json:"withoutSub,omitempty"`
}

// ProducerData names one producer group of a client.
type ProducerData struct {
	GroupName string `json:"groupName"`
}

// Consume types, message models and consume-from-where values as clients
// spell them.
const (
	ConsumeActively  = "CONSUME_ACTIVELY"
	ConsumePassively = "CONSUME_PASSIVELY"
	ConsumePop       = "CONSUME_POP"

	MessageModelClustering   = "CLUSTERING"
	MessageModelBroadcasting = "BROADCASTING"

	ConsumeFromLastOffset  = "CONSUME_FROM_LAST_OFFSET"
	ConsumeFromFirstOffset = "CONSUME_FROM_FIRST_OFFSET"
	ConsumeFromTimestamp   = "CONSUME_FROM_TIMESTAMP"

	ExpressionTag   = "TAG"
	ExpressionSQL92 = "SQL92"
	// SubAll is the "every tag" expression.
	SubAll = "*"
)

// ConsumerData describes one consumer group of a client.
type ConsumerData struct {
	GroupName           string             `json:"groupName"`
	ConsumeType         string             `json:"consumeType"`
	MessageModel        string             `json:"messageModel"`
	ConsumeFromWhere    string             `json:"consumeFromWhere"`
	SubscriptionDataSet []SubscriptionData `json:"subscriptionDataSet"`
	UnitMode            bool               `json:"unitMode"`
}

// SubscriptionData is one topic subscription. The Go client sends CodeSet
// elements as strings and SubVersion in nanoseconds; Java sends numbers and
// milliseconds. Both are accepted.
type SubscriptionData struct {
	ClassFilterMode bool     `json:"classFilterMode"`
	Topic           string   `json:"topic"`
	SubString       string   `json:"subString"`
	TagsSet         []string `json:"tagsSet"`
	CodeSet         CodeSet  `json:"codeSet"`
	SubVersion      int64    `json:"subVersion"`
	// ExpressionType is TAG or SQL92; "" means TAG (docs/protocol.md §9.4 #25).
	ExpressionType string `json:"expressionType"`
}

// IsTag reports whether the subscription is a tag expression.
func (s *SubscriptionData) IsTag() bool {
	return s.ExpressionType == "" || s.ExpressionType == ExpressionTag
}

// CodeSet is a list of tag hash codes that decodes from JSON numbers or
// numeric strings and encodes as numbers.
type CodeSet []int32

// UnmarshalJSON accepts [97,"98"] and null.
func (c *CodeSet) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*c = nil
		return nil
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("protocol: codeSet: %w", err)
	}
	out := make(CodeSet, 0, len(raw))
	for _, r := range raw {
		s := string(bytes.TrimSpace(r))
		if len(s) >= 2 && s[0] == '"' {
			if err := json.Unmarshal(r, &s); err != nil {
				return fmt.Errorf("protocol: codeSet: %w", err)
			}
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("protocol: codeSet element %s: %w", s, err)
		}
		out = append(out, int32(n))
	}
	*c = out
	return nil
}

// DecodeHeartbeat parses a HEART_BEAT body.
func DecodeHeartbeat(body []byte) (*HeartbeatData, error) {
	var h HeartbeatData
	if err := json.Unmarshal(body, &h); err != nil {
		return nil, fmt.Errorf("protocol: heartbeat body: %w", err)
	}
	return &h, nil
}

// ConsumerListBody is GET_CONSUMER_LIST_BY_GROUP's response body.
type ConsumerListBody struct {
	ConsumerIDList []string `json:"consumerIdList"`
}

// CheckClientRequestBody is CHECK_CLIENT_CONFIG's (46) request body.
type CheckClientRequestBody struct {
	ClientID         string            `json:"clientId"`
	Group            string            `json:"group"`
	SubscriptionData *SubscriptionData `json:"subscriptionData"`
	Namespace        string            `json:"namespace,omitempty"`
}

// MessageQueue identifies one queue of a topic on one broker.
type MessageQueue struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
}

// LockBatchRequestBody is the LOCK_BATCH_MQ / UNLOCK_BATCH_MQ request body.
type LockBatchRequestBody struct {
	ConsumerGroup  string         `json:"consumerGroup"`
	ClientID       string         `json:"clientId"`
	OnlyThisBroker bool           `json:"onlyThisBroker"`
	MQSet          []MessageQueue `json:"mqSet"`
}

// LockBatchResponseBody lists the queues the requester now holds.
type LockBatchResponseBody struct {
	LockOKMQSet []MessageQueue `json:"lockOKMQSet"`
}
