package proxy

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	pb "github.com/apogeemq/apogee/internal/rmqpb"
)

// Send limits of the gRPC validator.
const (
	maxUserProperties  = 128
	maxPropertiesBytes = 16 << 10 // user properties + tag + keys
	maxMessageGroupLen = 64       // bytes; a group must be shorter
	maxDeliveryAhead   = 24 * time.Hour
	maxOrphanRecovery  = time.Hour
)

// sender turns SendMessage into SEND_MESSAGE_V2 requests: the server picks
// the queue (round robin over the writable queues, or a consistent hash of
// the message group for FIFO messages), and the client's message id becomes
// the stored UNIQ_KEY.
type sender struct {
	svc *service
	rr  atomic.Uint64 // round-robin position over writable queues
}

func newSender(svc *service) *sender { return &sender{svc: svc} }

// SendMessage stores each message and answers one entry per message, in
// request order. The top-level status is the entries' common status, or
// MULTIPLE_RESULTS when they differ.
func (svc *service) SendMessage(ctx context.Context, req *pb.SendMessageRequest) (*pb.SendMessageResponse, error) {
	if _, err := svc.begin(ctx); err != nil {
		return &pb.SendMessageResponse{Status: toStatus(err)}, nil
	}
	msgs := req.GetMessages()
	if len(msgs) == 0 {
		return &pb.SendMessageResponse{Status: statusf(pb.Code_MESSAGE_CORRUPTED, "no message to send")}, nil
	}
	topic, err := checkTopic(msgs[0].GetTopic())
	if err != nil {
		return &pb.SendMessageResponse{Status: toStatus(err)}, nil
	}
	for _, m := range msgs[1:] {
		if m.GetTopic().GetName() != topic {
			return &pb.SendMessageResponse{Status: statusf(pb.Code_MESSAGE_CORRUPTED, "messages of one request must share a topic")}, nil
		}
	}
	cctx, cancel := withTimeout(ctx, brokerCallTimeout)
	defer cancel()
	r, err := svc.srv.backend.route(cctx, topic)
	if err != nil {
		return &pb.SendMessageResponse{Status: toStatus(err)}, nil
	}
	entries := make([]*pb.SendResultEntry, len(msgs))
	for i, m := range msgs {
		entries[i] = svc.sender.send(cctx, r, m)
	}
	st := entries[0].Status
	for _, e := range entries[1:] {
		if e.Status.Code != st.Code {
			st = statusf(pb.Code_MULTIPLE_RESULTS, "entries differ")
			break
		}
	}
	return &pb.SendMessageResponse{Status: st, Entries: entries}, nil
}

// send validates and stores one message.
func (s *sender) send(ctx context.Context, r *topicRoute, m *pb.Message) *pb.SendResultEntry {
	sp := m.GetSystemProperties()
	entry := &pb.SendResultEntry{MessageId: sp.GetMessageId()}
	mtype, err := checkMessage(m, time.Now())
	if err != nil {
		entry.Status = toStatus(err)
		return entry
	}
	if err := checkTopicType(r, mtype); err != nil {
		entry.Status = toStatus(err)
		return entry
	}
	b, qid, ok := s.pickQueue(r, sp.GetMessageGroup())
	if !ok {
		entry.Status = statusf(pb.Code_FORBIDDEN, "no writable queue")
		return entry
	}
	props, sysFlag := sendProperties(r.topic, m, mtype)
	born := time.Now().UnixMilli()
	if ts := sp.GetBornTimestamp(); ts != nil {
		born = ts.AsTime().UnixMilli()
	}
	h := protocol.SendMessageRequestHeader{
		ProducerGroup:         r.topic, // the topic, as for every gRPC producer
		Topic:                 r.topic,
		DefaultTopic:          "TBW102",
		DefaultTopicQueueNums: 4,
		QueueID:               qid,
		SysFlag:               sysFlag,
		BornTimestamp:         born,
		Properties:            props,
		ReconsumeTimes:        max(sp.GetDeliveryAttempt()-1, 0),
		BrokerName:            b.name,
	}
	var resp *protocol.Command
	if lb := s.svc.srv.cfg.Local; lb != nil && b.name == s.svc.srv.cfg.BrokerName {
		resp, err = sendLocal(ctx, lb, &h, m.GetBody(), peerAddr(ctx))
	} else {
		resp, err = s.svc.srv.rc.InvokeSync(ctx, b.addr, &protocol.Command{
			Code: int32(protocol.SendMessageV2), Language: protocol.LanguageGo, Version: protocol.CurrentVersion,
			ExtList: protocol.AppendSendHeader(nil, &h, true), Body: m.GetBody(), SerializeType: protocol.SerializeRocketMQ,
		})
		s.svc.srv.backend.brokerGone(b.addr, resp, err)
	}
	if err != nil {
		entry.Status = toStatus(err)
		return entry
	}
	if protocol.ResponseCode(resp.Code) == protocol.TopicNotExist {
		s.svc.srv.backend.forget(r.topic)
	}
	entry.Status = liteSendStatus(resp, brokerStatus(protocol.ResponseCode(resp.Code), resp.Remark)) // lite.go
	if entry.Status.Code != pb.Code_OK {
		return entry
	}
	entry.Offset, _ = strconv.ParseInt(resp.Ext("queueOffset"), 10, 64)
	entry.RecallHandle = resp.Ext("recallHandle") // delay messages parked in the broker's timer
	if mtype == pb.MessageType_TRANSACTION {
		entry.TransactionId = sp.GetMessageId()
		if _, clOffset, err := message.ParseOffsetMsgID(resp.Ext("msgId")); err == nil {
			s.svc.txns.put(txnRecord{
				id: sp.GetMessageId(), topic: r.topic, brokerName: b.name, brokerAddr: b.addr,
				commitLogOffset: clOffset, queueOffset: entry.Offset, offsetMsgID: resp.Ext("msgId"),
			})
		}
	}
	return entry
}

