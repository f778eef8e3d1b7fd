package broker

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/pop"
	"github.com/apogeemq/apogee/internal/protocol"
)

// Priority messages (RocketMQ 5.4): docs/priority-and-lite.md has the rules.
//
// A priority is a queue: a send whose properties classify as PRIORITY goes to
// queue min(priority, writeQueueNums-1) of its topic, so a queue's backlog is
// one level and stays FIFO. A pop of a topic typed message.type=PRIORITY
// walks the queues from the highest level down (priorityOrderAsc, the
// default: a larger queue id is more urgent) and stops when the batch is
// full, so a backlog drains level by level. Two rules keep lower levels from
// waiting forever:
//
//   - the group attribute priority.factor (0..100, default 100) is the share
//     of pops that use that order; the others start at a rotating queue, as
//     for any topic (RocketMQ's rule);
//   - a queue whose next message has waited longer than popPriorityMaxWaitMs
//     (default 60 s, 0 = off) is read first, before every higher level
//     (Apogee's bound on starvation; RocketMQ has none with factor 100).

// Names of the priority attributes and broker.conf keys.
const (
	attrPriorityFactor     = "priority.factor" // subscription group attribute
	defaultPriorityFactor  = 100
	priorityAgingRecheckMs = 1000 // how often a (group, topic) looks for starved queues
)

// PriorityConfig holds the priority keys of broker.conf; Config embeds it.
type PriorityConfig struct {
	// PriorityOrderAsc makes queue 0 the lowest priority (default true, as
	// RocketMQ); false makes queue 0 the highest.
	PriorityOrderAsc bool `conf:"priorityOrderAsc"`
	// PopFromRetryProbabilityForPriority is the percentage of priority-mode
	// pops that read the retry topic first (default 0: retried messages
	// come after every level, RocketMQ's default).
	PopFromRetryProbabilityForPriority int `conf:"popFromRetryProbabilityForPriority"`
	// PopPriorityMaxWaitMs is how long the next message of a lower level may
	// wait before its queue is read ahead of the higher ones (default
	// 60000; 0 turns aging off and makes priority strict).
	PopPriorityMaxWaitMs int64 `conf:"popPriorityMaxWaitMs"`
	// UseSeparateRetryQueue gives a group's pop retry topic as many queues
	// as the topic it retries and revives a message into the retry queue of
	// its original queue id (RocketMQ's key, default false: every retry goes
	// to retry queue 0). For a PRIORITY topic a redelivery so keeps its
	// level: priority-mode pops read the retry queues from the highest
	// level down too.
	UseSeparateRetryQueue bool `conf:"useSeparateRetryQueue"`
}

// DefaultPriorityConfig returns the defaults above.
func DefaultPriorityConfig() PriorityConfig {
	return PriorityConfig{PriorityOrderAsc: true, PopPriorityMaxWaitMs: 60000}
}

// v55MessageType classifies what the older types did not claim: a priority
// property makes PRIORITY, else a lite topic LITE (RocketMQ's order:
// transaction, delay, FIFO, priority, lite, normal).
func v55MessageType(priority, lite bool) MessageType {
	switch {
	case priority:
		return MessagePriority
	case lite:
		return MessageLite
	}
	return MessageNormal
}

// isPriorityTopic reports whether the topic is typed message.type=PRIORITY.
func isPriorityTopic(tc *protocol.TopicConfig) bool {
	return strings.EqualFold(tc.Attributes[attrMessageType], "PRIORITY")
}

// priorityQueue returns the queue a send's priority routes it to: for a
// message that classifies as PRIORITY, min(priority, writeQueueNums-1), as
// RocketMQ's SendMessageProcessor does whatever the topic's type. ok is
// false for other messages and for a priority that does not parse or is
// negative.
func priorityQueue(tc *protocol.TopicConfig, props string) (int32, bool) {
	// Only a message carrying the priority property classifies as
	// PRIORITY: one substring search spares every other send the nine
	// property look-ups of rawMessageType.
	if !strings.Contains(props, message.PropertyPriority) {
		return 0, false
	}
	return priorityQueueFull(tc, props)
}

// priorityQueueFull is priorityQueue without its substring shortcut
// (FuzzPriorityQueue holds the two to the same answers).
func priorityQueueFull(tc *protocol.TopicConfig, props string) (int32, bool) {
	if rawMessageType(props) != MessagePriority {
		return 0, false
	}
	v, _ := message.LookupProperty(props, message.PropertyPriority)
	p, err := strconv.ParseInt(v, 10, 32)
	if err != nil || p < 0 {
		return 0, false
	}
	return int32(min(p, int64(max(tc.WriteQueueNums, 1)-1))), true
}

// priorityState is one (group, topic)'s priority-mode bookkeeping.
type priorityState struct {
	requests atomic.Int64 // pops so far: requests%100 < factor picks priority order

	mu        sync.Mutex
	checkedAt int64 // ms of the last look for starved queues
	starved   int32 // the queue read first, -1 for none
}

