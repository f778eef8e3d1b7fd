package client

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// MessageModel says how a group shares messages.
type MessageModel int

const (
	// Clustering: each message goes to one member of the group; offsets
	// live on the broker. The default.
	Clustering MessageModel = iota
	// Broadcasting: every member receives every message; offsets live in a
	// local file.
	Broadcasting
)

func (m MessageModel) String() string {
	if m == Broadcasting {
		return "BROADCASTING"
	}
	return "CLUSTERING"
}

// ConsumeFromWhere says where a group starts on a queue it has no offset
// for (docs/broker.md §4.7).
type ConsumeFromWhere int

const (
	// ConsumeFromLastOffset starts at the queue's current end (retry topics
	// at 0). The default.
	ConsumeFromLastOffset ConsumeFromWhere = iota
	// ConsumeFromFirstOffset starts at offset 0 (corrected by the broker if
	// 0 has been deleted).
	ConsumeFromFirstOffset
	// ConsumeFromTimestamp starts at the first message stored at or after
	// the consume timestamp (WithConsumeTimestamp; default 30 minutes ago).
	ConsumeFromTimestamp
)

func (w ConsumeFromWhere) String() string {
	switch w {
	case ConsumeFromFirstOffset:
		return "CONSUME_FROM_FIRST_OFFSET"
	case ConsumeFromTimestamp:
		return "CONSUME_FROM_TIMESTAMP"
	}
	return "CONSUME_FROM_LAST_OFFSET"
}

// consumerConfig holds the settings of push, pull and lite pull consumers.
// Defaults are RocketMQ's (docs/broker.md §4.6).
type consumerConfig struct {
	clientConfig

	model            MessageModel
	fromWhere        ConsumeFromWhere
	consumeTimestamp time.Time // for ConsumeFromTimestamp; default now - 30 min
	strategy         AllocateStrategy

	consumeGoroutines       int // consumeThreadMin/Max: 20
	consumeMaxSpan          int64
	pullThresholdForQueue   int64
	pullThresholdSizeForQue int64 // MiB
	pullThresholdForTopic   int64 // -1: off; else divided among the topic's assigned queues
	pullThresholdSizeForTop int64 // MiB; -1: off
	pullInterval            time.Duration
	pullBatchSize           int32
	consumeBatchMaxSize     int
	maxReconsumeTimes       int32 // -1: 16 concurrent, unlimited orderly
	suspendCurrentQueueTime time.Duration
	consumeTimeout          time.Duration // concurrent mode: send back messages consumed longer
	retryDelayLevel         int           // sent back with this delay level; 0 = broker decides
	persistInterval         time.Duration
	rebalanceInterval       time.Duration
	pullSuspend             time.Duration // broker-side long-poll hold
	pullTimeout             time.Duration // client wait for a pull answer
	postSubscriptionOnPull  bool
	offsetDir               string // local offset store root (broadcasting)
	orderly                 bool   // set by SubscribeOrderly-style listeners
	autoCommit              bool   // lite pull
	autoCommitInterval      time.Duration
	pollBuffer              int // lite pull: messages buffered for Poll
	hooks                   []ConsumeHook
}

func defaultConsumerConfig() consumerConfig {
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return consumerConfig{
		clientConfig:            defaultClientConfig(),
		model:                   Clustering,
		fromWhere:               ConsumeFromLastOffset,
		consumeTimestamp:        time.Now().Add(-30 * time.Minute),
		strategy:                AllocateAveragely(),
		consumeGoroutines:       20,
		consumeMaxSpan:          2000,
		pullThresholdForQueue:   1000,
		pullThresholdSizeForQue: 100,
		pullThresholdForTopic:   -1,
		pullThresholdSizeForTop: -1,
		pullBatchSize:           32,
		consumeBatchMaxSize:     1,
		maxReconsumeTimes:       -1,
		suspendCurrentQueueTime: time.Second,
		consumeTimeout:          15 * time.Minute,
		persistInterval:         5 * time.Second,
		rebalanceInterval:       20 * time.Second,
		pullSuspend:             15 * time.Second,
		pullTimeout:             30 * time.Second,
		offsetDir:               filepath.Join(home, ".rocketmq_offsets"),
		autoCommit:              true,
		autoCommitInterval:      5 * time.Second,
		pollBuffer:              1000,
	}
}

