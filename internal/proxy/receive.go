package proxy

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
	pb "github.com/apogeemq/apogee/internal/rmqpb"
)

// Receive limits (the reference proxy's defaults).
const (
	maxReceiveBatch        = 32
	autoRenewInvisible     = 60 * time.Second // auto_renew receives carry no invisible_duration
	maxInvisibleDuration   = 12 * time.Hour
	minLongPolling         = 5 * time.Second
	maxLongPolling         = 20 * time.Second
	pollMargin             = 500 * time.Millisecond // the last frames must beat the client's deadline
	defaultRequestTimeout  = 3 * time.Second
	DefaultMinInvisibleRcv = 10 * time.Second // minInvisibleTimeMillsForRecv
)

// ReceiveMessage pops up to batch_size messages of the topic on the broker
// the queue names, with long polling, and streams status, messages and the
// delivery timestamp (docs/grpc.md §6.5). No message: MESSAGE_NOT_FOUND.
func (svc *service) ReceiveMessage(req *pb.ReceiveMessageRequest, stream pb.MessagingService_ReceiveMessageServer) error {
	ctx := stream.Context()
	finish := func(st *pb.Status) error {
		if err := stream.Send(&pb.ReceiveMessageResponse{Content: &pb.ReceiveMessageResponse_Status{Status: st}}); err != nil {
			return err
		}
		return stream.Send(&pb.ReceiveMessageResponse{Content: &pb.ReceiveMessageResponse_DeliveryTimestamp{DeliveryTimestamp: timestamppb.Now()}})
	}
	id, err := svc.begin(ctx)
	if err != nil {
		return finish(toStatus(err))
	}
	pr, err := svc.prepareReceive(ctx, id, req)
	if err != nil {
		return finish(toStatus(err))
	}
	cctx, cancel := context.WithTimeout(ctx, pr.poll+brokerCallTimeout)
	defer cancel()
	var msgs []*pb.Message
	var st *pb.Status
	if svc.isLiteConsumer(id) {
		msgs, st = svc.liteReceive(cctx, id, pr) // lite.go: the subscribed lite topics
	} else {
		msgs, st = svc.pop(cctx, pr)
	}
	if st.Code != pb.Code_OK {
		return finish(st)
	}
	if len(msgs) == 0 {
		return finish(statusf(pb.Code_MESSAGE_NOT_FOUND, "no match message"))
	}
	if pr.autoRenew {
		for _, m := range msgs {
			svc.renewer.track(id, pr.group, pr.topic, m.GetSystemProperties().GetReceiptHandle())
		}
	}
	if err := stream.Send(&pb.ReceiveMessageResponse{Content: &pb.ReceiveMessageResponse_Status{Status: okStatus()}}); err != nil {
		svc.release(pr, msgs)
		return err
	}
	for i, m := range msgs {
		if err := stream.Send(&pb.ReceiveMessageResponse{Content: &pb.ReceiveMessageResponse_Message{Message: m}}); err != nil {
			// The client went away: what it did not get comes back soon.
			svc.release(pr, msgs[i:])
			return err
		}
	}
	return stream.Send(&pb.ReceiveMessageResponse{Content: &pb.ReceiveMessageResponse_DeliveryTimestamp{DeliveryTimestamp: timestamppb.Now()}})
}

// receive is a validated ReceiveMessage.
type receive struct {
	group, topic   string
	broker         brokerQueues
	batch          int32
	invisible      time.Duration
	poll           time.Duration
	fifo           bool
	autoRenew      bool
	attemptID      string
	expType, exp   string
	tags           map[string]bool // exact tag post-filter; nil = none
	clientVersion  string
	requestTimeout time.Duration
}

