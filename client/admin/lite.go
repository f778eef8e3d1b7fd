package admin

import (
	"context"
	"fmt"

	"github.com/apogeemq/apogee/internal/lite"
	"github.com/apogeemq/apogee/internal/protocol"
)

// Lite topics (RocketMQ 5.5): the broker's lite admin requests.

// ValidateLiteName checks a lite topic name as the broker does: 1..64
// bytes of letters, digits, '_', '-' and '.'.
func ValidateLiteName(name string) error { return lite.ValidateName(name) }

// LiteQueueName is the store topic that holds lite topic name under
// parent ("%LMQ%$parent$name").
func LiteQueueName(parent, name string) string { return lite.QueueName(parent, name) }

// BrokerLiteInfo is a broker's lite topic totals (GET_BROKER_LITE_INFO).
func (a *Admin) BrokerLiteInfo(ctx context.Context, brokerAddr string) (protocol.GetBrokerLiteInfoResponseBody, error) {
	var out protocol.GetBrokerLiteInfoResponseBody
	resp, err := a.invokeOK(ctx, brokerAddr, "", protocol.NewRequest(protocol.GetBrokerLiteInfo, nil, nil))
	if err != nil {
		return out, err
	}
	if err := protocol.UnmarshalFastJSON(resp.Body, &out); err != nil {
		return out, fmt.Errorf("admin: broker lite info of %s: %w", brokerAddr, err)
	}
	return out, nil
}

// ParentTopicInfo is a LITE parent topic's TTL, lite topic count and first
// lite topic names on one broker (GET_PARENT_TOPIC_INFO).
func (a *Admin) ParentTopicInfo(ctx context.Context, brokerAddr, topic string) (protocol.GetParentTopicInfoResponseBody, error) {
	var out protocol.GetParentTopicInfoResponseBody
	h := protocol.GetParentTopicInfoRequestHeader{Topic: topic}
	resp, err := a.invokeOK(ctx, brokerAddr, topic, protocol.NewRequest(protocol.GetParentTopicInfo, protocol.EncodeHeader(&h, false), nil))
	if err != nil {
		return out, err
	}
	if err := protocol.UnmarshalFastJSON(resp.Body, &out); err != nil {
		return out, fmt.Errorf("admin: parent topic info of %s: %w", topic, err)
	}
	return out, nil
}

// LiteTopicInfo describes one lite topic on one broker (GET_LITE_TOPIC_INFO).
func (a *Admin) LiteTopicInfo(ctx context.Context, brokerAddr, parent, liteTopic string) (protocol.GetLiteTopicInfoResponseBody, error) {
	var out protocol.GetLiteTopicInfoResponseBody
	h := protocol.GetLiteTopicInfoRequestHeader{ParentTopic: parent, LiteTopic: liteTopic}
	resp, err := a.invokeOK(ctx, brokerAddr, parent, protocol.NewRequest(protocol.GetLiteTopicInfo, protocol.EncodeHeader(&h, false), nil))
	if err != nil {
		return out, err
	}
	if err := protocol.UnmarshalFastJSON(resp.Body, &out); err != nil {
		return out, fmt.Errorf("admin: lite topic info of %s/%s: %w", parent, liteTopic, err)
	}
	return out, nil
}
