package client

// Consumers: design notes (the consumer half of DESIGN.md).
//
// Ownership
//
//	PushConsumer (push.go) ── also the engine of LitePullConsumer (litepull.go)
//	  ├── consumerEnv ──► instance (consumer_instance.go adapts instance.go:
//	  │                    routes, heartbeats with consumerData, NOTIFY_CONSUMER_IDS_CHANGED,
//	  │                    GET_CONSUMER_RUNNING_INFO; released on Close)
//	  ├── consumerAPI (consumer_api.go): pull, offsets, consumer list, locks, send-back
//	  ├── offsetStore (offsetstore.go): remote (clustering) | local file (broadcasting)
//	  ├── taskQueue + consumeGoroutines workers (push_pool.go)
//	  └── queues: MessageQueue -> queueState { processQueue, pull goroutine }
//	      (rebalance.go assigns them; allocate.go holds the strategies)
//	PullConsumer (pull.go): no goroutines of its own; caller-driven pulls.
//
// Goroutines (all through PushConsumer.goFunc: counted, pprof-labelled,
// refused once Close began; Close closes quit, cancels ctx, waits):
//
//	rebalance loop    every rebalanceInterval (20 s) and on rebalanceNow (NOTIFY)
//	persist loop      every persistInterval (5 s; lite: auto-commit interval)
//	lock-renew loop   orderly clustering only, every 20 s
//	clean-expired     concurrent clustering, every consumeTimeout (15 min)
//	consume workers   consumeGoroutines (20), drain taskQueue (not in lite mode)
//	pull loop         one per assigned queue; stopped by its queueState.cancel
//	                  (rebalance, seek, offset moved) or by Close
//	delayed re-submit short-lived (consume later after a failed send-back,
//	                  orderly suspend), end on quit
//
// Flow of a message: pull loop -> processQueue.putMessages -> taskQueue
// (concurrent: batches of consumeMessageBatchMaxSize; orderly: one "consume
// this queue" task at a time, guarded by processQueue.consumeMu) or pollCh
// (lite) -> listener -> processQueue.removeMessages/commit -> offsetStore
// (memory) -> persist loop / pull piggy-back / Close -> broker or file.
// Flow control is the processQueue thresholds: the pull loop sleeps 50 ms
// while a queue holds more than pullThresholdForQueue messages,
// pullThresholdSizeForQueue MiB or (concurrent) a span over
// consumeConcurrentlyMaxSpan; nothing is dropped. The task queue never
// blocks the pull loop; its length is bounded by the cached messages.
//
// Lock order (A -> B: B may be taken while A is held):
//
//	PushConsumer.mu -> rebalanceMu -> queuesMu          (Start runs the first rebalance)
//	rebalanceMu -> offsetTable.mu
//	rebalanceMu -> processQueue.consumeMu                (TryLock only, before unlocking
//	                                                     a removed orderly queue)
//	processQueue.consumeMu -> processQueue.mu           (orderly; consumeMu is held
//	                                                     across the listener call: it
//	                                                     is the local queue lock)
//	queuesMu, processQueue.mu, offsetTable.mu, taskQueue.mu,
//	LitePullConsumer.mu, instanceEnv.mu: leaves
//
// queuesMu and processQueue.mu are never held during I/O or a listener
// call. The pull loop holds nothing while it waits for the broker.
//
// At-least-once: an offset is committed only after the listener returned
// success for every message below it (the smallest cached offset). A queue
// dropped by rebalance stops committing at once (processQueue.dropped), and
// Close does not commit batches whose listener failed while closing, so a
// consumer that goes away mid-batch leaves those messages to the group.
//
// File map:
//
//	consumer.go           Selector, subscriptions, start offsets, these notes
//	consumer_options.go   ConsumerOpt and RocketMQ defaults
//	consumer_api.go       consumerEnv (what consumers need from the instance), broker requests
//	consumer_instance.go  instanceEnv: the instance adapter, broker-initiated requests 40/307
//	consumer_reset.go     legacy reset (220) and status (221) requests
//	push.go               PushConsumer: lifecycle, pull loop, concurrent consumption
//	push_orderly.go       orderly consumption and broker locks
//	push_pool.go          consume task queue
//	push_direct.go        CONSUME_MESSAGE_DIRECTLY (309)
//	rebalance.go          rebalance and queue assignment
//	allocate.go           allocation strategies
//	processqueue.go       per-queue cache and flow-control counters
//	offsetstore.go        remote and local-file offset stores
//	pull.go, litepull.go  PullConsumer, LitePullConsumer
//
// Non-obvious:
//   - The retry topic %RETRY%<group> is subscribed by clustering push
//     consumers; its route appears only after the broker created it on the
//     first heartbeat, so it joins at a later rebalance.
//   - Retry messages are handed to the listener with their original topic
//     (RETRY_TOPIC), as RocketMQ does.
//   - Pulls carry the subscription only for SQL92, lite pulls and
//     WithPostSubscriptionWhenPull; otherwise the broker filters with the
//     heartbeat's (like the Go client).
//   - Broadcasting failures are dropped (no retry topic), as in RocketMQ.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
)

