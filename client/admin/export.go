package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/protocol"
)

// Calls behind mqadmin's export*, consumer*, producer and
// updateSubGroupList commands.

// topicPageSize is how many topics one GET_ALL_TOPIC_CONFIG page asks for
// (RocketMQ 5's splitMetadataSize default).
const topicPageSize = 2000

// TopicConfigTable reads a broker's whole topic table (GET_ALL_TOPIC_CONFIG,
// in pages from a RocketMQ 5 broker), each topic as RocketMQ's TopicConfig
// JSON object, by topic name.
func (a *Admin) TopicConfigTable(ctx context.Context, brokerAddr string) (map[string]json.RawMessage, error) {
	if err := a.running(); err != nil {
		return nil, err
	}
	w, err := protocol.FetchAllTopicConfig(ctx, topicPageSize, func(ctx context.Context, req *protocol.Command) (*protocol.Command, error) {
		return a.invoke(ctx, brokerAddr, req)
	})
	if err != nil {
		return nil, fmt.Errorf("admin: topics of %s: %w", brokerAddr, err)
	}
	out := make(map[string]json.RawMessage, len(w.TopicConfigTable))
	for name, tc := range w.TopicConfigTable {
		b, err := protocol.MarshalJSON(tc)
		if err != nil {
			return nil, err
		}
		out[name] = b
	}
	return out, nil
}

// GroupConfigTable reads a broker's consumer groups
// (GET_ALL_SUBSCRIPTIONGROUP_CONFIG), each as RocketMQ's
// SubscriptionGroupConfig JSON object, by group name.
func (a *Admin) GroupConfigTable(ctx context.Context, brokerAddr string) (map[string]json.RawMessage, error) {
	resp, err := a.invokeOK(ctx, brokerAddr, "", protocol.NewRequest(protocol.GetAllSubscriptionGroupConfig, nil, nil))
	if err != nil {
		return nil, err
	}
	var w struct {
		SubscriptionGroupTable map[string]json.RawMessage `json:"subscriptionGroupTable"`
	}
	if err := protocol.UnmarshalFastJSON(resp.Body, &w); err != nil {
		return nil, fmt.Errorf("admin: groups of %s: %w", brokerAddr, err)
	}
	if w.SubscriptionGroupTable == nil {
		w.SubscriptionGroupTable = map[string]json.RawMessage{}
	}
	return w.SubscriptionGroupTable, nil
}

// CreateSubscriptionGroups creates or updates groups, each a RocketMQ
// SubscriptionGroupConfig JSON object (groupName required; absent fields
// take RocketMQ's defaults), on every master of the target in one
// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST request each.
func (a *Admin) CreateSubscriptionGroups(ctx context.Context, groups []json.RawMessage, target Target) error {
	list := make([]protocol.SubscriptionGroupConfig, 0, len(groups))
	for i, raw := range groups {
		var probe struct {
			GroupName string `json:"groupName"`
		}
		if err := json.Unmarshal(raw, &probe); err != nil {
			return fmt.Errorf("admin: group %d: %w", i, err)
		}
		if probe.GroupName == "" {
			return fmt.Errorf("admin: group %d: no groupName", i)
		}
		sc := protocol.NewSubscriptionGroupConfig(probe.GroupName)
		if err := json.Unmarshal(raw, &sc); err != nil {
			return fmt.Errorf("admin: group %s: %w", probe.GroupName, err)
		}
		list = append(list, sc)
	}
	if len(list) == 0 {
		return fmt.Errorf("admin: no groups")
	}
	body, err := protocol.MarshalJSON(protocol.SubscriptionGroupList{GroupConfigList: list})
	if err != nil {
		return err
	}
	return a.eachBroker(ctx, target, func() *protocol.Command {
		return protocol.NewRequest(protocol.UpdateAndCreateSubscriptionGroupList, nil, body)
	})
}

// RunningInfo is what one consumer client reports about itself
// (GET_CONSUMER_RUNNING_INFO, RocketMQ's ConsumerRunningInfo).
type RunningInfo struct {
	ClientID      string
	Properties    map[string]string
	Subscriptions []Subscription // sorted by topic
	// Queues is the client's process-queue state per queue, sorted by
	// topic, broker and queue id.
	Queues []QueueState
	// Status is the client's per-topic consume RT/TPS table, as sent.
	Status map[string]json.RawMessage
	Jstack string // the client's thread or goroutine dump, when asked for
}

