package broker

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// versionV307Snapshot is MQVersion V3_0_7_SNAPSHOT's ordinal: clients
// older than this cannot answer GET_CONSUMER_STATUS_FROM_CLIENT
// (docs/protocol.md §2.3).
const versionV307Snapshot = 28

// consumerStatusTimeout bounds each client's answer to
// GET_CONSUMER_STATUS_FROM_CLIENT (docs/protocol.md §3.6: sync, 5 s).
const consumerStatusTimeout = 5 * time.Second

// processGetConsumerStatus serves INVOKE_BROKER_TO_GET_CONSUMER_STATUS
// (223; topic, group, clientAddr = optional client id filter): the broker
// asks each live consumer of the group (or only the named one) for its
// offsets of topic with GET_CONSUMER_STATUS_FROM_CLIENT (221) and answers
// GetConsumerStatusBody {"messageQueueTable":{},"consumerTable":
// {clientId:{MessageQueue:offset}}} (docs/protocol.md §5.3.10). A client that fails or
// times out is left out, as RocketMQ does; SYSTEM_ERROR when no consumer
// of the group is online or one is older than V3_0_7_SNAPSHOT.
func (b *Broker) processGetConsumerStatus(ctx context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	topic, group, only := req.Ext("topic"), req.Ext("group"), req.Ext("clientAddr")
	if topic == "" || group == "" {
		return nil, protocol.Errorf(protocol.InvalidParameter, "topic and group are required")
	}
	info, ok := b.Clients.ConsumerGroup(group)
	if !ok || len(info.Channels) == 0 {
		return nil, protocol.Errorf(protocol.SystemError, "No Any Consumer online in the consumer group: [%s]", group)
	}
	chans := slices.Clone(info.Channels)
	slices.SortFunc(chans, func(x, y ClientChannel) int { return strings.Compare(x.ClientID, y.ClientID) })
	var all []consumerStatus
	for _, ch := range chans {
		if ch.Version < versionV307Snapshot {
			return nil, protocol.Errorf(protocol.SystemError, "the client does not support this feature. version=%d", ch.Version)
		}
		if only != "" && only != ch.ClientID {
			continue
		}
		table, err := b.askConsumerStatus(ctx, ch, topic, group)
		if err != nil {
			b.logger.Warn("consumer status from client failed", "group", group, "clientId", ch.ClientID, "err", err)
		} else {
			all = append(all, consumerStatus{clientID: ch.ClientID, table: table})
		}
		if only != "" {
			break
		}
	}
	body, err := encodeConsumerStatus(all)
	if err != nil {
		return nil, err
	}
	return bodyResponse(req, body), nil
}

// askConsumerStatus sends GET_CONSUMER_STATUS_FROM_CLIENT to one client
// and returns its messageQueueTable sorted by queue.
func (b *Broker) askConsumerStatus(ctx context.Context, ch ClientChannel, topic, group string) ([]protocol.QueueValue[int64], error) {
	cctx, cancel := context.WithTimeout(ctx, consumerStatusTimeout)
	defer cancel()
	req := protocol.NewRequest(protocol.GetConsumerStatusFromClient,
		map[string]string{"topic": topic, "group": group}, nil)
	if ch.Conn == nil {
		return nil, fmt.Errorf("client %s is a gRPC client: no consumer status", ch.ClientID)
	}
	resp, err := b.server.InvokeSync(cctx, ch.Conn, req)
	if err != nil {
		return nil, err
	}
	if resp.Code != int32(protocol.Success) {
		return nil, protocol.Errorf(protocol.ResponseCode(resp.Code), "%s", resp.Remark)
	}
	if len(resp.Body) == 0 {
		return nil, nil
	}
	var w struct {
		MessageQueueTable map[string]int64 `json:"messageQueueTable"`
	}
	if err := protocol.UnmarshalFastJSON(resp.Body, &w); err != nil {
		return nil, err
	}
	out := make([]protocol.QueueValue[int64], 0, len(w.MessageQueueTable))
	for k, off := range w.MessageQueueTable {
		var mq protocol.MessageQueue
		if err := protocol.UnmarshalFastJSON([]byte(k), &mq); err != nil {
			return nil, err
		}
		out = append(out, protocol.QueueValue[int64]{Queue: mq, Value: off})
	}
	slices.SortFunc(out, func(x, y protocol.QueueValue[int64]) int {
		if c := strings.Compare(x.Queue.Topic, y.Queue.Topic); c != 0 {
			return c
		}
		if c := strings.Compare(x.Queue.BrokerName, y.Queue.BrokerName); c != 0 {
			return c
		}
		return int(x.Queue.QueueID) - int(y.Queue.QueueID)
	})
	return out, nil
}

// consumerStatus is one client's answer.
type consumerStatus struct {
	clientID string
	table    []protocol.QueueValue[int64]
}

// encodeConsumerStatus writes GetConsumerStatusBody; the per-client maps
// are keyed by MessageQueue objects, fastjson style (docs/protocol.md §5.1).
func encodeConsumerStatus(all []consumerStatus) ([]byte, error) {
	out := []byte(`{"consumerTable":{`)
	for i, c := range all {
		if i > 0 {
			out = append(out, ',')
		}
		k, err := protocol.MarshalJSON(c.clientID)
		if err != nil {
			return nil, err
		}
		out = append(append(out, k...), ':')
		fe := make([]protocol.FastJSONEntry, len(c.table))
		for j, e := range c.table {
			fe[j] = protocol.FastJSONEntry{Key: e.Queue, Value: e.Value}
		}
		if out, err = protocol.AppendObjectKeyMap(out, fe); err != nil {
			return nil, err
		}
	}
	return append(out, `},"messageQueueTable":{}}`...), nil
}
