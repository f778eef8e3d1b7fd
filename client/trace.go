package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/run"
)

// DefaultTraceTopic is where trace records go unless WithTrace names
// another topic (brokers create it with traceTopicEnable=true).
const DefaultTraceTopic = names.TopicTrace

// traceProducerGroup is the group of the internal trace producer; RocketMQ
// tools recognise trace producers by this prefix.
const traceProducerGroup = "_INNER_TRACE_PRODUCER"

// Trace batching (the official clients use similar bounds).
const (
	traceQueueSize    = 4096                  // records waiting; more are dropped and counted
	traceBatchRecords = 100                   // records per trace message at most
	traceBatchBytes   = 100 << 10             // body bytes per trace message at most
	traceBatchKeys    = 8 << 10               // KEYS bytes per trace message at most
	traceLinger       = 20 * time.Millisecond // a partial batch is sent after this
	traceCloseFlush   = 3 * time.Second       // Close waits at most this long for the last batch
)

// TraceOpt turns message trace on for a Producer or a consumer; it is both
// a ProducerOpt and a ConsumerOpt. See WithTrace.
type TraceOpt struct{ topic string }

// WithTrace records message trace (docs/broker.md §1.15): a
// producer writes a Pub record per send (group, topic, msgId, tags, keys,
// broker, body size, cost, success), a push consumer a SubBefore and a
// SubAfter record per consumed message (group, msgId, retry count, cost,
// outcome). Records use RocketMQ's trace encoding and are sent in batches
// to topic (DefaultTraceTopic when ""), keyed by message id and keys so
// that a query by key (`apogee admin queryMsgTraceById`) finds them.
//
// Tracing never slows a send: records are queued without blocking (and
// dropped, counted, when the queue is full) and sent by a background
// goroutine through an internal producer of group _INNER_TRACE_PRODUCER
// that uses the same name servers. The client's Close flushes the last
// batch (bounded by 3 s).
func WithTrace(topic string) TraceOpt { return TraceOpt{topic: topic} }

func (o TraceOpt) applyProducer(c *producerConfig) {
	c.hooks = append(c.hooks, newTracer(o.topic, &c.clientConfig))
}

func (o TraceOpt) applyConsumer(c *consumerConfig) {
	c.hooks = append(c.hooks, newTracer(o.topic, &c.clientConfig))
}

// tracer is the trace hook of one client: HookAfterSend for producers,
// ConsumeHook for consumers. Its goroutine and internal producer start on
// the first record.
type tracer struct {
	topic string
	// cfg is the owning client's configuration; it is read when the
	// tracer starts, after every option has been applied.
	cfg *clientConfig

	records chan TraceRecord
	dropped atomic.Int64
	sent    atomic.Int64

	mu      sync.Mutex
	started bool // guarded by mu
	closed  bool // guarded by mu
	// routines owns the run goroutine; quit is its Done channel.
	routines *run.Group
	quit     <-chan struct{}

	clientHost string // set at start

	// consuming pairs BeforeConsume with AfterConsume, keyed by the
	// batch's first message.
	consuming sync.Map // *MessageExt -> consumeStart
}

type consumeStart struct {
	at        time.Time
	requestID string
}

func newTracer(topic string, cfg *clientConfig) *tracer {
	if topic == "" {
		topic = DefaultTraceTopic
	}
	routines := run.NewGroup("client")
	return &tracer{
		topic:    topic,
		cfg:      cfg,
		records:  make(chan TraceRecord, traceQueueSize),
		routines: routines,
		quit:     routines.Done(),
	}
}

// add queues a record without blocking; it starts the tracer on first use.
func (t *tracer) add(r TraceRecord) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	if !t.started {
		t.started = true
		t.clientHost = resolveClientIP(t.cfg.clientIP).String()
		// Stopped and waited for by closeTrace.
		t.routines.Go("trace", func(context.Context) { t.run() })
	}
	t.mu.Unlock()
	if r.ClientHost == "" {
		r.ClientHost = t.clientHost
	}
	select {
	case t.records <- r:
	default:
		t.dropped.Add(1)
	}
}

// closeTrace flushes queued records and stops the goroutine.
func (t *tracer) closeTrace() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closed = true
	started := t.started
	t.mu.Unlock()
	if !started {
		return
	}
	t.routines.Close()
}

// closeTracers closes the tracers among a client's hooks; owners call it
// from Close.
func closeTracers[H any](hooks []H) {
	for _, h := range hooks {
		if c, ok := any(h).(interface{ closeTrace() }); ok {
			c.closeTrace()
		}
	}
}

