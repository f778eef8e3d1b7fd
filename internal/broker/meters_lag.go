package broker

import (
	"slices"
	"strings"

	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
)

// ConsumerLag is one (group, topic) pair's backlog, computed at scrape
// time from the store's queue offsets and the group's committed offsets
// (RocketMQ's ConsumerLagCalculator): rocketmq_consumer_lag_messages and
// friends.
type ConsumerLag struct {
	Group, Topic string
	IsRetry      bool
	// Lag is the sum over read queues of max offset - committed offset.
	Lag int64
	// Inflight is pulled but not committed: pull offset - committed offset.
	Inflight int64
	// Ready is stored but not pulled yet: max offset - pull offset.
	Ready int64
	// EarliestUnconsumed and EarliestUnpulled are store times (ms) of the
	// oldest message not committed / not pulled; 0 when there is none.
	EarliestUnconsumed int64
	EarliestUnpulled   int64
}

// ConsumerLags reports the lag of every topic subscribed by a consumer
// group with a live consumer, and of every LITE parent a group has
// committed lite topic offsets on (aggregated, lite_metrics.go), sorted by
// group and topic. Groups without
// a committed offset on a queue count from the queue's min offset.
func (b *Broker) ConsumerLags() []ConsumerLag {
	var out []ConsumerLag
	for _, g := range b.Clients.ConsumerGroups() {
		info, ok := b.Clients.ConsumerGroup(g)
		if !ok || len(info.Channels) == 0 {
			continue
		}
		if strings.EqualFold(info.MessageModel, "BROADCASTING") {
			continue // offsets live in the clients
		}
		for topic := range info.Subscriptions {
			tc, ok := b.Topics.Get(topic)
			if !ok || isLiteTopic(&tc) {
				continue // a LITE parent's lag is its lite topics' (below)
			}
			out = append(out, b.lagOf(g, topic, tc))
		}
	}
	out = append(out, b.liteConsumerLags()...) // lite_metrics.go
	slices.SortFunc(out, func(a, b ConsumerLag) int {
		if c := strings.Compare(a.Group, b.Group); c != 0 {
			return c
		}
		return strings.Compare(a.Topic, b.Topic)
	})
	return out
}

func (b *Broker) lagOf(group, topic string, tc protocol.TopicConfig) ConsumerLag {
	l := ConsumerLag{Group: group, Topic: topic, IsRetry: names.IsRetryTopic(topic)}
	var gm *groupMeter
	if b.meters != nil {
		gm = b.meters.existingGroup(topic, group)
	}
	earliest := func(cur *int64, q int32, off int64) {
		ts, err := b.Store.StoreTimeByQueueOffset(topic, q, off)
		if err == nil && ts > 0 && (*cur == 0 || ts < *cur) {
			*cur = ts
		}
	}
	for q := range tc.ReadQueueNums {
		maxOff := b.Store.MaxOffsetInQueue(topic, q)
		if maxOff <= 0 {
			continue
		}
		minOff := max(b.Store.MinOffsetInQueue(topic, q), 0)
		committed, ok := b.Offsets.Query(group, topic, q)
		if !ok || committed < minOff {
			committed = minOff
		}
		committed = min(committed, maxOff)
		pulled := int64(-1)
		if gm != nil {
			pulled = gm.pulledOffset(q)
		}
		if pulled < committed || pulled > maxOff {
			pulled = committed
		}
		if lag := maxOff - committed; lag > 0 {
			l.Lag += lag
			earliest(&l.EarliestUnconsumed, q, committed)
		}
		l.Inflight += pulled - committed
		if ready := maxOff - pulled; ready > 0 {
			l.Ready += ready
			earliest(&l.EarliestUnpulled, q, pulled)
		}
	}
	return l
}
