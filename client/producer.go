package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// SendStatus is how a broker stored a message it accepted.
type SendStatus int

// Send statuses. Every status but SendOK means the message is stored but a
// durability promise (flush or replication) was not met in time.
const (
	SendOK SendStatus = iota
	SendFlushDiskTimeout
	SendFlushSlaveTimeout
	SendSlaveNotAvailable
)

func (s SendStatus) String() string {
	switch s {
	case SendOK:
		return "SEND_OK"
	case SendFlushDiskTimeout:
		return "FLUSH_DISK_TIMEOUT"
	case SendFlushSlaveTimeout:
		return "FLUSH_SLAVE_TIMEOUT"
	case SendSlaveNotAvailable:
		return "SLAVE_NOT_AVAILABLE"
	}
	return "SendStatus(" + strconv.Itoa(int(s)) + ")"
}

// SendResult is a broker's answer to a send.
type SendResult struct {
	Status        SendStatus
	MsgID         string // UNIQ_KEY; comma-separated, one per message, for batches
	OffsetMsgID   string // broker address + commit-log offset; comma-separated for batches
	Queue         MessageQueue
	QueueOffset   int64 // consume-queue offset of the (first) message
	TransactionID string
	RegionID      string
	TraceOn       bool
}

// Producer sends messages to the brokers of a RocketMQ (or Apogee) cluster.
//
// NewProducer starts nothing; Start fetches nothing either (routes are
// fetched on first use) but starts the route refresh and heartbeat loops;
// Close waits for in-flight asynchronous sends to finish (their callbacks
// run) and stops everything. All methods are safe for concurrent use.
type Producer struct {
	group     string // as given
	wireGroup string // namespace applied
	cfg       producerConfig
	in        *instance
	fault     *faultStrategy
	hooks     hookSet

	// inflight counts SendAsync calls whose callback has not run yet; Close
	// waits for it after refusing new sends.
	inflightMu sync.RWMutex
	closing    bool // guarded by inflightMu
	inflight   sync.WaitGroup

	tx       *txState // nil unless WithTransactionListener
	requests requestTable

	stats     producerCounters
	deadlines sendDeadlines // shared per-millisecond send deadline contexts
	// sendRequests recycles the send requests request builds: remoting
	// encodes a request's header before Invoke* returns and keeps no
	// reference to the Command, so each is free again once its Invoke*
	// call returned (releaseRequest).
	sendRequests sync.Pool    // *sendRequest
	asyncSends   sync.Pool    // *asyncSend (newAsyncSend)
	acc          *accumulator // nil unless WithAutoBatch (producer_batch.go)
}

type producerCounters struct {
	sent, failed, attempts, oneway atomic.Int64
}

// ProducerStats is a snapshot of a producer's counters (for metrics
// plugins; the SDK itself exports nothing).
type ProducerStats struct {
	Sent     int64    // sends answered with a stored status (batches count once)
	Failed   int64    // sends that failed after all attempts
	Attempts int64    // requests sent, retries included (one-way excluded)
	Oneway   int64    // one-way sends queued
	Isolated []string // brokers the fault strategy currently avoids
}

// Stats returns the producer's counters.
func (p *Producer) Stats() ProducerStats {
	return ProducerStats{
		Sent: p.stats.sent.Load(), Failed: p.stats.failed.Load(), Attempts: p.stats.attempts.Load(),
		Oneway: p.stats.oneway.Load(), Isolated: p.fault.isolated(),
	}
}

// NewProducer returns a producer of group. It validates the options and
// starts nothing.
func NewProducer(group string, opts ...ProducerOpt) (*Producer, error) {
	cfg := defaultProducerConfig()
	for _, o := range opts {
		o.applyProducer(&cfg)
	}
	if group == "" {
		return nil, fmt.Errorf("client: producer group is empty")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	p := &Producer{
		group:     group,
		wireGroup: wrapNamespace(cfg.namespace, group),
		cfg:       cfg,
		in:        newInstance(cfg.clientConfig),
		fault:     newFaultStrategy(cfg.latencyFault, cfg.faultTable),
		hooks:     newHookSet(cfg.hooks),
	}
	p.deadlines.stepMs = deadlineStepMs(cfg.sendTimeout)
	p.in.addHeartbeatSource(func(hb *protocol.HeartbeatData) {
		hb.ProducerDataSet = append(hb.ProducerDataSet, protocol.ProducerData{GroupName: p.wireGroup})
	})
	if cfg.txListener != nil {
		p.tx = newTxState(p)
		p.in.handle(protocol.CheckTransactionState, p.tx.onCheck)
	}
	p.in.handle(protocol.PushReplyMessageToClient, p.onReply)
	if cfg.autoBatch {
		p.acc = newAccumulator(p)
	}
	return p, nil
}

// Group returns the producer group.
func (p *Producer) Group() string { return p.group }

// ClientID returns the id brokers know this producer by ("ip@instance").
func (p *Producer) ClientID() string { return p.in.clientID }

// Start starts the route refresh and heartbeat loops.
func (p *Producer) Start() error {
	if err := p.in.start(); err != nil {
		return err
	}
	if p.tx != nil {
		p.tx.start()
	}
	if p.acc != nil {
		p.acc.start()
	}
	if p.cfg.latencyFault && p.cfg.detector {
		p.in.goFunc("client-fault-detector", p.detectLoop)
	}
	return nil
}

// detectLoop runs the isolated-broker detector (fault_detect.go) until the
// instance closes.
func (p *Producer) detectLoop() {
	t := time.NewTicker(p.cfg.detectTick)
	defer t.Stop()
	for {
		select {
		case <-p.in.quit:
			return
		case <-t.C:
			p.fault.detectOnce(p.in.ctx, p.cfg.detectInterval, p.in.masterAddr, p.probeBroker)
		}
	}
}

// probeBroker is the detector's check, the Java producer's ServiceDetector:
// GET_MAX_OFFSET of queue 0 of a topic this producer publishes to, answered
// SUCCESS within detectTimeout.
func (p *Producer) probeBroker(ctx context.Context, addr string) bool {
	topic := p.in.anyTopic()
	if topic == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.detectTimeout)
	defer cancel()
	req := protocol.NewRequest(protocol.GetMaxOffset, protocol.EncodeHeader(&protocol.QueueHeader{Topic: topic}, false), nil)
	resp, err := p.in.remote.InvokeSync(ctx, addr, req)
	return err == nil && resp.ResponseCode() == protocol.Success
}