// pickQueue chooses the broker and queue of a message: a consistent hash of
// the message group over the writable queues (stable while the queue count
// is), round robin otherwise.
func (s *sender) pickQueue(r *topicRoute, group string) (brokerQueues, int32, bool) {
	n := 0
	for _, b := range r.brokers {
		if protocol.PermWritable(b.perm) {
			n += int(b.write)
		}
	}
	if n == 0 {
		return brokerQueues{}, 0, false
	}
	var k int
	if group != "" {
		k = consistentHash(int64(javaStringHash(group)), n)
	} else {
		k = int(s.rr.Add(1) % uint64(n))
	}
	for _, b := range r.brokers {
		if !protocol.PermWritable(b.perm) {
			continue
		}
		if k < int(b.write) {
			return b, int32(k), true
		}
		k -= int(b.write)
	}
	return brokerQueues{}, 0, false
}

// javaStringHash is Java's String.hashCode over UTF-16 code units.
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r1, r2 := utf16Surrogates(r)
			h = 31*h + int32(r1)
			h = 31*h + int32(r2)
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

func utf16Surrogates(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}

// consistentHash assigns input to one of buckets so that growing the bucket
// count moves as few inputs as possible (the linear-congruential "jump"
// construction Guava's Hashing.consistentHash uses).
func consistentHash(input int64, buckets int) int {
	state := uint64(input)
	candidate := 0
	for {
		state = 2862933555777941757*state + 1
		f := float64(candidate+1) / (float64(int32(state>>33)+1) / float64(1<<31))
		if f < 0 || f >= float64(buckets) {
			return candidate
		}
		candidate = int(f)
	}
}

// messageType derives a message's type from its properties, as the
// reference does: transaction flag, then delivery time, then message group.
func messageType(m *pb.Message) pb.MessageType {
	sp := m.GetSystemProperties()
	switch {
	case sp.GetMessageType() == pb.MessageType_TRANSACTION:
		return pb.MessageType_TRANSACTION
	case sp.DeliveryTimestamp != nil:
		return pb.MessageType_DELAY
	case sp.MessageGroup != nil:
		return pb.MessageType_FIFO
	}
	return v55SendType(sp) // v55.go: PRIORITY, LITE or NORMAL
}

// checkTopicType refuses a message whose type the topic's message.type does
// not accept: MESSAGE_PROPERTY_CONFLICT_WITH_TYPE. Retry and DLQ topics
// take anything.
func checkTopicType(r *topicRoute, t pb.MessageType) error {
	if names.IsRetryTopic(r.topic) || names.IsDLQTopic(r.topic) {
		return nil
	}
	for _, a := range acceptTypes(r.messageType) {
		if a == t {
			return nil
		}
	}
	topicType := r.messageType
	if topicType == "" {
		topicType = "NORMAL"
	}
	return errStatus(pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, "current message type %s does not match topic %s of type %s", t, r.topic, topicType)
}

