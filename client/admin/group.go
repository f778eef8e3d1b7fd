package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
)

// GroupConfig is a consumer group's broker-side settings
// (SubscriptionGroupConfig). Zero fields take RocketMQ's defaults.
type GroupConfig struct {
	Group             string
	ConsumeDisabled   bool // consumeEnable=false
	BroadcastDisabled bool // consumeBroadcastEnable=false
	Orderly           bool // consumeMessageOrderly
	RetryQueueNums    int  // default 1
	RetryMaxTimes     int  // default 16
	BrokerID          int64
	WhichBrokerSlowly int64 // whichBrokerWhenConsumeSlowly, default 1
	// ConsumeFromMinDisabled is consumeFromMinEnable=false (mqadmin's
	// updateSubGroup default).
	ConsumeFromMinDisabled bool
	// NotifyDisabled is notifyConsumerIdsChangedEnable=false: the broker
	// does not tell the group's clients when members come and go.
	NotifyDisabled bool
	// RetryPolicy is groupRetryPolicy as RocketMQ's JSON
	// ({"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[1000,5000]}});
	// empty keeps the default.
	RetryPolicy string
}

// CreateSubscriptionGroup creates or updates a consumer group on every
// master of the target (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP).
func (a *Admin) CreateSubscriptionGroup(ctx context.Context, g GroupConfig, target Target) error {
	if g.Group == "" {
		return fmt.Errorf("admin: empty group")
	}
	sc := protocol.NewSubscriptionGroupConfig(g.Group)
	sc.ConsumeEnable = !g.ConsumeDisabled
	sc.ConsumeBroadcastEnable = !g.BroadcastDisabled
	sc.ConsumeMessageOrderly = g.Orderly
	if g.RetryQueueNums > 0 {
		sc.RetryQueueNums = int32(g.RetryQueueNums)
	}
	if g.RetryMaxTimes > 0 {
		sc.RetryMaxTimes = int32(g.RetryMaxTimes)
	}
	sc.BrokerID = g.BrokerID
	if g.WhichBrokerSlowly > 0 {
		sc.WhichBrokerWhenConsumeSlowly = g.WhichBrokerSlowly
	}
	sc.ConsumeFromMinEnable = !g.ConsumeFromMinDisabled
	sc.NotifyConsumerIdsChangedEnable = !g.NotifyDisabled
	if g.RetryPolicy != "" {
		var p protocol.GroupRetryPolicy
		if err := json.Unmarshal([]byte(g.RetryPolicy), &p); err != nil {
			return fmt.Errorf("admin: group %s: groupRetryPolicy %q: %w", g.Group, g.RetryPolicy, err)
		}
		sc.GroupRetryPolicy = &p
	}
	body, err := protocol.MarshalJSON(&sc)
	if err != nil {
		return fmt.Errorf("admin: encode group %s: %w", g.Group, err)
	}
	addrs, err := a.masters(ctx, target)
	if err != nil {
		return err
	}
	var errs []error
	for _, addr := range slices.Sorted(maps.Keys(addrs)) {
		if _, err := a.invokeOK(ctx, addr, "", protocol.NewRequest(protocol.UpdateAndCreateSubscriptionGroup, nil, body)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// DeleteSubscriptionGroup deletes a consumer group from every master of the
// target (DELETE_SUBSCRIPTIONGROUP), with its offsets when cleanOffset.
func (a *Admin) DeleteSubscriptionGroup(ctx context.Context, group string, target Target, cleanOffset bool) error {
	addrs, err := a.masters(ctx, target)
	if err != nil {
		return err
	}
	var errs []error
	for _, addr := range slices.Sorted(maps.Keys(addrs)) {
		ext := map[string]string{"groupName": group, "cleanOffset": strconv.FormatBool(cleanOffset)}
		if _, err := a.invokeOK(ctx, addr, "", protocol.NewRequest(protocol.DeleteSubscriptionGroup, ext, nil)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// QueueProgress is a group's position in one queue.
type QueueProgress struct {
	Queue          client.MessageQueue
	BrokerOffset   int64     // next offset the broker will write
	ConsumerOffset int64     // committed offset of the group
	Lag            int64     // BrokerOffset - ConsumerOffset
	LastTimestamp  time.Time // store time of the last consumed message; zero if none
}

// ConsumerProgress is a group's progress over every topic it consumes.
type ConsumerProgress struct {
	Group      string
	Queues     []QueueProgress // sorted by topic, broker, queue
	TotalLag   int64
	ConsumeTPS float64
}

// ConsumerProgress asks every broker that serves the group's retry topic
// for the group's offsets (GET_CONSUME_STATS), as mqadmin consumerProgress
// does. topic "" covers every topic the group has offsets for.
func (a *Admin) ConsumerProgress(ctx context.Context, group, topic string) (*ConsumerProgress, error) {
	masters, err := a.groupBrokers(ctx, group, topic)
	if err != nil {
		return nil, err
	}
	cp := &ConsumerProgress{Group: group}
	for _, name := range slices.Sorted(maps.Keys(masters)) {
		addr := masters[name]
		ext := map[string]string{"consumerGroup": group}
		if topic != "" {
			ext["topic"] = topic
		}
		resp, err := a.invokeOK(ctx, addr, topic, protocol.NewRequest(protocol.GetConsumeStats, ext, nil))
		if err != nil {
			return nil, err
		}
		cs, err := decodeConsumeStats(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("admin: consume stats of %s from %s: %w", group, addr, err)
		}
		cp.ConsumeTPS += cs.consumeTps
		for mq, w := range cs.offsets {
			qp := QueueProgress{Queue: mq, BrokerOffset: w.BrokerOffset, ConsumerOffset: w.ConsumerOffset, Lag: max(0, w.BrokerOffset-w.ConsumerOffset)}
			if w.LastTimestamp > 0 {
				qp.LastTimestamp = time.UnixMilli(w.LastTimestamp)
			}
			cp.Queues = append(cp.Queues, qp)
			cp.TotalLag += qp.Lag
		}
	}
	slices.SortFunc(cp.Queues, func(x, y QueueProgress) int { return compareQueue(x.Queue, y.Queue) })
	return cp, nil
}

// groupBrokers returns the masters to ask about a group: those of its
// retry topic, else those of topic.
func (a *Admin) groupBrokers(ctx context.Context, group, topic string) (map[string]string, error) {
	m, err := a.routeMasters(ctx, names.RetryTopic(group))
	if err == nil && len(m) > 0 {
		return m, nil
	}
	if topic != "" {
		return a.routeMasters(ctx, topic)
	}
	if err == nil {
		err = fmt.Errorf("admin: group %s: %w", group, ErrNotFound)
	}
	return nil, err
}

// Connection is one live consumer client of a group.
type Connection struct {
	ClientID   string
	ClientAddr string
	Language   string
	Version    int32
}

// Subscription is one topic a group subscribes to.
type Subscription struct {
	Topic          string
	Expression     string
	ExpressionType string // TAG or SQL92
}

// ConsumerConnections describes a group's live members.
type ConsumerConnections struct {
	Group            string
	Connections      []Connection   // sorted by client id
	Subscriptions    []Subscription // sorted by topic
	ConsumeType      string
	MessageModel     string
	ConsumeFromWhere string
}

// ConsumerConnections asks a broker of the group for its live members
// (GET_CONSUMER_CONNECTION_LIST); a group without online consumers gives
// a BrokerError with CONSUMER_NOT_ONLINE (206).
func (a *Admin) ConsumerConnections(ctx context.Context, group string) (*ConsumerConnections, error) {
	return a.ConsumerConnectionsOn(ctx, group, "")
}

// ConsumerConnectionsOn is ConsumerConnections asked of one broker
// (mqadmin's consumerConnection -b); brokerAddr "" asks the group's
// brokers in turn, as ConsumerConnections.
func (a *Admin) ConsumerConnectionsOn(ctx context.Context, group, brokerAddr string) (*ConsumerConnections, error) {
	addrs := []string{brokerAddr}
	if brokerAddr == "" {
		masters, err := a.groupBrokers(ctx, group, "")
		if err != nil {
			return nil, err
		}
		addrs = addrs[:0]
		for _, name := range slices.Sorted(maps.Keys(masters)) {
			addrs = append(addrs, masters[name])
		}
	}
	var lastErr error
	for _, addr := range addrs {
		resp, err := a.invokeOK(ctx, addr, "", protocol.NewRequest(protocol.GetConsumerConnectionList, map[string]string{"consumerGroup": group}, nil))
		if err != nil {
			lastErr = err
			continue
		}
		w, err := decodeConsumerConnection(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("admin: connections of %s from %s: %w", group, addr, err)
		}
		cc := &ConsumerConnections{Group: group, ConsumeType: w.ConsumeType, MessageModel: w.MessageModel, ConsumeFromWhere: w.ConsumeFromWhere}
		for _, c := range w.ConnectionSet {
			cc.Connections = append(cc.Connections, Connection{ClientID: c.ClientID, ClientAddr: c.ClientAddr, Language: c.Language, Version: c.Version})
		}
		slices.SortFunc(cc.Connections, func(x, y Connection) int {
			if x.ClientID < y.ClientID {
				return -1
			}
			if x.ClientID > y.ClientID {
				return 1
			}
			return 0
		})
		for _, t := range slices.Sorted(maps.Keys(w.SubscriptionTable)) {
			s := w.SubscriptionTable[t]
			typ := s.ExpressionType
			if typ == "" {
				typ = protocol.ExpressionTag
			}
			cc.Subscriptions = append(cc.Subscriptions, Subscription{Topic: t, Expression: s.SubString, ExpressionType: typ})
		}
		return cc, nil
	}
	return nil, lastErr
}

// ResetOffsetByTime moves group's committed offsets on every queue of topic
// to the first message stored at or after ts (INVOKE_BROKER_TO_RESET_OFFSET
// on each broker of the topic). It returns the new offsets.
func (a *Admin) ResetOffsetByTime(ctx context.Context, topic, group string, ts time.Time, force bool) (map[client.MessageQueue]int64, error) {
	return a.resetOffset(ctx, topic, group, ts.UnixMilli(), force, nil, nil)
}

// resetOffset is INVOKE_BROKER_TO_RESET_OFFSET on every master of topic's
// route: to the first message at or after timestamp (-1: the end), or, with
// queueID and offset, one queue to offset.
func (a *Admin) resetOffset(ctx context.Context, topic, group string, timestamp int64, force bool, queueID *int32, offset *int64) (map[client.MessageQueue]int64, error) {
	masters, err := a.routeMasters(ctx, topic)
	if err != nil {
		return nil, err
	}
	addrs := make([]string, 0, len(masters))
	for _, name := range slices.Sorted(maps.Keys(masters)) {
		addrs = append(addrs, masters[name])
	}
	return a.resetOffsetOn(ctx, addrs, topic, group, timestamp, force, queueID, offset)
}

// resetOffsetOn is resetOffset on the given brokers.
func (a *Admin) resetOffsetOn(ctx context.Context, addrs []string, topic, group string, timestamp int64, force bool, queueID *int32, offset *int64) (map[client.MessageQueue]int64, error) {
	out := map[client.MessageQueue]int64{}
	for _, addr := range addrs {
		ext := map[string]string{
			"topic":     topic,
			"group":     group,
			"timestamp": strconv.FormatInt(timestamp, 10),
			"isForce":   strconv.FormatBool(force),
			"queueId":   "-1",
		}
		if queueID != nil {
			ext["queueId"] = strconv.Itoa(int(*queueID))
		}
		if offset != nil {
			ext["offset"] = strconv.FormatInt(*offset, 10)
		}
		resp, err := a.invokeOK(ctx, addr, topic, protocol.NewRequest(protocol.InvokeBrokerToResetOffset, ext, nil))
		if err != nil {
			return nil, err
		}
		if len(resp.Body) == 0 {
			continue
		}
		m, err := decodeResetOffset(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("admin: reset offsets of %s from %s: %w", group, addr, err)
		}
		maps.Copy(out, m)
	}
	return out, nil
}

// ProducerConnections lists the live clients of a producer group on one
// broker (GET_PRODUCER_CONNECTION_LIST), sorted by client id.
func (a *Admin) ProducerConnections(ctx context.Context, group, brokerAddr string) ([]Connection, error) {
	resp, err := a.invokeOK(ctx, brokerAddr, "", protocol.NewRequest(protocol.GetProducerConnectionList, map[string]string{"producerGroup": group}, nil))
	if err != nil {
		return nil, err
	}
	var w struct {
		ConnectionSet []wireConnection `json:"connectionSet"`
	}
	if err := protocol.UnmarshalFastJSON(resp.Body, &w); err != nil {
		return nil, fmt.Errorf("admin: producer connections of %s from %s: %w", group, brokerAddr, err)
	}
	out := make([]Connection, 0, len(w.ConnectionSet))
	for _, c := range w.ConnectionSet {
		out = append(out, Connection{ClientID: c.ClientID, ClientAddr: c.ClientAddr, Language: c.Language, Version: c.Version})
	}
	slices.SortFunc(out, func(x, y Connection) int { return strings.Compare(x.ClientID, y.ClientID) })
	return out, nil
}

// GroupReadForbidden is mqadmin's updateAndGetGroupReadForbidden
// (UPDATE_AND_GET_GROUP_FORBIDDEN 353) on one broker: with readable set it
// forbids (false) or allows (true) group reading topic there; it returns
// whether the group may read the topic afterwards.
func (a *Admin) GroupReadForbidden(ctx context.Context, brokerAddr, group, topic string, readable *bool) (bool, error) {
	ext := map[string]string{"group": group, "topic": topic}
	if readable != nil {
		ext["readable"] = strconv.FormatBool(*readable)
	}
	resp, err := a.invokeOK(ctx, brokerAddr, topic, protocol.NewRequest(protocol.UpdateAndGetGroupForbidden, ext, nil))
	if err != nil {
		return false, err
	}
	var g struct {
		Readable bool `json:"readable"`
	}
	if err := protocol.UnmarshalFastJSON(resp.Body, &g); err != nil {
		return false, fmt.Errorf("admin: group forbidden of %s on %s from %s: %w", group, topic, brokerAddr, err)
	}
	return g.Readable, nil
}

// RollbackStats is one queue of a client-side offset reset
// (ResetOffsetByTimeOld): the offsets before, the offset found for the
// time, and the committed offset after.
type RollbackStats struct {
	BrokerName      string `json:"brokerName"`
	QueueID         int    `json:"queueId"`
	BrokerOffset    int64  `json:"brokerOffset"`
	ConsumerOffset  int64  `json:"consumerOffset"`
	TimestampOffset int64  `json:"timestampOffset"`
	RollbackOffset  int64  `json:"rollbackOffset"`
}

// ResetOffsetByTimeOld moves group's committed offsets on topic to the
// first message at or after ts (to the end of each queue with a zero ts)
// the way RocketMQ's first reset did, without telling the consumers: it
// reads the group's consume stats and writes UPDATE_CONSUMER_OFFSET per
// queue, only forwards unless force. Live consumers keep their in-memory
// offsets and may commit over the reset (mqadmin resetOffsetByTimeOld).
// A group with no offsets on topic is an error.
func (a *Admin) ResetOffsetByTimeOld(ctx context.Context, topic, group string, ts time.Time, force bool) ([]RollbackStats, error) {
	cp, err := a.ConsumerProgress(ctx, group, topic)
	if err != nil {
		return nil, err
	}
	masters, err := a.routeMasters(ctx, topic)
	if err != nil {
		return nil, err
	}
	var out []RollbackStats
	for _, qp := range cp.Queues {
		if qp.Queue.Topic != topic {
			continue
		}
		addr := masters[qp.Queue.BrokerName]
		if addr == "" {
			return out, fmt.Errorf("admin: broker %s of %s has no master", qp.Queue.BrokerName, topic)
		}
		target := qp.BrokerOffset
		if !ts.IsZero() {
			if target, err = a.OffsetByTime(ctx, qp.Queue, ts); err != nil {
				return out, err
			}
		}
		rs := RollbackStats{BrokerName: qp.Queue.BrokerName, QueueID: qp.Queue.QueueID, BrokerOffset: qp.BrokerOffset,
			ConsumerOffset: qp.ConsumerOffset, TimestampOffset: target, RollbackOffset: qp.ConsumerOffset}
		if force || target <= qp.ConsumerOffset {
			ext := map[string]string{"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(qp.Queue.QueueID),
				"commitOffset": strconv.FormatInt(target, 10)}
			if _, err := a.invokeOK(ctx, addr, topic, protocol.NewRequest(protocol.UpdateConsumerOffset, ext, nil)); err != nil {
				return out, err
			}
			rs.RollbackOffset = target
		}
		out = append(out, rs)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("admin: no consume stats of %s on %s: the group has consumed nothing: %w", group, topic, ErrNotFound)
	}
	return out, nil
}