// Close waits for in-flight asynchronous sends (their callbacks run), then
// closes every connection and stops every goroutine. Idempotent.
func (p *Producer) Close() error {
	p.inflightMu.Lock()
	already := p.closing
	p.closing = true
	p.inflightMu.Unlock()
	if already {
		return nil
	}
	if p.acc != nil {
		p.acc.close() // sends the open batches: their messages hold inflight counts
	}
	p.inflight.Wait()
	closeTracers(p.cfg.hooks) // trace.go: flush the last trace batch
	if p.tx != nil {
		p.tx.stop()
	}
	if p.in.running() == nil {
		p.unregister()
	}
	err := p.in.close()
	p.deadlines.close()
	return err
}

// unregister tells every master the producer group is gone
// (UNREGISTER_CLIENT, as the Java client does on shutdown), so brokers stop
// routing transaction checks to this client at once. Best effort.
func (p *Producer) unregister() {
	p.in.unregisterClient(protocol.UnregisterClientRequestHeader{ClientID: p.in.clientID, ProducerGroup: p.wireGroup})
}

// beginAsync registers an asynchronous send unless Close has begun.
func (p *Producer) beginAsync() error {
	p.inflightMu.RLock()
	defer p.inflightMu.RUnlock()
	if p.closing {
		return ErrClosed
	}
	p.inflight.Add(1)
	return nil
}

// Queues returns the writable queues of topic (fetching its route if
// needed), e.g. to choose one for SendToQueue.
func (p *Producer) Queues(ctx context.Context, topic string) ([]MessageQueue, error) {
	if err := p.in.running(); err != nil {
		return nil, err
	}
	r, err := p.in.publishRoute(ctx, wrapNamespace(p.cfg.namespace, topic), p.cfg.createTopicKey, p.cfg.defaultTopicQueueNums)
	if err != nil {
		return nil, err
	}
	out := make([]MessageQueue, len(r.publish))
	for i, q := range r.publish {
		q.Topic = topic
		out[i] = q
	}
	return out, nil
}

// ---- request building ----

// outgoing is a validated message (or batch) ready to be sent: everything
// but the queue and born timestamp is encoded once, before the first
// attempt.
type outgoing struct {
	userTopic  string
	topic      string // wire topic
	body       []byte
	flag       int32
	properties string
	sysFlag    int32
	batch      bool
	reply      bool // a SendReply message: SEND_REPLY_MESSAGE(_V2)
	// recycled: the outgoing's storage (its properties, and so uniqIDs)
	// is reused after the send, so its result copies uniqIDs.
	recycled       bool
	reconsumeTimes int32
	maxReconsume   int32
	uniqIDs        string   // MsgID of the result
	msg            *Message // for hooks
	msgs           []*Message
	// result, when set, is storage allocated with the outgoing for the
	// send's SendResult, taken by the first answer that needs one
	// (takeResult).
	result *SendResult
}

// takeResult returns the storage for a SendResult: the one allocated with
// o the first time, a new one after that (a degraded result a retry
// follows stays what the hooks saw).
func (o *outgoing) takeResult() *SendResult {
	if r := o.result; r != nil {
		o.result = nil
		return r
	}
	return new(SendResult)
}

// forget drops o's references to the caller's message once the send is
// over: a SendResult kept by the caller keeps o's storage alive (it may
// share it), not the message and its body.
func (o *outgoing) forget() {
	o.body, o.msg, o.msgs = nil, nil, nil
}

// propsInline is the room for the encoded properties a prepared message
// keeps in its own storage: a UNIQ_KEY and ~30 bytes of user properties
// (TAGS, KEYS) fit, so the properties string needs no allocation of its
// own. With it an asyncSend fills its 576-byte size class (objects over
// 512 bytes with pointers carry an 8-byte malloc header).
const propsInline = 96

// preparedMessage is a synchronous send's state: the outgoing message, its
// result and its properties' bytes, allocated together. Never reused: the
// properties string and the result's MsgID alias props.
type preparedMessage struct {
	out   outgoing
	res   SendResult
	props [propsInline]byte
}

// validTopic checks a topic name with the broker's rules.
func validTopic(t string) error {
	if err := names.ValidateTopic(t); err != nil {
		return fmt.Errorf("%w: %v", ErrIllegalMessage, err)
	}
	return nil
}

// prepare validates msg and encodes it for sending. The caller's message is
// not modified.
func (p *Producer) prepare(msg *Message, extra map[string]string) (*outgoing, error) {
	pm := new(preparedMessage)
	if err := p.prepareInto(&pm.out, pm.props[:0], msg, extra, time.Time{}); err != nil {
		return nil, err
	}
	pm.out.result = &pm.res
	return &pm.out, nil
}