// checkMessage applies the gRPC validator's per-message checks and returns
// the message's type.
func checkMessage(m *pb.Message, now time.Time) (pb.MessageType, error) {
	sp := m.GetSystemProperties()
	if strings.TrimSpace(sp.GetMessageId()) == "" {
		return 0, errStatus(pb.Code_ILLEGAL_MESSAGE_ID, "message id cannot be blank")
	}
	if len(m.GetBody()) == 0 {
		return 0, errStatus(pb.Code_MESSAGE_BODY_EMPTY, "message body cannot be empty")
	}
	if len(m.GetBody()) > maxBodySize {
		return 0, errStatus(pb.Code_MESSAGE_BODY_TOO_LARGE, "message body of %d bytes exceeds %d", len(m.GetBody()), maxBodySize)
	}
	if sp.Tag != nil {
		t := sp.GetTag()
		if strings.TrimSpace(t) == "" || strings.Contains(t, "|") || hasControl(t) {
			return 0, errStatus(pb.Code_ILLEGAL_MESSAGE_TAG, "illegal tag %q", t)
		}
	}
	size := len(sp.GetTag())
	for _, k := range sp.GetKeys() {
		if strings.TrimSpace(k) == "" || hasControl(k) {
			return 0, errStatus(pb.Code_ILLEGAL_MESSAGE_KEY, "illegal key %q", k)
		}
		size += len(k)
	}
	if len(m.GetUserProperties()) > maxUserProperties {
		return 0, errStatus(pb.Code_MESSAGE_PROPERTIES_TOO_LARGE, "more than %d user properties", maxUserProperties)
	}
	for k, v := range m.GetUserProperties() {
		if k == "" || message.IsSystemProperty(k) || hasControl(k) || hasControl(v) ||
			strings.ContainsRune(k, message.NameValueSeparator) || strings.ContainsRune(k, message.PropertySeparator) ||
			strings.ContainsRune(v, message.NameValueSeparator) || strings.ContainsRune(v, message.PropertySeparator) {
			return 0, errStatus(pb.Code_ILLEGAL_MESSAGE_PROPERTY_KEY, "illegal user property %q", k)
		}
		size += len(k) + len(v)
	}
	if size > maxPropertiesBytes {
		return 0, errStatus(pb.Code_MESSAGE_PROPERTIES_TOO_LARGE, "properties of %d bytes exceed %d", size, maxPropertiesBytes)
	}
	if sp.MessageGroup != nil {
		g := sp.GetMessageGroup()
		if strings.TrimSpace(g) == "" || len(g) >= maxMessageGroupLen || hasControl(g) {
			return 0, errStatus(pb.Code_ILLEGAL_MESSAGE_GROUP, "illegal message group %q", g)
		}
	}
	if ts := sp.GetDeliveryTimestamp(); ts != nil && ts.AsTime().Sub(now) > maxDeliveryAhead {
		return 0, errStatus(pb.Code_ILLEGAL_DELIVERY_TIME, "delivery time %s is more than %s ahead", ts.AsTime().UTC().Format(time.RFC3339), maxDeliveryAhead)
	}
	t := messageType(m)
	if err := checkV55(sp, t); err != nil { // v55.go
		return 0, err
	}
	if t == pb.MessageType_TRANSACTION {
		if d := sp.GetOrphanedTransactionRecoveryDuration(); d != nil && d.AsDuration() > maxOrphanRecovery {
			return 0, errStatus(pb.Code_BAD_REQUEST, "orphaned transaction recovery duration over %s", maxOrphanRecovery)
		}
	}
	return t, nil
}

func hasControl(s string) bool {
	if !utf8.ValidString(s) {
		return true
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return true
		}
	}
	return false
}