func (c *consumerConfig) validate() error {
	if err := c.clientConfig.validate(); err != nil {
		return err
	}
	switch {
	case c.consumeGoroutines < 1 || c.consumeGoroutines > 1000:
		return fmt.Errorf("client: consume goroutines %d out of [1, 1000]", c.consumeGoroutines)
	case c.pullBatchSize < 1 || c.pullBatchSize > 1024:
		return fmt.Errorf("client: pull batch size %d out of [1, 1024]", c.pullBatchSize)
	case c.consumeBatchMaxSize < 1 || c.consumeBatchMaxSize > 1024:
		return fmt.Errorf("client: consume batch size %d out of [1, 1024]", c.consumeBatchMaxSize)
	case c.pullThresholdForQueue < 1 || c.pullThresholdForQueue > 65535:
		return fmt.Errorf("client: pull threshold for queue %d out of [1, 65535]", c.pullThresholdForQueue)
	case c.pullThresholdSizeForQue < 1 || c.pullThresholdSizeForQue > 1024:
		return fmt.Errorf("client: pull threshold size for queue %d MiB out of [1, 1024]", c.pullThresholdSizeForQue)
	case c.consumeMaxSpan < 1 || c.consumeMaxSpan > 65535:
		return fmt.Errorf("client: consume concurrently max span %d out of [1, 65535]", c.consumeMaxSpan)
	case c.strategy == nil:
		return fmt.Errorf("client: nil allocate strategy")
	case c.pullSuspend >= c.pullTimeout:
		return fmt.Errorf("client: pull suspend %v must be shorter than the pull timeout %v", c.pullSuspend, c.pullTimeout)
	case c.retryDelayLevel < -1 || c.retryDelayLevel > 18:
		return fmt.Errorf("client: retry delay level %d out of [-1, 18]", c.retryDelayLevel)
	case c.consumeTimeout <= 0:
		return fmt.Errorf("client: consume timeout must be positive")
	case c.persistInterval <= 0 || c.rebalanceInterval <= 0:
		return fmt.Errorf("client: persist and rebalance intervals must be positive")
	}
	return nil
}

// ConsumerOpt configures NewPushConsumer, NewPullConsumer and
// NewLitePullConsumer. Every Opt is also a ConsumerOpt.
type ConsumerOpt interface{ applyConsumer(*consumerConfig) }

type consumerOpt func(*consumerConfig)

func (o consumerOpt) applyConsumer(c *consumerConfig) { o(c) }

func (o Opt) applyConsumer(c *consumerConfig) {
	if o.fn != nil { // the zero Opt does nothing
		o.fn(&c.clientConfig)
	}
}

// WithMessageModel selects clustering (default) or broadcasting.
func WithMessageModel(m MessageModel) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.model = m })
}

// WithConsumeFromWhere sets where a group without an offset starts.
// Default ConsumeFromLastOffset.
func WithConsumeFromWhere(w ConsumeFromWhere) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.fromWhere = w })
}

// WithConsumeTimestamp sets the start time of ConsumeFromTimestamp.
// Default: 30 minutes before the consumer was created.
func WithConsumeTimestamp(t time.Time) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.consumeTimestamp = t })
}

// WithAllocateStrategy sets the queue allocation strategy of clustering
// groups. Default AllocateAveragely.
func WithAllocateStrategy(s AllocateStrategy) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.strategy = s })
}

// WithConsumeGoroutines sets the size of the push consumer's worker pool
// (consumeThreadMin/Max). Default 20.
func WithConsumeGoroutines(n int) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.consumeGoroutines = n })
}

// WithPullThresholdForQueue caps the messages cached per queue; pulls pause
// above it (pullThresholdForQueue). Default 1000.
func WithPullThresholdForQueue(n int) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.pullThresholdForQueue = int64(n) })
}

// WithPullThresholdSizeForQueue caps the cached body MiB per queue
// (pullThresholdSizeForQueue). Default 100.
func WithPullThresholdSizeForQueue(mib int) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.pullThresholdSizeForQue = int64(mib) })
}

// WithPullThresholdForTopic caps the messages cached per topic: when set,
// it is divided among the topic's assigned queues and replaces the
// per-queue threshold (pullThresholdForTopic). Default -1 (off).
func WithPullThresholdForTopic(n int) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.pullThresholdForTopic = int64(n) })
}

