package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
)

// consumerEnv is what consumers need from the shared client instance
// (instance.go): identity, routes, broker addresses, the remoting client and
// the registry that puts consumers into heartbeats and routes
// NOTIFY_CONSUMER_IDS_CHANGED to them. consumer_instance.go adapts the
// instance to it; tests may fake it.
type consumerEnv interface {
	clientID() string
	invokeSync(ctx context.Context, addr string, req *protocol.Command) (*protocol.Command, error)
	// invokeAsync sends req and returns; cb runs exactly once with the
	// answer or an error, unless invokeAsync itself fails.
	invokeAsync(ctx context.Context, addr string, req *protocol.Command, cb func(*protocol.Command, error)) error
	invokeOneway(ctx context.Context, addr string, req *protocol.Command) error
	// subscribeQueues returns the readable queues of a topic (wire name),
	// sorted, fetching the route from a name server when it is not cached.
	subscribeQueues(ctx context.Context, topic string) ([]MessageQueue, error)
	// brokerAddr returns the address of brokerName's master, or of another
	// member when the master is absent and onlyMaster is false; "" when
	// the broker is unknown.
	brokerAddr(brokerName string, onlyMaster bool) string
	// brokerAddrByID returns the address of one member of brokerName, ""
	// when that id is unknown.
	brokerAddrByID(brokerName string, id int64) string
	// topicBrokerAddrs returns one address per broker serving topic
	// (masters preferred), in random order.
	topicBrokerAddrs(ctx context.Context, topic string) []string
	registerConsumer(group string, c consumerInner) error
	unregisterConsumer(group string)
	// heartbeatNow sends a heartbeat to every known broker at once.
	heartbeatNow(ctx context.Context)
	// requestHeartbeat asks the heartbeat loop to run soon (non-blocking).
	requestHeartbeat()
	namespace() string
}

// consumerInner is what the instance needs from a consumer: its heartbeat
// data, the topics whose routes to keep fresh, and a rebalance trigger.
type consumerInner interface {
	consumerData() protocol.ConsumerData
	subscribedTopics() []string
	rebalanceNow()
}

// consumerAPI issues the consumer's broker requests (docs/protocol.md §3.4, §7).
type consumerAPI struct {
	env   consumerEnv
	group string // wire name
}

func (a *consumerAPI) addr(ctx context.Context, mq MessageQueue, onlyMaster bool) (string, error) {
	if addr := a.env.brokerAddr(mq.BrokerName, onlyMaster); addr != "" {
		return addr, nil
	}
	// Unknown broker: refresh the topic's route once and look again.
	if _, err := a.env.subscribeQueues(ctx, mq.Topic); err != nil {
		return "", err
	}
	if addr := a.env.brokerAddr(mq.BrokerName, onlyMaster); addr != "" {
		return addr, nil
	}
	return "", fmt.Errorf("client: broker %s of topic %s not found: %w", mq.BrokerName, mq.Topic, ErrNoRoute)
}

func (a *consumerAPI) call(ctx context.Context, mq MessageQueue, onlyMaster bool, code protocol.RequestCode, header any, timeout time.Duration) (*protocol.Command, string, error) {
	return a.invoke(ctx, mq, onlyMaster, protocol.NewRequestList(code, protocol.AppendHeader(nil, header, false), nil), timeout)
}

// invoke sends req to the queue's broker and waits up to timeout.
func (a *consumerAPI) invoke(ctx context.Context, mq MessageQueue, onlyMaster bool, req *protocol.Command, timeout time.Duration) (*protocol.Command, string, error) {
	addr, err := a.addr(ctx, mq, onlyMaster)
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := a.env.invokeSync(ctx, addr, req)
	if err != nil {
		return nil, addr, fmt.Errorf("client: %s to %s (%s): %w", req.RequestCode(), mq.BrokerName, addr, err)
	}
	return resp, addr, nil
}

// queryConsumerOffset implements offsetBackend: -1 when the broker has no
// offset (QUERY_NOT_FOUND).
func (a *consumerAPI) queryConsumerOffset(ctx context.Context, group string, mq MessageQueue) (int64, error) {
	h := protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: mq.Topic, QueueID: int32(mq.QueueID)}
	resp, addr, err := a.call(ctx, mq, false, protocol.QueryConsumerOffset, &h, 3*time.Second)
	if err != nil {
		return -1, err
	}
	switch protocol.ResponseCode(resp.Code) {
	case protocol.Success:
		return resp.ExtInt64("offset")
	case protocol.QueryNotFound:
		return -1, nil
	}
	return -1, newBrokerError(addr, mq.BrokerName, mq.Topic, resp)
}

