package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/run"
)

// ConsumeResult is what a listener returns for a batch.
type ConsumeResult int

const (
	// ConsumeSuccess: the batch is consumed; its offsets may be committed.
	ConsumeSuccess ConsumeResult = iota
	// ConsumeRetryLater: concurrent mode sends the batch back to the broker
	// for redelivery after a delay (retry topic, then DLQ after
	// maxReconsumeTimes); orderly mode suspends the queue and retries the
	// same batch locally, like SuspendCurrentQueueAMoment.
	ConsumeRetryLater
	// SuspendCurrentQueueAMoment (orderly): retry the same batch after the
	// suspend time without losing order.
	SuspendCurrentQueueAMoment
)

func (r ConsumeResult) String() string {
	switch r {
	case ConsumeSuccess:
		return "CONSUME_SUCCESS"
	case ConsumeRetryLater:
		return "RECONSUME_LATER"
	case SuspendCurrentQueueAMoment:
		return "SUSPEND_CURRENT_QUEUE_A_MOMENT"
	}
	return fmt.Sprintf("ConsumeResult(%d)", int(r))
}

// MessageListener consumes a batch of at most consumeMessageBatchMaxSize
// messages of one queue. It runs on a worker of the consumer's pool; ctx is
// cancelled when the consumer closes or loses the queue. A non-nil error
// counts as ConsumeRetryLater. A panic is recovered and counts as
// ConsumeRetryLater too.
type MessageListener func(ctx context.Context, msgs []*MessageExt) (ConsumeResult, error)

// WithConsumeOrderly switches a push consumer to orderly consumption: each
// queue is locked on its broker (LOCK_BATCH_MQ, renewed every 20 s) and
// consumed by one worker at a time in offset order. Default off
// (concurrent).
func WithConsumeOrderly(on bool) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.orderly = on })
}

// PushConsumer receives messages of its subscriptions and hands them to
// listeners. The cluster decides which queues it reads (rebalance); it
// pulls them with long polling, caches them per queue (flow control) and
// commits offsets after consumption. Delivery is at least once.
//
// Lifecycle: NewPushConsumer starts nothing; Subscribe before Start; Start
// joins the group; Close leaves it, waits for running listeners and every
// goroutine, and persists offsets.
type PushConsumer struct {
	cfg    consumerConfig
	group  string // user's name
	logger *slog.Logger

	newEnv func(*consumerConfig) (consumerEnv, func() error, error)

	mu       sync.Mutex
	subs     map[string]*subscription   // by wire topic; fixed after Start
	handlers map[string]MessageListener // by wire topic; fixed after Start
	started  bool
	closed   bool

	env        consumerEnv
	releaseEnv func() error
	api        *consumerAPI
	store      offsetStore
	wireGroup  string

	// routines owns every goroutine of the consumer (consume pool, pull
	// loops, rebalance and the periodic loops); ctx is its context and
	// quit its Done channel, both ended when Close begins.
	routines *run.Group
	ctx      context.Context
	quit     <-chan struct{}
	wake     chan struct{} // rebalance wake-up, capacity 1
	tasks    *taskQueue    // consume pool input

	// queuesMu guards queues; never held during I/O or listener calls.
	queuesMu sync.Mutex
	queues   map[MessageQueue]*queueState

	stats consumerStats

	// svc consumes what the pull loops cache (consume_service.go); set
	// once at Start by newService (newConsumeService unless the
	// LitePullConsumer installs its Poll buffer).
	svc        consumeService
	newService func(*PushConsumer) consumeService

	// LitePullConsumer controls: assigned, when set, replaces the
	// allocation.
	suspended   atomic.Bool               // Suspend/Resume: no pulls while set
	pausedMu    sync.Mutex                // guards paused
	paused      map[MessageQueue]bool     // lite Pause/Resume per queue
	assigned    map[string][]MessageQueue // wire topic -> queues; fixed after Start
	rebalanceMu sync.Mutex                // serialises doRebalance and Seek
}