// Selector filters the messages of a subscription: by tag (the default,
// evaluated by the broker with tag hash codes and again by the client) or
// by an SQL92 expression over message properties (evaluated by the broker
// only, which needs enablePropertyFilter=true).
type Selector struct {
	// SQL92 selects the SQL92 expression type; false means TAG.
	SQL92 bool
	// Expression: "*" or "" for everything, "a || b" for tags, or an SQL92
	// expression such as "a > 5 AND b = 'x'".
	Expression string
}

// TagSelector matches messages whose tag is one of the "||"-separated tags
// of expr; "*" or "" matches everything.
func TagSelector(expr string) Selector { return Selector{Expression: expr} }

// SQL92Selector matches messages whose properties satisfy expr.
func SQL92Selector(expr string) Selector { return Selector{SQL92: true, Expression: expr} }

// subscription is one topic's parsed selector (remoting.md §7.5).
type subscription struct {
	topic   string // wire name
	expr    string
	sql92   bool
	tags    []string
	codes   []int32
	version int64 // ns timestamp, as the Go client sends it
}

func newSubscription(topic string, sel Selector) (*subscription, error) {
	s := &subscription{topic: topic, expr: strings.TrimSpace(sel.Expression), sql92: sel.SQL92, version: time.Now().UnixNano()}
	if s.sql92 {
		if s.expr == "" {
			return nil, fmt.Errorf("client: empty SQL92 expression for topic %s", topic)
		}
		return s, nil
	}
	if s.expr == "" || s.expr == protocol.SubAll {
		s.expr = protocol.SubAll
		return s, nil
	}
	for part := range strings.SplitSeq(s.expr, "||") {
		if tag := strings.TrimSpace(part); tag != "" {
			s.tags = append(s.tags, tag)
			s.codes = append(s.codes, int32(message.TagsHashCode(tag)))
		}
	}
	if len(s.tags) == 0 {
		s.expr = protocol.SubAll
	}
	return s, nil
}

func (s *subscription) expressionType() string {
	if s.sql92 {
		return protocol.ExpressionSQL92
	}
	return protocol.ExpressionTag
}

// match is the client-side tag check that drops hash collisions; SQL92
// subscriptions are filtered by the broker alone.
func (s *subscription) match(m *message.Ext) bool {
	if s.sql92 || len(s.tags) == 0 {
		return true
	}
	tag := m.Tags()
	for _, t := range s.tags {
		if t == tag {
			return true
		}
	}
	return false
}

func (s *subscription) data() protocol.SubscriptionData {
	return protocol.SubscriptionData{
		Topic:          s.topic,
		SubString:      s.expr,
		TagsSet:        append([]string{}, s.tags...),
		CodeSet:        append(protocol.CodeSet{}, s.codes...),
		SubVersion:     s.version,
		ExpressionType: s.expressionType(),
	}
}

// offsetReader is what computing a start offset needs.
type offsetReader interface {
	maxOffset(ctx context.Context, mq MessageQueue) (int64, error)
	searchOffset(ctx context.Context, mq MessageQueue, t time.Time) (int64, error)
}

// startOffset computes where a newly assigned queue is consumed from
// (storage-and-broker.md §11.7): the stored offset when there is one,
// otherwise per ConsumeFromWhere; retry topics start at 0 (last offset) or
// their end (timestamp).
func startOffset(ctx context.Context, store offsetStore, api offsetReader, mq MessageQueue, from ConsumeFromWhere, ts time.Time) (int64, error) {
	off, err := store.read(ctx, mq, true)
	if err != nil {
		return -1, err
	}
	if off >= 0 {
		return off, nil
	}
	retry := strings.HasPrefix(mq.Topic, retryGroupTopicPrefix)
	switch from {
	case ConsumeFromFirstOffset:
		return 0, nil
	case ConsumeFromTimestamp:
		if retry {
			return api.maxOffset(ctx, mq)
		}
		return api.searchOffset(ctx, mq, ts)
	default:
		if retry {
			return 0, nil
		}
		return api.maxOffset(ctx, mq)
	}
}

// toMessageExt converts a pulled record for users: namespace stripped, the
// original topic of retry messages restored (RETRY_TOPIC), broker name set.
func toMessageExt(e *message.Ext, mq MessageQueue, group, ns string) *MessageExt {
	m := newMessageExt(e, mq.BrokerName, ns)
	restoreRetryTopic(m, e, group, ns)
	return m
}

// restoreRetryTopic gives a message pulled from the group's retry topic
// its original topic back.
func restoreRetryTopic(m *MessageExt, e *message.Ext, group, ns string) {
	if len(e.Topic) == len(retryGroupTopicPrefix)+len(group) && strings.HasPrefix(e.Topic, retryGroupTopicPrefix) && e.Topic[len(retryGroupTopicPrefix):] == group {
		if real := m.Properties[message.PropertyRetryTopic]; real != "" {
			m.Topic = unwrapNamespace(ns, real)
		}
	}
}