// updateConsumerOffset implements offsetBackend. Like the Go client it
// waits for the answer, so a failed upload is reported.
func (a *consumerAPI) updateConsumerOffset(ctx context.Context, group string, mq MessageQueue, offset int64) error {
	h := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: mq.Topic, QueueID: int32(mq.QueueID), CommitOffset: offset}
	resp, addr, err := a.call(ctx, mq, false, protocol.UpdateConsumerOffset, &h, 3*time.Second)
	if err != nil {
		return err
	}
	if resp.Code != int32(protocol.Success) {
		return newBrokerError(addr, mq.BrokerName, mq.Topic, resp)
	}
	return nil
}

// maxOffset is GET_MAX_OFFSET: the next offset to be written.
func (a *consumerAPI) maxOffset(ctx context.Context, mq MessageQueue) (int64, error) {
	h := protocol.QueueHeader{Topic: mq.Topic, QueueID: int32(mq.QueueID)}
	return a.offsetCall(ctx, mq, protocol.GetMaxOffset, &h)
}

// minOffset is GET_MIN_OFFSET.
func (a *consumerAPI) minOffset(ctx context.Context, mq MessageQueue) (int64, error) {
	h := protocol.QueueHeader{Topic: mq.Topic, QueueID: int32(mq.QueueID)}
	return a.offsetCall(ctx, mq, protocol.GetMinOffset, &h)
}

// searchOffset is SEARCH_OFFSET_BY_TIMESTAMP.
func (a *consumerAPI) searchOffset(ctx context.Context, mq MessageQueue, t time.Time) (int64, error) {
	h := protocol.SearchOffsetRequestHeader{Topic: mq.Topic, QueueID: int32(mq.QueueID), Timestamp: t.UnixMilli()}
	return a.offsetCall(ctx, mq, protocol.SearchOffsetByTimestamp, &h)
}

func (a *consumerAPI) offsetCall(ctx context.Context, mq MessageQueue, code protocol.RequestCode, header any) (int64, error) {
	resp, addr, err := a.call(ctx, mq, false, code, header, 3*time.Second)
	if err != nil {
		return -1, err
	}
	if resp.Code != int32(protocol.Success) {
		return -1, newBrokerError(addr, mq.BrokerName, mq.Topic, resp)
	}
	off, err := resp.ExtInt64("offset")
	if err != nil {
		return -1, fmt.Errorf("client: %s from %s: %w", code, addr, err)
	}
	return off, nil
}

