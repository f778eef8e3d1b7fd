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

// LiteClientInfo is one client's lite subscriptions under a parent on one
// broker and its last pops (GET_LITE_CLIENT_INFO); maxCount (<= 0: 1000)
// bounds the names answered.
func (a *Admin) LiteClientInfo(ctx context.Context, brokerAddr, parent, group, clientID string, maxCount int) (protocol.GetLiteClientInfoResponseBody, error) {
	if maxCount <= 0 {
		maxCount = 1000
	}
	h := protocol.GetLiteClientInfoRequestHeader{ParentTopic: parent, Group: group, ClientID: clientID, MaxCount: int32(maxCount)}
	resp, err := a.invokeOK(ctx, brokerAddr, parent, protocol.NewRequest(protocol.GetLiteClientInfo, protocol.EncodeHeader(&h, false), nil))
	if err != nil {
		return protocol.GetLiteClientInfoResponseBody{}, err
	}
	out, err := protocol.DecodeGetLiteClientInfoBody(resp.Body)
	if err != nil {
		return out, fmt.Errorf("admin: lite client info of %s on %s: %w", clientID, brokerAddr, err)
	}
	return out, nil
}

// LiteGroupInfo is a lite group's lag on one broker (GET_LITE_GROUP_INFO):
// of liteTopic when set, else the total with the topK lite topics by lag
// count and by age.
func (a *Admin) LiteGroupInfo(ctx context.Context, brokerAddr, group, liteTopic string, topK int) (protocol.GetLiteGroupInfoResponseBody, error) {
	h := protocol.GetLiteGroupInfoRequestHeader{Group: group, LiteTopic: liteTopic, TopK: int32(topK)}
	resp, err := a.invokeOK(ctx, brokerAddr, "", protocol.NewRequest(protocol.GetLiteGroupInfo, protocol.EncodeHeader(&h, false), nil))
	if err != nil {
		return protocol.GetLiteGroupInfoResponseBody{}, err
	}
	out, err := protocol.DecodeGetLiteGroupInfoBody(resp.Body)
	if err != nil {
		return out, fmt.Errorf("admin: lite group info of %s on %s: %w", group, brokerAddr, err)
	}
	return out, nil
}

// TriggerLiteDispatch asks one broker to queue again the backlog of a lite
// group's client (every client of the group with clientID "")
// (TRIGGER_LITE_DISPATCH).
func (a *Admin) TriggerLiteDispatch(ctx context.Context, brokerAddr, group, clientID string) error {
	h := protocol.TriggerLiteDispatchRequestHeader{Group: group, ClientID: clientID}
	_, err := a.invokeOK(ctx, brokerAddr, "", protocol.NewRequest(protocol.TriggerLiteDispatch, protocol.EncodeHeader(&h, false), nil))
	return err
}
