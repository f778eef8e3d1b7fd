package client

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
)

// consumeService is how a PushConsumer consumes what its pull loops cache,
// chosen once in Start as RocketMQ chooses its ConsumeMessageService:
//
//   - concurrentService: batches of consumeMessageBatchMaxSize go to the
//     worker pool in any order; failures are sent back to the retry topic.
//   - orderlyService: one queue is consumed by one worker at a time in
//     offset order (push_orderly.go); in clustering mode each queue is
//     locked on its broker before it is pulled.
//   - liteService: the LitePullConsumer's Poll buffer; the application
//     pulls (CONSUME_ACTIVELY), so pulls are LITE_PULL_MESSAGE with the
//     subscription, never carry a commit offset, and no retry topic is
//     consumed.
//
// The pull loop, the rebalance and Close call the service at the points
// where the three differ; every method runs on the caller's goroutine.
type consumeService interface {
	// start starts the service's goroutines (worker pool and periodic
	// loops) through the consumer's group.
	start()
	// submit hands a freshly cached batch of qs to the service. It never
	// blocks on the pool (flow control bounds what is queued); false
	// means ctx ended first.
	submit(ctx context.Context, qs *queueState, msgs []*MessageExt) bool
	// pullWait reports how long the pull loop waits before pulling qs
	// again; 0 pulls now.
	pullWait(qs *queueState) time.Duration
	// preparePull sets the service's part of a pull request.
	preparePull(req *pullRequest)
	// pullAhead is how many pulls of a queue the pull loop may send
	// before the answer to the current one arrives (0: one at a time).
	pullAhead() int
	// newQueue prepares a freshly assigned queue's state.
	newQueue(qs *queueState)
	// acquire returns the assigned queues the service may pull (orderly
	// clustering: the ones locked on their brokers).
	acquire(ctx context.Context, added []MessageQueue) []MessageQueue
	// released runs after the pull loops of removed queues stopped.
	released(ctx context.Context, removed []*queueState)
	// closed runs in Close after every goroutine stopped.
	closed(ctx context.Context, all []MessageQueue)
	// consumeType is the heartbeat's consumeType.
	consumeType() string
	// orderly reports in-order consumption (the default reconsume limit is
	// then unbounded and consume-directly results say Order).
	orderly() bool
	// consumesRetryTopic reports whether the group's retry topic is
	// subscribed too (clustering push consumers).
	consumesRetryTopic() bool
}

// newConsumeService picks the push consumer's service from its options.
func newConsumeService(c *PushConsumer) consumeService {
	if c.cfg.orderly {
		return &orderlyService{c: c, locking: c.cfg.model == Clustering}
	}
	return &concurrentService{c: c}
}

// concurrentService is RocketMQ's ConsumeMessageConcurrentlyService.
type concurrentService struct{ c *PushConsumer }

func (s *concurrentService) start() {
	c := s.c
	startPool(c)
	if c.cfg.model == Clustering {
		c.goFunc("clean-expired", c.cleanExpiredLoop)
	}
}

func (s *concurrentService) submit(_ context.Context, qs *queueState, msgs []*MessageExt) bool {
	c := s.c
	for batch := range slices.Chunk(msgs, c.cfg.consumeBatchMaxSize) {
		c.tasks.push(func() { c.consumeConcurrently(qs, batch) })
	}
	return true
}

func (s *concurrentService) pullWait(qs *queueState) time.Duration { return spanWait(s.c, qs) }

func (s *concurrentService) preparePull(req *pullRequest) { commitOnPull(s.c, req) }

func (*concurrentService) pullAhead() int { return 0 }

func (*concurrentService) newQueue(*queueState) {}

func (*concurrentService) acquire(_ context.Context, added []MessageQueue) []MessageQueue {
	return added
}

func (*concurrentService) released(context.Context, []*queueState) {}
func (*concurrentService) closed(context.Context, []MessageQueue)  {}
func (*concurrentService) consumeType() string                     { return protocol.ConsumePassively }
func (*concurrentService) orderly() bool                           { return false }
func (*concurrentService) consumesRetryTopic() bool                { return true }

// orderlyService is RocketMQ's ConsumeMessageOrderlyService; locking is
// set in clustering mode (broadcasting consumes in order without locks).
type orderlyService struct {
	c       *PushConsumer
	locking bool
}

func (s *orderlyService) start() {
	startPool(s.c)
	if s.locking {
		s.c.goFunc("lock-renew", s.c.lockLoop)
	}
}