// prepareInto is prepare into storage of the caller's: o must be zero;
// the properties are encoded into props when they fit its capacity
// (props must never be written again: the properties string aliases it).
func (p *Producer) prepareInto(o *outgoing, props []byte, msg *Message, extra map[string]string, now time.Time) error {
	if msg == nil {
		return fmt.Errorf("%w: nil message", ErrIllegalMessage)
	}
	if err := validTopic(msg.Topic); err != nil {
		return err
	}
	if len(msg.Body) == 0 {
		return fmt.Errorf("%w: empty body (topic %s)", ErrIllegalMessage, msg.Topic)
	}
	if len(msg.Body) > p.cfg.maxMessageSize {
		return fmt.Errorf("%w: body of %d bytes exceeds the limit of %d (topic %s)", ErrIllegalMessage, len(msg.Body), p.cfg.maxMessageSize, msg.Topic)
	}
	// Field by field into the zero o: assigning a composite literal
	// copies the whole struct with a bulk write barrier while the GC runs.
	o.userTopic = msg.Topic
	o.topic = wrapNamespace(p.cfg.namespace, msg.Topic)
	o.flag = msg.Flag
	o.msg = msg
	retry := strings.HasPrefix(o.topic, names.RetryGroupTopicPrefix)
	if len(extra) == 0 && !retry && msg.Properties[message.PropertyUniqClientMessageIDKeyidx] == "" {
		// Fast path: encode the caller's properties as they are and append
		// the new UNIQ_KEY pair, without copying the map.
		// The id is generated in place and then sliced from the
		// properties string: one allocation for both.
		buf := props[:0]
		if n := message.PropertiesLen(msg.Properties) + len(message.PropertyUniqClientMessageIDKeyidx) + message.UniqIDLenV6 + 2; n > cap(buf) {
			buf = make([]byte, 0, n)
		}
		buf = message.AppendProperties(buf, msg.Properties)
		buf = append(buf, message.PropertyUniqClientMessageIDKeyidx...)
		buf = append(buf, message.NameValueSeparator)
		idAt := len(buf)
		if now.IsZero() {
			buf = p.in.idGen.AppendNext(buf)
		} else {
			buf = p.in.idGen.AppendNextAt(buf, now.UnixMilli())
		}
		idEnd := len(buf)
		buf = append(buf, message.PropertySeparator)
		// buf is never written again: the string can share its bytes
		// (what strings.Builder does) instead of copying them.
		o.properties = unsafe.String(unsafe.SliceData(buf), len(buf))
		o.uniqIDs = o.properties[idAt:idEnd]
		if strings.EqualFold(msg.Properties[message.PropertyTransactionPrepared], "true") {
			o.sysFlag |= message.SysFlagTransactionPreparedType
		}
	} else {
		props := make(map[string]string, len(msg.Properties)+len(extra)+1)
		for k, v := range msg.Properties {
			props[k] = v
		}
		for k, v := range extra {
			props[k] = v
		}
		if props[message.PropertyUniqClientMessageIDKeyidx] == "" {
			props[message.PropertyUniqClientMessageIDKeyidx] = p.in.idGen.Next()
		}
		o.uniqIDs = props[message.PropertyUniqClientMessageIDKeyidx]
		if retry {
			// Java moves these two into the header for retry topics.
			if v, ok := props[message.PropertyReconsumeTime]; ok {
				n, _ := strconv.ParseInt(v, 10, 32)
				o.reconsumeTimes = int32(n)
				delete(props, message.PropertyReconsumeTime)
			}
			if v, ok := props[message.PropertyMaxReconsumeTimes]; ok {
				n, _ := strconv.ParseInt(v, 10, 32)
				o.maxReconsume = int32(n)
				delete(props, message.PropertyMaxReconsumeTimes)
			}
		}
		if strings.EqualFold(props[message.PropertyTransactionPrepared], "true") {
			o.sysFlag |= message.SysFlagTransactionPreparedType
		}
		o.properties = message.EncodeProperties(props)
	}
	body, flags := maybeCompress(msg.Body, p.cfg.compressOver, p.cfg.compressLevel, p.cfg.compressType)
	o.body = body
	o.sysFlag |= flags
	if len(o.properties) > message.MaxPropertiesSize {
		return fmt.Errorf("%w: properties of %d bytes exceed %d (topic %s)", ErrIllegalMessage, len(o.properties), message.MaxPropertiesSize, msg.Topic)
	}
	return nil
}

// prepareBatch validates and encodes a batch: one topic, no delay level, no
// retry topic (as Java requires); each message gets a UNIQ_KEY; the body is
// never compressed.
func (p *Producer) prepareBatch(msgs []*Message) (*outgoing, error) {
	if len(msgs) == 0 {
		return nil, fmt.Errorf("%w: empty batch", ErrIllegalMessage)
	}
	topic := msgs[0].Topic
	if err := validTopic(topic); err != nil {
		return nil, err
	}
	if strings.HasPrefix(topic, names.RetryGroupTopicPrefix) {
		return nil, fmt.Errorf("%w: batch to retry topic %s", ErrIllegalMessage, topic)
	}
	inner := make([]message.Message, len(msgs))
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		if m == nil || m.Topic != topic {
			return nil, fmt.Errorf("%w: batch mixes topics (%s)", ErrIllegalMessage, topic)
		}
		if len(m.Body) == 0 {
			return nil, fmt.Errorf("%w: empty body in batch (topic %s)", ErrIllegalMessage, topic)
		}
		if m.Properties[message.PropertyDelayTimeLevel] != "" {
			return nil, fmt.Errorf("%w: delay level in batch (topic %s)", ErrIllegalMessage, topic)
		}
		props := make(map[string]string, len(m.Properties)+1)
		for k, v := range m.Properties {
			props[k] = v
		}
		if props[message.PropertyUniqClientMessageIDKeyidx] == "" {
			props[message.PropertyUniqClientMessageIDKeyidx] = p.in.idGen.Next()
		}
		ids[i] = props[message.PropertyUniqClientMessageIDKeyidx]
		inner[i] = message.Message{Topic: wrapNamespace(p.cfg.namespace, topic), Flag: m.Flag, Body: m.Body, Properties: props}
	}
	body, err := message.AppendBatch(nil, inner)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrIllegalMessage, err)
	}
	if len(body) > p.cfg.maxMessageSize {
		return nil, fmt.Errorf("%w: batch body of %d bytes exceeds the limit of %d (topic %s)", ErrIllegalMessage, len(body), p.cfg.maxMessageSize, topic)
	}
	return &outgoing{
		userTopic: topic,
		topic:     wrapNamespace(p.cfg.namespace, topic),
		body:      body,
		batch:     true,
		uniqIDs:   strings.Join(ids, ","),
		msgs:      msgs,
	}, nil
}

// sendRequest is a send request with the storage of its header: the
// backing array of an ext list, or the header as a protocol.SendHeaderExt,
// allocated together.
type sendRequest struct {
	cmd protocol.Command
	hdr protocol.SendHeaderExt
	ext [28]string
	// tmpl keeps the encoded entries this request's sends share with the
	// previous one it carried (protocol.SendHeaderTemplate): kept across
	// recycling, rebuilt when a shared field differs.
	tmpl protocol.SendHeaderTemplate
}