// polledBatch is a pulled batch waiting for LitePullConsumer.Poll.
type polledBatch struct {
	qs   *queueState
	msgs []*MessageExt
}

// queueState is one assigned queue: its cache and its pull goroutine.
type queueState struct {
	// suggestedBroker is the broker member the last pull answer pointed
	// to (suggestWhichBrokerId: 0 master, else a slave); pull loop only.
	suggestedBroker int64
	mq              MessageQueue
	pq              *processQueue
	cancel          context.CancelFunc
	done            chan struct{} // closed when the pull goroutine returns
	// orderlyScheduled is true while an orderly consume task for the
	// queue is queued or running.
	orderlyScheduled atomic.Bool
}

type consumerStats struct {
	pulled    atomic.Int64
	consumed  atomic.Int64
	failed    atomic.Int64
	sentBack  atomic.Int64
	rebalance atomic.Int64
}

// ConsumerStats is a snapshot of a consumer's counters.
type ConsumerStats struct {
	Pulled, Consumed, Failed, SentBack, Rebalances int64
	Queues                                         int
	// CachedMessages and CachedBytes are what the process queues hold now
	// (pulled, not yet consumed): what flow control bounds.
	CachedMessages, CachedBytes int64
}

// NewPushConsumer returns a consumer of group. Options default to
// RocketMQ's (clustering, consume from last offset, averagely allocation, 20
// workers); WithNameServers is required.
func NewPushConsumer(group string, opts ...ConsumerOpt) (*PushConsumer, error) {
	if group == "" {
		return nil, errors.New("client: empty consumer group")
	}
	cfg := defaultConsumerConfig()
	for _, o := range opts {
		o.applyConsumer(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &PushConsumer{
		cfg:        cfg,
		group:      group,
		logger:     cfg.logger.With("component", "push-consumer", "group", group),
		newEnv:     newConsumerEnv,
		newService: newConsumeService,
		subs:       make(map[string]*subscription),
		handlers:   make(map[string]MessageListener),
		queues:     make(map[MessageQueue]*queueState),
		wake:       make(chan struct{}, 1),
		routines:   run.NewGroup("apogee"),
	}
	c.ctx, c.quit = c.routines.Context(), c.routines.Done()
	return c, nil
}

// Subscribe adds a topic subscription with its listener. Call it before
// Start; a second call for the same topic replaces the first.
func (c *PushConsumer) Subscribe(topic string, sel Selector, listener MessageListener) error {
	if topic == "" || listener == nil {
		return errors.New("client: Subscribe needs a topic and a listener")
	}
	return c.subscribe(topic, sel, listener)
}

func (c *PushConsumer) subscribe(topic string, sel Selector, listener MessageListener) error {
	if topic == "" {
		return errors.New("client: empty topic")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return errors.New("client: Subscribe after Start")
	}
	wire := wrapNamespace(c.cfg.namespace, topic)
	s, err := newSubscription(wire, sel)
	if err != nil {
		return err
	}
	c.subs[wire] = s
	c.handlers[wire] = listener
	return nil
}

// Start joins the group: it registers with the shared client instance
// (heartbeats carry the subscriptions), fetches routes, starts the consume
// pool, the rebalance, offset-persist and (orderly) lock-renewal
// goroutines, and runs a first rebalance before returning.
func (c *PushConsumer) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	if c.started {
		return nil
	}
	if len(c.subs) == 0 {
		return errors.New("client: Start without a subscription")
	}
	env, release, err := c.newEnv(&c.cfg)
	if err != nil {
		return err
	}
	c.env, c.releaseEnv = env, release
	c.svc = c.newService(c)
	c.wireGroup = wrapNamespace(c.cfg.namespace, c.group)
	c.api = &consumerAPI{env: env, group: c.wireGroup}
	if c.cfg.model == Clustering {
		if c.svc.consumesRetryTopic() {
			// Clustering push consumers also consume their retry topic.
			retry := names.RetryGroupTopicPrefix + c.wireGroup
			s, _ := newSubscription(retry, TagSelector("*"))
			c.subs[retry] = s
		}
		c.store = newRemoteOffsetStore(c.wireGroup, c.api)
	} else {
		c.store = newLocalOffsetStore(c.cfg.offsetDir, localStoreID(env.clientID(), c.cfg.instanceName), c.wireGroup)
	}
	if err := c.store.load(); err != nil {
		_ = release()
		return err
	}
	if err := env.registerConsumer(c.wireGroup, c); err != nil {
		_ = release()
		return err
	}
	c.started = true
	c.tasks = newTaskQueue()
	c.svc.start()
	ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	for topic := range c.subs {
		if _, err := env.subscribeQueues(ctx, topic); err != nil {
			c.logger.Warn("no route yet", "topic", topic, "err", err)
		}
	}
	env.heartbeatNow(ctx)
	c.doRebalance(ctx)
	c.goFunc("rebalance", c.rebalanceLoop)
	c.goFunc("persist-offsets", c.persistLoop)
	c.logger.Info("push consumer started", "clientId", env.clientID(), "model", c.cfg.model.String(), "orderly", c.svc.orderly())
	return nil
}

// Close leaves the group: it stops pulling, waits for running listeners
// and every goroutine, persists offsets, unlocks orderly queues and
// unregisters from the instance. Messages cached but not consumed are
// redelivered to the group later. Idempotent.
func (c *PushConsumer) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	started := c.started
	c.mu.Unlock()
	c.routines.Close()
	closeTracers(c.cfg.hooks) // trace.go: flush the last trace batch
	if !started {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.queuesMu.Lock()
	all := slices.Collect(maps.Keys(c.queues))
	for _, qs := range c.queues {
		qs.pq.dropped.Store(true)
	}
	c.queues = map[MessageQueue]*queueState{}
	c.queuesMu.Unlock()
	err := c.store.persist(ctx, all)
	c.svc.closed(ctx, all)
	// UNREGISTER_CLIENT to every master: the group rebalances at once
	// instead of waiting for the connection to close or expire.
	c.env.unregisterConsumer(c.wireGroup)
	return errors.Join(err, c.releaseEnv())
}

// localStoreID names a broadcasting consumer's offset directory. The
// default instance name becomes pid#nanotime in the client id, which
// changes every run; like Java (which keeps "DEFAULT" for broadcasting
// consumers) the directory uses ip@DEFAULT then, so a restarted consumer
// finds its offsets.
func localStoreID(clientID, instanceName string) string {
	if instanceName != "" && instanceName != "DEFAULT" {
		return clientID
	}
	ip, _, _ := strings.Cut(clientID, "@")
	return ip + "@DEFAULT"
}

// Suspend stops pulling (messages already cached are still consumed);
// the consumer stays in its group and keeps its queues. Resume undoes it.
func (c *PushConsumer) Suspend() { c.suspended.Store(true) }

// Resume restarts pulling after Suspend.
func (c *PushConsumer) Resume() { c.suspended.Store(false) }

func (c *PushConsumer) isPaused(mq MessageQueue) bool {
	c.pausedMu.Lock()
	defer c.pausedMu.Unlock()
	return c.paused[mq]
}

// queueInfos implements queueInfoSource for GET_CONSUMER_RUNNING_INFO.
func (c *PushConsumer) queueInfos() []protocol.QueueValue[processQueueInfo] {
	var out []protocol.QueueValue[processQueueInfo]
	offsets := c.store.snapshot()
	for _, qs := range c.queueList() {
		pq := qs.pq
		info := processQueueInfo{
			CachedMsgCount:       pq.count.Load(),
			CachedMsgSizeInMiB:   pq.cachedSizeMiB(),
			Locked:               pq.locked.Load(),
			LastLockTimestamp:    pq.lastLockNanos.Load() / 1e6,
			Droped:               pq.dropped.Load(),
			LastPullTimestamp:    pq.lastPullNanos.Load() / 1e6,
			LastConsumeTimestamp: pq.lastConsNanos.Load() / 1e6,
		}
		if off, ok := offsets[qs.mq]; ok {
			info.CommitOffset = off
		}
		pq.mu.Lock()
		pq.skipStaleLocked()
		if pq.head < len(pq.offsets) {
			info.CachedMsgMinOffset, info.CachedMsgMaxOffset = pq.offsets[pq.head], pq.maxOffset
		}
		pq.mu.Unlock()
		out = append(out, protocol.QueueValue[processQueueInfo]{
			Queue: protocol.MessageQueue{Topic: qs.mq.Topic, BrokerName: qs.mq.BrokerName, QueueID: int32(qs.mq.QueueID)},
			Value: info,
		})
	}
	return out
}

// ClientID returns the id this consumer is known by in its group
// ("ip@instance"), "" before Start.
func (c *PushConsumer) ClientID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.env == nil {
		return ""
	}
	return c.env.clientID()
}

