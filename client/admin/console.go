package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/apogeemq/apogee/internal/protocol"
)

// Calls the web console needs beyond mqadmin's.

// SubscriptionGroups lists the consumer groups a broker knows
// (GET_ALL_SUBSCRIPTIONGROUP_CONFIG), sorted.
func (a *Admin) SubscriptionGroups(ctx context.Context, brokerAddr string) ([]string, error) {
	table, err := a.GroupConfigTable(ctx, brokerAddr) // export.go
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(table)), nil
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
		ConsumeResult json.RawMessage `json:"consumeResult"`
		Remark        string          `json:"remark"`
	}
	if err := protocol.UnmarshalFastJSON(resp.Body, &r); err != nil {
		return "", err
	}
	res, err := cmResult(r.ConsumeResult)
	if err != nil {
		return "", fmt.Errorf("admin: consume result from %s: %w", clientID, err)
	}
	if r.Remark != "" {
		return res + " (" + r.Remark + ")", nil
	}
	return res, nil
}

// cmResults are RocketMQ's CMResult names in ordinal order.
var cmResults = []string{"CR_SUCCESS", "CR_LATER", "CR_ROLLBACK", "CR_COMMIT", "CR_THROW_EXCEPTION", "CR_RETURN_NULL"}

// cmResult reads a consume result as Java clients send it (the enum's
// name) or as the Go client sends it (its ordinal).
func cmResult(raw json.RawMessage) (string, error) {
	var name string
	if err := json.Unmarshal(raw, &name); err == nil {
		return name, nil
	}
	var n int
	if err := json.Unmarshal(raw, &n); err != nil || n < 0 || n >= len(cmResults) {
		return "", fmt.Errorf("consumeResult %s: want a CMResult name or ordinal", raw)
	}
	return cmResults[n], nil
}
