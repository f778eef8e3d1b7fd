package admin

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/protocol"
)

// Broker-level admin calls: configuration, statistics, consume-queue and
// timer inspection, consumer status collected by the broker (docs/protocol.md
// §3.7). Calls that name a broker take its address; calls about a topic
// ask every master of its route and merge the answers.

// BrokerConfig returns every configuration key of a broker with its
// current value (GET_BROKER_CONFIG).
func (a *Admin) BrokerConfig(ctx context.Context, brokerAddr string) (map[string]string, error) {
	resp, err := a.invokeOK(ctx, brokerAddr, "", protocol.NewRequest(protocol.GetBrokerConfig, nil, nil))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for line := range strings.SplitSeq(string(resp.Body), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			out[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return out, nil
}

// UpdateBrokerConfig changes broker.conf keys at run time
// (UPDATE_BROKER_CONFIG). A broker started with a config file writes them
// back to it, so they survive a restart. Keys that cannot change at run
// time are refused (a *client.BrokerError with code NO_PERMISSION).
func (a *Admin) UpdateBrokerConfig(ctx context.Context, brokerAddr string, kv map[string]string) error {
	if len(kv) == 0 {
		return fmt.Errorf("admin: no key to update")
	}
	var sb strings.Builder
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		if k == "" || strings.ContainsAny(k, "=:\n\r ") || strings.ContainsAny(kv[k], "\n\r") {
			return fmt.Errorf("admin: bad broker config entry %q=%q", k, kv[k])
		}
		sb.WriteString(k + "=" + kv[k] + "\n")
	}
	_, err := a.invokeOK(ctx, brokerAddr, "", protocol.NewRequest(protocol.UpdateBrokerConfig, nil, []byte(sb.String())))
	return err
}

// ConsumerStatus asks the brokers of topic to collect the offsets each
// live consumer of group holds for topic (INVOKE_BROKER_TO_GET_CONSUMER_STATUS;
// the brokers ask the clients with GET_CONSUMER_STATUS_FROM_CLIENT). A
// non-empty clientID asks only that client. The result maps client id to
// its offsets, merged over the brokers; a client that did not answer is
// missing.
func (a *Admin) ConsumerStatus(ctx context.Context, topic, group, clientID string) (map[string]map[client.MessageQueue]int64, error) {
	masters, err := a.routeMasters(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := map[string]map[client.MessageQueue]int64{}
	var lastErr error
	answered := false
	for _, name := range slices.Sorted(maps.Keys(masters)) {
		addr := masters[name]
		ext := map[string]string{"topic": topic, "group": group}
		if clientID != "" {
			ext["clientAddr"] = clientID
		}
		resp, err := a.invokeOK(ctx, addr, topic, protocol.NewRequest(protocol.InvokeBrokerToGetConsumerStatus, ext, nil))
		if err != nil {
			lastErr = err
			continue
		}
		var w struct {
			ConsumerTable map[string]map[string]int64 `json:"consumerTable"`
		}
		if err := protocol.UnmarshalFastJSON(resp.Body, &w); err != nil {
			return nil, fmt.Errorf("admin: consumer status of %s from %s: %w", group, addr, err)
		}
		answered = true
		for id, table := range w.ConsumerTable {
			m, err := mqMap(table)
			if err != nil {
				return nil, fmt.Errorf("admin: consumer status of %s from %s: %w", group, addr, err)
			}
			if out[id] == nil {
				out[id] = map[client.MessageQueue]int64{}
			}
			maps.Copy(out[id], m)
		}
	}
	if !answered && lastErr != nil {
		return nil, lastErr
	}
	return out, nil
}

// ConsumeQueueUnit is one consume-queue entry: where its message sits in
// the commit log and its tag hash (for the schedule topic, the delivery
// time). Eval is whether the queried group's subscription matches it.
type ConsumeQueueUnit struct {
	Index        int64 // queue offset
	PhysicOffset int64
	PhysicSize   int32
	TagsCode     int64
	Eval         bool
	Msg          string // why the unit could not be read, if it could not
}

// ConsumeQueue is a window of one consume queue (QUERY_CONSUME_QUEUE).
type ConsumeQueue struct {
	BrokerAddr    string
	MinQueueIndex int64
	MaxQueueIndex int64
	// Subscription and FilterData are set when a group was given and it
	// subscribes to the topic.
	Subscription *Subscription
	FilterData   string
	Units        []ConsumeQueueUnit
}

// QueryConsumeQueue reads count units of queue queueID of topic from index
// (QUERY_CONSUME_QUEUE), on brokerAddr or, when it is "", on the first
// master of the topic's route (by broker name). With a group, each unit is
// evaluated against the group's subscription.
func (a *Admin) QueryConsumeQueue(ctx context.Context, brokerAddr, topic string, queueID int, index int64, count int, group string) (*ConsumeQueue, error) {
	if brokerAddr == "" {
		masters, err := a.routeMasters(ctx, topic)
		if err != nil {
			return nil, err
		}
		if len(masters) == 0 {
			return nil, fmt.Errorf("admin: topic %s has no master: %w", topic, ErrNotFound)
		}
		brokerAddr = masters[slices.Min(slices.Collect(maps.Keys(masters)))]
	}
	ext := map[string]string{
		"topic":   topic,
		"queueId": strconv.Itoa(queueID),
		"index":   strconv.FormatInt(index, 10),
		"count":   strconv.Itoa(count),
	}
	if group != "" {
		ext["consumerGroup"] = group
	}
	resp, err := a.invokeOK(ctx, brokerAddr, topic, protocol.NewRequest(protocol.QueryConsumeQueue, ext, nil))
	if err != nil {
		return nil, err
	}
	var w struct {
		SubscriptionData *protocol.SubscriptionData `json:"subscriptionData"`
		FilterData       string                     `json:"filterData"`
		QueueData        []struct {
			PhysicOffset int64  `json:"physicOffset"`
			PhysicSize   int32  `json:"physicSize"`
			TagsCode     int64  `json:"tagsCode"`
			Eval         bool   `json:"eval"`
			Msg          string `json:"msg"`
		} `json:"queueData"`
		MaxQueueIndex int64 `json:"maxQueueIndex"`
		MinQueueIndex int64 `json:"minQueueIndex"`
	}
	if err := protocol.UnmarshalFastJSON(resp.Body, &w); err != nil {
		return nil, fmt.Errorf("admin: consume queue %s-%d from %s: %w", topic, queueID, brokerAddr, err)
	}
	out := &ConsumeQueue{BrokerAddr: brokerAddr, MinQueueIndex: w.MinQueueIndex, MaxQueueIndex: w.MaxQueueIndex, FilterData: w.FilterData}
	if s := w.SubscriptionData; s != nil {
		typ := s.ExpressionType
		if typ == "" {
			typ = protocol.ExpressionTag
		}
		out.Subscription = &Subscription{Topic: s.Topic, Expression: s.SubString, ExpressionType: typ}
	}
	first := max(index, w.MinQueueIndex)
	for i, d := range w.QueueData {
		out.Units = append(out.Units, ConsumeQueueUnit{Index: first + int64(i), PhysicOffset: d.PhysicOffset,
			PhysicSize: d.PhysicSize, TagsCode: d.TagsCode, Eval: d.Eval, Msg: d.Msg})
	}
	return out, nil
}

// Broker statistics names for BrokerStatsData (VIEW_BROKER_STATS_DATA);
// the key is the cluster, the topic, or topic@group respectively.
const (
	StatsBrokerPutNums = "BROKER_PUT_NUMS"
	StatsBrokerGetNums = "BROKER_GET_NUMS"
	StatsTopicPutNums  = "TOPIC_PUT_NUMS"
	StatsGroupGetNums  = "GROUP_GET_NUMS"
)

// StatsWindow is one window of a broker statistic: the total in the
// window, per second, and per call (0 when the broker does not count calls).
type StatsWindow struct {
	Sum   int64   `json:"sum"`
	TPS   float64 `json:"tps"`
	AvgPT float64 `json:"avgpt"`
}

// BrokerStatsData is a statistic over the last minute, hour and day.
type BrokerStatsData struct {
	Minute StatsWindow `json:"statsMinute"`
	Hour   StatsWindow `json:"statsHour"`
	Day    StatsWindow `json:"statsDay"`
}

// BrokerStatsData reads one statistic of a broker (VIEW_BROKER_STATS_DATA),
// e.g. (StatsTopicPutNums, "Orders") or (StatsGroupGetNums,
// "Orders@billing"). A statistic the broker does not have is a
// *client.BrokerError with code SYSTEM_ERROR.
func (a *Admin) BrokerStatsData(ctx context.Context, brokerAddr, statsName, statsKey string) (*BrokerStatsData, error) {
	ext := map[string]string{"statsName": statsName, "statsKey": statsKey}
	resp, err := a.invokeOK(ctx, brokerAddr, "", protocol.NewRequest(protocol.ViewBrokerStatsData, ext, nil))
	if err != nil {
		return nil, err
	}
	var out BrokerStatsData
	if err := protocol.UnmarshalFastJSON(resp.Body, &out); err != nil {
		return nil, fmt.Errorf("admin: stats %s %s from %s: %w", statsName, statsKey, brokerAddr, err)
	}
	return &out, nil
}

// QueryCorrectionOffset asks the brokers of topic, per queue, for the
// smallest offset committed by any group except filterGroups
// (QUERY_CORRECTION_OFFSET); a queue where that is beyond compareGroup's
// offset reports math.MaxInt64.
func (a *Admin) QueryCorrectionOffset(ctx context.Context, topic, compareGroup string, filterGroups []string) (map[client.MessageQueue]int64, error) {
	masters, err := a.routeMasters(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := map[client.MessageQueue]int64{}
	for _, name := range slices.Sorted(maps.Keys(masters)) {
		addr := masters[name]
		ext := map[string]string{"topic": topic, "compareGroup": compareGroup, "filterGroups": strings.Join(filterGroups, ",")}
		resp, err := a.invokeOK(ctx, addr, topic, protocol.NewRequest(protocol.QueryCorrectionOffset, ext, nil))
		if err != nil {
			return nil, err
		}
		var w struct {
			CorrectionOffsets map[int32]int64 `json:"correctionOffsets"`
		}
		if err := protocol.UnmarshalFastJSON(resp.Body, &w); err != nil {
			return nil, fmt.Errorf("admin: correction offsets of %s from %s: %w", topic, addr, err)
		}
		for q, off := range w.CorrectionOffsets {
			out[client.MessageQueue{Topic: topic, BrokerName: name, QueueID: int(q)}] = off
		}
	}
	return out, nil
}

// TimerCheckpoint is a broker's timer-wheel progress (GET_TIMER_CHECK_POINT).
type TimerCheckpoint struct {
	LastReadTime           time.Time // next slot to fire
	LastTimerLogFlushPos   int64
	LastTimerQueueOffset   int64 // next timer-topic unit to enqueue
	MasterTimerQueueOffset int64
	StateVersion           int64
	Timestamp              time.Time
	Counter                int64
}

// TimerCheckpoint reads a broker's timer checkpoint (56 bytes of
// big-endian longs on the wire).
func (a *Admin) TimerCheckpoint(ctx context.Context, brokerAddr string) (*TimerCheckpoint, error) {
	resp, err := a.invokeOK(ctx, brokerAddr, "", protocol.NewRequest(protocol.GetTimerCheckPoint, nil, nil))
	if err != nil {
		return nil, err
	}
	b := resp.Body
	if len(b) != 32 && len(b) != 56 {
		return nil, fmt.Errorf("admin: timer checkpoint from %s: %d bytes, want 32 or 56", brokerAddr, len(b))
	}
	at := func(i int) int64 {
		if 8*i+8 > len(b) {
			return 0
		}
		return int64(binary.BigEndian.Uint64(b[8*i:]))
	}
	return &TimerCheckpoint{
		LastReadTime:           time.UnixMilli(at(0)),
		LastTimerLogFlushPos:   at(1),
		LastTimerQueueOffset:   at(2),
		MasterTimerQueueOffset: at(3),
		StateVersion:           at(4),
		Timestamp:              time.UnixMilli(at(5)),
		Counter:                at(6),
	}, nil
}

// TimerMetric is how many timer messages of a topic wait in the wheel.
type TimerMetric struct {
	Count     int64     `json:"count"`
	Timestamp time.Time `json:"timestamp"`
}

// TimerMetrics reads a broker's waiting timer messages per topic
// (GET_TIMER_METRICS).
func (a *Admin) TimerMetrics(ctx context.Context, brokerAddr string) (map[string]TimerMetric, error) {
	resp, err := a.invokeOK(ctx, brokerAddr, "", protocol.NewRequest(protocol.GetTimerMetrics, nil, nil))
	if err != nil {
		return nil, err
	}
	var w struct {
		TimingCount map[string]struct {
			Count     int64 `json:"count"`
			TimeStamp int64 `json:"timeStamp"`
		} `json:"timingCount"`
	}
	if err := protocol.UnmarshalFastJSON(resp.Body, &w); err != nil {
		return nil, fmt.Errorf("admin: timer metrics from %s: %w", brokerAddr, err)
	}
	out := make(map[string]TimerMetric, len(w.TimingCount))
	for topic, m := range w.TimingCount {
		out[topic] = TimerMetric{Count: m.Count, Timestamp: time.UnixMilli(m.TimeStamp)}
	}
	return out, nil
}

// TopicConsumers lists the groups that consume topic on any master of its
// route: online subscribers and groups with committed offsets
// (QUERY_TOPIC_CONSUME_BY_WHO), sorted.
func (a *Admin) TopicConsumers(ctx context.Context, topic string) ([]string, error) {
	masters, err := a.routeMasters(ctx, topic)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(masters)) {
		addr := masters[name]
		resp, err := a.invokeOK(ctx, addr, topic, protocol.NewRequest(protocol.QueryTopicConsumeByWho, map[string]string{"topic": topic}, nil))
		if err != nil {
			return nil, err
		}
		var w protocol.GroupList
		if err := protocol.UnmarshalFastJSON(resp.Body, &w); err != nil {
			return nil, fmt.Errorf("admin: consumers of %s from %s: %w", topic, addr, err)
		}
		for _, g := range w.GroupList {
			set[g] = true
		}
	}
	return slices.Sorted(maps.Keys(set)), nil
}

// Commit-log read-ahead modes of SetCommitLogReadAheadMode: the madvise
// advice a RocketMQ broker applies to its mapped commit-log files.
const (
	ReadAheadNormal = 0 // MADV_NORMAL: the kernel's default read-ahead
	ReadAheadRandom = 1 // MADV_RANDOM: no read-ahead
)

// SetCommitLogReadAheadMode asks a broker to advise every commit-log file
// with mode (SET_COMMITLOG_READ_MODE, ext READ_AHEAD_MODE) and returns the
// broker's remark. A broker that does not serve the request answers
// REQUEST_CODE_NOT_SUPPORTED, returned as a *client.BrokerError.
func (a *Admin) SetCommitLogReadAheadMode(ctx context.Context, brokerAddr string, mode int) (string, error) {
	if mode != ReadAheadNormal && mode != ReadAheadRandom {
		return "", fmt.Errorf("admin: read-ahead mode %d: want 0 (normal) or 1 (random)", mode)
	}
	resp, err := a.invokeOK(ctx, brokerAddr, "", protocol.NewRequest(protocol.SetCommitLogReadMode,
		map[string]string{"READ_AHEAD_MODE": strconv.Itoa(mode)}, nil))
	if err != nil {
		return "", err
	}
	return resp.Remark, nil
}

// ResetMasterFlushOffset tells a slave broker where its master's flushed
// commit log ends (RESET_MASTER_FLUSH_OFFSET); a master ignores it. A
// broker that does not serve the request answers
// REQUEST_CODE_NOT_SUPPORTED, returned as a *client.BrokerError.
func (a *Admin) ResetMasterFlushOffset(ctx context.Context, brokerAddr string, offset int64) error {
	_, err := a.invokeOK(ctx, brokerAddr, "", protocol.NewRequest(protocol.ResetMasterFlushOffset,
		map[string]string{"masterFlushOffset": strconv.FormatInt(offset, 10)}, nil))
	return err
}
