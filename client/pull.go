package client

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
)

// PullStatus is the outcome of one pull.
type PullStatus int

const (
	// PullFound: Messages holds at least one message.
	PullFound PullStatus = iota
	// PullNoNewMsg: the queue has nothing at the offset (yet).
	PullNoNewMsg
	// PullNoMatchedMsg: messages exist but none matched the selector in
	// the scanned window; continue from NextBeginOffset.
	PullNoMatchedMsg
	// PullOffsetIllegal: the offset is outside the queue; continue from
	// NextBeginOffset.
	PullOffsetIllegal
)

func (s PullStatus) String() string {
	switch s {
	case PullFound:
		return "FOUND"
	case PullNoNewMsg:
		return "NO_NEW_MSG"
	case PullNoMatchedMsg:
		return "NO_MATCHED_MSG"
	case PullOffsetIllegal:
		return "OFFSET_ILLEGAL"
	}
	return "UNKNOWN"
}

// PullResult is the answer to PullConsumer.Pull.
type PullResult struct {
	Status          PullStatus
	NextBeginOffset int64
	MinOffset       int64
	MaxOffset       int64
	Messages        []*MessageExt
}

// PullConsumer reads queues the caller chooses at offsets the caller
// chooses (RocketMQ's DefaultMQPullConsumer); it neither rebalances nor
// stores offsets by itself. Its group is announced in heartbeats so that
// the broker knows (and auto-creates) it.
type PullConsumer struct {
	cfg    consumerConfig
	group  string
	newEnv func(*consumerConfig) (consumerEnv, func() error, error)

	mu      sync.Mutex
	started bool
	closed  bool
	topics  map[string]*subscription // wire topic -> last selector used; guarded by mu

	env        consumerEnv
	releaseEnv func() error
	api        *consumerAPI
}

// NewPullConsumer returns a pull consumer of group; WithNameServers is
// required.
func NewPullConsumer(group string, opts ...ConsumerOpt) (*PullConsumer, error) {
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
	return &PullConsumer{cfg: cfg, group: group, newEnv: newConsumerEnv, topics: map[string]*subscription{}}, nil
}

// Start connects the consumer's client instance.
func (c *PullConsumer) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	if c.started {
		return nil
	}
	env, release, err := c.newEnv(&c.cfg)
	if err != nil {
		return err
	}
	c.env, c.releaseEnv = env, release
	c.api = &consumerAPI{env: env, group: wrapNamespace(c.cfg.namespace, c.group)}
	if err := env.registerConsumer(c.api.group, c); err != nil {
		_ = release()
		return err
	}
	c.started = true
	return nil
}

// Close releases the client instance. Idempotent.
func (c *PullConsumer) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	started := c.started
	c.mu.Unlock()
	if !started {
		return nil
	}
	c.env.unregisterConsumer(c.api.group)
	return c.releaseEnv()
}

func (c *PullConsumer) ready() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return ErrClosed
	case !c.started:
		return ErrNotStarted
	}
	return nil
}

// consumerData implements consumerInner.
func (c *PullConsumer) consumerData() protocol.ConsumerData {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := protocol.ConsumerData{
		GroupName: c.api.group, ConsumeType: protocol.ConsumeActively,
		MessageModel: c.cfg.model.String(), ConsumeFromWhere: c.cfg.fromWhere.String(),
		SubscriptionDataSet: []protocol.SubscriptionData{},
	}
	for _, t := range slices.Sorted(maps.Keys(c.topics)) {
		d.SubscriptionDataSet = append(d.SubscriptionDataSet, c.topics[t].data())
	}
	return d
}

func (c *PullConsumer) subscribedTopics() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Collect(maps.Keys(c.topics))
}

func (c *PullConsumer) rebalanceNow() {}

// FetchQueues returns the readable queues of topic.
func (c *PullConsumer) FetchQueues(ctx context.Context, topic string) ([]MessageQueue, error) {
	if err := c.ready(); err != nil {
		return nil, err
	}
	wire := wrapNamespace(c.cfg.namespace, topic)
	mqs, err := c.env.subscribeQueues(ctx, wire)
	if err != nil {
		return nil, err
	}
	out := make([]MessageQueue, len(mqs))
	for i, mq := range mqs {
		out[i] = mq
		out[i].Topic = topic
	}
	return out, nil
}

// Pull reads up to maxNums messages of mq from offset without waiting:
// an empty queue answers PullNoNewMsg at once.
func (c *PullConsumer) Pull(ctx context.Context, mq MessageQueue, sel Selector, offset int64, maxNums int) (*PullResult, error) {
	return c.pull(ctx, mq, sel, offset, maxNums, 0)
}