func (svc *service) prepareReceive(ctx context.Context, id string, req *pb.ReceiveMessageRequest) (*receive, error) {
	group, err := checkGroup(req.GetGroup())
	if err != nil {
		return nil, err
	}
	topic, err := checkTopic(req.GetMessageQueue().GetTopic())
	if err != nil {
		return nil, err
	}
	pr := &receive{group: group, topic: topic, autoRenew: req.GetAutoRenew(), attemptID: req.GetAttemptId(),
		requestTimeout: defaultRequestTimeout}
	st := svc.srv.clients.settings(id) // may be nil: a Receive can beat the client's settings
	if d := st.GetRequestTimeout(); d != nil && d.AsDuration() > 0 {
		pr.requestTimeout = d.AsDuration()
	}
	if err := pr.setFilter(req.GetFilterExpression()); err != nil {
		return nil, err
	}
	if sub := st.GetSubscription(); sub != nil && sub.Fifo != nil {
		pr.fifo = sub.GetFifo()
	} else {
		gctx, cancel := withTimeout(ctx, brokerCallTimeout)
		pr.fifo = svc.groupConfig(gctx, group, []*pb.SubscriptionEntry{{Topic: req.GetMessageQueue().GetTopic()}}).ConsumeMessageOrderly
		cancel()
	}
	switch {
	case pr.autoRenew:
		pr.invisible = autoRenewInvisible
	case req.InvisibleDuration == nil:
		return nil, errStatus(pb.Code_ILLEGAL_INVISIBLE_TIME, "invisible duration is required")
	default:
		pr.invisible = req.GetInvisibleDuration().AsDuration()
		if pr.invisible < svc.srv.minInvisible || pr.invisible > maxInvisibleDuration {
			return nil, errStatus(pb.Code_ILLEGAL_INVISIBLE_TIME, "invisible duration %s is out of range [%s, %s]",
				pr.invisible, svc.srv.minInvisible, maxInvisibleDuration)
		}
	}
	pr.batch = req.GetBatchSize()
	if pr.batch <= 0 || pr.batch > maxReceiveBatch {
		pr.batch = min(max(pr.batch, receiveBatchSize), maxReceiveBatch)
	}
	// Polling time: the client's long_polling_timeout, or (proto v2.0
	// clients) what its deadline leaves after half a request timeout;
	// clamped to [5 s, 20 s] and always inside the deadline.
	var poll time.Duration
	if lp := req.GetLongPollingTimeout(); lp != nil {
		poll = lp.AsDuration()
	} else if dl, ok := ctx.Deadline(); ok {
		poll = time.Until(dl) - pr.requestTimeout/2
	} else {
		poll = maxLongPolling
	}
	poll = min(max(poll, minLongPolling), maxLongPolling)
	if dl, ok := ctx.Deadline(); ok {
		poll = min(poll, time.Until(dl)-pollMargin)
	}
	if poll <= 0 {
		return nil, errStatus(pb.Code_ILLEGAL_POLLING_TIME, "the request deadline leaves no time to poll")
	}
	pr.poll = poll
	cctx, cancel := withTimeout(ctx, brokerCallTimeout)
	defer cancel()
	r, err := svc.srv.backend.route(cctx, topic)
	if err != nil {
		return nil, err
	}
	b, ok := r.broker(req.GetMessageQueue().GetBroker().GetName())
	if !ok || !protocol.PermReadable(b.perm) {
		var found bool
		for _, cand := range r.brokers {
			if protocol.PermReadable(cand.perm) && cand.read > 0 {
				b, found = cand, true
				break
			}
		}
		if !found {
			return nil, errStatus(pb.Code_FORBIDDEN, "no readable queue")
		}
	}
	pr.broker = b
	return pr, nil
}

// setFilter takes the subscription expression: TAG (default, "*" = all,
// "a||b") or SQL92.
func (pr *receive) setFilter(f *pb.FilterExpression) error {
	exp := strings.TrimSpace(f.GetExpression())
	switch f.GetType() {
	case pb.FilterType_SQL:
		if exp == "" {
			return errStatus(pb.Code_ILLEGAL_FILTER_EXPRESSION, "SQL92 expression cannot be blank")
		}
		pr.expType, pr.exp = protocol.ExpressionSQL92, exp
	default:
		if exp == "" {
			exp = protocol.SubAll
		}
		pr.expType, pr.exp = protocol.ExpressionTag, exp
		if exp != protocol.SubAll {
			pr.tags = map[string]bool{}
			for t := range strings.SplitSeq(exp, "||") {
				if t = strings.TrimSpace(t); t != "" {
					pr.tags[t] = true
				}
			}
			if len(pr.tags) == 0 {
				return errStatus(pb.Code_ILLEGAL_FILTER_EXPRESSION, "tag expression %q names no tag", exp)
			}
		}
	}
	return nil
}

