package client

import (
	"fmt"
	"time"

	"github.com/apogeemq/apogee/internal/names"
)

// producerConfig is a Producer's configuration: the common client options
// plus RocketMQ's DefaultMQProducer settings.
type producerConfig struct {
	clientConfig
	sendTimeout             time.Duration // sendMsgTimeout, default 3 s
	retrySync               int           // retryTimesWhenSendFailed, default 2
	retryAsync              int           // retryTimesWhenSendAsyncFailed, default 2
	retryAnotherBrokerNotOK bool          // retryAnotherBrokerWhenNotStoreOK, default false
	latencyFault            bool          // sendLatencyFaultEnable, default false
	faultTable              FaultTable    // default FaultTable4x
	detector                bool          // startDetectorEnable, default false
	detectInterval          time.Duration // detectInterval, default 2 s
	detectTimeout           time.Duration // detectTimeout, default 200 ms
	detectTick              time.Duration // the detector's round period, 3 s (tests shorten it)
	compressOver            int           // compressMsgBodyOverHowmuch, default 4096
	compressLevel           int           // default 5
	compressType            CompressType  // compressType, default ZLIB
	maxMessageSize          int           // default 4 MiB
	createTopicKey          string        // default TBW102
	defaultTopicQueueNums   int32         // default 4
	hooks                   []Hook
	txListener              TransactionListener
	txCheckWorkers          int           // goroutines answering CHECK_TRANSACTION_STATE, default 4
	useV1Header             bool          // SEND_MESSAGE (10) with long names instead of SEND_MESSAGE_V2 (310)
	autoBatch               bool          // autoBatch, default false (producer_batch.go)
	batchMaxDelay           time.Duration // batchMaxDelayMs, default 10 ms
	batchMaxBytes           int           // batchMaxBytes, default 32 KiB
	totalBatchMaxBytes      int64         // totalBatchMaxBytes, default 32 MiB
}

const (
	defaultCreateTopicKey = names.TopicAutoCreate
	defaultMaxMessageSize = 4 << 20
)

func defaultProducerConfig() producerConfig {
	return producerConfig{
		clientConfig:          defaultClientConfig(),
		sendTimeout:           3 * time.Second,
		retrySync:             2,
		retryAsync:            2,
		compressOver:          defaultCompressOver,
		compressLevel:         defaultCompressLevel,
		compressType:          CompressZLIB,
		faultTable:            FaultTable4x(),
		detectInterval:        2 * time.Second,
		detectTimeout:         200 * time.Millisecond,
		detectTick:            detectTick,
		maxMessageSize:        defaultMaxMessageSize,
		createTopicKey:        defaultCreateTopicKey,
		defaultTopicQueueNums: 4,
		txCheckWorkers:        4,
		batchMaxDelay:         defaultBatchMaxDelay,
		batchMaxBytes:         defaultBatchMaxBytes,
		totalBatchMaxBytes:    defaultTotalBatchMaxBytes,
	}
}

func (c *producerConfig) validate() error {
	if err := c.clientConfig.validate(); err != nil {
		return err
	}
	switch {
	case c.sendTimeout <= 0:
		return fmt.Errorf("client: send timeout must be positive")
	case c.retrySync < 0 || c.retryAsync < 0:
		return fmt.Errorf("client: retry counts must not be negative")
	case c.compressType != CompressZLIB && c.compressType != CompressLZ4 && c.compressType != CompressZSTD:
		return fmt.Errorf("client: unknown compress type %#x", int32(c.compressType))
	case c.compressType == CompressZLIB && (c.compressLevel < 1 || c.compressLevel > 9):
		return fmt.Errorf("client: zlib compress level %d not in 1..9", c.compressLevel)
	case c.compressType == CompressZSTD && (c.compressLevel < 1 || c.compressLevel > 22):
		return fmt.Errorf("client: zstd compress level %d not in 1..22", c.compressLevel)
	case c.faultTable.validate() != nil:
		return c.faultTable.validate()
	case c.detectInterval <= 0 || c.detectTimeout <= 0:
		return fmt.Errorf("client: detect interval and timeout must be positive")
	case c.maxMessageSize <= 0:
		return fmt.Errorf("client: max message size must be positive")
	case c.defaultTopicQueueNums <= 0:
		return fmt.Errorf("client: default topic queue count must be positive")
	case c.txCheckWorkers <= 0:
		return fmt.Errorf("client: transaction check workers must be positive")
	case c.autoBatch:
		return c.validateBatch()
	}
	return nil
}

// ProducerOpt configures a Producer. Every Opt is also a ProducerOpt.
type ProducerOpt interface{ applyProducer(*producerConfig) }

type producerOpt func(*producerConfig)

func (o producerOpt) applyProducer(c *producerConfig) { o(c) }

// WithSendTimeout bounds a whole send, retries included (sendMsgTimeout).
// Default 3 s. A ctx deadline that comes earlier wins.
func WithSendTimeout(d time.Duration) ProducerOpt {
	return producerOpt(func(c *producerConfig) { c.sendTimeout = d })
}

// WithRetries sets how many times a failed synchronous send is retried on
// another broker (retryTimesWhenSendFailed). Default 2.
func WithRetries(n int) ProducerOpt { return producerOpt(func(c *producerConfig) { c.retrySync = n }) }