func (s *orderlyService) submit(_ context.Context, qs *queueState, _ []*MessageExt) bool {
	s.c.scheduleOrderly(qs, 0)
	return true
}

// pullWait: an orderly queue is pulled only while its broker lock is held
// (no span limit: its messages are consumed in order anyway).
func (s *orderlyService) pullWait(qs *queueState) time.Duration {
	if s.locking && !qs.pq.locked.Load() {
		return time.Second
	}
	return 0
}

func (s *orderlyService) preparePull(req *pullRequest) { commitOnPull(s.c, req) }

func (*orderlyService) pullAhead() int { return 0 }

func (s *orderlyService) newQueue(qs *queueState) {
	if s.locking {
		qs.pq.setLocked(time.Now())
	}
}

func (s *orderlyService) acquire(ctx context.Context, added []MessageQueue) []MessageQueue {
	if !s.locking || len(added) == 0 {
		return added
	}
	return s.c.lockQueues(ctx, added)
}

// released releases a removed queue's broker lock only once no listener
// runs on it, so the next owner cannot overtake a batch still in progress;
// a busy queue keeps its lock until it expires.
func (s *orderlyService) released(ctx context.Context, removed []*queueState) {
	if !s.locking {
		return
	}
	var idle []MessageQueue
	for _, qs := range removed {
		if waitConsumeIdle(ctx, qs.pq, time.Second) {
			idle = append(idle, qs.mq)
		}
	}
	s.c.unlockAll(ctx, idle)
}

func (s *orderlyService) closed(ctx context.Context, all []MessageQueue) {
	if s.locking {
		s.c.unlockAll(ctx, all)
	}
}

func (*orderlyService) consumeType() string      { return protocol.ConsumePassively }
func (*orderlyService) orderly() bool            { return true }
func (*orderlyService) consumesRetryTopic() bool { return true }

// liteService hands pulled batches to LitePullConsumer.Poll through pollCh.
type liteService struct {
	c      *PushConsumer
	pollCh chan polledBatch
}

func (*liteService) start() {}

func (s *liteService) submit(ctx context.Context, qs *queueState, msgs []*MessageExt) bool {
	select {
	case s.pollCh <- polledBatch{qs: qs, msgs: msgs}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *liteService) pullWait(qs *queueState) time.Duration { return spanWait(s.c, qs) }

// preparePull: lite pulls carry the subscription (the broker filters with
// the selector given here) and never a commit offset: offsets move only
// through Commit or the auto-commit timer, as in RocketMQ's
// DefaultLitePullConsumer, so a piggy-backed offset taken before a Seek
// cannot reach the broker after a later Commit and move it back.
func (*liteService) preparePull(req *pullRequest) {
	req.lite = true
	req.sysFlag |= protocol.PullFlagLitePull | protocol.PullFlagSubscription
}

// pullAhead: a lite consumer keeps a second pull of each queue in flight
// while a backlog drains (the answers carry no offset commit, so a pull
// sent ahead has no effect on the broker when its answer is dropped).
func (*liteService) pullAhead() int { return 1 }

func (*liteService) newQueue(*queueState) {}

func (*liteService) acquire(_ context.Context, added []MessageQueue) []MessageQueue { return added }

func (*liteService) released(context.Context, []*queueState) {}
func (*liteService) closed(context.Context, []MessageQueue)  {}
func (*liteService) consumeType() string                     { return protocol.ConsumeActively }
func (*liteService) orderly() bool                           { return false }
func (*liteService) consumesRetryTopic() bool                { return false }

// startPool starts the consume worker pool.
func startPool(c *PushConsumer) {
	for i := 0; i < c.cfg.consumeGoroutines; i++ {
		c.goFunc("consume", func() { c.tasks.run(c.quit) })
	}
}

// spanWait pauses a queue whose cached messages span more than
// consumeMaxSpan offsets (concurrent consumption can leave a gap that
// blocks the committed offset).
func spanWait(c *PushConsumer, qs *queueState) time.Duration {
	if qs.pq.span() > c.cfg.consumeMaxSpan {
		return 50 * time.Millisecond
	}
	return 0
}

// commitOnPull piggy-backs the committed offset on a clustering pull.
func commitOnPull(c *PushConsumer, req *pullRequest) {
	if c.cfg.model != Clustering {
		return
	}
	if committed, ok := c.store.(*remoteOffsetStore).get(req.mq); ok && committed > 0 {
		req.sysFlag |= protocol.PullFlagCommitOffset
		req.commitOffset = committed
	}
}

// unboundedReconsume is an orderly consumer's default maxReconsumeTimes.
const unboundedReconsume = math.MaxInt32