// pop runs POP_MESSAGE on the receive's broker and converts what it returns.
func (svc *service) pop(ctx context.Context, pr *receive) ([]*pb.Message, *pb.Status) {
	h := protocol.PopMessageRequestHeader{
		ConsumerGroup: pr.group, Topic: pr.topic, QueueID: -1, MaxMsgNums: pr.batch,
		InvisibleTime: pr.invisible.Milliseconds(), PollTime: pr.poll.Milliseconds(), BornTime: time.Now().UnixMilli(),
		InitMode: protocol.PopInitModeMin, ExpType: pr.expType, Exp: pr.exp, Order: pr.fifo, AttemptID: pr.attemptID,
	}
	resp, err := svc.srv.rc.InvokeSync(ctx, pr.broker.addr, protocol.NewRequest(protocol.PopMessage, protocol.EncodeHeader(&h, false), nil))
	svc.srv.backend.brokerGone(pr.broker.addr, resp, err)
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return nil, statusf(pb.Code_MESSAGE_NOT_FOUND, "client is gone")
		}
		return nil, toStatus(err)
	}
	switch protocol.ResponseCode(resp.Code) {
	case protocol.Success:
	case protocol.PollingTimeout, protocol.NoMessage, protocol.PullNotFound:
		return nil, statusf(pb.Code_MESSAGE_NOT_FOUND, "no new message")
	case protocol.SubscriptionParseFailed:
		return nil, statusf(pb.Code_ILLEGAL_FILTER_EXPRESSION, "%s", resp.Remark)
	case protocol.SubscriptionGroupNotExist:
		return nil, statusf(pb.Code_CONSUMER_GROUP_NOT_FOUND, "%s", resp.Remark)
	case protocol.PollingFull:
		return nil, statusf(pb.Code_TOO_MANY_REQUESTS, "polling full")
	default:
		if protocol.ResponseCode(resp.Code) == protocol.TopicNotExist {
			svc.srv.backend.forget(pr.topic)
		}
		return nil, brokerStatus(protocol.ResponseCode(resp.Code), resp.Remark)
	}
	var rh protocol.PopMessageResponseHeader
	if err := protocol.DecodeHeader(resp.ExtFields, &rh, false); err != nil {
		return nil, statusf(pb.Code_INTERNAL_SERVER_ERROR, "pop response header: %v", err)
	}
	starts, err := protocol.ParseStartOffsetInfo(rh.StartOffsetInfo)
	if err != nil {
		return nil, statusf(pb.Code_INTERNAL_SERVER_ERROR, "pop response: %v", err)
	}
	exts, err := message.DecodeStoredAll(resp.Body, message.DecodeOptions{Decompress: true})
	if err != nil {
		return nil, statusf(pb.Code_INTERNAL_SERVER_ERROR, "pop response body: %v", err)
	}
	out := make([]*pb.Message, 0, len(exts))
	for _, m := range exts {
		handle := popHandle(m, &rh, starts, pr.broker.name)
		if pr.tags != nil && !pr.tags[m.Properties[message.PropertyTags]] {
			// A tag-hash collision the consume queue let through: the
			// message is not this subscription's; ack it silently.
			svc.ackHandle(ctx, pr.group, pr.topic, handle)
			continue
		}
		if m.SysFlag&message.SysFlagCompressed != 0 {
			// Decompress left it as stored (LZ4/ZSTD or a bad stream):
			// deliver as is rather than lose it; the digest still matches.
			svc.srv.logger.Warn("grpc: delivering a body the broker could not decompress", "topic", pr.topic, "msgId", m.MsgID())
		}
		out = append(out, deliveredMessage(m, handle.String()))
	}
	return out, okStatus()
}

// popHandle builds a popped message's receipt handle: its POP_CK when the
// broker set one (retry-topic messages), else the pop's checkpoint fields
// from the response header with the message's queue and offsets.
func popHandle(m *message.Ext, rh *protocol.PopMessageResponseHeader, starts map[protocol.PopQueueKey]int64, broker string) protocol.ReceiptHandle {
	if ck := m.Properties[message.PropertyPopCK]; ck != "" {
		if h, err := protocol.ParseExtraInfo(ck); err == nil {
			if h.QueueOffset < 0 {
				h.QueueOffset = m.QueueOffset
			}
			h.CommitLogOffset = m.CommitLogOffset
			return h
		}
	}
	tt := protocol.PopTopicTypeOf(m.Topic)
	start, ok := starts[protocol.PopQueueKey{TopicType: tt, QueueID: m.QueueID}]
	if !ok {
		start = m.QueueOffset
	}
	return protocol.ReceiptHandle{
		CkQueueOffset: start, PopTime: rh.PopTime, InvisibleTime: rh.InvisibleTime, ReviveQueueID: rh.ReviveQid,
		TopicType: tt, BrokerName: broker, QueueID: m.QueueID, QueueOffset: m.QueueOffset, CommitLogOffset: m.CommitLogOffset,
	}
}

