package client

import (
	"context"
	"time"

	"github.com/apogeemq/apogee/internal/run"
)

// Orderly consumption (docs/protocol.md §7.7): each queue is locked on its
// broker before it is pulled, locks are renewed every 20 s, and a queue's
// messages are consumed by one pool worker at a time (processQueue.consumeMu,
// the local lock) in offset order. A failed batch is retried locally after
// the suspend time; past maxReconsumeTimes it goes to the DLQ.

const lockRenewInterval = 20 * time.Second

// scheduleOrderly queues a consume task for the queue unless one is
// already queued or running; after delay when delay > 0.
func (c *PushConsumer) scheduleOrderly(qs *queueState, delay time.Duration) {
	if !qs.orderlyScheduled.CompareAndSwap(false, true) {
		return
	}
	if delay <= 0 {
		c.tasks.push(func() { c.consumeOrderly(qs) })
		return
	}
	c.goFunc("orderly-later", func() {
		if sleep(c.ctx, delay) {
			c.tasks.push(func() { c.consumeOrderly(qs) })
		}
	})
}

// consumeOrderly consumes the queue's cached messages in order until the
// cache is empty, the queue is dropped or a batch must wait.
func (c *PushConsumer) consumeOrderly(qs *queueState) {
	pq := qs.pq
	pq.consumeMu.Lock()
	defer pq.consumeMu.Unlock()
	qs.orderlyScheduled.Store(false)
	clustering := c.cfg.model == Clustering
	for !pq.dropped.Load() {
		if clustering && (!pq.locked.Load() || pq.lockExpired(time.Now())) {
			// Not (or no longer surely) ours: wait for the lock renewal.
			c.scheduleOrderly(qs, 100*time.Millisecond)
			return
		}
		msgs := pq.takeMessages(c.cfg.consumeBatchMaxSize)
		if len(msgs) == 0 {
			return
		}
		res, err := c.callListener(c.ctx, msgs[0].Topic, msgs)
		if pq.dropped.Load() {
			return // not committed; the next owner consumes it again
		}
		if res == ConsumeSuccess {
			c.stats.consumed.Add(int64(len(msgs)))
			if off := pq.commit(); off >= 0 {
				c.store.update(qs.mq, off, false)
			}
			continue
		}
		c.stats.failed.Add(int64(len(msgs)))
		if err != nil {
			c.logger.Debug("orderly listener failed", "topic", qs.mq.Topic, "queueId", qs.mq.QueueID, "err", err)
		}
		// Past the retry limit the batch goes to the DLQ so the queue can
		// move on; otherwise it is consumed again after the suspend time.
		exceeded := false
		for _, m := range msgs {
			if m.ReconsumeTimes >= c.maxReconsume() {
				exceeded = true
			}
		}
		if exceeded && clustering {
			ok := true
			for _, m := range msgs {
				if serr := c.api.sendBack(c.ctx, m, -1, c.maxReconsume()); serr != nil {
					ok = false
					c.logger.Warn("orderly send to DLQ failed", "msgId", m.MsgID, "err", serr)
				}
			}
			if ok {
				c.stats.sentBack.Add(int64(len(msgs)))
				if off := pq.commit(); off >= 0 {
					c.store.update(qs.mq, off, false)
				}
				continue
			}
		}
		for _, m := range msgs {
			m.ReconsumeTimes++
		}
		pq.makeMessagesConsumeAgain()
		c.scheduleOrderly(qs, c.cfg.suspendCurrentQueueTime)
		return
	}
}

// lockQueues locks mqs on their brokers and returns the ones now held.
func (c *PushConsumer) lockQueues(ctx context.Context, mqs []MessageQueue) []MessageQueue {
	byBroker := map[string][]MessageQueue{}
	for _, mq := range mqs {
		byBroker[mq.BrokerName] = append(byBroker[mq.BrokerName], mq)
	}
	var out []MessageQueue
	for broker, list := range byBroker {
		locked, err := c.api.lockBatch(ctx, broker, list)
		if err != nil {
			c.logger.Warn("lock queues failed", "brokerName", broker, "err", err)
			continue
		}
		out = append(out, locked...)
	}
	return out
}

// unlockAll releases the broker locks of mqs (best effort).
func (c *PushConsumer) unlockAll(ctx context.Context, mqs []MessageQueue) {
	byBroker := map[string][]MessageQueue{}
	for _, mq := range mqs {
		byBroker[mq.BrokerName] = append(byBroker[mq.BrokerName], mq)
	}
	for broker, list := range byBroker {
		if err := c.api.unlockBatch(ctx, broker, list); err != nil {
			c.logger.Debug("unlock queues failed", "brokerName", broker, "err", err)
		}
	}
}

// lockLoop renews the locks of every assigned queue every 20 s and marks
// queues whose lock was lost, so they stop being pulled and consumed.
func (c *PushConsumer) lockLoop() {
	run.Every(c.ctx, lockRenewInterval, func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		c.renewLocks(ctx)
		cancel()
	})
}

func (c *PushConsumer) renewLocks(ctx context.Context) {
	all := c.queueList()
	var mqs []MessageQueue
	for _, qs := range all {
		mqs = append(mqs, qs.mq)
	}
	held := map[MessageQueue]bool{}
	for _, mq := range c.lockQueues(ctx, mqs) {
		held[mq] = true
	}
	now := time.Now()
	for _, qs := range all {
		if held[qs.mq] {
			qs.pq.setLocked(now)
		} else {
			qs.pq.locked.Store(false)
		}
	}
}

// waitConsumeIdle reports whether the queue's local consume lock could be
// taken within d, i.e. no orderly listener is running on it (RocketMQ's
// tryLock(1000 ms) before unlocking a removed queue). The lock is released
// again at once: the queue is already dropped, so nothing consumes it
// afterwards.
func waitConsumeIdle(ctx context.Context, pq *processQueue, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if pq.consumeMu.TryLock() {
			pq.consumeMu.Unlock()
			return true
		}
		if time.Now().After(deadline) || !sleep(ctx, 10*time.Millisecond) {
			return false
		}
	}
}