// request builds the send request of o for queue q. Unsigned, the header
// is the request's ExtEncoder (protocol.SendHeaderExt): remoting encodes
// it straight into the frame, no list of strings, no strings for the
// numbers. Signed (WithCredentials), it goes into Command.ExtList through
// the protocol package's send-header codec, which the signer reads. Both
// give the same frame bytes; neither builds a map or sorts keys.
func (p *Producer) request(o *outgoing, q MessageQueue, born int64) *protocol.Command {
	return &p.newRequest(o, q, born).cmd
}

// newRequest is request from the producer's recycled requests: give it
// back with releaseRequest.
func (p *Producer) newRequest(o *outgoing, q MessageQueue, born int64) *sendRequest {
	code, v2 := protocol.SendMessageV2, true
	switch {
	case o.batch:
		code = protocol.SendBatchMessage
	case o.reply && p.cfg.useV1Header:
		code, v2 = protocol.SendReplyMessage, false
	case o.reply:
		code = protocol.SendReplyMessageV2
	case p.cfg.useV1Header:
		code, v2 = protocol.SendMessage, false
	}
	r, _ := p.sendRequests.Get().(*sendRequest)
	if r == nil {
		r = new(sendRequest)
	}
	// Field by field into the released (zero) request: assigning composite
	// literals copies whole structs with bulk write barriers while the GC
	// runs.
	h := &r.hdr.Header
	h.ProducerGroup = p.wireGroup
	h.Topic = o.topic
	h.DefaultTopic = p.cfg.createTopicKey
	h.DefaultTopicQueueNums = p.cfg.defaultTopicQueueNums
	h.QueueID = int32(q.QueueID)
	h.SysFlag = o.sysFlag
	h.BornTimestamp = born
	h.Flag = o.flag
	h.Properties = o.properties
	h.ReconsumeTimes = o.reconsumeTimes
	h.MaxReconsumeTimes = o.maxReconsume
	h.Batch = o.batch
	h.BrokerName = q.BrokerName
	r.hdr.V2 = v2
	// Absent, a broker applies the group's retry limit; "0" would
	// mean no retry at all.
	r.hdr.OmitMaxReconsumeTimes = o.maxReconsume == 0
	c := &r.cmd
	c.Code = int32(code)
	c.Language = protocol.LanguageGo
	c.Version = protocol.CurrentVersion
	c.Body = o.body
	// The binary ROCKETMQ header (docs/protocol.md §1.5) costs less to
	// encode here and to decode on the broker than JSON; brokers
	// answer in kind.
	c.SerializeType = protocol.SerializeRocketMQ
	if p.cfg.credentials == nil {
		r.hdr.Template = &r.tmpl
		r.cmd.ExtEncoder = &r.hdr
		return r
	}
	e := protocol.AppendSendHeader(r.ext[:0], &r.hdr.Header, v2)
	if r.hdr.OmitMaxReconsumeTimes {
		e = protocol.DeleteExt(e, protocol.SendHeaderMaxReconsumeTimesKey(v2))
	}
	r.cmd.ExtList = e
	return r
}

// releaseRequest recycles a request from request once the Invoke* call
// that sent it returned. The strings it held are dropped (no message
// properties kept alive by the pool).
func (p *Producer) releaseRequest(r *sendRequest) {
	if r.cmd.ExtList != nil {
		clear(r.ext[:])
	}
	// newRequest sets every field of the header; the Command's are
	// cleared one by one (remoting may have set Opaque and Flag, a signer
	// ExtList). Only pointers need clearing for the pool not to keep
	// anything alive, the rest for newRequest's "zero" precondition.
	c := &r.cmd
	c.Code, c.Language, c.SerializeType, c.Version, c.Opaque, c.Flag = 0, 0, 0, 0, 0, 0
	c.Remark, c.ExtFields, c.ExtList, c.ExtEncoder, c.Body, c.BodyDone = "", nil, nil, nil, nil, nil
	h := &r.hdr.Header
	h.ProducerGroup, h.Topic, h.DefaultTopic, h.Properties, h.BrokerName = "", "", "", "", ""
	p.sendRequests.Put(r)
}

// result turns a send response into a SendResult (in o's result storage,
// takeResult) or an error.
func (p *Producer) result(o *outgoing, q MessageQueue, addr string, resp *protocol.Command) (*SendResult, error) {
	var st SendStatus
	switch protocol.ResponseCode(resp.Code) {
	case protocol.Success:
		st = SendOK
	case protocol.FlushDiskTimeout:
		st = SendFlushDiskTimeout
	case protocol.FlushSlaveTimeout:
		st = SendFlushSlaveTimeout
	case protocol.SlaveNotAvailable:
		st = SendSlaveNotAvailable
	default:
		return nil, newBrokerError(addr, q.BrokerName, o.userTopic, resp)
	}
	f := sendResponseFieldsOf(resp)
	res := o.takeResult()
	// Field by field: res may be o's storage, in the heap.
	res.Status = st
	res.Queue.Topic, res.Queue.BrokerName, res.Queue.QueueID = o.userTopic, q.BrokerName, q.QueueID
	res.MsgID, res.OffsetMsgID, res.TransactionID, res.RegionID = keepResultStrings(o, &f)
	res.TraceOn = f.traceOn != "false"
	if f.queueID != "" {
		if n, ok := parseDecimal(f.queueID); ok && n <= math.MaxInt32 {
			res.Queue.QueueID = int(n)
		} else if n, err := strconv.Atoi(f.queueID); err == nil {
			res.Queue.QueueID = n
		}
	}
	if f.queueOffset != "" {
		if n, ok := parseDecimal(f.queueOffset); ok {
			res.QueueOffset = n
		} else {
			res.QueueOffset, _ = strconv.ParseInt(f.queueOffset, 10, 64)
		}
	}
	if res.RegionID == "" {
		res.RegionID = defaultRegion
	}
	return res, nil
}