// release makes messages a receive could not deliver visible again after a
// second, so that another consumer gets them soon.
func (svc *service) release(pr *receive, msgs []*pb.Message) {
	ctx, cancel := context.WithTimeout(context.Background(), brokerCallTimeout)
	defer cancel()
	for _, m := range msgs {
		h := m.GetSystemProperties().GetReceiptHandle()
		svc.renewer.untrack(h)
		if rh, err := protocol.ParseReceiptHandle(h); err == nil {
			_, _ = svc.changeInvisible(ctx, pr.group, pr.topic, rh, time.Second)
		}
	}
}

// parseHandle decodes a client's receipt handle and checks it has not
// expired: INVALID_RECEIPT_HANDLE otherwise.
func parseHandle(s string, now time.Time) (protocol.ReceiptHandle, error) {
	if strings.TrimSpace(s) == "" {
		return protocol.ReceiptHandle{}, errStatus(pb.Code_INVALID_RECEIPT_HANDLE, "receipt handle cannot be blank")
	}
	h, err := protocol.ParseReceiptHandle(s)
	if err != nil {
		return h, errStatus(pb.Code_INVALID_RECEIPT_HANDLE, "malformed receipt handle")
	}
	if h.QueueOffset < 0 || h.InvisibleTime < 0 || h.PopTime <= 0 {
		return h, errStatus(pb.Code_INVALID_RECEIPT_HANDLE, "malformed receipt handle")
	}
	if now.UnixMilli() >= h.NextVisibleTime() {
		return h, errStatus(pb.Code_INVALID_RECEIPT_HANDLE, "receipt handle is expired")
	}
	return h, nil
}

// notInFlight is the remark our broker's ACK_MESSAGE gives a message that is
// not in flight (already acked, revived, or a forged checkpoint).
const notInFlight = "the message is not in flight"

// ackHandle acks one message on its broker.
func (svc *service) ackHandle(ctx context.Context, group, topic string, h protocol.ReceiptHandle) *pb.Status {
	addr, err := svc.srv.backend.brokerAddr(ctx, topic, h.BrokerName)
	if err != nil {
		return statusf(pb.Code_INVALID_RECEIPT_HANDLE, "receipt handle names an unknown broker %q", h.BrokerName)
	}
	ah := protocol.AckMessageRequestHeader{ConsumerGroup: group, Topic: h.RealTopic(topic, group), QueueID: h.QueueID,
		ExtraInfo: h.ExtraInfo(), Offset: h.QueueOffset}
	resp, err := svc.srv.rc.InvokeSync(ctx, addr, protocol.NewRequest(protocol.AckMessage, protocol.EncodeHeader(&ah, false), nil))
	svc.srv.backend.brokerGone(addr, resp, err)
	if err != nil {
		return toStatus(err)
	}
	switch protocol.ResponseCode(resp.Code) {
	case protocol.Success:
		if resp.Remark == notInFlight {
			return statusf(pb.Code_INVALID_RECEIPT_HANDLE, "the message of this receipt handle is not in flight")
		}
		return okStatus()
	case protocol.NoMessage, protocol.MessageIllegal:
		return statusf(pb.Code_INVALID_RECEIPT_HANDLE, "%s", resp.Remark)
	}
	return brokerStatus(protocol.ResponseCode(resp.Code), resp.Remark)
}

