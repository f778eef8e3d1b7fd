package broker

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apogeemq/apogee/internal/message"
)

// Per-topic and per-group counters for internal/metrics (RocketMQ 5's
// rocketmq_messages_in_total and friends). The hot path resolves a meter
// once per request through a copy-on-write map (one atomic load and one
// map read, no lock, no allocation) and adds to atomics; the exporter reads
// them at scrape time through MeterSnapshot. The meters live as long as the
// broker: a deleted topic keeps its counters (counters never go back), as
// RocketMQ's OpenTelemetry counters do.

// MessageType is RocketMQ's TopicMessageType as a metrics label value.
type MessageType uint8

// Message types, in label order.
const (
	MessageNormal MessageType = iota
	MessageFIFO
	MessageDelay
	MessageTransaction
	MessagePriority // RocketMQ 5.4 (priority.go)
	MessageLite     // RocketMQ 5.5 (lite topics)
	messageTypeCount
)

// String is the message_type label value.
func (t MessageType) String() string {
	switch t {
	case MessageFIFO:
		return "fifo"
	case MessageDelay:
		return "delay"
	case MessageTransaction:
		return "transaction"
	case MessagePriority:
		return "priority"
	case MessageLite:
		return "lite"
	}
	return "normal"
}

// messageTypeOf classifies a send by its properties as RocketMQ's
// BrokerMetricsManager.getMessageType does: transaction half first, then
// sharding key (FIFO), then any delay or timer property.
func messageTypeOf(props map[string]string) MessageType {
	if props[message.PropertyTransactionPrepared] == "true" {
		return MessageTransaction
	}
	if _, ok := props[propertyShardingKey]; ok {
		return MessageFIFO
	}
	for _, k := range [...]string{"__STARTDELIVERTIME", message.PropertyDelayTimeLevel, message.PropertyTimerDeliverMS,
		message.PropertyTimerDelaySec, message.PropertyTimerDelayMS} {
		if props[k] != "" {
			return MessageDelay
		}
	}
	return v55MessageType(props[message.PropertyPriority] != "", props[message.PropertyLiteTopic] != "")
}

// plainMessageType classifies a send that took the raw-properties path
// (no delay, timer or transaction property by construction): FIFO when the
// raw string carries a sharding key, else normal. No allocation.
func plainMessageType(rawProps string) MessageType {
	if strings.Contains(rawProps, propertyShardingKey) {
		return MessageFIFO
	}
	return MessageNormal
}

// propertyShardingKey is the 5.x FIFO message property (__SHARDINGKEY).
const propertyShardingKey = "__SHARDINGKEY"

// MessageSizeBounds are rocketmq_message_size's bucket upper bounds in
// bytes (RocketMQ: 1 KiB, 4 KiB, 512 KiB, 1 MiB, 2 MiB, 4 MiB, then +Inf).
var MessageSizeBounds = [...]int64{1 << 10, 4 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20}

// topicMeter counts one topic's stored messages by message type.
type topicMeter struct {
	topic    string
	messages [messageTypeCount]atomic.Int64
	bytes    [messageTypeCount]atomic.Int64
	// sizes[t][i] counts messages of type t whose size is <=
	// MessageSizeBounds[i] and above the bound before; the last is +Inf.
	sizes [messageTypeCount][len(MessageSizeBounds) + 1]atomic.Int64
}

// stored records n messages of one type totalling bytes (a batch counts
// each message with the batch's average size, as RocketMQ records
// wroteBytes/msgNum). Nil-safe: a broker without metrics has no meters.
func (m *topicMeter) stored(t MessageType, n int32, bytes int32) {
	if m == nil || n <= 0 {
		return
	}
	m.messages[t].Add(int64(n))
	m.bytes[t].Add(int64(bytes))
	avg := int64(bytes) / int64(n)
	i := 0
	for i < len(MessageSizeBounds) && avg > MessageSizeBounds[i] {
		i++
	}
	m.sizes[t][i].Add(int64(n))
}

type topicGroup struct{ topic, group string }

// groupMeter counts what one group consumed from one topic.
type groupMeter struct {
	topicGroup
	messages atomic.Int64
	bytes    atomic.Int64
	dlq      atomic.Int64 // messages this group sent to its DLQ from this topic

	// pulled[q] is the next offset the group's latest pull of queue q
	// returned (RocketMQ's pull offset), -1 unknown; grown under mu.
	mu     sync.Mutex
	pulled atomic.Pointer[[]atomic.Int64]
}

func (m *groupMeter) consumed(n int, bytes int) {
	if m == nil {
		return
	}
	m.messages.Add(int64(n))
	m.bytes.Add(int64(bytes))
}