// keepResultStrings returns the MsgID, OffsetMsgID, TransactionID and
// RegionID of a result as strings that stay valid once resp is released
// (their bytes are resp's own, Command.Release) and o's storage recycled
// (o.recycled): copies, in one allocation, of what differs from the
// UNIQ_KEY and the default region, which the broker echoes as the
// transaction id and region.
func keepResultStrings(o *outgoing, f *sendResponseFields) (msgID, offsetMsgID, txID, region string) {
	msgID, txID, region = o.uniqIDs, f.transactionID, f.region
	n := len(f.msgID)
	if o.recycled {
		n += len(msgID)
	}
	sameTx := txID == msgID
	if !sameTx {
		n += len(txID)
	}
	switch region {
	case "", defaultRegion:
		region = ""
	default:
		n += len(region)
	}
	if n == 0 {
		return msgID, "", txID, region // txID is msgID or ""
	}
	b := make([]byte, 0, n)
	take := func(s string) string {
		if s == "" {
			return ""
		}
		at := len(b)
		b = append(b, s...)
		return unsafe.String(unsafe.SliceData(b[at:]), len(s))
	}
	if o.recycled {
		msgID = take(msgID)
	}
	offsetMsgID = take(f.msgID)
	if sameTx {
		txID = msgID
	} else {
		txID = take(txID)
	}
	if region != "" {
		region = take(region)
	}
	// b is never written again past this point.
	return msgID, offsetMsgID, txID, region
}

// defaultRegion is the region of a result whose broker names none.
const defaultRegion = "DefaultRegion"

// sendResponseFields are the ext fields of a send response that a
// SendResult reads.
type sendResponseFields struct {
	msgID, queueID, queueOffset, transactionID, region, traceOn string
}

// sendResponseFieldsOf reads them as resp.Ext would, each one's first
// occurrence: from ExtFields when the response has a map (JSON, or a
// ROCKETMQ header the list decoder left to it), else in one pass over
// ExtList (a send response as the SDK's remoting client decodes it).
func sendResponseFieldsOf(resp *protocol.Command) sendResponseFields {
	var f sendResponseFields
	if len(resp.ExtFields) > 0 {
		f = sendResponseFields{
			msgID: resp.Ext("msgId"), queueID: resp.Ext("queueId"), queueOffset: resp.Ext("queueOffset"),
			transactionID: resp.Ext("transactionId"), region: resp.Ext("MSG_REGION"), traceOn: resp.Ext("TRACE_ON"),
		}
		return f
	}
	var seen uint8
	l := resp.ExtList
	for i := 0; i+1 < len(l); i += 2 {
		var dst *string
		var bit uint8
		switch l[i] {
		case "msgId":
			dst, bit = &f.msgID, 1
		case "queueId":
			dst, bit = &f.queueID, 2
		case "queueOffset":
			dst, bit = &f.queueOffset, 4
		case "transactionId":
			dst, bit = &f.transactionID, 8
		case "MSG_REGION":
			dst, bit = &f.region, 16
		case "TRACE_ON":
			dst, bit = &f.traceOn, 32
		default:
			continue
		}
		if seen&bit == 0 {
			seen |= bit
			*dst = l[i+1]
		}
	}
	return f
}

// parseDecimal parses s when it is 1 to 18 ASCII digits, which cannot
// overflow an int64; anything else (signs, longer or malformed values) is
// left to strconv (ok false).
func parseDecimal(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		d := s[i] - '0'
		if d > 9 {
			return 0, false
		}
		n = n*10 + int64(d)
	}
	return n, true
}

// retriable reports whether a failed attempt may be retried on another
// broker: network failures and the broker codes of docs/broker.md §4.3.
func retriable(err error) bool {
	var be *BrokerError
	if errors.As(err, &be) {
		return be.Retriable()
	}
	return !errors.Is(err, ErrIllegalMessage) && !errors.Is(err, ErrClosed) && !errors.Is(err, context.Canceled)
}

// sendDeadline is now + sendTimeout, or ctx's deadline when earlier.
func (p *Producer) sendDeadline(ctx context.Context) time.Time {
	return p.sendDeadlineFrom(ctx, time.Now())
}

// sendDeadlineFrom is sendDeadline for a send starting at now.
func (p *Producer) sendDeadlineFrom(ctx context.Context, now time.Time) time.Time {
	d := now.Add(p.cfg.sendTimeout)
	if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
		return cd
	}
	return d
}

// addrOf returns the address messages for q go to.
func (p *Producer) addrOf(ctx context.Context, q MessageQueue) (string, error) {
	addr := p.in.masterAddr(q.BrokerName)
	if addr == "" {
		// The broker may be new: refresh the route once.
		if _, err := p.in.refreshRoute(ctx, wrapNamespace(p.cfg.namespace, q.Topic)); err != nil && !errors.Is(err, ErrNoRoute) {
			return "", err
		}
		if addr = p.in.masterAddr(q.BrokerName); addr == "" {
			return "", fmt.Errorf("client: no master address for broker %s (topic %s)", q.BrokerName, q.Topic)
		}
	}
	return p.in.sendAddr(addr), nil
}

func (p *Producer) hookContext(o *outgoing, q MessageQueue, addr string, mode SendMode, attempt int, born time.Time) *SendContext {
	if p.hooks.empty() {
		return nil
	}
	return &SendContext{ProducerGroup: p.group, Message: o.msg, Batch: o.msgs, Queue: q, BrokerAddr: addr, Mode: mode, Attempt: attempt, BornTime: born}
}

func (p *Producer) before(ctx context.Context, sc *SendContext) {
	if sc == nil {
		return
	}
	for _, h := range p.hooks.before {
		h.OnBeforeSend(ctx, sc)
	}
}

func (p *Producer) after(ctx context.Context, sc *SendContext, res *SendResult, err error, latency time.Duration) {
	if sc == nil {
		return
	}
	sc.Result, sc.Err, sc.Latency = res, err, latency
	for _, h := range p.hooks.after {
		h.OnAfterSend(ctx, sc)
	}
}

// ---- synchronous ----