// AckMessage acks each entry's message (docs/grpc.md §6.6). The top-level status
// is the entries' common status, or MULTIPLE_RESULTS.
func (svc *service) AckMessage(ctx context.Context, req *pb.AckMessageRequest) (*pb.AckMessageResponse, error) {
	if _, err := svc.begin(ctx); err != nil {
		return &pb.AckMessageResponse{Status: toStatus(err)}, nil
	}
	group, err := checkGroup(req.GetGroup())
	if err != nil {
		return &pb.AckMessageResponse{Status: toStatus(err)}, nil
	}
	topic, err := checkTopic(req.GetTopic())
	if err != nil {
		return &pb.AckMessageResponse{Status: toStatus(err)}, nil
	}
	if len(req.GetEntries()) == 0 {
		return &pb.AckMessageResponse{Status: statusf(pb.Code_BAD_REQUEST, "no entry to ack")}, nil
	}
	cctx, cancel := withTimeout(ctx, brokerCallTimeout)
	defer cancel()
	out := make([]*pb.AckMessageResultEntry, len(req.GetEntries()))
	now := time.Now()
	var valid []pendingAck
	for i, e := range req.GetEntries() {
		handle := svc.renewer.latest(e.GetReceiptHandle())
		svc.renewer.untrack(e.GetReceiptHandle())
		out[i] = &pb.AckMessageResultEntry{MessageId: e.GetMessageId(), ReceiptHandle: e.GetReceiptHandle()}
		if h, err := parseHandle(handle, now); err != nil {
			out[i].Status = toStatus(err)
		} else {
			valid = append(valid, pendingAck{entry: out[i], topic: liteQueueTopic(topic, e.GetLiteTopic()), h: h}) // lite.go
		}
	}
	if len(valid) == 1 {
		valid[0].entry.Status = svc.ackHandle(cctx, group, valid[0].topic, valid[0].h)
	} else if len(valid) > 1 {
		svc.batchAck(cctx, group, valid)
	}
	return &pb.AckMessageResponse{Status: commonStatus(out), Entries: out}, nil
}

// pendingAck is one well-formed entry of an AckMessage request; topic is
// the broker topic it names (the request's, or a lite topic's queue).
type pendingAck struct {
	entry *pb.AckMessageResultEntry
	topic string
	h     protocol.ReceiptHandle
}

// ackCheckpoint groups the handles of one broker pop: a BatchAck names
// its fields once and the acked offsets as bits.
type ackCheckpoint struct {
	topic                     string
	topicType                 protocol.PopTopicType
	queueID, reviveQueueID    int32
	ckOffset, popTime, invisT int64
}

// batchAck acks a request's entries (two or more) with one BATCH_ACK
// (200151) per broker, one BatchAck per pop checkpoint, instead of an
// ACK_MESSAGE per entry: one round trip and one ack record per
// checkpoint. As in the reference proxy's batch-ack mode, every entry of
// a batch the broker accepts is OK: BATCH_ACK reports no per-message
// result, so a handle whose message is no longer in flight is not told
// apart here (a single-entry request, what the official clients send,
// still is, through ackHandle).
func (svc *service) batchAck(ctx context.Context, group string, acks []pendingAck) {
	type brokerBatch struct {
		addr, name string
		cks        map[ackCheckpoint][]int64
		order      []ackCheckpoint // first-seen order of cks' keys
		entries    []*pb.AckMessageResultEntry
	}
	var batches []*brokerBatch
	byBroker := map[string]*brokerBatch{}
	for _, a := range acks {
		bb := byBroker[a.h.BrokerName]
		if bb == nil {
			addr, err := svc.srv.backend.brokerAddr(ctx, a.topic, a.h.BrokerName)
			if err != nil {
				a.entry.Status = statusf(pb.Code_INVALID_RECEIPT_HANDLE, "receipt handle names an unknown broker %q", a.h.BrokerName)
				continue
			}
			bb = &brokerBatch{addr: addr, name: a.h.BrokerName, cks: map[ackCheckpoint][]int64{}}
			byBroker[a.h.BrokerName] = bb
			batches = append(batches, bb)
		}
		k := ackCheckpoint{topic: a.topic, topicType: a.h.TopicType, queueID: a.h.QueueID, reviveQueueID: a.h.ReviveQueueID,
			ckOffset: a.h.CkQueueOffset, popTime: a.h.PopTime, invisT: a.h.InvisibleTime}
		if _, ok := bb.cks[k]; !ok {
			bb.order = append(bb.order, k)
		}
		bb.cks[k] = append(bb.cks[k], a.h.QueueOffset)
		bb.entries = append(bb.entries, a.entry)
	}
	for _, bb := range batches {
		st := svc.sendBatchAck(ctx, group, bb.addr, bb.name, bb.order, bb.cks)
		for _, e := range bb.entries {
			e.Status = st
		}
	}
}