// WithPullThresholdSizeForTopic caps the cached body MiB per topic, divided
// among its assigned queues (pullThresholdSizeForTopic). Default -1 (off).
func WithPullThresholdSizeForTopic(mib int) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.pullThresholdSizeForTop = int64(mib) })
}

// WithConsumeConcurrentlyMaxSpan caps the offset span cached per queue in
// concurrent mode. Default 2000.
func WithConsumeConcurrentlyMaxSpan(n int) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.consumeMaxSpan = int64(n) })
}

// WithPullInterval pauses between pulls of one queue. Default 0.
func WithPullInterval(d time.Duration) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.pullInterval = d })
}

// WithPullBatchSize sets maxMsgNums per pull. Default 32.
func WithPullBatchSize(n int) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.pullBatchSize = int32(n) })
}

// WithConsumeMessageBatchMaxSize sets how many messages one listener call
// receives at most. Default 1.
func WithConsumeMessageBatchMaxSize(n int) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.consumeBatchMaxSize = n })
}

// WithMaxReconsumeTimes sets how often a failed message is retried before
// it goes to the dead-letter queue. Default -1: 16 (concurrent) or
// unlimited (orderly).
func WithMaxReconsumeTimes(n int) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.maxReconsumeTimes = int32(n) })
}

// WithSuspendCurrentQueueTime sets the orderly back-off after a
// SuspendCurrentQueueAMoment result. Default 1 s.
func WithSuspendCurrentQueueTime(d time.Duration) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.suspendCurrentQueueTime = d })
}

// WithConsumeTimeout sets after how long a message whose listener is
// still running (concurrent mode) is sent back for redelivery and stops
// holding back the queue's offset (consumeTimeout; checked at the same
// period). Default 15 minutes.
func WithConsumeTimeout(d time.Duration) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.consumeTimeout = d })
}

// WithRetryDelayLevel sets the delay level failed messages are sent back
// with (concurrent mode; RocketMQ's delayLevelWhenNextConsume): 1..18
// (1s 5s 10s 30s 1m ...), -1 straight to the dead-letter queue, 0 (the
// default) lets the broker use 3 + the reconsume count.
func WithRetryDelayLevel(level int) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.retryDelayLevel = level })
}

// WithPersistConsumerOffsetInterval sets how often offsets are uploaded
// (or written to the local file). Default 5 s.
func WithPersistConsumerOffsetInterval(d time.Duration) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.persistInterval = d })
}

// WithRebalanceInterval sets the periodic rebalance. Default 20 s.
func WithRebalanceInterval(d time.Duration) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.rebalanceInterval = d })
}

// WithPullSuspend sets how long the broker may hold a pull that found
// nothing (long polling). Default 15 s; the client waits that plus 15 s.
func WithPullSuspend(d time.Duration) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) {
		c.pullSuspend = d
		c.pullTimeout = d + 15*time.Second
	})
}

// WithPostSubscriptionWhenPull sends the subscription with every pull, so
// the broker filters with it instead of the heartbeat's. Default off.
func WithPostSubscriptionWhenPull(on bool) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.postSubscriptionOnPull = on })
}

// WithOffsetStoreDir sets the root directory of broadcasting consumers'
// offset files. Default $HOME/.rocketmq_offsets.
func WithOffsetStoreDir(dir string) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.offsetDir = dir })
}

// WithAutoCommit makes the lite pull consumer commit polled offsets every
// interval (default on, 5 s). Off: call Commit.
func WithAutoCommit(on bool, interval time.Duration) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) {
		c.autoCommit = on
		if interval > 0 {
			c.autoCommitInterval = interval
		}
	})
}

// WithConsumeHook adds hooks called around every listener call.
func WithConsumeHook(h ...ConsumeHook) ConsumerOpt {
	return consumerOpt(func(c *consumerConfig) { c.hooks = append(c.hooks, h...) })
}

// ConsumeHook observes consumption. Hooks run on the consume goroutine,
// before and after the listener; they must not block.
type ConsumeHook interface {
	BeforeConsume(group string, msgs []*MessageExt)
	AfterConsume(group string, msgs []*MessageExt, result ConsumeResult, err error)
}