// Send sends msg and waits for the broker's answer, retrying failed
// attempts on other brokers (WithRetries), all within the send timeout or
// ctx's deadline, whichever comes first. A message the broker stored with
// a degraded status (FLUSH_DISK_TIMEOUT, ...) is returned with that Status
// and a nil error. Errors name the broker, code and topic (*BrokerError).
func (p *Producer) Send(ctx context.Context, msg *Message) (*SendResult, error) {
	if err := p.in.running(); err != nil {
		return nil, err
	}
	o, err := p.prepare(msg, nil)
	if err != nil {
		return nil, err
	}
	return p.sendSync(ctx, o, nil)
}

// SendBatch sends msgs, which must share one topic, as one request
// (SEND_BATCH_MESSAGE). They are stored consecutively in one queue. The
// body is never compressed.
func (p *Producer) SendBatch(ctx context.Context, msgs ...*Message) (*SendResult, error) {
	if err := p.in.running(); err != nil {
		return nil, err
	}
	o, err := p.prepareBatch(msgs)
	if err != nil {
		return nil, err
	}
	return p.sendSync(ctx, o, nil)
}

// SendToQueue sends msg to one queue, without retries elsewhere.
func (p *Producer) SendToQueue(ctx context.Context, msg *Message, q MessageQueue) (*SendResult, error) {
	if err := p.in.running(); err != nil {
		return nil, err
	}
	o, err := p.prepare(msg, nil)
	if err != nil {
		return nil, err
	}
	return p.sendSync(ctx, o, &q)
}

// SendOrderly sends msg to the queue selector picks among the topic's
// writable queues (e.g. HashQueueSelector with an order id as arg), so
// messages with the same arg keep their order. No retry on another queue.
func (p *Producer) SendOrderly(ctx context.Context, msg *Message, selector QueueSelector, arg any) (*SendResult, error) {
	if err := p.in.running(); err != nil {
		return nil, err
	}
	if selector == nil {
		return nil, fmt.Errorf("client: nil queue selector")
	}
	qs, err := p.Queues(ctx, msg.Topic)
	if err != nil {
		return nil, err
	}
	if len(qs) == 0 {
		return nil, fmt.Errorf("%w: topic %s", ErrNoAvailableQueue, msg.Topic)
	}
	q := selector.Select(qs, msg, arg)
	return p.SendToQueue(ctx, msg, q)
}

// sendSync runs the attempt loop of a synchronous send; with fixed set only
// that queue is tried, once.
func (p *Producer) sendSync(ctx context.Context, o *outgoing, fixed *MessageQueue) (*SendResult, error) {
	defer o.forget()
	ctx, _, cancel := p.deadlines.with(ctx, p.sendDeadline(ctx))
	defer cancel()
	var qs []MessageQueue
	if fixed != nil {
		q := *fixed
		q.Topic = o.userTopic
		qs = []MessageQueue{q}
		if p.in.masterAddr(q.BrokerName) == "" {
			if _, err := p.in.publishRoute(ctx, o.topic, p.cfg.createTopicKey, p.cfg.defaultTopicQueueNums); err != nil {
				return nil, err
			}
		}
	} else {
		r, err := p.in.publishRoute(ctx, o.topic, p.cfg.createTopicKey, p.cfg.defaultTopicQueueNums)
		if err != nil {
			return nil, err
		}
		qs = r.publish
	}
	if len(qs) == 0 {
		return nil, fmt.Errorf("%w: topic %s", ErrNoAvailableQueue, o.userTopic)
	}
	attempts := 1 + p.cfg.retrySync
	if fixed != nil {
		attempts = 1
	}
	var (
		lastBroker string
		lastErr    error
		lastRes    *SendResult
		made       int
	)
	for attempt := 0; attempt < attempts; attempt++ {
		if ctx.Err() != nil {
			break
		}
		made++
		q := qs[0]
		if fixed == nil {
			q = p.fault.selectQueue(qs, lastBroker)
		}
		lastBroker = q.BrokerName
		res, err := p.attemptSync(ctx, o, q, attempt)
		p.stats.attempts.Add(1)
		if err == nil {
			if res.Status == SendOK || !p.cfg.retryAnotherBrokerNotOK {
				p.stats.sent.Add(1)
				return res, nil
			}
			lastRes = res
			continue
		}
		lastErr = err
		p.in.refreshSoon(o.topic)
		if !retriable(err) {
			p.stats.failed.Add(1)
			return nil, err
		}
		p.in.logger.Debug("send attempt failed", "topic", o.topic, "brokerName", q.BrokerName, "attempt", attempt, "err", err)
	}
	if lastRes != nil {
		p.stats.sent.Add(1)
		return lastRes, nil
	}
	p.stats.failed.Add(1)
	if lastErr == nil {
		lastErr = ctx.Err()
	}
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("%w: send to topic %s after %d attempt(s): %w", ErrTimeout, o.userTopic, made, lastErr)
	}
	return nil, lastErr
}

func (p *Producer) attemptSync(ctx context.Context, o *outgoing, q MessageQueue, attempt int) (*SendResult, error) {
	addr, err := p.addrOf(ctx, q)
	if err != nil {
		return nil, err
	}
	born := time.Now()
	req := p.newRequest(o, q, born.UnixMilli())
	sc := p.hookContext(o, q, addr, SendModeSync, attempt, born)
	p.before(ctx, sc)
	resp, err := p.in.remote.InvokeSync(ctx, addr, &req.cmd)
	p.releaseRequest(req)
	latency := time.Since(born)
	var res *SendResult
	if err == nil {
		res, err = p.result(o, q, addr, resp)
		resp.Release() // result kept copies of its strings
	} else {
		err = fmt.Errorf("client: send to %s@%s (topic %s): %w", q.BrokerName, addr, o.userTopic, err)
	}
	p.fault.update(q.BrokerName, latency, err != nil, err != nil && !isBrokerError(err))
	p.after(ctx, sc, res, err, latency)
	return res, err
}

func isBrokerError(err error) bool {
	var be *BrokerError
	return errors.As(err, &be)
}

// ---- one-way ----