// sendBatchAck sends one broker's BATCH_ACK and maps its answer.
func (svc *service) sendBatchAck(ctx context.Context, group, addr, broker string, order []ackCheckpoint, cks map[ackCheckpoint][]int64) *pb.Status {
	body := protocol.BatchAckMessageRequestBody{BrokerName: broker, Acks: make([]protocol.BatchAck, 0, len(order))}
	for _, k := range order {
		a := protocol.BatchAck{ConsumerGroup: group, Topic: k.topic, Retry: strconv.Itoa(int(k.topicType)), QueueID: k.queueID,
			ReviveQueueID: k.reviveQueueID, PopTime: k.popTime, InvisibleTime: k.invisT}
		if err := a.SetOffsetsFrom(k.ckOffset, cks[k]); err != nil {
			return statusf(pb.Code_INVALID_RECEIPT_HANDLE, "%v", err)
		}
		body.Acks = append(body.Acks, a)
	}
	raw, err := protocol.MarshalJSON(&body)
	if err != nil {
		return statusf(pb.Code_INTERNAL_SERVER_ERROR, "encode batch ack: %v", err)
	}
	resp, err := svc.srv.rc.InvokeSync(ctx, addr, protocol.NewRequest(protocol.BatchAckMessage, nil, raw))
	if err != nil {
		return toStatus(err)
	}
	switch protocol.ResponseCode(resp.Code) {
	case protocol.Success:
		return okStatus()
	case protocol.NoMessage, protocol.MessageIllegal:
		return statusf(pb.Code_INVALID_RECEIPT_HANDLE, "%s", resp.Remark)
	}
	return brokerStatus(protocol.ResponseCode(resp.Code), resp.Remark)
}

func commonStatus(entries []*pb.AckMessageResultEntry) *pb.Status {
	st := entries[0].GetStatus()
	for _, e := range entries[1:] {
		if e.GetStatus().GetCode() != st.GetCode() {
			return statusf(pb.Code_MULTIPLE_RESULTS, "entries differ")
		}
	}
	return st
}

// changeInvisible moves a message's next visible time to now + d and
// returns its new handle.
func (svc *service) changeInvisible(ctx context.Context, group, topic string, h protocol.ReceiptHandle, d time.Duration) (protocol.ReceiptHandle, *pb.Status) {
	addr, err := svc.srv.backend.brokerAddr(ctx, topic, h.BrokerName)
	if err != nil {
		return h, statusf(pb.Code_INVALID_RECEIPT_HANDLE, "receipt handle names an unknown broker %q", h.BrokerName)
	}
	ch := protocol.ChangeInvisibleTimeRequestHeader{ConsumerGroup: group, Topic: h.RealTopic(topic, group), QueueID: h.QueueID,
		ExtraInfo: h.ExtraInfo(), Offset: h.QueueOffset, InvisibleTime: d.Milliseconds()}
	resp, err := svc.srv.rc.InvokeSync(ctx, addr, protocol.NewRequest(protocol.ChangeMessageInvisibleTime, protocol.EncodeHeader(&ch, false), nil))
	if err != nil {
		return h, toStatus(err)
	}
	switch protocol.ResponseCode(resp.Code) {
	case protocol.Success:
	case protocol.NoMessage, protocol.MessageIllegal:
		return h, statusf(pb.Code_INVALID_RECEIPT_HANDLE, "%s", resp.Remark)
	case protocol.InvalidParameter:
		return h, statusf(pb.Code_ILLEGAL_INVISIBLE_TIME, "%s", resp.Remark)
	default:
		return h, brokerStatus(protocol.ResponseCode(resp.Code), resp.Remark)
	}
	var rh protocol.ChangeInvisibleTimeResponseHeader
	if err := protocol.DecodeHeader(resp.ExtFields, &rh, false); err != nil {
		return h, statusf(pb.Code_INTERNAL_SERVER_ERROR, "change response header: %v", err)
	}
	n := h
	n.PopTime, n.InvisibleTime, n.ReviveQueueID = rh.PopTime, rh.InvisibleTime, rh.ReviveQid
	if !h.IsOrder() {
		n.CkQueueOffset = h.QueueOffset
	}
	return n, okStatus()
}