// pulledTo records the next begin offset of a pull of queue q.
func (m *groupMeter) pulledTo(q int32, next int64) {
	if m == nil || q < 0 || q >= 1<<16 {
		return
	}
	if p := m.pulled.Load(); p != nil && int(q) < len(*p) {
		(*p)[q].Store(next)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.pulled.Load()
	var n []atomic.Int64
	if old != nil {
		n = make([]atomic.Int64, max(int(q)+1, len(*old)))
		for i := range *old {
			n[i].Store((*old)[i].Load())
		}
	} else {
		n = make([]atomic.Int64, int(q)+1)
	}
	for i := range n {
		if old == nil || i >= len(*old) {
			n[i].Store(-1)
		}
	}
	n[q].Store(next)
	m.pulled.Store(&n)
}

// pulledOffset returns the recorded pull offset of queue q, or -1.
func (m *groupMeter) pulledOffset(q int32) int64 {
	p := m.pulled.Load()
	if p == nil || q < 0 || int(q) >= len(*p) {
		return -1
	}
	return (*p)[q].Load()
}

// meters is the broker's meter registry; nil when metrics are disabled.
// The registries are sync.Maps (a hash trie: lock-free reads, inserts
// without copying): a copy-on-write map cost a copy of every meter per new
// topic or (topic, group), quadratic in the count; the first message to
// each of 100,000 topics spent most of the send path copying it.
type meters struct {
	topics sync.Map  // string -> *topicMeter
	groups sync.Map  // topicGroup -> *groupMeter
	rpc    rpcMeters // meters_rpc.go
}

func newMeters() *meters { return &meters{} }

// topic returns the topic's meter, creating it on first use.
func (m *meters) topic(topic string) *topicMeter {
	if m == nil {
		return nil
	}
	if v, ok := m.topics.Load(topic); ok {
		return v.(*topicMeter)
	}
	tm := &topicMeter{topic: strings.Clone(topic)}
	v, _ := m.topics.LoadOrStore(tm.topic, tm)
	return v.(*topicMeter)
}

// group returns the (topic, group) meter, creating it on first use.
func (m *meters) group(topic, group string) *groupMeter {
	if m == nil {
		return nil
	}
	if v, ok := m.groups.Load(topicGroup{topic, group}); ok {
		return v.(*groupMeter)
	}
	gm := &groupMeter{topicGroup: topicGroup{strings.Clone(topic), strings.Clone(group)}}
	v, _ := m.groups.LoadOrStore(gm.topicGroup, gm)
	return v.(*groupMeter)
}

// TopicMeterSnapshot is one topic's counters by message type.
type TopicMeterSnapshot struct {
	Topic    string
	Messages [messageTypeCount]int64 // by MessageType
	Bytes    [messageTypeCount]int64
	// Sizes are per-bucket (not cumulative) counts, len(MessageSizeBounds)+1.
	Sizes [messageTypeCount][len(MessageSizeBounds) + 1]int64
}

// GroupMeterSnapshot is one (topic, group) pair's consumption counters.
type GroupMeterSnapshot struct {
	Topic, Group string
	Messages     int64
	Bytes        int64
	SentToDLQ    int64
}

// MeterSnapshot returns every topic and group meter, sorted by name; nil
// slices when metrics are disabled.
func (b *Broker) MeterSnapshot() ([]TopicMeterSnapshot, []GroupMeterSnapshot) {
	if b.meters == nil {
		return nil, nil
	}
	var topics []TopicMeterSnapshot
	for _, v := range b.meters.topics.Range {
		tm := v.(*topicMeter)
		s := TopicMeterSnapshot{Topic: tm.topic}
		for t := range messageTypeCount {
			s.Messages[t] = tm.messages[t].Load()
			s.Bytes[t] = tm.bytes[t].Load()
			for i := range s.Sizes[t] {
				s.Sizes[t][i] = tm.sizes[t][i].Load()
			}
		}
		topics = append(topics, s)
	}
	slices.SortFunc(topics, func(a, b TopicMeterSnapshot) int { return strings.Compare(a.Topic, b.Topic) })
	var groups []GroupMeterSnapshot
	for _, v := range b.meters.groups.Range {
		gm := v.(*groupMeter)
		groups = append(groups, GroupMeterSnapshot{Topic: gm.topic, Group: gm.group,
			Messages: gm.messages.Load(), Bytes: gm.bytes.Load(), SentToDLQ: gm.dlq.Load()})
	}
	slices.SortFunc(groups, func(a, b GroupMeterSnapshot) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return strings.Compare(a.Group, b.Group)
	})
	return topics, groups
}

// MetricsEnabled reports whether the broker counts per topic and group
// (metricsExporterType is not DISABLE).
func (b *Broker) MetricsEnabled() bool { return b.meters != nil }

// ProcessorWatermarks reports the queued requests per processor, for
// rocketmq_processor_watermark: the send queue (sendThreadPoolQueue) and
// the pulls held by long polling.
func (b *Broker) ProcessorWatermarks() map[string]int {
	return map[string]int{
		"send":      len(b.sendQueue.tasks),
		"pull_hold": int(b.stats.pullHeld.Load()),
	}
}

// Permission is the broker's current brokerPermission (rocketmq_broker_permission).
func (b *Broker) Permission() int32 { return b.dyn.brokerPermission.Load() }

// existingTopic returns the topic's meter without creating one (nil when
// none or when metrics are disabled).
func (m *meters) existingTopic(topic string) *topicMeter {
	if m == nil {
		return nil
	}
	if v, ok := m.topics.Load(topic); ok {
		return v.(*topicMeter)
	}
	return nil
}

// existingGroup returns the (topic, group) meter without creating one.
func (m *meters) existingGroup(topic, group string) *groupMeter {
	if m == nil {
		return nil
	}
	if v, ok := m.groups.Load(topicGroup{topic, group}); ok {
		return v.(*groupMeter)
	}
	return nil
}

// PopStats reports POP consumption for metrics: messages popped and
// neither acked nor revived, and totals acked, revived to a retry topic
// and moved to the DLQ. ok is false before POP state is open (slaves).
func (b *Broker) PopStats() (inFlight, acked, revived, dlq int64, ok bool) {
	p := b.pop
	if p == nil || p.state == nil {
		return 0, 0, 0, 0, false
	}
	return p.state.Stats().InFlight, p.acked.Load(), p.revived.Load(), p.dlq.Load(), true
}