// Stats returns the consumer's counters.
func (c *PushConsumer) Stats() ConsumerStats {
	c.queuesMu.Lock()
	s := ConsumerStats{Queues: len(c.queues)}
	for _, qs := range c.queues {
		s.CachedMessages += qs.pq.count.Load()
		s.CachedBytes += qs.pq.size.Load()
	}
	c.queuesMu.Unlock()
	s.Pulled, s.Consumed, s.Failed = c.stats.pulled.Load(), c.stats.consumed.Load(), c.stats.failed.Load()
	s.SentBack, s.Rebalances = c.stats.sentBack.Load(), c.stats.rebalance.Load()
	return s
}

// goFunc runs fn on a goroutine of c.routines; it refuses once Close has
// begun (under the group's lock, so no start races Close's wait).
func (c *PushConsumer) goFunc(name string, fn func()) bool {
	return c.routines.Go("consumer-"+name, func(context.Context) { fn() })
}

// sleep waits d or until the consumer (or ctx) is done; false if done.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// consumerData implements consumerInner for heartbeats.
func (c *PushConsumer) consumerData() protocol.ConsumerData {
	d := protocol.ConsumerData{
		GroupName:        c.wireGroup,
		ConsumeType:      c.consumeType(),
		MessageModel:     c.cfg.model.String(),
		ConsumeFromWhere: c.cfg.fromWhere.String(),
	}
	for _, t := range slices.Sorted(maps.Keys(c.subs)) {
		d.SubscriptionDataSet = append(d.SubscriptionDataSet, c.subs[t].data())
	}
	return d
}