// sendProperties builds the stored properties string and sysFlag of a
// message: the client's message id as UNIQ_KEY, tag, keys, message group,
// delivery time, transaction marks, trace context, born host and the user
// properties (sorted by name, so one message always encodes alike). The
// pairs are appended straight into the string's bytes: no map per message.
// checkMessage has refused user properties named like system ones, so no
// name occurs twice.
func sendProperties(topic string, m *pb.Message, t pb.MessageType) (string, int32) {
	sp := m.GetSystemProperties()
	user := m.GetUserProperties()
	var keyBuf [16]string
	keys := keyBuf[:0]
	size := 64 + len(sp.GetMessageId()) + len(sp.GetTag()) + len(sp.GetMessageGroup()) + len(sp.GetTraceContext()) + len(sp.GetBornHost())
	for k, v := range user {
		keys = append(keys, k)
		size += len(k) + len(v) + 2
	}
	slices.Sort(keys)
	for _, k := range sp.GetKeys() {
		size += len(k) + 1
	}
	b := make([]byte, 0, size)
	for _, k := range keys {
		b = message.AppendProperty(b, k, user[k])
	}
	b = message.AppendProperty(b, message.PropertyUniqClientMessageIDKeyidx, sp.GetMessageId())
	b = message.AppendProperty(b, message.PropertyWaitStoreMsgOK, "true")
	if sp.Tag != nil {
		b = message.AppendProperty(b, message.PropertyTags, sp.GetTag())
	}
	if len(sp.GetKeys()) > 0 {
		b = message.AppendProperty(b, message.PropertyKeys, strings.Join(sp.GetKeys(), message.KeySeparator))
	}
	if sp.MessageGroup != nil {
		b = message.AppendProperty(b, message.PropertyShardingKey, sp.GetMessageGroup())
	}
	if ts := sp.GetDeliveryTimestamp(); ts != nil {
		b = message.AppendProperty(b, message.PropertyTimerDeliverMS, strconv.FormatInt(ts.AsTime().UnixMilli(), 10))
	}
	if sp.TraceContext != nil {
		b = message.AppendProperty(b, message.PropertyTraceContext, sp.GetTraceContext())
	}
	if h := sp.GetBornHost(); h != "" {
		b = message.AppendProperty(b, message.PropertyBornHost, h)
	}
	b = v55AppendProperties(b, sp, t) // v55.go: priority, lite topic
	var sysFlag int32
	if t == pb.MessageType_TRANSACTION {
		b = message.AppendProperty(b, message.PropertyTransactionPrepared, "true")
		b = message.AppendProperty(b, message.PropertyProducerGroup, topic)
		sysFlag = message.SysFlagTransactionPreparedType
		if d := sp.GetOrphanedTransactionRecoveryDuration(); d != nil && d.AsDuration() > 0 {
			b = message.AppendProperty(b, message.PropertyCheckImmunityTimeInSeconds, strconv.FormatInt(int64(d.AsDuration()/time.Second), 10))
		}
	}
	return string(b), sysFlag
}

// RecallMessage cancels a delay message that has not been delivered yet:
// its recall handle names the broker, which drops the message from its
// timer (RECALL_MESSAGE 370). A handle that does not decode, or a broker
// refusal, answers INTERNAL_SERVER_ERROR as the reference does.
func (svc *service) RecallMessage(ctx context.Context, req *pb.RecallMessageRequest) (*pb.RecallMessageResponse, error) {
	if _, err := svc.begin(ctx); err != nil {
		return &pb.RecallMessageResponse{Status: toStatus(err)}, nil
	}
	topic, err := checkTopic(req.GetTopic())
	if err != nil {
		return &pb.RecallMessageResponse{Status: toStatus(err)}, nil
	}
	rh, err := protocol.ParseRecallHandle(req.GetRecallHandle())
	if err != nil {
		return &pb.RecallMessageResponse{Status: statusf(pb.Code_INTERNAL_SERVER_ERROR, "recall handle is invalid")}, nil
	}
	cctx, cancel := withTimeout(ctx, brokerCallTimeout)
	defer cancel()
	r, err := svc.srv.backend.route(cctx, topic)
	if err != nil {
		return &pb.RecallMessageResponse{Status: toStatus(err)}, nil
	}
	if err := checkTopicType(r, pb.MessageType_DELAY); err != nil {
		return &pb.RecallMessageResponse{Status: toStatus(err)}, nil
	}
	b, ok := r.broker(rh.BrokerName)
	if !ok {
		return &pb.RecallMessageResponse{Status: statusf(pb.Code_INTERNAL_SERVER_ERROR, "recall handle names broker %q, which does not serve %s", rh.BrokerName, topic)}, nil
	}
	h := protocol.RecallMessageRequestHeader{ProducerGroup: topic, Topic: topic, RecallHandle: req.GetRecallHandle()}
	resp, err := svc.srv.rc.InvokeSync(cctx, b.addr, protocol.NewRequest(protocol.RecallMessage, protocol.EncodeHeader(&h, false), nil))
	if err != nil {
		return &pb.RecallMessageResponse{Status: toStatus(err)}, nil
	}
	if resp.Code != int32(protocol.Success) {
		st := brokerStatus(protocol.ResponseCode(resp.Code), resp.Remark)
		if st.Code == pb.Code_BAD_REQUEST {
			st.Code = pb.Code_INTERNAL_SERVER_ERROR
		}
		return &pb.RecallMessageResponse{Status: st}, nil
	}
	id := resp.Ext("msgId")
	if id == "" {
		id = rh.MessageID
	}
	return &pb.RecallMessageResponse{Status: okStatus(), MessageId: id}, nil
}