// OnAfterSend implements HookAfterSend: one Pub record per message. A
// broker that answers TRACE_ON=false (traceOn=false) is not traced, as
// RocketMQ's Java client does.
func (t *tracer) OnAfterSend(_ context.Context, sc *SendContext) {
	if sc.Result != nil && !sc.Result.TraceOn {
		return
	}
	msgs := sc.Batch
	if len(msgs) == 0 && sc.Message != nil {
		msgs = []*Message{sc.Message}
	}
	var ids, offsetIDs []string
	if sc.Result != nil {
		ids = strings.Split(sc.Result.MsgID, ",")
		offsetIDs = strings.Split(sc.Result.OffsetMsgID, ",")
	}
	for i, m := range msgs {
		if m == nil || m.Topic == t.topic {
			continue
		}
		r := TraceRecord{
			Type: TracePub, Timestamp: sc.BornTime.UnixMilli(), Group: sc.ProducerGroup, Topic: m.Topic,
			MsgID: m.Properties[PropertyUniqKey], Tags: m.Tag(), Keys: m.Properties[PropertyKeys],
			StoreHost: sc.BrokerAddr, BodyLength: len(m.Body), CostMs: sc.Latency.Milliseconds(),
			MsgType: traceMsgType(m.Properties), Success: sc.Err == nil,
		}
		if sc.Result != nil {
			r.RegionID = sc.Result.RegionID
			if i < len(ids) && ids[i] != "" {
				r.MsgID = ids[i]
			}
			if i < len(offsetIDs) {
				r.OffsetMsgID = offsetIDs[i]
			}
		}
		if r.MsgID == "" { // a failed send before an id was assigned
			continue
		}
		t.add(r)
	}
}

func traceMsgType(p map[string]string) int {
	switch {
	case p[message.PropertyTransactionPrepared] == "true":
		return TraceMsgTransHalf
	case p[message.PropertyDelayTimeLevel] != "" && p[message.PropertyDelayTimeLevel] != "0",
		p[message.PropertyTimerDeliverMS] != "", p[message.PropertyTimerDelaySec] != "", p[message.PropertyTimerDelayMS] != "":
		return TraceMsgDelay
	}
	return TraceMsgNormal
}

// BeforeConsume implements ConsumeHook: one SubBefore record per message.
func (t *tracer) BeforeConsume(group string, msgs []*MessageExt) {
	if len(msgs) == 0 {
		return
	}
	start := consumeStart{at: time.Now(), requestID: newTraceRequestID()}
	t.consuming.Store(msgs[0], start)
	for _, m := range msgs {
		if m.Topic == t.topic {
			continue
		}
		t.add(TraceRecord{
			Type: TraceSubBefore, Timestamp: start.at.UnixMilli(), Group: group, Topic: m.Topic,
			RequestID: start.requestID, MsgID: m.MsgID, RetryTimes: int(m.ReconsumeTimes),
			Keys: m.Properties[PropertyKeys], RegionID: m.Properties[message.PropertyMsgRegion],
		})
	}
}

// AfterConsume implements ConsumeHook: one SubAfter record per message;
// the cost is the batch's time divided among its messages, as RocketMQ
// reports it.
func (t *tracer) AfterConsume(group string, msgs []*MessageExt, result ConsumeResult, err error) {
	if len(msgs) == 0 {
		return
	}
	v, ok := t.consuming.LoadAndDelete(msgs[0])
	if !ok {
		return
	}
	start := v.(consumeStart)
	now := time.Now()
	cost := now.Sub(start.at).Milliseconds() / int64(len(msgs))
	code := traceContextSuccess
	switch {
	case err != nil:
		code = traceContextExcept
	case result != ConsumeSuccess:
		code = traceContextFailed
	}
	for _, m := range msgs {
		if m.Topic == t.topic {
			continue
		}
		t.add(TraceRecord{
			Type: TraceSubAfter, Timestamp: now.UnixMilli(), Group: group, Topic: m.Topic, RequestID: start.requestID,
			MsgID: m.MsgID, CostMs: cost, Success: code == traceContextSuccess, Keys: m.Properties[PropertyKeys],
			ContextCode: code,
		})
	}
}

func newTraceRequestID() string {
	var b [16]byte
	rand.Read(b[:])
	return strings.ToUpper(hex.EncodeToString(b[:]))
}

