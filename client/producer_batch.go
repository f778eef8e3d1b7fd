package client

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
)

// Auto-batching (RocketMQ 5's producer autoBatch, ProduceAccumulator):
// with WithAutoBatch(true), SendAsync does not send each message on its
// own; it adds the message to the open batch of its topic, and the batch
// goes out as one SEND_BATCH_MESSAGE (to one queue, chosen when it is sent)
// once it holds batchMaxBytes of bodies or batchMaxDelayMs after its first
// message, whichever comes first. The broker stores the messages one by
// one; every caller's callback gets its own SendResult (its UNIQ_KEY, its
// offset message id, the batch's queue and its own queue offset).
//
// What is never batched, as in RocketMQ: synchronous, one-way and ordered
// sends (only SendAsync batches), delayed and timer messages, retry
// topics, transaction half messages, messages carrying PGROUP, messages
// whose body alone reaches batchMaxBytes, and any message that finds
// totalBatchMaxBytes of bodies already held: those are sent at once as
// SendAsync would without auto-batching.

// Auto-batching defaults, RocketMQ's ProduceAccumulator's.
const (
	defaultBatchMaxDelay      = 10 * time.Millisecond
	defaultBatchMaxBytes      = 32 << 10
	defaultTotalBatchMaxBytes = 32 << 20
)

// WithAutoBatch turns auto-batching of SendAsync on (autoBatch). Default
// off. See WithBatchMaxDelayMs, WithBatchMaxBytes, WithTotalBatchMaxBytes.
func WithAutoBatch(on bool) ProducerOpt {
	return producerOpt(func(c *producerConfig) { c.autoBatch = on })
}

// WithBatchMaxDelayMs sets how long an auto-batch waits for more messages
// after its first one (batchMaxDelayMs). Default 10 ms; must be positive.
func WithBatchMaxDelayMs(ms int) ProducerOpt {
	return producerOpt(func(c *producerConfig) { c.batchMaxDelay = time.Duration(ms) * time.Millisecond })
}

// WithBatchMaxBytes sets the body bytes at which an auto-batch is sent
// without waiting (batchMaxBytes). Default 32 KiB; at most the maximum
// message size.
func WithBatchMaxBytes(n int) ProducerOpt {
	return producerOpt(func(c *producerConfig) { c.batchMaxBytes = n })
}

// WithTotalBatchMaxBytes bounds the body bytes held in all open
// auto-batches (totalBatchMaxBytes); a message that would exceed it is sent
// on its own. Default 32 MiB.
func WithTotalBatchMaxBytes(n int64) ProducerOpt {
	return producerOpt(func(c *producerConfig) { c.totalBatchMaxBytes = n })
}

// validateBatch checks the auto-batch options.
func (c *producerConfig) validateBatch() error {
	switch {
	case c.batchMaxDelay <= 0:
		return fmt.Errorf("client: batchMaxDelayMs must be positive")
	case c.batchMaxBytes <= 0 || c.batchMaxBytes > c.maxMessageSize:
		return fmt.Errorf("client: batchMaxBytes %d not in 1..%d (the max message size)", c.batchMaxBytes, c.maxMessageSize)
	case c.totalBatchMaxBytes < int64(c.batchMaxBytes):
		return fmt.Errorf("client: totalBatchMaxBytes %d below batchMaxBytes %d", c.totalBatchMaxBytes, c.batchMaxBytes)
	}
	return nil
}

// batchedSend is one caller's message in an open batch.
type batchedSend struct {
	ctx context.Context
	msg *Message
	cb  func(*SendResult, error)
}

// openBatch collects the messages of one topic until it is sent.
type openBatch struct {
	topic   string // user topic
	sends   []batchedSend
	bytes   int       // sum of the bodies
	created time.Time // first message; the batch is due at created + batchMaxDelay
}

// accumulator holds the open batches. Its goroutine (run) sends the batches
// that are due; a batch that fills up is sent by the caller that filled
// it. Every message in a batch holds one count of Producer.inflight from
// its SendAsync until its callback ran, so Producer.Close (which stops the
// accumulator first, sending what is open) waits for all of them.
type accumulator struct {
	p    *Producer
	kick chan struct{} // capacity 1: a batch was opened
	stop chan struct{} // closed by close: send everything and exit
	done chan struct{} // closed when run returned

	startOnce sync.Once
	started   atomic.Bool // run was started (close waits for it only then)

	mu      sync.Mutex
	open    map[string]*openBatch // by user topic; guarded by mu
	held    int64                 // body bytes in open batches; guarded by mu
	stopped bool                  // guarded by mu: add refuses, the caller sends on its own
}

func newAccumulator(p *Producer) *accumulator {
	return &accumulator{p: p, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		open: make(map[string]*openBatch)}
}

