package broker

import (
	"github.com/apogeemq/apogee/internal/lite"
	"github.com/apogeemq/apogee/internal/pop"
)

// Lite topic aggregates for the metrics exporter (docs/priority-and-lite.md):
// never one series per lite topic. A group's lag over a parent's lite
// topics is one ConsumerLag with Topic = the parent, as RocketMQ's
// LiteConsumerLagCalculator reports it under rocketmq_consumer_lag_messages.

// LiteStats is the broker's lite totals.
type LiteStats struct {
	Parents       map[string]int // LITE parent -> its lite topics on this broker
	Topics        int            // lite topics on this broker
	Quota         int            // maxLmqConsumeQueueNum
	Subscriptions int            // remoting lite subscriptions (LITE_SUBSCRIPTION_CTL)
	Clients       int            // clients holding them
}

// LiteStats returns the broker's lite totals.
func (b *Broker) LiteStats() LiteStats {
	l := b.lite
	return LiteStats{Parents: l.registry.Parents(), Topics: l.registry.Len(), Quota: b.cfg.MaxLmqConsumeQueueNum,
		Subscriptions: l.subs.Count(), Clients: l.subs.ClientCount()}
}

// liteConsumerLags aggregates, per (parent, group), the lag of every group
// with a committed offset on a lite topic (RocketMQ's
// calculateLiteLagCount): the sum over its lite topics of max offset -
// committed offset; a lite topic the group never committed counts 0.
// EarliestUnconsumed is the oldest store time among the first unconsumed
// messages; Inflight the popped, unacked messages (FIFO batches).
func (b *Broker) liteConsumerLags() []ConsumerLag {
	type key struct{ parent, group string }
	agg := map[key]*ConsumerLag{}
	now := b.now().UnixMilli()
	for topic, groups := range b.Offsets.GroupsByTopic() {
		parent, _, ok := lite.SplitQueueName(topic)
		if !ok || !b.lite.registry.Exists(topic) {
			continue
		}
		maxOff := b.Store.MaxOffsetInQueue(topic, 0)
		for _, g := range groups {
			committed, ok := b.Offsets.Query(g, topic, 0)
			if !ok || committed < 0 {
				continue
			}
			k := key{parent, g}
			l := agg[k]
			if l == nil {
				l = &ConsumerLag{Group: g, Topic: parent}
				agg[k] = l
			}
			lag := max(maxOff-committed, 0)
			if lag == 0 {
				continue
			}
			l.Lag += lag
			inflight := int64(0)
			if b.pop != nil {
				inflight = int64(len(b.pop.state.OrderView(pop.QueueKey{Group: g, Topic: topic}, now).Pending))
			}
			inflight = min(inflight, lag)
			l.Inflight += inflight
			l.Ready += lag - inflight
			if ts, err := b.Store.StoreTimeByQueueOffset(topic, 0, committed); err == nil && ts > 0 &&
				(l.EarliestUnconsumed == 0 || ts < l.EarliestUnconsumed) {
				l.EarliestUnconsumed = ts
			}
			if lag > inflight {
				if ts, err := b.Store.StoreTimeByQueueOffset(topic, 0, committed+inflight); err == nil && ts > 0 &&
					(l.EarliestUnpulled == 0 || ts < l.EarliestUnpulled) {
					l.EarliestUnpulled = ts
				}
			}
		}
	}
	out := make([]ConsumerLag, 0, len(agg))
	for _, l := range agg {
		out = append(out, *l)
	}
	return out
}