// run batches queued records into trace messages.
func (t *tracer) run() {
	p, err := t.newProducer()
	if err != nil {
		t.cfg.logger.Warn("trace disabled: cannot start the trace producer", "topic", t.topic, "err", err)
		for {
			select {
			case <-t.records:
				t.dropped.Add(1)
			case <-t.quit:
				return
			}
		}
	}
	defer p.Close()
	var b traceBatch
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	defer linger.Stop()
	for {
		select {
		case r := <-t.records:
			if b.empty() {
				linger.Reset(traceLinger)
			}
			if b.add(&r) {
				t.send(context.Background(), p, &b)
			}
		case <-linger.C:
			t.send(context.Background(), p, &b)
		case <-t.quit:
			ctx, cancel := context.WithTimeout(context.Background(), traceCloseFlush)
			defer cancel()
			for {
				select {
				case r := <-t.records:
					if b.add(&r) {
						t.send(ctx, p, &b)
					}
					continue
				default:
				}
				break
			}
			t.send(ctx, p, &b)
			return
		}
	}
}

func (t *tracer) newProducer() (*Producer, error) {
	c := t.cfg
	opts := []ProducerOpt{
		WithNameServers(c.nameServers...),
		WithLogger(c.logger),
		WithInstanceName(fmt.Sprintf("INNER_TRACE_CLIENT_%d_%d", os.Getpid(), time.Now().UnixNano())),
		WithRetries(1),
		WithSendTimeout(5 * time.Second),
		WithDialTimeout(c.dialTimeout),
	}
	if c.clientIP != "" {
		opts = append(opts, WithClientIP(c.clientIP))
	}
	if c.tls != nil {
		opts = append(opts, WithTLS(c.tls))
	}
	if c.credentials != nil {
		opts = append(opts, WithCredentials(c.credentials.AccessKey, c.credentials.SecretKey))
	}
	p, err := NewProducer(traceProducerGroup, opts...)
	if err != nil {
		return nil, err
	}
	if err := p.Start(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// send writes the batch as one trace message and resets it. Failures are
// logged and the records dropped: trace is best effort.
func (t *tracer) send(ctx context.Context, p *Producer, b *traceBatch) {
	if b.empty() {
		return
	}
	msg := NewMessage(t.topic, b.body).WithKeys(b.keyList()...)
	n := b.n
	b.reset()
	if ctx == context.Background() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	}
	if _, err := p.Send(ctx, msg); err != nil {
		t.dropped.Add(int64(n))
		t.cfg.logger.Debug("send trace data failed", "topic", t.topic, "records", n, "err", err)
		return
	}
	t.sent.Add(int64(n))
}

// traceBatch accumulates records for one trace message.
type traceBatch struct {
	body     []byte
	keys     map[string]struct{}
	keyBytes int
	n        int
}

func (b *traceBatch) empty() bool { return b.n == 0 }

// add appends r and reports whether the batch is full.
func (b *traceBatch) add(r *TraceRecord) bool {
	b.body = AppendTraceRecord(b.body, r)
	b.n++
	if b.keys == nil {
		b.keys = map[string]struct{}{}
	}
	b.addKey(r.MsgID)
	for _, k := range message.SplitKeys(r.Keys) {
		b.addKey(k)
	}
	return b.n >= traceBatchRecords || len(b.body) >= traceBatchBytes || b.keyBytes >= traceBatchKeys
}

func (b *traceBatch) addKey(k string) {
	if k == "" {
		return
	}
	if _, ok := b.keys[k]; !ok {
		b.keys[k] = struct{}{}
		b.keyBytes += len(k) + 1
	}
}

func (b *traceBatch) keyList() []string {
	out := make([]string, 0, len(b.keys))
	for k := range b.keys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (b *traceBatch) reset() {
	b.body, b.keys, b.keyBytes, b.n = nil, nil, 0, 0
}

// traceEndTransaction records an EndTransaction trace record on the
// producer's tracers, if any. The transactional send path calls it after
// END_TRANSACTION (msg is the user's message, res the half message's send
// result, fromCheck true when answering CHECK_TRANSACTION_STATE).
func (p *Producer) traceEndTransaction(msg *Message, res *SendResult, brokerAddr string, state LocalTransactionState, fromCheck bool) {
	for _, h := range p.cfg.hooks {
		t, ok := h.(*tracer)
		if !ok || msg == nil || res == nil {
			continue
		}
		st := "UNKNOW" // RocketMQ's spelling
		switch state {
		case TransactionCommit:
			st = "COMMIT_MESSAGE"
		case TransactionRollback:
			st = "ROLLBACK_MESSAGE"
		}
		msgType := TraceMsgTransCommit
		t.add(TraceRecord{
			Type: TraceEndTransaction, Timestamp: time.Now().UnixMilli(), RegionID: res.RegionID, Group: p.group,
			Topic: msg.Topic, MsgID: res.MsgID, Tags: msg.Tag(), Keys: msg.Properties[PropertyKeys], StoreHost: brokerAddr,
			MsgType: msgType, TransactionID: res.TransactionID, TransactionState: st, FromTransactionCheck: fromCheck,
		})
	}
}