// batchable reports whether msg may join an auto-batch (the rules above;
// the held-bytes limit is checked by add).
func (a *accumulator) batchable(msg *Message) bool {
	if msg == nil || len(msg.Body) == 0 || len(msg.Body) >= a.p.cfg.batchMaxBytes {
		return false
	}
	if validTopic(msg.Topic) != nil || strings.HasPrefix(msg.Topic, names.RetryGroupTopicPrefix) {
		return false
	}
	// Room for the UNIQ_KEY the batch adds; beyond, the single-send path
	// reports the oversized properties.
	if message.PropertiesLen(msg.Properties)+64 > message.MaxPropertiesSize {
		return false
	}
	for _, k := range [...]string{message.PropertyDelayTimeLevel, message.PropertyTimerDeliverMS,
		message.PropertyTimerDelaySec, message.PropertyTimerDelayMS, message.PropertyProducerGroup} {
		if msg.Properties[k] != "" {
			return false
		}
	}
	return !strings.EqualFold(msg.Properties[message.PropertyTransactionPrepared], "true")
}

// add puts s into its topic's batch and reports whether it did; false
// (stopped, or totalBatchMaxBytes held) means the caller sends s itself.
// A batch that reaches batchMaxBytes is sent from here.
func (a *accumulator) add(s batchedSend) bool {
	n := len(s.msg.Body)
	a.mu.Lock()
	if a.stopped || a.held+int64(n) > a.p.cfg.totalBatchMaxBytes {
		a.mu.Unlock()
		return false
	}
	b := a.open[s.msg.Topic]
	opened := b == nil
	if opened {
		b = &openBatch{topic: s.msg.Topic, created: time.Now()}
		a.open[b.topic] = b
	}
	b.sends = append(b.sends, s)
	b.bytes += n
	a.held += int64(n)
	full := b.bytes >= a.p.cfg.batchMaxBytes
	if full {
		a.detachLocked(b)
	}
	a.mu.Unlock()
	if full {
		a.send(b)
	} else if opened {
		select {
		case a.kick <- struct{}{}:
		default:
		}
	}
	return true
}

// detachLocked removes b from the open batches. REQUIRES: a.mu.
func (a *accumulator) detachLocked(b *openBatch) {
	delete(a.open, b.topic)
	a.held -= int64(b.bytes)
}

// run sends the batches whose delay passed; on stop it sends them all.
func (a *accumulator) run() {
	defer close(a.done)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		select {
		case <-a.stop:
			a.mu.Lock()
			a.stopped = true
			all := make([]*openBatch, 0, len(a.open))
			for _, b := range a.open {
				all = append(all, b)
			}
			for _, b := range all {
				a.detachLocked(b)
			}
			a.mu.Unlock()
			for _, b := range all {
				a.send(b)
			}
			return
		case <-a.kick:
		case <-t.C:
		}
		next := a.sendDue(time.Now())
		t.Reset(next)
	}
}

// sendDue sends the batches due at now and returns how long until the next
// one is due (an hour when none is open: a new batch kicks run).
func (a *accumulator) sendDue(now time.Time) time.Duration {
	var due []*openBatch
	next := time.Hour
	a.mu.Lock()
	for _, b := range a.open {
		if left := b.created.Add(a.p.cfg.batchMaxDelay).Sub(now); left > 0 {
			next = min(next, left)
			continue
		}
		due = append(due, b)
	}
	for _, b := range due {
		a.detachLocked(b)
	}
	a.mu.Unlock()
	for _, b := range due {
		a.send(b)
	}
	return next
}

// start starts run on the producer's instance once.
func (a *accumulator) start() {
	a.startOnce.Do(func() {
		if a.p.in.goFunc("producer-auto-batch", a.run) {
			a.started.Store(true)
		}
	})
}

// close sends every open batch and stops run; later adds refuse. Called
// once, by Producer.Close.
func (a *accumulator) close() {
	a.startOnce.Do(func() {}) // no start after this
	if !a.started.Load() {
		a.mu.Lock()
		a.stopped = true // nothing was ever added: SendAsync needs a started producer
		a.mu.Unlock()
		return
	}
	close(a.stop)
	<-a.done
}

// send sends b as one batch. Messages whose context ended while they
// waited are answered with its error and left out. Each remaining caller
// gets its own result from the batch's (splitResult), or the batch's
// error.
func (a *accumulator) send(b *openBatch) {
	p := a.p
	live := b.sends[:0:0]
	for _, s := range b.sends {
		if err := s.ctx.Err(); err != nil {
			a.finish(s, nil, err)
			continue
		}
		live = append(live, s)
	}
	if len(live) == 0 {
		return
	}
	if len(live) == 1 { // nothing to coalesce with: a plain send
		a.sendAlone(live[0])
		return
	}
	o, err := p.prepareAutoBatch(b.topic, live)
	if err == nil {
		p.inflight.Add(1) // the batch's own count; the messages still hold theirs
		err = p.sendAsyncCounted(context.Background(), o, func(res *SendResult, err error) {
			for i, s := range live {
				if err != nil {
					a.finish(s, nil, err)
					continue
				}
				a.finish(s, splitResult(res, i), nil)
			}
		})
	}
	if err != nil {
		for _, s := range live {
			a.finish(s, nil, err)
		}
	}
}