// ChangeInvisibleDuration moves the message's next visible time to now +
// invisible_duration (0 allowed: a nack) and answers the new handle, or the
// request's handle when it fails (docs/grpc.md §6.7).
func (svc *service) ChangeInvisibleDuration(ctx context.Context, req *pb.ChangeInvisibleDurationRequest) (*pb.ChangeInvisibleDurationResponse, error) {
	fail := func(err error) (*pb.ChangeInvisibleDurationResponse, error) {
		return &pb.ChangeInvisibleDurationResponse{Status: toStatus(err), ReceiptHandle: req.GetReceiptHandle()}, nil
	}
	if _, err := svc.begin(ctx); err != nil {
		return fail(err)
	}
	group, err := checkGroup(req.GetGroup())
	if err != nil {
		return fail(err)
	}
	topic, err := checkTopic(req.GetTopic())
	if err != nil {
		return fail(err)
	}
	d := req.GetInvisibleDuration().AsDuration()
	if req.InvisibleDuration == nil || d < 0 || d > maxInvisibleDuration {
		return fail(errStatus(pb.Code_ILLEGAL_INVISIBLE_TIME, "invisible duration %s is out of range [0, %s]", d, maxInvisibleDuration))
	}
	handle := svc.renewer.latest(req.GetReceiptHandle())
	svc.renewer.untrack(req.GetReceiptHandle())
	h, err := parseHandle(handle, time.Now())
	if err != nil {
		return fail(err)
	}
	cctx, cancel := withTimeout(ctx, brokerCallTimeout)
	defer cancel()
	n, st := svc.changeInvisible(cctx, group, liteQueueTopic(topic, req.GetLiteTopic()), h, d) // lite.go
	if st.Code != pb.Code_OK {
		return &pb.ChangeInvisibleDurationResponse{Status: st, ReceiptHandle: req.GetReceiptHandle()}, nil
	}
	return &pb.ChangeInvisibleDurationResponse{Status: okStatus(), ReceiptHandle: n.String()}, nil
}

// ForwardMessageToDeadLetterQueue moves the message to %DLQ%group
// (CONSUMER_SEND_MSG_BACK with delay level -1, as a FIFO push consumer that
// used up its attempts asks) and acks it.
func (svc *service) ForwardMessageToDeadLetterQueue(ctx context.Context, req *pb.ForwardMessageToDeadLetterQueueRequest) (*pb.ForwardMessageToDeadLetterQueueResponse, error) {
	fail := func(err error) (*pb.ForwardMessageToDeadLetterQueueResponse, error) {
		return &pb.ForwardMessageToDeadLetterQueueResponse{Status: toStatus(err)}, nil
	}
	if _, err := svc.begin(ctx); err != nil {
		return fail(err)
	}
	group, err := checkGroup(req.GetGroup())
	if err != nil {
		return fail(err)
	}
	topic, err := checkTopic(req.GetTopic())
	if err != nil {
		return fail(err)
	}
	handle := svc.renewer.latest(req.GetReceiptHandle())
	svc.renewer.untrack(req.GetReceiptHandle())
	h, err := parseHandle(handle, time.Now())
	if err != nil {
		return fail(err)
	}
	if h.CommitLogOffset < 0 {
		return fail(errStatus(pb.Code_INVALID_RECEIPT_HANDLE, "receipt handle has no commit-log offset"))
	}
	cctx, cancel := withTimeout(ctx, brokerCallTimeout)
	defer cancel()
	addr, err := svc.srv.backend.brokerAddr(cctx, topic, h.BrokerName)
	if err != nil {
		return fail(errStatus(pb.Code_INVALID_RECEIPT_HANDLE, "receipt handle names an unknown broker %q", h.BrokerName))
	}
	maxTimes := req.GetMaxDeliveryAttempts()
	sb := protocol.ConsumerSendMsgBackRequestHeader{Offset: h.CommitLogOffset, Group: group, DelayLevel: -1,
		OriginMsgID: req.GetMessageId(), OriginTopic: topic, MaxReconsumeTimes: &maxTimes}
	resp, err := svc.srv.rc.InvokeSync(cctx, addr, protocol.NewRequest(protocol.ConsumerSendMsgBack, protocol.EncodeHeader(&sb, false), nil))
	if err != nil {
		return fail(err)
	}
	if resp.Code != int32(protocol.Success) {
		return &pb.ForwardMessageToDeadLetterQueueResponse{Status: brokerStatus(protocol.ResponseCode(resp.Code), resp.Remark)}, nil
	}
	if st := svc.ackHandle(cctx, group, liteQueueTopic(topic, req.GetLiteTopic()), h); st.Code != pb.Code_OK && st.Code != pb.Code_INVALID_RECEIPT_HANDLE {
		return &pb.ForwardMessageToDeadLetterQueueResponse{Status: st}, nil
	}
	return &pb.ForwardMessageToDeadLetterQueueResponse{Status: okStatus()}, nil
}