// PullBlock is Pull with long polling: the broker holds the request up to
// the pull suspend time (WithPullSuspend, default 15 s) until a message
// arrives. ctx bounds the whole call.
func (c *PullConsumer) PullBlock(ctx context.Context, mq MessageQueue, sel Selector, offset int64, maxNums int) (*PullResult, error) {
	return c.pull(ctx, mq, sel, offset, maxNums, c.cfg.pullSuspend)
}

func (c *PullConsumer) pull(ctx context.Context, mq MessageQueue, sel Selector, offset int64, maxNums int, suspend time.Duration) (*PullResult, error) {
	if err := c.ready(); err != nil {
		return nil, err
	}
	if maxNums <= 0 || maxNums > 1024 {
		maxNums = int(c.cfg.pullBatchSize)
	}
	wmq := mq
	wmq.Topic = wrapNamespace(c.cfg.namespace, mq.Topic)
	sub, err := newSubscription(wmq.Topic, sel)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	_, known := c.topics[wmq.Topic]
	c.topics[wmq.Topic] = sub
	c.mu.Unlock()
	if !known {
		// Announce the group (the broker auto-creates it on heartbeat).
		if _, err := c.env.subscribeQueues(ctx, wmq.Topic); err == nil {
			c.env.heartbeatNow(ctx)
		}
	}
	req := &pullRequest{
		mq: wmq, offset: offset, maxNums: int32(maxNums), sysFlag: protocol.PullFlagSubscription,
		subExpression: sub.expr, expressionType: sub.expressionType(), timeout: 10 * time.Second,
	}
	if !sub.sql92 {
		req.subVersion = 0
	} else {
		req.subVersion = sub.version
	}
	if suspend > 0 {
		req.sysFlag |= protocol.PullFlagSuspend
		req.suspend = suspend
		req.timeout = c.cfg.pullTimeout
	}
	res, err := c.api.pull(ctx, req)
	if err != nil {
		return nil, err
	}
	out := &PullResult{NextBeginOffset: res.nextBeginOffset, MinOffset: res.minOffset, MaxOffset: res.maxOffset}
	switch res.code {
	case protocol.Success:
		out.Status = PullFound
		out.Messages = messageExts(res.msgs, sub.match, wmq, c.api.group, c.cfg.namespace)
		if len(out.Messages) == 0 {
			out.Status = PullNoMatchedMsg
		}
	case protocol.PullNotFound:
		out.Status = PullNoNewMsg
	case protocol.PullRetryImmediately:
		out.Status = PullNoMatchedMsg
	case protocol.PullOffsetMoved:
		out.Status = PullOffsetIllegal
	}
	return out, nil
}

// CommittedOffset returns the group's stored offset of mq on the broker;
// -1 when none exists.
func (c *PullConsumer) CommittedOffset(ctx context.Context, mq MessageQueue) (int64, error) {
	if err := c.ready(); err != nil {
		return -1, err
	}
	return c.api.queryConsumerOffset(ctx, c.api.group, c.wire(mq))
}

// CommitOffset stores offset (the next offset to consume) for the group on
// the broker of mq.
func (c *PullConsumer) CommitOffset(ctx context.Context, mq MessageQueue, offset int64) error {
	if err := c.ready(); err != nil {
		return err
	}
	return c.api.updateConsumerOffset(ctx, c.api.group, c.wire(mq), offset)
}

// MinOffset returns the smallest offset still stored in mq.
func (c *PullConsumer) MinOffset(ctx context.Context, mq MessageQueue) (int64, error) {
	if err := c.ready(); err != nil {
		return -1, err
	}
	return c.api.minOffset(ctx, c.wire(mq))
}

// MaxOffset returns the offset the next message of mq will get.
func (c *PullConsumer) MaxOffset(ctx context.Context, mq MessageQueue) (int64, error) {
	if err := c.ready(); err != nil {
		return -1, err
	}
	return c.api.maxOffset(ctx, c.wire(mq))
}

// SearchOffset returns the offset of the first message of mq stored at or
// after t.
func (c *PullConsumer) SearchOffset(ctx context.Context, mq MessageQueue, t time.Time) (int64, error) {
	if err := c.ready(); err != nil {
		return -1, err
	}
	return c.api.searchOffset(ctx, c.wire(mq), t)
}

func (c *PullConsumer) wire(mq MessageQueue) MessageQueue {
	mq.Topic = wrapNamespace(c.cfg.namespace, mq.Topic)
	return mq
}