// SendOneway sends msg without waiting for an answer: it returns once the
// request is queued on the connection. No retries; delivery is not
// confirmed.
func (p *Producer) SendOneway(ctx context.Context, msg *Message) error {
	if err := p.in.running(); err != nil {
		return err
	}
	o, err := p.prepare(msg, nil)
	if err != nil {
		return err
	}
	ctx, _, cancel := p.deadlines.with(ctx, p.sendDeadline(ctx))
	defer cancel()
	r, err := p.in.publishRoute(ctx, o.topic, p.cfg.createTopicKey, p.cfg.defaultTopicQueueNums)
	if err != nil {
		return err
	}
	if len(r.publish) == 0 {
		return fmt.Errorf("%w: topic %s", ErrNoAvailableQueue, o.userTopic)
	}
	q := p.fault.selectQueue(r.publish, "")
	addr, err := p.addrOf(ctx, q)
	if err != nil {
		return err
	}
	born := time.Now()
	sc := p.hookContext(o, q, addr, SendModeOneway, 0, born)
	p.before(ctx, sc)
	req := p.newRequest(o, q, born.UnixMilli())
	err = p.in.remote.InvokeOneway(ctx, addr, &req.cmd)
	p.releaseRequest(req)
	p.stats.oneway.Add(1)
	if err != nil {
		err = fmt.Errorf("client: oneway send to %s@%s (topic %s): %w", q.BrokerName, addr, o.userTopic, err)
	}
	p.after(ctx, sc, nil, err, time.Since(born))
	return err
}

// ---- asynchronous ----

// SendAsync sends msg and returns once the request is queued; cb runs
// exactly once, later, on a client callback goroutine, with the result or
// the error after up to WithAsyncRetries retries on other brokers. The
// send timeout (or ctx's deadline) bounds the whole send; cancelling ctx
// abandons it. cb must not block for long: it holds one of a bounded set of
// callback goroutines. If SendAsync returns an error, cb is not called.
// Close waits for outstanding callbacks. The first send to a topic blocks
// for its route lookup (bounded by the same deadline), as in RocketMQ.
// msg, its Body included, must not be modified until cb runs: a retry
// sends it again, and a large body is written to the socket from msg.Body
// itself, after SendAsync has returned.
func (p *Producer) SendAsync(ctx context.Context, msg *Message, cb func(*SendResult, error)) error {
	if cb == nil {
		return fmt.Errorf("client: nil callback")
	}
	if err := p.in.running(); err != nil {
		return err
	}
	if p.acc != nil && p.acc.batchable(msg) {
		return p.sendAutoBatch(ctx, msg, cb)
	}
	// The send and its message (properties included) in one recycled
	// object (newAsyncSend).
	a := p.newAsyncSend()
	now := time.Now() // the message id's time and the send's start: one clock read
	if err := p.prepareInto(&a.out, a.props[:0], msg, nil, now); err != nil {
		p.releaseAsyncSend(a)
		return err
	}
	if err := p.beginAsync(); err != nil {
		p.releaseAsyncSend(a)
		return err
	}
	a.out.recycled = true
	a.o = &a.out
	return p.startAsync(ctx, a, cb, now)
}

// newAsyncSend returns a zero asyncSend from the producer's recycled ones,
// to be given back with releaseAsyncSend once nothing refers to it: when
// SendAsync fails, or when its callback is about to run (done). Its
// SendResult is an allocation of its own, whose strings are copies
// (result), so a callback may keep it.
func (p *Producer) newAsyncSend() *asyncSend {
	if a, _ := p.asyncSends.Get().(*asyncSend); a != nil {
		return a
	}
	return &asyncSend{recycle: true}
}

// releaseAsyncSend clears a recycled asyncSend and gives it back.
func (p *Producer) releaseAsyncSend(a *asyncSend) {
	*a = asyncSend{recycle: true}
	p.asyncSends.Put(a)
}

// sendAutoBatch adds msg to its topic's auto-batch (producer_batch.go), or
// sends it on its own when the accumulator refuses it. The route is looked
// up here, as for every SendAsync, so the first send to a topic blocks its
// caller rather than the accumulator.
func (p *Producer) sendAutoBatch(ctx context.Context, msg *Message, cb func(*SendResult, error)) error {
	topic := wrapNamespace(p.cfg.namespace, msg.Topic)
	r, err := p.in.cachedRoute(topic), error(nil)
	if r == nil || len(r.publish) == 0 { // fetch under the send deadline; a cache hit needs no context
		dctx, cancel := context.WithDeadline(ctx, p.sendDeadline(ctx))
		r, err = p.in.publishRoute(dctx, topic, p.cfg.createTopicKey, p.cfg.defaultTopicQueueNums)
		cancel()
	}
	if err == nil && len(r.publish) == 0 {
		err = fmt.Errorf("%w: topic %s", ErrNoAvailableQueue, msg.Topic)
	}
	if err == nil {
		err = p.beginAsync()
	}
	if err != nil {
		return err
	}
	if p.acc.add(batchedSend{ctx: ctx, msg: msg, cb: cb}) {
		return nil
	}
	o, err := p.prepare(msg, nil)
	if err != nil {
		p.inflight.Done()
		return err
	}
	return p.sendAsyncCounted(ctx, o, cb)
}

// SendBatchAsync is SendBatch with SendAsync's completion model.
func (p *Producer) SendBatchAsync(ctx context.Context, msgs []*Message, cb func(*SendResult, error)) error {
	if cb == nil {
		return fmt.Errorf("client: nil callback")
	}
	if err := p.in.running(); err != nil {
		return err
	}
	o, err := p.prepareBatch(msgs)
	if err != nil {
		return err
	}
	return p.sendAsync(ctx, o, cb)
}

func (p *Producer) sendAsync(ctx context.Context, o *outgoing, cb func(*SendResult, error)) error {
	if err := p.beginAsync(); err != nil {
		return err
	}
	return p.sendAsyncCounted(ctx, o, cb)
}

// sendAsyncCounted is sendAsync for a send that already holds its inflight
// count (beginAsync, or the accumulator's Add while its messages hold
// theirs); on an error it releases the count and cb is not called.
func (p *Producer) sendAsyncCounted(ctx context.Context, o *outgoing, cb func(*SendResult, error)) error {
	return p.startAsync(ctx, &asyncSend{o: o}, cb, time.Now())
}