// prepareAutoBatch encodes the held messages (validated by batchable) as
// one batch, as prepareBatch would, without a properties map per message:
// each item's properties are the caller's, encoded once, with a new
// UNIQ_KEY pair appended when the message has none; the ids go into one
// comma-separated string (the batch result's MsgID).
func (p *Producer) prepareAutoBatch(topic string, sends []batchedSend) (*outgoing, error) {
	size := 0
	for _, s := range sends {
		size += batchItemFixed + len(s.msg.Body) + message.PropertiesLen(s.msg.Properties) + uniqPairMax
	}
	body := make([]byte, 0, size)
	ids := make([]byte, 0, len(sends)*(message.UniqIDLenV6+1))
	msgs := make([]*Message, len(sends))
	be := binary.BigEndian
	for i, s := range sends {
		m := s.msg
		msgs[i] = m
		at := len(body)
		body = be.AppendUint32(body, 0) // TOTALSIZE, patched below
		body = be.AppendUint32(body, 0) // MAGICCODE: ignored by brokers
		body = be.AppendUint32(body, 0) // BODYCRC: computed by the broker
		body = be.AppendUint32(body, uint32(m.Flag))
		body = be.AppendUint32(body, uint32(len(m.Body)))
		body = append(body, m.Body...)
		propsAt := len(body)
		body = be.AppendUint16(body, 0) // PROPERTIESLENGTH, patched below
		body = message.AppendProperties(body, m.Properties)
		if i > 0 {
			ids = append(ids, ',')
		}
		if id := m.Properties[message.PropertyUniqClientMessageIDKeyidx]; id != "" {
			ids = append(ids, id...)
		} else {
			body = append(body, message.PropertyUniqClientMessageIDKeyidx...)
			body = append(body, message.NameValueSeparator)
			idAt := len(body)
			body = p.in.idGen.AppendNext(body)
			ids = append(ids, body[idAt:]...)
			body = append(body, message.PropertySeparator)
		}
		be.PutUint32(body[at:], uint32(len(body)-at))
		be.PutUint16(body[propsAt:], uint16(len(body)-propsAt-2))
	}
	if len(body) > p.cfg.maxMessageSize {
		return nil, fmt.Errorf("%w: batch body of %d bytes exceeds the limit of %d (topic %s)", ErrIllegalMessage, len(body), p.cfg.maxMessageSize, topic)
	}
	return &outgoing{
		userTopic: topic,
		topic:     wrapNamespace(p.cfg.namespace, topic),
		body:      body,
		batch:     true,
		uniqIDs:   string(ids),
		msgs:      msgs,
	}, nil
}

// Batch item layout sizes (docs/protocol.md §6.7): TOTALSIZE, MAGICCODE,
// BODYCRC, FLAG, BODYLENGTH, then the body, PROPERTIESLENGTH (2 bytes)
// and the properties; uniqPairMax bounds an appended UNIQ_KEY pair.
const (
	batchItemFixed = 4*5 + 2
	uniqPairMax    = len(message.PropertyUniqClientMessageIDKeyidx) + 2 + 64
)

// sendAlone sends one held message as SendAsync would without batching.
func (a *accumulator) sendAlone(s batchedSend) {
	p := a.p
	o, err := p.prepare(s.msg, nil)
	if err == nil {
		p.inflight.Add(1)
		err = p.sendAsyncCounted(s.ctx, o, func(res *SendResult, err error) { a.finish(s, res, err) })
	}
	if err != nil {
		a.finish(s, nil, err)
	}
}

// finish runs one caller's callback and releases its inflight count.
func (a *accumulator) finish(s batchedSend, res *SendResult, err error) {
	defer a.p.inflight.Done()
	s.cb(res, err)
}

// splitResult is the result of the i-th message of a batch: its own
// UNIQ_KEY and offset message id (the batch's are comma-separated, in
// order) and queue offset (consecutive from the batch's first).
func splitResult(res *SendResult, i int) *SendResult {
	r := *res
	r.MsgID = nthField(res.MsgID, i)
	r.OffsetMsgID = nthField(res.OffsetMsgID, i)
	r.QueueOffset = res.QueueOffset + int64(i)
	return &r
}

// nthField is the i-th comma-separated field of s ("" if there are fewer).
func nthField(s string, i int) string {
	for ; i > 0; i-- {
		k := strings.IndexByte(s, ',')
		if k < 0 {
			return ""
		}
		s = s[k+1:]
	}
	if k := strings.IndexByte(s, ','); k >= 0 {
		return s[:k]
	}
	return s
}