// priorityStates maps group+"@"+topic to *priorityState.
type priorityStates struct{ m sync.Map }

func (ps *priorityStates) get(group, topic string) *priorityState {
	key := group + "@" + topic
	if v, ok := ps.m.Load(key); ok {
		return v.(*priorityState)
	}
	v, _ := ps.m.LoadOrStore(key, &priorityState{starved: -1})
	return v.(*priorityState)
}

// priorityFactor is the group's priority.factor attribute clamped to
// 0..100 (100 when absent or unparsable).
func (p *popService) priorityFactor(group string) int64 {
	gc, ok := p.b.Groups.Get(group)
	if !ok {
		return defaultPriorityFactor
	}
	f, err := strconv.ParseInt(gc.Attributes[attrPriorityFactor], 10, 64)
	if err != nil {
		return defaultPriorityFactor
	}
	return min(max(f, 0), 100)
}

// priorityOrder returns the queue order of a pop of every queue of a
// PRIORITY topic (queueAt(i) for i in 0..readQueueNums-1) and the retry
// probability to use, or ok=false when the pop uses the ordinary order
// (another type, one queue, order mode, or outside priority.factor).
func (p *popService) priorityOrder(h *protocol.PopMessageRequestHeader, tc *protocol.TopicConfig, now int64) (queueAt func(i int32) int32, retryProbability int, ok bool) {
	n := tc.ReadQueueNums
	if h.Order || h.QueueID >= 0 || n <= 0 || !isPriorityTopic(tc) {
		return nil, 0, false
	}
	st := p.priorities.get(h.ConsumerGroup, h.Topic)
	if st.requests.Add(1)%100 >= p.priorityFactor(h.ConsumerGroup) {
		return nil, 0, false
	}
	asc := p.b.cfg.PriorityOrderAsc
	level := func(i int32) int32 { // i-th most urgent queue
		if asc {
			return n - 1 - i
		}
		return i
	}
	first := p.starvedQueue(st, h, n, now)
	if first < 0 {
		return level, p.b.cfg.PopFromRetryProbabilityForPriority, true
	}
	order := make([]int32, 0, n)
	order = append(order, first)
	for i := range n {
		if q := level(i); q != first {
			order = append(order, q)
		}
	}
	return func(i int32) int32 { return order[i] }, p.b.cfg.PopFromRetryProbabilityForPriority, true
}

// starvedQueue returns the queue whose next message for the group has waited
// longest beyond popPriorityMaxWaitMs, or -1. It looks at most once per
// priorityAgingRecheckMs per (group, topic): one consume-queue unit and one
// commit-log timestamp per queue.
func (p *popService) starvedQueue(st *priorityState, h *protocol.PopMessageRequestHeader, n int32, now int64) int32 {
	maxWait := p.b.cfg.PopPriorityMaxWaitMs
	if maxWait <= 0 {
		return -1
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if now-st.checkedAt < priorityAgingRecheckMs {
		return st.starved
	}
	st.checkedAt = now
	st.starved = -1
	oldest := now - maxWait
	for q := range n {
		k := pop.QueueKey{Group: h.ConsumerGroup, Topic: h.Topic, QueueID: q}
		off, ok := p.state.PopOffset(k)
		if !ok {
			off = p.initOffset(k.Group, k.Topic, q, h.InitMode)
		}
		if off >= p.b.Store.MaxOffsetInQueue(h.Topic, q) {
			continue
		}
		ts, err := p.b.Store.StoreTimeByQueueOffset(h.Topic, q, off)
		if err == nil && ts > 0 && ts < oldest {
			oldest, st.starved = ts, q
		}
	}
	return st.starved
}

// retryQueueFor is where a revived copy of m (read from a queue of topic,
// retrying origTopic) goes, and how many queues the retry topic needs:
// with useSeparateRetryQueue the queue id it had (0 when the retry topic
// has fewer queues), else queue 0 of a one-queue retry topic.
func (p *popService) retryQueueFor(origTopic string, queueID int32) (q, queues int32) {
	if !p.b.cfg.UseSeparateRetryQueue {
		return 0, 1
	}
	queues = 1
	if tc, ok := p.b.Topics.Get(origTopic); ok {
		queues = max(tc.WriteQueueNums, 1)
	}
	if queueID < 0 || queueID >= queues {
		return 0, queues
	}
	return queueID, queues
}

// ensureRetryQueues creates the retry topic with queues queues, or widens
// an existing one that has fewer (useSeparateRetryQueue after the topic
// grew, or switched on later).
func (p *popService) ensureRetryQueues(retryTopic string, queues int32) error {
	tc, err := p.b.Topics.CreateIfAbsent(retryTopic, queues, protocol.PermRead|protocol.PermWrite, 0)
	if err != nil || tc.WriteQueueNums >= queues && tc.ReadQueueNums >= queues {
		return err
	}
	tc.WriteQueueNums, tc.ReadQueueNums = max(tc.WriteQueueNums, queues), max(tc.ReadQueueNums, queues)
	return p.b.Topics.Update(tc)
}