// startAsync is sendAsyncCounted, starting at now, for a send whose a.o
// is set and whose other fields are zero.
func (p *Producer) startAsync(ctx context.Context, a *asyncSend, cb func(*SendResult, error), now time.Time) error {
	// One deadline context for the whole send, usually shared with the
	// other sends of the same millisecond (producer_deadline.go).
	dctx, deadline, cancel := p.deadlines.with(ctx, p.sendDeadlineFrom(ctx, now))
	r, err := p.in.publishRoute(dctx, a.o.topic, p.cfg.createTopicKey, p.cfg.defaultTopicQueueNums)
	if err == nil && len(r.publish) == 0 {
		err = fmt.Errorf("%w: topic %s", ErrNoAvailableQueue, a.o.userTopic)
	}
	if err != nil {
		cancel()
		p.inflight.Done()
		if a.recycle {
			p.releaseAsyncSend(a)
		}
		return err
	}
	a.p, a.qs, a.cb, a.deadline, a.parent, a.ctx, a.cancel = p, r.publish, cb, deadline, ctx, dctx, cancel
	if err := a.attempt(now); err != nil {
		cancel()
		p.inflight.Done()
		if a.recycle { // remoting refused the call: it refers to nothing
			p.releaseAsyncSend(a)
		}
		return err
	}
	return nil
}

// asyncSend is one SendAsync in progress. Attempts run one after another:
// the next attempt starts from the previous one's callback. SendAsync's
// asyncSends are recycled (recycle, newAsyncSend) when the callback is
// about to run: nothing refers into one past that point (its result and
// the result's strings are allocations of their own), and its properties'
// bytes (props) are written again by the next send.
type asyncSend struct {
	p        *Producer
	o        *outgoing
	qs       []MessageQueue
	cb       func(*SendResult, error)
	deadline time.Time
	parent   context.Context
	ctx      context.Context    // parent with deadline, for every attempt
	cancel   context.CancelFunc // releases ctx once the callback ran

	n int32 // attempts made
	// recycle: a comes from newAsyncSend (SendAsync), and goes back once
	// its callback is about to run.
	recycle    bool
	lastBroker string

	// The attempt in flight, for OnResponse: set by attempt before its
	// request goes out, read by its callback before the next attempt.
	q    MessageQueue
	addr string
	sc   *SendContext
	born time.Time
	call remoting.AsyncCall // the attempt's remoting state, reused by the next

	out outgoing // what o points to when SendAsync prepared it in place
	// props holds out's properties when SendAsync prepared them in place
	// (prepareInto); last, so that the GC's scan of a stops before it.
	props [propsInline]byte
}

// attempt starts the next attempt at born. An error means the request could not
// be queued and nothing will call back; for the first attempt it is
// returned to the caller, for later ones finish reports it.
func (a *asyncSend) attempt(born time.Time) error {
	p := a.p
	q := p.fault.selectQueue(a.qs, a.lastBroker)
	a.lastBroker = q.BrokerName
	attemptNo := int(a.n)
	a.n++
	ctx := a.ctx
	addr, err := p.addrOf(ctx, q)
	if err != nil {
		return err
	}
	sc := p.hookContext(a.o, q, addr, SendModeAsync, attemptNo, born)
	p.before(ctx, sc)
	p.stats.attempts.Add(1)
	req := p.newRequest(a.o, q, born.UnixMilli())
	a.q, a.addr, a.sc, a.born = q, addr, sc, born
	// a is the callback (OnResponse): no closure per attempt. Past this
	// call only locals are read, as the callback may start the next
	// attempt at once.
	err = p.in.remote.InvokeAsyncCall(ctx, addr, &req.cmd, &a.call, a)
	p.releaseRequest(req)
	if err != nil {
		p.fault.update(q.BrokerName, time.Since(born), true, true)
		return fmt.Errorf("client: async send to %s@%s (topic %s): %w", q.BrokerName, addr, a.o.userTopic, err)
	}
	return nil
}

// OnResponse is the remoting callback of the attempt in flight.
func (a *asyncSend) OnResponse(resp *protocol.Command, err error) {
	p, q, addr, sc, born := a.p, a.q, a.addr, a.sc, a.born
	var latency time.Duration
	if p.fault.enabled || sc != nil { // nobody else reads the clock
		latency = time.Since(born)
	}
	var res *SendResult
	if err == nil {
		res, err = p.result(a.o, q, addr, resp)
		resp.Release() // result kept copies of its strings
	} else {
		err = fmt.Errorf("client: async send to %s@%s (topic %s): %w", q.BrokerName, addr, a.o.userTopic, err)
	}
	p.fault.update(q.BrokerName, latency, err != nil, err != nil && !isBrokerError(err))
	p.after(a.ctx, sc, res, err, latency)
	a.done(res, err)
}

// done handles an attempt's outcome: retry or call back.
func (a *asyncSend) done(res *SendResult, err error) {
	if err != nil {
		a.p.in.refreshSoon(a.o.topic)
	}
	for err != nil && retriable(err) && int(a.n) <= a.p.cfg.retryAsync && time.Now().Before(a.deadline) && a.parent.Err() == nil {
		aerr := a.attempt(time.Now())
		if aerr == nil {
			return // the next attempt calls back
		}
		err = aerr
	}
	p, cb, cancel := a.p, a.cb, a.cancel
	if a.recycle {
		// Nothing refers to a any more: remoting let go of its call when
		// it called OnResponse, and res and err are not in it.
		p.releaseAsyncSend(a)
	} else {
		a.forget()
	}
	defer p.inflight.Done()
	defer cancel()
	if err != nil {
		p.stats.failed.Add(1)
	} else {
		p.stats.sent.Add(1)
	}
	cb(res, err)
}

// forget drops what a (one not recycled) refers to once its last attempt
// is over: the callback may keep its SendResult, which can live in the
// outgoing's storage, and with it the outgoing, but not the message, its
// body, the contexts or the route.
func (a *asyncSend) forget() {
	a.o.forget()
	a.o, a.qs, a.cb, a.parent, a.ctx, a.cancel, a.sc = nil, nil, nil, nil, nil, nil, nil
	a.call = remoting.AsyncCall{}
}