// WithAsyncRetries sets how many times a failed asynchronous send is retried
// (retryTimesWhenSendAsyncFailed). Default 2.
func WithAsyncRetries(n int) ProducerOpt {
	return producerOpt(func(c *producerConfig) { c.retryAsync = n })
}

// WithRetryAnotherBrokerWhenNotStoreOK retries a send the broker stored but
// answered FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT or SLAVE_NOT_AVAILABLE
// (the message may then be stored twice). Default off.
func WithRetryAnotherBrokerWhenNotStoreOK(on bool) ProducerOpt {
	return producerOpt(func(c *producerConfig) { c.retryAnotherBrokerNotOK = on })
}

// WithSendLatencyFaultEnable turns latency fault tolerance on: brokers that
// answer slowly or fail are avoided for a while (sendLatencyFaultEnable,
// docs/broker.md §4.2). Default off.
func WithSendLatencyFaultEnable(on bool) ProducerOpt {
	return producerOpt(func(c *producerConfig) { c.latencyFault = on })
}

// WithLatencyFaultTable sets the latency fault table of
// WithSendLatencyFaultEnable: FaultTable4x (the default) or FaultTable5x
// (RocketMQ 5's shorter isolations), or a custom one.
func WithLatencyFaultTable(t FaultTable) ProducerOpt {
	return producerOpt(func(c *producerConfig) { c.faultTable = t })
}

// WithStartDetectorEnable runs RocketMQ 5's isolated-broker detector
// (startDetectorEnable; fault_detect.go) beside latency fault tolerance:
// brokers marked unreachable are probed and used again as soon as they
// answer. Default off.
func WithStartDetectorEnable(on bool) ProducerOpt {
	return producerOpt(func(c *producerConfig) { c.detector = on })
}

// WithDetectInterval sets how often one broker is probed (detectInterval).
// Default 2 s.
func WithDetectInterval(d time.Duration) ProducerOpt {
	return producerOpt(func(c *producerConfig) { c.detectInterval = d })
}

// WithDetectTimeout sets a probe's timeout (detectTimeout). Default 200 ms.
func WithDetectTimeout(d time.Duration) ProducerOpt {
	return producerOpt(func(c *producerConfig) { c.detectTimeout = d })
}

// WithCompressOver sets the body size from which single messages are
// zlib-compressed (compressMsgBodyOverHowmuch); 0 disables compression.
// Default 4096.
func WithCompressOver(bytes int) ProducerOpt {
	return producerOpt(func(c *producerConfig) { c.compressOver = bytes })
}

// WithCompressLevel sets the compression level: 1..9 for zlib, 1..22 for
// zstd, ignored by LZ4 (rocketmq.message.compressLevel). Default 5.
func WithCompressLevel(level int) ProducerOpt {
	return producerOpt(func(c *producerConfig) { c.compressLevel = level })
}

// WithCompressType sets the algorithm of compressed bodies, RocketMQ 5's
// compressType (rocketmq.message.compressType): CompressZLIB (the default,
// what every consumer reads), CompressLZ4 or CompressZSTD (RocketMQ 5
// consumers, this package and the broker's gRPC endpoint read them; 4.x
// consumers do not).
func WithCompressType(t CompressType) ProducerOpt {
	return producerOpt(func(c *producerConfig) { c.compressType = t })
}

// WithMaxMessageSize sets the largest body (batch body for batches) the
// producer accepts. Default 4 MiB, the broker's default limit.
func WithMaxMessageSize(bytes int) ProducerOpt {
	return producerOpt(func(c *producerConfig) { c.maxMessageSize = bytes })
}

// WithCreateTopicKey sets the template topic brokers auto-create unknown
// topics from. Default TBW102.
func WithCreateTopicKey(topic string) ProducerOpt {
	return producerOpt(func(c *producerConfig) { c.createTopicKey = topic })
}

// WithDefaultTopicQueueNums sets the queue count of auto-created topics.
// Default 4.
func WithDefaultTopicQueueNums(n int) ProducerOpt {
	return producerOpt(func(c *producerConfig) { c.defaultTopicQueueNums = int32(n) })
}

// WithHooks registers send hooks (see Hook).
func WithHooks(hooks ...Hook) ProducerOpt {
	return producerOpt(func(c *producerConfig) { c.hooks = append(c.hooks, hooks...) })
}

// WithTransactionListener makes the producer transactional: required for
// SendInTransaction, and the listener answers the broker's transaction
// checks.
func WithTransactionListener(l TransactionListener) ProducerOpt {
	return producerOpt(func(c *producerConfig) { c.txListener = l })
}

// WithTransactionCheckWorkers sets how many goroutines run
// CheckLocalTransaction. Default 4.
func WithTransactionCheckWorkers(n int) ProducerOpt {
	return producerOpt(func(c *producerConfig) { c.txCheckWorkers = n })
}

// WithSendMessageV1 sends single messages with SEND_MESSAGE (10, long
// header names) as the official Go client does, instead of the default
// SEND_MESSAGE_V2 (310, one-letter names) Java uses. Default off.
func WithSendMessageV1(on bool) ProducerOpt {
	return producerOpt(func(c *producerConfig) { c.useV1Header = on })
}

// withDetectTick shortens the detector's round period (tests).
func withDetectTick(d time.Duration) ProducerOpt {
	return producerOpt(func(c *producerConfig) { c.detectTick = d })
}
