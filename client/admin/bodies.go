package admin

import (
	"encoding/json"
	"fmt"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/protocol"
)

// Decoders of the broker's statistics bodies (docs/protocol.md §5.3.8-§5.3.10).
// Java writes maps keyed by MessageQueue with object keys (fastjson);
// protocol.UnmarshalFastJSON turns each key into a string holding the
// key's JSON, which mqKey parses.

type wireMQ struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int    `json:"queueId"`
}

func mqKey(k string) (client.MessageQueue, error) {
	var w wireMQ
	if err := json.Unmarshal([]byte(k), &w); err != nil {
		return client.MessageQueue{}, fmt.Errorf("message queue key %q: %w", k, err)
	}
	return client.MessageQueue{Topic: w.Topic, BrokerName: w.BrokerName, QueueID: w.QueueID}, nil
}

func mqMap[V any](in map[string]V) (map[client.MessageQueue]V, error) {
	out := make(map[client.MessageQueue]V, len(in))
	for k, v := range in {
		mq, err := mqKey(k)
		if err != nil {
			return nil, err
		}
		out[mq] = v
	}
	return out, nil
}

type topicOffset struct {
	MinOffset           int64 `json:"minOffset"`
	MaxOffset           int64 `json:"maxOffset"`
	LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"`
}

func decodeTopicStats(body []byte) (map[client.MessageQueue]topicOffset, error) {
	var w struct {
		OffsetTable map[string]topicOffset `json:"offsetTable"`
	}
	if err := protocol.UnmarshalFastJSON(body, &w); err != nil {
		return nil, err
	}
	return mqMap(w.OffsetTable)
}

type offsetWrapper struct {
	BrokerOffset   int64 `json:"brokerOffset"`
	ConsumerOffset int64 `json:"consumerOffset"`
	PullOffset     int64 `json:"pullOffset"`
	LastTimestamp  int64 `json:"lastTimestamp"`
}

type consumeStats struct {
	offsets    map[client.MessageQueue]offsetWrapper
	consumeTps float64
}

func decodeConsumeStats(body []byte) (*consumeStats, error) {
	var w struct {
		OffsetTable map[string]offsetWrapper `json:"offsetTable"`
		ConsumeTps  float64                  `json:"consumeTps"`
	}
	if err := protocol.UnmarshalFastJSON(body, &w); err != nil {
		return nil, err
	}
	m, err := mqMap(w.OffsetTable)
	if err != nil {
		return nil, err
	}
	return &consumeStats{offsets: m, consumeTps: w.ConsumeTps}, nil
}

type wireConnection struct {
	ClientID   string `json:"clientId"`
	ClientAddr string `json:"clientAddr"`
	Language   string `json:"language"`
	Version    int32  `json:"version"`
}

type wireConsumerConnection struct {
	ConnectionSet     []wireConnection                     `json:"connectionSet"`
	SubscriptionTable map[string]protocol.SubscriptionData `json:"subscriptionTable"`
	ConsumeType       string                               `json:"consumeType"`
	MessageModel      string                               `json:"messageModel"`
	ConsumeFromWhere  string                               `json:"consumeFromWhere"`
}

func decodeConsumerConnection(body []byte) (*wireConsumerConnection, error) {
	var w wireConsumerConnection
	if err := protocol.UnmarshalFastJSON(body, &w); err != nil {
		return nil, err
	}
	return &w, nil
}

func decodeResetOffset(body []byte) (map[client.MessageQueue]int64, error) {
	var w struct {
		OffsetTable map[string]int64 `json:"offsetTable"`
	}
	if err := protocol.UnmarshalFastJSON(body, &w); err != nil {
		return nil, err
	}
	return mqMap(w.OffsetTable)
}
