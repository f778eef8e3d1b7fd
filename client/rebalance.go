package client

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"
)

// Rebalance (docs/broker.md §4.5): every rebalanceInterval and on
// NOTIFY_CONSUMER_IDS_CHANGED the consumer recomputes its share of every
// subscribed topic's queues and starts or stops their pull goroutines.

// rebalanceNow implements consumerInner: NOTIFY_CONSUMER_IDS_CHANGED.
func (c *PushConsumer) rebalanceNow() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *PushConsumer) rebalanceLoop() {
	t := time.NewTicker(c.cfg.rebalanceInterval)
	defer t.Stop()
	for {
		select {
		case <-c.quit:
			return
		case <-t.C:
		case <-c.wake:
		}
		ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
		c.doRebalance(ctx)
		cancel()
	}
}

// doRebalance recomputes this member's queues of every subscribed topic
// and starts or stops pull goroutines accordingly (docs/broker.md §4.5).
func (c *PushConsumer) doRebalance(ctx context.Context) {
	c.rebalanceMu.Lock()
	defer c.rebalanceMu.Unlock()
	c.stats.rebalance.Add(1)
	want := make(map[MessageQueue]bool)
	failedTopics := make(map[string]bool)
	for topic := range c.subs {
		mqs, err := c.allocate(ctx, topic)
		if err != nil {
			failedTopics[topic] = true
			c.logger.Debug("rebalance: allocation failed", "topic", topic, "err", err)
			continue
		}
		for _, mq := range mqs {
			want[mq] = true
		}
	}
	// Drop queues no longer ours (unless their topic failed to allocate:
	// keep consuming what we have rather than stall).
	now := time.Now()
	var removed []*queueState
	c.queuesMu.Lock()
	for mq, qs := range c.queues {
		if (!want[mq] && !failedTopics[mq.Topic]) || qs.pq.dropped.Load() || qs.pq.pullExpired(now) {
			qs.pq.dropped.Store(true)
			qs.cancel()
			delete(c.queues, mq)
			removed = append(removed, qs)
		}
	}
	var added []MessageQueue
	for mq := range want {
		if _, ok := c.queues[mq]; !ok {
			added = append(added, mq)
		}
	}
	c.queuesMu.Unlock()

	if len(removed) > 0 {
		var mqs []MessageQueue
		for _, qs := range removed {
			<-qs.done // the pull goroutine stops at its next check
			mqs = append(mqs, qs.mq)
		}
		if err := c.store.persist(ctx, mqs); err != nil {
			c.logger.Warn("persist offsets of removed queues", "err", err)
		}
		for _, mq := range mqs {
			c.store.remove(mq)
		}
		c.svc.released(ctx, removed)
	}
	slices.SortFunc(added, compareMessageQueue)
	added = c.svc.acquire(ctx, added)
	// Each pull goroutine computes its start offset itself, so one slow
	// broker does not hold up the queues of the others.
	c.addQueues(added, -1)
	if len(added) > 0 || len(removed) > 0 {
		c.logger.Info("rebalanced", "added", len(added), "removed", len(removed))
	}
}

// allocate returns this member's queues of topic.
func (c *PushConsumer) allocate(ctx context.Context, topic string) ([]MessageQueue, error) {
	if c.assigned != nil {
		return c.assigned[topic], nil
	}
	mqs, err := c.env.subscribeQueues(ctx, topic)
	if err != nil {
		return nil, err
	}
	if c.cfg.model == Broadcasting {
		return mqs, nil
	}
	cids, err := c.api.consumerIDs(ctx, topic)
	if err != nil {
		return nil, err
	}
	if len(cids) == 0 {
		return nil, errors.New("client: empty consumer list")
	}
	mqs = slices.Clone(mqs)
	slices.SortFunc(mqs, compareMessageQueue)
	cids = slices.Clone(cids)
	slices.Sort(cids)
	if cs, ok := c.cfg.strategy.(checkedAllocator); ok {
		// A strategy that can refuse its inputs (MACHINE_ROOM_NEARBY with
		// an unresolved room): the topic keeps its queues, as RocketMQ's
		// rebalance does when allocate throws.
		return cs.allocateChecked(c.wireGroup, c.env.clientID(), mqs, cids)
	}
	return c.cfg.strategy.Allocate(c.wireGroup, c.env.clientID(), mqs, cids), nil
}

func (c *PushConsumer) addQueue(mq MessageQueue, offset int64) {
	c.addQueues([]MessageQueue{mq}, offset)
}

// addQueues registers every queue before starting any pull goroutine, so
// each goroutine sees the final number of the topic's queues (topic-level
// thresholds divide by it).
func (c *PushConsumer) addQueues(mqs []MessageQueue, offset int64) {
	states := make([]*queueState, len(mqs))
	ctxs := make([]context.Context, len(mqs))
	c.queuesMu.Lock()
	for i, mq := range mqs {
		qctx, cancel := context.WithCancel(c.ctx)
		qs := &queueState{mq: mq, pq: newProcessQueue(), cancel: cancel, done: make(chan struct{})}
		c.svc.newQueue(qs)
		c.queues[mq] = qs
		states[i], ctxs[i] = qs, qctx
	}
	c.queuesMu.Unlock()
	for i, qs := range states {
		qctx := ctxs[i]
		if !c.goFunc("pull", func() { defer close(qs.done); c.pullLoop(qctx, qs, offset) }) {
			close(qs.done)
			qs.cancel()
		}
	}
}

func (c *PushConsumer) queueList() []*queueState {
	c.queuesMu.Lock()
	defer c.queuesMu.Unlock()
	return slices.Collect(maps.Values(c.queues))
}