// consumerIDs is GET_CONSUMER_LIST_BY_GROUP asked to a random broker of
// topic (every broker knows every member through heartbeats); when that
// broker fails, the next one is asked.
func (a *consumerAPI) consumerIDs(ctx context.Context, topic string) ([]string, error) {
	addrs := a.env.topicBrokerAddrs(ctx, topic)
	if len(addrs) == 0 {
		return nil, fmt.Errorf("client: no broker for topic %s: %w", topic, ErrNoRoute)
	}
	var errs []error
	for _, addr := range addrs {
		ids, err := a.consumerIDsFrom(ctx, addr, topic)
		if err == nil {
			return ids, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

func (a *consumerAPI) consumerIDsFrom(ctx context.Context, addr, topic string) ([]string, error) {
	h := protocol.ConsumerGroupHeader{ConsumerGroup: a.group}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp, err := a.env.invokeSync(ctx, addr, protocol.NewRequest(protocol.GetConsumerListByGroup, protocol.EncodeHeader(&h, false), nil))
	if err != nil {
		return nil, fmt.Errorf("client: GET_CONSUMER_LIST_BY_GROUP to %s: %w", addr, err)
	}
	if resp.Code != int32(protocol.Success) {
		return nil, newBrokerError(addr, "", topic, resp)
	}
	var body protocol.ConsumerListBody
	if err := json.Unmarshal(resp.Body, &body); err != nil {
		return nil, fmt.Errorf("client: consumer list from %s: %w", addr, err)
	}
	return body.ConsumerIDList, nil
}

// lockBatch is LOCK_BATCH_MQ for queues of one broker; it returns the
// queues this client now holds.
func (a *consumerAPI) lockBatch(ctx context.Context, brokerName string, mqs []MessageQueue) ([]MessageQueue, error) {
	resp, addr, err := a.lockCall(ctx, protocol.LockBatchMQ, brokerName, mqs)
	if err != nil {
		return nil, err
	}
	if resp.Code != int32(protocol.Success) {
		return nil, newBrokerError(addr, brokerName, "", resp)
	}
	var body protocol.LockBatchResponseBody
	if err := json.Unmarshal(resp.Body, &body); err != nil {
		return nil, fmt.Errorf("client: lock response from %s: %w", addr, err)
	}
	out := make([]MessageQueue, 0, len(body.LockOKMQSet))
	for _, q := range body.LockOKMQSet {
		out = append(out, MessageQueue{Topic: q.Topic, BrokerName: q.BrokerName, QueueID: int(q.QueueID)})
	}
	return out, nil
}

// unlockBatch is UNLOCK_BATCH_MQ.
func (a *consumerAPI) unlockBatch(ctx context.Context, brokerName string, mqs []MessageQueue) error {
	resp, addr, err := a.lockCall(ctx, protocol.UnlockBatchMQ, brokerName, mqs)
	if err != nil {
		return err
	}
	if resp.Code != int32(protocol.Success) {
		return newBrokerError(addr, brokerName, "", resp)
	}
	return nil
}

func (a *consumerAPI) lockCall(ctx context.Context, code protocol.RequestCode, brokerName string, mqs []MessageQueue) (*protocol.Command, string, error) {
	addr := a.env.brokerAddr(brokerName, true)
	if addr == "" {
		return nil, "", fmt.Errorf("client: %s: master of %s unknown: %w", code, brokerName, ErrNoRoute)
	}
	body := protocol.LockBatchRequestBody{ConsumerGroup: a.group, ClientID: a.env.clientID()}
	for _, mq := range mqs {
		body.MQSet = append(body.MQSet, protocol.MessageQueue{Topic: mq.Topic, BrokerName: mq.BrokerName, QueueID: int32(mq.QueueID)})
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, "", fmt.Errorf("client: encode lock body: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	resp, err := a.env.invokeSync(ctx, addr, protocol.NewRequest(code, nil, data))
	if err != nil {
		return nil, addr, fmt.Errorf("client: %s to %s (%s): %w", code, brokerName, addr, err)
	}
	return resp, addr, nil
}

// pullRequest is one PULL_MESSAGE call.
type pullRequest struct {
	mq             MessageQueue
	offset         int64
	maxNums        int32
	sysFlag        int32
	commitOffset   int64
	suspend        time.Duration
	timeout        time.Duration
	subExpression  string
	expressionType string
	subVersion     int64
	lite           bool
	// brokerID is the member of the queue's broker to pull from (the
	// previous answer's suggestWhichBrokerId); 0 = master. An unknown id
	// falls back to the master.
	brokerID int64
	// scratch, when set, holds the decoded records (the result's msgs):
	// valid until the caller's next pull with it (a pull loop's own).
	scratch *message.ExtScratch
}

// pullResult is a pull answer: the response code, the offsets and the
// decoded messages (already decompressed).
type pullResult struct {
	code            protocol.ResponseCode
	nextBeginOffset int64
	minOffset       int64
	maxOffset       int64
	msgs            []*message.Ext
	addr            string
	// suggestBrokerID is where the broker wants the next pull to go.
	suggestBrokerID int64
}

// pull sends PULL_MESSAGE (or LITE_PULL_MESSAGE) to the master of the
// queue's broker and waits up to r.timeout for the answer.
func (a *consumerAPI) pull(ctx context.Context, r *pullRequest) (*pullResult, error) {
	req, addr, err := a.pullCommand(ctx, r)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	resp, err := a.env.invokeSync(cctx, addr, req)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("client: %s to %s (%s): %w", req.RequestCode(), r.mq.BrokerName, addr, err)
	}
	return a.pullResponse(r, resp, addr)
}

// pullCommand builds r's request and picks the member of the queue's
// broker it goes to: the one r.brokerID names when known, else the master.
func (a *consumerAPI) pullCommand(ctx context.Context, r *pullRequest) (*protocol.Command, string, error) {
	h := protocol.PullMessageRequestHeader{
		ConsumerGroup:        a.group,
		Topic:                r.mq.Topic,
		QueueID:              int32(r.mq.QueueID),
		QueueOffset:          r.offset,
		MaxMsgNums:           r.maxNums,
		SysFlag:              r.sysFlag,
		CommitOffset:         r.commitOffset,
		SuspendTimeoutMillis: r.suspend.Milliseconds(),
		Subscription:         r.subExpression,
		SubVersion:           r.subVersion,
		ExpressionType:       r.expressionType,
		BrokerName:           r.mq.BrokerName,
	}
	code := protocol.PullMessage
	if r.lite {
		code = protocol.LitePullMessage
	}
	addr := a.env.brokerAddrByID(r.mq.BrokerName, r.brokerID)
	if r.brokerID != 0 && addr != "" {
		// Reading from a slave: it must not store our offset (docs/protocol.md §7.2 bit 0).
		h.SysFlag &^= protocol.PullFlagCommitOffset
	} else {
		var err error
		if addr, err = a.addr(ctx, r.mq, false); err != nil {
			return nil, "", err
		}
	}
	req := protocol.NewRequestList(code, protocol.AppendHeader(nil, &h, false), nil)
	// The binary ROCKETMQ header (docs/protocol.md §1.5), as for sends: cheaper
	// to encode and decode than JSON on both sides, for the request and
	// for the response, which brokers answer in kind.
	req.SerializeType = protocol.SerializeRocketMQ
	return req, addr, nil
}

// pendingPull is a pull sent without waiting for its answer (the lite
// pull loop's pipeline). Its callback sends exactly one reply into done,
// which has room for it, so an abandoned pull blocks nothing.
type pendingPull struct {
	req    *pullRequest
	done   chan pullReply
	cancel context.CancelFunc
}

type pullReply struct {
	resp *protocol.Command
	addr string
	err  error
}

// startPull sends r and returns at once; waitPull collects the answer.
// The caller must end it with waitPull or abandon.
func (a *consumerAPI) startPull(ctx context.Context, r *pullRequest) *pendingPull {
	p := &pendingPull{req: r, done: make(chan pullReply, 1), cancel: func() {}}
	req, addr, err := a.pullCommand(ctx, r)
	if err != nil {
		p.done <- pullReply{err: err}
		return p
	}
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	p.cancel = cancel
	code := req.RequestCode()
	wrap := func(err error) error {
		return fmt.Errorf("client: %s to %s (%s): %w", code, r.mq.BrokerName, addr, err)
	}
	if err := a.env.invokeAsync(cctx, addr, req, func(resp *protocol.Command, err error) {
		if err != nil {
			err = wrap(err)
		}
		p.done <- pullReply{resp: resp, addr: addr, err: err}
	}); err != nil {
		p.done <- pullReply{err: wrap(err)}
	}
	return p
}

// waitPull waits for p's answer (until ctx ends) and decodes it as pull
// does.
func (a *consumerAPI) waitPull(ctx context.Context, p *pendingPull) (*pullResult, error) {
	defer p.cancel()
	select {
	case r := <-p.done:
		if r.err != nil {
			return nil, r.err
		}
		return a.pullResponse(p.req, r.resp, r.addr)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// abandon drops a pull whose answer is no longer wanted.
func (p *pendingPull) abandon() { p.cancel() }

// pullResponse decodes the answer to r from addr; the messages' bodies
// alias resp's body, which nothing else holds.
func (a *consumerAPI) pullResponse(r *pullRequest, resp *protocol.Command, addr string) (*pullResult, error) {
	res := &pullResult{code: protocol.ResponseCode(resp.Code), addr: addr}
	switch res.code {
	case protocol.Success, protocol.PullNotFound, protocol.PullRetryImmediately, protocol.PullOffsetMoved:
	default:
		return nil, newBrokerError(addr, r.mq.BrokerName, r.mq.Topic, resp)
	}
	var rh protocol.PullMessageResponseHeader
	if err := protocol.DecodeHeader(resp.ExtFields, &rh, false); err != nil {
		return nil, fmt.Errorf("client: pull response from %s: %w", addr, err)
	}
	res.nextBeginOffset, res.minOffset, res.maxOffset = rh.NextBeginOffset, rh.MinOffset, rh.MaxOffset
	res.suggestBrokerID = rh.SuggestWhichBrokerID
	if res.code == protocol.Success && len(resp.Body) > 0 {
		// The response frame was read for this call and nothing else
		// holds it: the messages' bodies may alias it (no copy).
		msgs, err := message.DecodeStoredAllOwnedScratch(resp.Body, message.DecodeOptions{Decompress: true}, r.scratch)
		if err != nil && len(msgs) == 0 {
			return nil, fmt.Errorf("client: pull body from %s: %w", addr, err)
		}
		if err != nil {
			// Keep what decoded and pull the rest again rather than skip
			// past messages we could not read.
			res.nextBeginOffset = msgs[len(msgs)-1].QueueOffset + 1
		}
		res.msgs = msgs
	}
	return res, nil
}

// sendBack returns a message the listener failed on to the broker
// (CONSUMER_SEND_MSG_BACK 36, docs/protocol.md §7.8). delayLevel 0 lets the
// broker choose (3 + reconsume times); -1 sends it to the DLQ. When the
// call fails it falls back to a plain send to %RETRY%<group>.
func (a *consumerAPI) sendBack(ctx context.Context, m *MessageExt, delayLevel int, maxReconsume int32) error {
	mq := MessageQueue{Topic: m.Topic, BrokerName: m.BrokerName, QueueID: int(m.QueueID)}
	ext := map[string]string{
		"offset":            strconv.FormatInt(m.CommitLogOffset, 10),
		"group":             a.group,
		"delayLevel":        strconv.Itoa(delayLevel),
		"originMsgId":       m.MsgID,
		"originTopic":       wrapNamespace(a.env.namespace(), m.Topic),
		"unitMode":          "false",
		"maxReconsumeTimes": strconv.Itoa(int(maxReconsume)),
		"bname":             m.BrokerName,
	}
	addr, err := a.addr(ctx, mq, true)
	if err == nil {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		var resp *protocol.Command
		resp, err = a.env.invokeSync(cctx, addr, protocol.NewRequest(protocol.ConsumerSendMsgBack, ext, nil))
		cancel()
		if err == nil && resp.Code == int32(protocol.Success) {
			return nil
		}
		if err == nil {
			err = newBrokerError(addr, m.BrokerName, m.Topic, resp)
		}
	}
	if ferr := a.sendToRetryTopic(ctx, m, delayLevel, maxReconsume); ferr != nil {
		return errors.Join(err, ferr)
	}
	return nil
}

// sendToRetryTopic is the fallback of sendBack: a normal send of a copy to
// %RETRY%<group> with the retry properties set (docs/protocol.md §7.8 step 4).
func (a *consumerAPI) sendToRetryTopic(ctx context.Context, m *MessageExt, delayLevel int, maxReconsume int32) error {
	retryTopic := names.RetryGroupTopicPrefix + a.group
	props := make(map[string]string, len(m.Properties)+3)
	for k, v := range m.Properties {
		props[k] = v
	}
	if props[message.PropertyRetryTopic] == "" {
		props[message.PropertyRetryTopic] = wrapNamespace(a.env.namespace(), m.Topic)
	}
	if props[message.PropertyOriginMessageID] == "" {
		props[message.PropertyOriginMessageID] = m.MsgID
	}
	if delayLevel <= 0 {
		// Broker's choice, or a dead-letter request: the broker diverts
		// to the DLQ by the reconsume count in the header.
		delayLevel = 3 + int(m.ReconsumeTimes)
	}
	props[message.PropertyDelayTimeLevel] = strconv.Itoa(delayLevel)
	qs, err := a.env.subscribeQueues(ctx, retryTopic)
	if err != nil || len(qs) == 0 {
		return fmt.Errorf("client: retry topic %s has no route: %w", retryTopic, ErrNoRoute)
	}
	mq := qs[int(m.QueueOffset)%len(qs)]
	h := protocol.SendMessageRequestHeader{
		ProducerGroup:     names.GroupClientInner,
		Topic:             retryTopic,
		DefaultTopic:      names.TopicAutoCreate,
		QueueID:           int32(mq.QueueID),
		SysFlag:           0,
		BornTimestamp:     time.Now().UnixMilli(),
		Flag:              m.Flag,
		Properties:        message.EncodeProperties(props),
		ReconsumeTimes:    m.ReconsumeTimes + 1,
		MaxReconsumeTimes: maxReconsume,
		BrokerName:        mq.BrokerName,
	}
	h.DefaultTopicQueueNums = 4
	resp, addr, err := a.callBody(ctx, mq, protocol.SendMessage, &h, m.Body)
	if err != nil {
		return err
	}
	if resp.Code != int32(protocol.Success) {
		return newBrokerError(addr, mq.BrokerName, retryTopic, resp)
	}
	return nil
}

func (a *consumerAPI) callBody(ctx context.Context, mq MessageQueue, code protocol.RequestCode, header any, body []byte) (*protocol.Command, string, error) {
	addr, err := a.addr(ctx, mq, true)
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp, err := a.env.invokeSync(ctx, addr, protocol.NewRequestList(code, protocol.AppendHeader(nil, header, false), body))
	if err != nil {
		return nil, addr, fmt.Errorf("client: %s to %s (%s): %w", code, mq.BrokerName, addr, err)
	}
	return resp, addr, nil
}
