package admin

import (
	"context"
	"slices"

	"github.com/apogeemq/apogee/internal/protocol"
)

// Calls the web console needs beyond mqadmin's.

// SubscriptionGroups lists the consumer groups a broker knows
// (GET_ALL_SUBSCRIPTIONGROUP_CONFIG), sorted.
func (a *Admin) SubscriptionGroups(ctx context.Context, brokerAddr string) ([]string, error) {
	resp, err := a.invokeOK(ctx, brokerAddr, "", protocol.NewRequest(protocol.GetAllSubscriptionGroupConfig, nil, nil))
	if err != nil {
		return nil, err
	}
	var w protocol.SubscriptionGroupWrapper
	if err := protocol.UnmarshalFastJSON(resp.Body, &w); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(w.SubscriptionGroupTable))
	for g := range w.SubscriptionGroupTable {
		out = append(out, g)
	}
	slices.Sort(out)
	return out, nil
}

// ConsumeMessageDirectly asks one consumer client of group, through the
// broker holding the message, to consume the message with the offset id
// offsetMsgID again (CONSUME_MESSAGE_DIRECTLY, RocketMQ Dashboard's
// "resend"). It returns the client's consume result (CR_SUCCESS, ...).
func (a *Admin) ConsumeMessageDirectly(ctx context.Context, brokerAddr, group, clientID, topic, offsetMsgID string) (string, error) {
	ext := map[string]string{"consumerGroup": group, "clientId": clientID, "msgId": offsetMsgID, "topic": topic}
	resp, err := a.invokeOK(ctx, brokerAddr, topic, protocol.NewRequest(protocol.ConsumeMessageDirectly, ext, nil))
	if err != nil {
		return "", err
	}
	var r struct {
		ConsumeResult string `json:"consumeResult"`
		Remark        string `json:"remark"`
	}
	if err := protocol.UnmarshalFastJSON(resp.Body, &r); err != nil {
		return "", err
	}
	if r.Remark != "" {
		return r.ConsumeResult + " (" + r.Remark + ")", nil
	}
	return r.ConsumeResult, nil
}