func (c *PushConsumer) consumeType() string { return c.svc.consumeType() }

func (c *PushConsumer) subscribedTopics() []string { return slices.Collect(maps.Keys(c.subs)) }

// pullLoop pulls one queue until the queue is dropped or the consumer
// closes; offset < 0 means "compute the start offset first" (docs/broker.md §4.7). It
// pauses (never drops) while the cache is over its thresholds.
func (c *PushConsumer) pullLoop(ctx context.Context, qs *queueState, offset int64) {
	pq, mq := qs.pq, qs.mq
	sub := c.subs[mq.Topic]
	for attempt := 0; offset < 0; attempt++ {
		off, err := startOffset(ctx, c.store, c.api, mq, c.cfg.fromWhere, c.cfg.consumeTimestamp)
		if err == nil {
			offset = off
			break
		}
		level := slog.LevelWarn
		if attempt > 0 {
			level = slog.LevelDebug // warned once per queue assignment
		}
		c.logger.Log(ctx, level, "no start offset yet", "topic", mq.Topic, "brokerName", mq.BrokerName, "queueId", mq.QueueID, "err", err)
		if !sleep(ctx, 3*time.Second) {
			return
		}
		pq.markPulled()
	}
	// The records of each pull are decoded into scratch and converted to
	// MessageExts before the next pull: no Ext structs allocated per pull.
	var scratch message.ExtScratch
	// ahead holds the pulls sent before their turn (lite consumers,
	// pullAhead > 0), for consecutive offsets: ahead[0] is for the offset
	// the loop pulls next. They are sent only while the queue is known to
	// hold messages there and the last answer was dense (every unit
	// matched), so they find what a pull sent later would; one whose
	// offset turns out wrong is abandoned unread.
	var ahead []*pendingPull
	abandon := func() {
		for _, p := range ahead {
			p.abandon()
		}
		ahead = ahead[:0]
	}
	defer func() { abandon() }()
	depth := c.svc.pullAhead()
	maxOffset, dense := int64(-1), false // from the last answer
	for ctx.Err() == nil && !pq.dropped.Load() {
		pq.markPulled() // a paused queue is alive, not expired
		if c.suspended.Load() || c.isPaused(mq) {
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		maxCount, maxMiB := c.queueLimits(mq.Topic)
		if pq.count.Load() > maxCount || pq.cachedSizeMiB() > maxMiB {
			sleep(ctx, 50*time.Millisecond)
			continue
		}
		if wait := c.svc.pullWait(qs); wait > 0 {
			sleep(ctx, wait)
			continue
		}
		if len(ahead) > 0 && ahead[0].req.offset != offset {
			abandon()
		}
		var res *pullResult
		var err error
		if depth == 0 {
			res, err = c.api.pull(ctx, c.newPullRequest(qs, sub, offset, &scratch))
		} else {
			var cur *pendingPull
			if len(ahead) > 0 {
				cur = ahead[0]
				ahead = ahead[:copy(ahead, ahead[1:])]
			} else {
				cur = c.api.startPull(ctx, c.newPullRequest(qs, sub, offset, &scratch))
			}
			next := cur.req.offset + int64(cur.req.maxNums)
			for dense && c.cfg.pullInterval <= 0 && len(ahead) < depth && next < maxOffset {
				r := c.newPullRequest(qs, sub, next, &scratch)
				// Messages exist at next: nothing to wait for.
				r.sysFlag &^= protocol.PullFlagSuspend
				r.suspend = 0
				ahead = append(ahead, c.api.startPull(ctx, r))
				next += int64(r.maxNums)
			}
			res, err = c.api.waitPull(ctx, cur)
		}
		if err != nil {
			abandon()
			dense = false
			if ctx.Err() != nil {
				return
			}
			qs.suggestedBroker = 0 // back to the master after a failure
			delay := 3 * time.Second
			var be *BrokerError
			if errors.As(err, &be) {
				switch protocol.ResponseCode(be.Code) {
				case protocol.SystemBusy:
					delay = 20 * time.Millisecond
				case protocol.SubscriptionNotExist, protocol.SubscriptionNotLatest, protocol.SubscriptionGroupNotExist:
					// The broker lost (restart) or has an old registration:
					// heartbeat now instead of waiting up to 30 s.
					c.env.requestHeartbeat()
					delay = time.Second
				}
			}
			c.logger.Debug("pull failed", "topic", mq.Topic, "brokerName", mq.BrokerName, "queueId", mq.QueueID, "err", err)
			sleep(ctx, delay)
			continue
		}
		maxOffset = res.maxOffset
		dense = res.code == protocol.Success && len(res.msgs) == int(c.cfg.pullBatchSize) &&
			res.nextBeginOffset == offset+int64(c.cfg.pullBatchSize)
		qs.suggestedBroker = res.suggestBrokerID
		switch res.code {
		case protocol.Success:
			msgs := messageExts(res.msgs, sub.match, mq, c.wireGroup, c.cfg.namespace)
			scratch.Clear()
			c.stats.pulled.Add(int64(len(msgs)))
			offset = res.nextBeginOffset
			if len(msgs) == 0 {
				// Everything was filtered out: nothing will commit past
				// it, so record the progress here.
				if pq.empty() {
					c.store.update(mq, offset, true)
				}
				continue
			}
			pq.putMessages(msgs)
			if !c.svc.submit(ctx, qs, msgs) {
				return
			}
		case protocol.PullNotFound, protocol.PullRetryImmediately:
			offset = res.nextBeginOffset
		case protocol.PullOffsetMoved:
			c.logger.Warn("offset moved", "topic", mq.Topic, "brokerName", mq.BrokerName, "queueId", mq.QueueID,
				"offset", offset, "nextBeginOffset", res.nextBeginOffset)
			pq.dropped.Store(true)
			c.store.update(mq, res.nextBeginOffset, false)
			pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			_ = c.store.persist(pctx, []MessageQueue{mq})
			cancel()
			c.rebalanceNow()
			return
		}
		if c.cfg.pullInterval > 0 {
			sleep(ctx, c.cfg.pullInterval)
		}
	}
}

// newPullRequest is the pull loop's request for offset of qs.
func (c *PushConsumer) newPullRequest(qs *queueState, sub *subscription, offset int64, scratch *message.ExtScratch) *pullRequest {
	req := &pullRequest{
		mq: qs.mq, offset: offset, maxNums: c.cfg.pullBatchSize, sysFlag: protocol.PullFlagSuspend,
		suspend: c.cfg.pullSuspend, timeout: c.cfg.pullTimeout, expressionType: sub.expressionType(),
		scratch: scratch,
	}
	c.svc.preparePull(req)
	if c.cfg.postSubscriptionOnPull || sub.sql92 || req.sysFlag&protocol.PullFlagSubscription != 0 {
		req.sysFlag |= protocol.PullFlagSubscription
		req.subExpression = sub.expr
		if sub.sql92 {
			req.subVersion = sub.version
		}
	}
	req.brokerID = qs.suggestedBroker
	return req
}

// queueLimits returns the cache limits of one queue of topic: the
// per-queue thresholds, or the topic thresholds divided among the topic's
// assigned queues when those are set (docs/broker.md §4.6).
func (c *PushConsumer) queueLimits(topic string) (count, mib int64) {
	count, mib = c.cfg.pullThresholdForQueue, c.cfg.pullThresholdSizeForQue
	if c.cfg.pullThresholdForTopic < 0 && c.cfg.pullThresholdSizeForTop < 0 {
		return count, mib
	}
	n := int64(0)
	c.queuesMu.Lock()
	for mq := range c.queues {
		if mq.Topic == topic {
			n++
		}
	}
	c.queuesMu.Unlock()
	n = max(n, 1)
	if c.cfg.pullThresholdForTopic >= 0 {
		count = max(c.cfg.pullThresholdForTopic/n, 1)
	}
	if c.cfg.pullThresholdSizeForTop >= 0 {
		mib = max(c.cfg.pullThresholdSizeForTop/n, 1)
	}
	return count, mib
}

// callListener runs the listener with hooks and panic recovery.
func (c *PushConsumer) callListener(ctx context.Context, topic string, msgs []*MessageExt) (res ConsumeResult, err error) {
	listener := c.handlers[wrapNamespace(c.cfg.namespace, topic)]
	if listener == nil {
		// Retry-topic messages carry their original topic; fall back to the
		// only listener when the topic is unknown (e.g. a renamed topic).
		for _, l := range c.handlers {
			listener = l
			break
		}
	}
	for _, h := range c.cfg.hooks {
		h.BeforeConsume(c.group, msgs)
	}
	func() {
		defer func() {
			if p := recover(); p != nil {
				res, err = ConsumeRetryLater, fmt.Errorf("client: listener panic: %v", p)
			}
		}()
		res, err = listener(ctx, msgs)
	}()
	if err != nil && res == ConsumeSuccess {
		res = ConsumeRetryLater
	}
	for _, h := range c.cfg.hooks {
		h.AfterConsume(c.group, msgs, res, err)
	}
	return res, err
}

func (c *PushConsumer) consumeConcurrently(qs *queueState, msgs []*MessageExt) {
	pq := qs.pq
	if pq.dropped.Load() {
		return
	}
	ctx := c.ctx
	pq.markConsumeStart(msgs, time.Now())
	res, err := c.callListener(ctx, msgs[0].Topic, msgs)
	if pq.dropped.Load() {
		// The queue moved to another member while we consumed: do not
		// commit; the new owner redelivers from the committed offset.
		return
	}
	done := msgs
	if res != ConsumeSuccess && ctx.Err() != nil {
		// Closing: leave the batch uncommitted; the group redelivers it
		// from the committed offset.
		return
	}
	if res != ConsumeSuccess {
		c.stats.failed.Add(int64(len(msgs)))
		if err != nil {
			c.logger.Debug("listener failed", "topic", qs.mq.Topic, "err", err)
		}
		if c.cfg.model == Broadcasting {
			// Broadcasting has no retry topic: the failure is dropped, as
			// RocketMQ does.
			c.logger.Warn("broadcasting consumption failed; message dropped", "topic", qs.mq.Topic, "count", len(msgs))
		} else {
			var later []*MessageExt
			done = nil
			for _, m := range msgs {
				if serr := c.api.sendBack(ctx, m, c.cfg.retryDelayLevel, c.maxReconsume()); serr != nil {
					c.logger.Warn("send back failed; will consume again", "topic", m.Topic, "msgId", m.MsgID, "err", serr)
					m.ReconsumeTimes++
					later = append(later, m)
				} else {
					c.stats.sentBack.Add(1)
					done = append(done, m)
				}
			}
			if len(later) > 0 {
				c.goFunc("consume-later", func() {
					if sleep(c.ctx, 5*time.Second) {
						c.tasks.push(func() { c.consumeConcurrently(qs, later) })
					}
				})
			}
		}
	} else {
		c.stats.consumed.Add(int64(len(msgs)))
	}
	if len(done) == 0 {
		return
	}
	if off := pq.removeMessages(done); off >= 0 && !pq.dropped.Load() {
		c.store.update(qs.mq, off, true)
	}
}

// cleanExpiredLoop sends back, every consumeTimeout, up to 16 messages per
// queue whose listener has run longer than consumeTimeout, and drops them
// from the cache so the offset moves on (RocketMQ's cleanExpiredMsg; the
// late listener's result is then ignored).
func (c *PushConsumer) cleanExpiredLoop() {
	run.Every(c.ctx, c.cfg.consumeTimeout, func(context.Context) {
		for _, qs := range c.queueList() {
			for _, m := range qs.pq.expiredHead(time.Now(), c.cfg.consumeTimeout, 16) {
				if err := c.api.sendBack(c.ctx, m, 3, c.maxReconsume()); err != nil {
					c.logger.Warn("send back of a timed-out message failed", "topic", m.Topic, "msgId", m.MsgID, "err", err)
					continue
				}
				c.stats.sentBack.Add(1)
				if off := qs.pq.removeMessages([]*MessageExt{m}); off >= 0 && !qs.pq.dropped.Load() {
					c.store.update(qs.mq, off, true)
				}
			}
		}
	})
}

func (c *PushConsumer) maxReconsume() int32 {
	if c.cfg.maxReconsumeTimes < 0 {
		if c.svc.orderly() {
			return unboundedReconsume
		}
		return 16
	}
	return c.cfg.maxReconsumeTimes
}

func (c *PushConsumer) persistLoop() {
	run.Every(c.ctx, c.cfg.persistInterval, func(context.Context) {
		var mqs []MessageQueue
		for _, qs := range c.queueList() {
			mqs = append(mqs, qs.mq)
		}
		ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
		if err := c.store.persist(ctx, mqs); err != nil && ctx.Err() == nil {
			c.logger.Warn("persist offsets", "err", err)
		}
		cancel()
	})
}

// Offsets returns the consumer's in-memory consumed offsets.
func (c *PushConsumer) Offsets() map[MessageQueue]int64 {
	if c.store == nil {
		return nil
	}
	return c.store.snapshot()
}