// QueueState is one process queue of a consumer client: commitOffset,
// cachedMsgCount, locked, lastPullTimestamp, ... as the client sent them.
type QueueState struct {
	Queue client.MessageQueue
	State map[string]any
}

// ConsumerRunningInfo asks one client of group, through a broker that
// serves the group, for its running info; jstack asks for its stack dump
// too. A client that is not online gives a BrokerError (SYSTEM_ERROR).
func (a *Admin) ConsumerRunningInfo(ctx context.Context, group, clientID string, jstack bool) (*RunningInfo, error) {
	masters, err := a.groupBrokers(ctx, group, "")
	if err != nil {
		return nil, err
	}
	ext := map[string]string{"consumerGroup": group, "clientId": clientID, "jstackEnable": strconv.FormatBool(jstack)}
	var lastErr error
	for _, name := range slices.Sorted(maps.Keys(masters)) {
		addr := masters[name]
		resp, err := a.invokeOK(ctx, addr, "", protocol.NewRequest(protocol.GetConsumerRunningInfo, ext, nil))
		if err != nil {
			lastErr = err
			continue
		}
		return decodeRunningInfo(clientID, resp.Body)
	}
	return nil, lastErr
}

func decodeRunningInfo(clientID string, body []byte) (*RunningInfo, error) {
	var w struct {
		Properties      map[string]string           `json:"properties"`
		SubscriptionSet []protocol.SubscriptionData `json:"subscriptionSet"`
		MqTable         map[string]map[string]any   `json:"mqTable"`
		StatusTable     map[string]json.RawMessage  `json:"statusTable"`
		Jstack          string                      `json:"jstack"`
	}
	if err := protocol.UnmarshalFastJSON(body, &w); err != nil {
		return nil, fmt.Errorf("admin: running info of %s: %w", clientID, err)
	}
	queues, err := mqMap(w.MqTable)
	if err != nil {
		return nil, fmt.Errorf("admin: running info of %s: %w", clientID, err)
	}
	ri := &RunningInfo{ClientID: clientID, Properties: w.Properties, Status: w.StatusTable, Jstack: w.Jstack}
	for mq, st := range queues {
		ri.Queues = append(ri.Queues, QueueState{Queue: mq, State: st})
	}
	slices.SortFunc(ri.Queues, func(x, y QueueState) int { return compareQueue(x.Queue, y.Queue) })
	for _, s := range w.SubscriptionSet {
		typ := s.ExpressionType
		if typ == "" {
			typ = protocol.ExpressionTag
		}
		ri.Subscriptions = append(ri.Subscriptions, Subscription{Topic: s.Topic, Expression: s.SubString, ExpressionType: typ})
	}
	slices.SortFunc(ri.Subscriptions, func(x, y Subscription) int { return strings.Compare(x.Topic, y.Topic) })
	return ri, nil
}

// ProducerInfo is one producer client a broker knows (GET_ALL_PRODUCER_INFO).
type ProducerInfo struct {
	ClientID            string `json:"clientId"`
	RemoteIP            string `json:"remoteIP"`
	Language            string `json:"language"`
	Version             int32  `json:"version"`
	LastUpdateTimestamp int64  `json:"lastUpdateTimestamp"`
}

// AllProducers lists every producer client of a broker by producer group
// (GET_ALL_PRODUCER_INFO, RocketMQ's ProducerTableInfo).
func (a *Admin) AllProducers(ctx context.Context, brokerAddr string) (map[string][]ProducerInfo, error) {
	resp, err := a.invokeOK(ctx, brokerAddr, "", protocol.NewRequest(protocol.GetAllProducerInfo, nil, nil))
	if err != nil {
		return nil, err
	}
	var w struct {
		Data map[string][]ProducerInfo `json:"data"`
	}
	if err := protocol.UnmarshalFastJSON(resp.Body, &w); err != nil {
		return nil, fmt.Errorf("admin: producers of %s: %w", brokerAddr, err)
	}
	if w.Data == nil {
		w.Data = map[string][]ProducerInfo{}
	}
	return w.Data, nil
}
