package broker

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/store"
)

// processSend serves SEND_MESSAGE (10, long header names, the Go client's
// single sends), SEND_MESSAGE_V2 (310, one-letter names, Java's default) and
// SEND_BATCH_MESSAGE (320, one-letter names, both clients' batches).
// SEND_REPLY_MESSAGE (324/325) is stored the same way.
//
// The response is written from the store's completion callback: under
// SYNC_FLUSH that is the flush goroutine's group commit, so no worker waits
// for the disk (the processor returns (nil, nil)).
func (b *Broker) processSend(_ context.Context, conn *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	return b.processSendTo(conn, req, nil, time.Time{}, false)
}

// processSendTo is processSend for any sendConn. A nil decoded header is
// read from req's ext fields; the in-process gRPC endpoint passes its
// header decoded (send_local.go). start is when processing began, for
// rocketmq_rpc_latency (zero: read the clock if metrics are on; see
// meters.startAt).
func (b *Broker) processSendTo(conn sendConn, req *protocol.Command, decoded *protocol.SendMessageRequestHeader,
	start time.Time, inline bool) (*protocol.Command, error) {
	if decoded == nil && b.forwardSend(conn, req) { // controller_forward.go: a slave relays to its master
		return nil, nil
	}
	code := protocol.RequestCode(req.Code)
	v2 := code == protocol.SendMessageV2 || code == protocol.SendBatchMessage || code == protocol.SendReplyMessageV2
	var h protocol.SendMessageRequestHeader
	if decoded != nil {
		h = *decoded
	} else if err := protocol.DecodeSendHeaderOf(req, &h, v2); err != nil {
		return nil, err
	}
	tc, err := b.sendCheck(conn, &h)
	if err != nil {
		return nil, err
	}
	if perr := checkMessageType(&tc, h.Properties); perr != nil { // message_type.go
		b.stats.sendRejected.Add(1)
		return nil, perr
	}
	if q, ok := priorityQueue(&tc, h.Properties); ok { // priority.go: the level is the queue
		h.QueueID = q
	}
	if h.QueueID < 0 {
		h.QueueID = rand.Int32N(max(tc.WriteQueueNums, 1))
	}
	if len(req.Body) > b.cfg.Store.MaxMessageSize {
		b.stats.sendRejected.Add(1)
		return nil, protocol.Errorf(protocol.MessageIllegal, "%s", b.messageIllegalRemark())
	}
	bornHost := bornHostOf(conn)
	sysFlag := h.SysFlag
	if tc.TopicFilterType == protocol.TopicFilterMultiTag {
		sysFlag |= message.SysFlagMultiTags
	}
	if isLiteTopic(&tc) { // lite.go: the lite topic's own queue
		if h.Batch || code == protocol.SendBatchMessage {
			return nil, protocol.Errorf(protocol.MessageIllegal, "batch sends to lite topic %s are not supported", h.Topic)
		}
		return b.sendLite(conn, req, &h, sysFlag, start)
	}
	if h.Batch || code == protocol.SendBatchMessage {
		return b.sendBatch(conn, req, &h, tc, sysFlag, bornHost, start)
	}

	reply := code == protocol.SendReplyMessage || code == protocol.SendReplyMessageV2
	if !reply && !strings.HasPrefix(h.Topic, names.RetryGroupTopicPrefix) {
		if uniq, ok := plainSendProperties(h.Properties); ok {
			b.sendPlain(conn, req, &h, uniq, sysFlag, bornHost, start, inline) // send_raw.go: no map round trip
			return nil, nil
		}
	}
	props := message.DecodeProperties(h.Properties)
	delete(props, message.PropertyPopCK)
	topic, queueID := h.Topic, h.QueueID
	if strings.HasPrefix(topic, names.RetryGroupTopicPrefix) {
		var perr error
		topic, queueID, perr = b.retryTopicCheck(&h, req, props)
		if perr != nil {
			return nil, perr
		}
	}
	if props[message.PropertyUniqClientMessageIDKeyidx] == "" {
		props[message.PropertyUniqClientMessageIDKeyidx] = b.uniq.Next()
	}
	props[message.PropertyCluster] = b.cfg.BrokerClusterName
	props[message.PropertyMsgRegion] = b.cfg.RegionID
	props[message.PropertyTraceSwitch] = strconv.FormatBool(b.cfg.TraceOn)
	if props[message.PropertyTransactionPrepared] == "true" {
		if b.dyn.rejectTransaction.Load() {
			return nil, protocol.Errorf(protocol.NoPermission,
				"the broker[%s] sending transaction message is forbidden", b.addr)
		}
		// Half message: park it in the half topic (docs/broker.md §1.11).
		props[message.PropertyRealTopic] = topic
		props[message.PropertyRealQueueID] = strconv.Itoa(int(queueID))
		props[message.PropertyTransactionID] = props[message.PropertyUniqClientMessageIDKeyidx]
		sysFlag = message.SetTransactionType(sysFlag, message.SysFlagTransactionNotType)
		topic, queueID = names.TopicTransHalf, 0
	}
	ext := &message.Ext{
		Message: message.Message{
			Topic:      topic,
			Flag:       h.Flag,
			Body:       req.Body,
			Properties: props,
		},
		QueueID:        queueID,
		SysFlag:        sysFlag,
		BornTimestamp:  h.BornTimestamp,
		BornHost:       bornHost,
		StoreHost:      b.storeHost,
		ReconsumeTimes: h.ReconsumeTimes,
	}
	if err := b.interceptTimer(ext); err != nil { // timer.go: TIMER_* -> rmq_sys_wheel_timer
		return nil, err
	}
	b.stats.sendRequests.Add(1)
	if reply {
		rc, ok := conn.(*remoting.Conn)
		if !ok {
			return nil, protocol.Errorf(protocol.RequestCodeNotSupported, "reply messages need a remoting connection")
		}
		return b.sendReply(rc, req, &h, ext, start) // reply.go
	}
	transactionID := props[message.PropertyUniqClientMessageIDKeyidx]
	tm, mt := b.meters.topic(h.Topic), messageTypeOf(props) // meters.go
	recall := b.recallHandleOf(ext)                         // recall.go
	start = b.meters.startAt(start)                         // meters_rpc.go: zero without metrics
	b.Store.PutMessage(ext, func(res store.PutResult) {
		b.meters.observeRPC(req.Code, b.writeSendResponse(conn, req, res, queueID, transactionID, tm, mt, recall), start)
	})
	return nil, nil
}

// bornHostOf is the connection's peer as the born host: the address remoting
// parsed once (unmapped, as parsing RemoteAddr's text gives it), or parsed
// from the text for connections without one.
func bornHostOf(conn sendConn) netip.AddrPort {
	if ap := conn.RemoteAddrPort(); ap.IsValid() {
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	ap, _ := netip.ParseAddrPort(conn.RemoteAddr())
	return ap
}

// sendBatch stores a SEND_BATCH_MESSAGE body: every inner message gets the
// header's topic, queue, sysFlag, born time and reconsume times; no UNIQ_KEY
// or CLUSTER is added (docs/protocol.md §3.3.1 batch specifics).
func (b *Broker) sendBatch(conn sendConn, req *protocol.Command, h *protocol.SendMessageRequestHeader,
	tc protocol.TopicConfig, sysFlag int32, bornHost netip.AddrPort, start time.Time) (*protocol.Command, error) {
	if strings.HasPrefix(h.Topic, names.RetryGroupTopicPrefix) {
		return nil, protocol.Errorf(protocol.MessageIllegal, "batch request does not support retry group %s", h.Topic)
	}
	if len(h.Topic) > names.MaxTopicLength {
		return nil, protocol.Errorf(protocol.MessageIllegal, "message topic length too long %d", len(h.Topic))
	}
	// RocketMQ's putMessages refuses a batch marked as a transaction
	// (prepared or commit/rollback type) or carrying a delay level.
	if message.TransactionType(sysFlag) != message.SysFlagTransactionNotType ||
		delayLevelOf(h.Properties) > 0 {
		return nil, protocol.Errorf(protocol.MessageIllegal, "%s", b.messageIllegalRemark())
	}
	// The items' properties stay encoded (send_raw.go): stored verbatim
	// when every pair is canonical, decoded into maps otherwise.
	msgs, props, err := message.DecodeBatchRaw(req.Body)
	if err != nil {
		return nil, protocol.Errorf(protocol.MessageIllegal, "bad batch body: %v", err)
	}
	if len(msgs) == 0 {
		return nil, protocol.Errorf(protocol.MessageIllegal, "empty batch")
	}
	raw := true
	for _, p := range props {
		if !canonicalProperties(p) {
			raw = false
			break
		}
	}
	exts := make([]message.Ext, len(msgs))
	batch := make([]*message.Ext, len(msgs))
	for i := range msgs {
		m := msgs[i]
		m.Topic = h.Topic
		if !raw {
			m.Properties = message.DecodeProperties(props[i])
			if m.Properties == nil {
				m.Properties = map[string]string{}
			}
		}
		batch[i] = &exts[i]
		exts[i] = message.Ext{
			Message:        m,
			QueueID:        h.QueueID,
			SysFlag:        sysFlag,
			BornTimestamp:  h.BornTimestamp,
			BornHost:       bornHost,
			StoreHost:      b.storeHost,
			ReconsumeTimes: h.ReconsumeTimes,
		}
	}
	queueID := h.QueueID
	b.stats.sendRequests.Add(1)
	tm := b.meters.topic(h.Topic)   // meters.go
	start = b.meters.startAt(start) // meters_rpc.go: zero without metrics
	cb := func(res store.PutResult) {
		b.meters.observeRPC(req.Code, b.writeSendResponse(conn, req, res, queueID, "", tm, MessageNormal, ""), start)
	}
	if raw {
		b.Store.PutMessagesRawProperties(batch, props, cb)
	} else {
		b.Store.PutMessages(batch, cb)
	}
	return nil, nil
}

// writeSendResponse answers a send from the store's completion callback and
// returns the response code (for rocketmq_rpc_latency).
// tm (nil without metrics) counts the stored messages as type mt.
func (b *Broker) writeSendResponse(conn sendConn, req *protocol.Command, res store.PutResult, queueID int32, transactionID string,
	tm *topicMeter, mt MessageType, recallHandle string) protocol.ResponseCode {
	code, remark := putStatusResponse(res, b.Store.DiskUtil, b.cfg.Store.MaxMessageSize)
	// A remoting connection encodes the response before WriteResponse
	// returns and keeps no reference to it (it has no body): the response
	// and its ext list are recycled. Other connections (in-process sends)
	// may keep it.
	rc, recycle := conn.(*remoting.Conn)
	var sr *sendResponse
	var resp *protocol.Command
	if recycle && rc != nil {
		sr, _ = b.sendResps.Get().(*sendResponse)
		if sr == nil {
			sr = new(sendResponse)
		}
		sr.cmd = protocol.ResponseTo(req, code, remark)
		resp = &sr.cmd
	} else {
		resp = protocol.NewResponse(req, code, remark)
	}
	if res.Status.Stored() {
		b.stats.messagesIn.Add(int64(max(res.MsgNum, 1)))
		b.stats.bytesIn.Add(int64(res.WroteBytes))
		tm.stored(mt, max(res.MsgNum, 1), res.WroteBytes)
		h := protocol.SendMessageResponseHeader{
			MsgID:         res.MsgID, // a batch's ids; a single put's is built here
			QueueID:       queueID,
			QueueOffset:   res.QueueOffset,
			TransactionID: transactionID,
			MsgRegion:     b.cfg.RegionID,
			TraceOn:       strconv.FormatBool(b.cfg.TraceOn),
			RecallHandle:  recallHandle,
		}
		if sr != nil && resp.SerializeType == protocol.SerializeRocketMQ {
			// Encoded straight into the frame: the offset message id's hex
			// digits go to the recycled buffer, the numbers to the frame, no
			// string per response.
			sr.enc.Header = h
			if h.MsgID == "" {
				sr.enc.MsgID = message.AppendOffsetMsgID(sr.id[:0], b.storeHost, res.WroteOffset)
			}
			resp.ExtEncoder = &sr.enc
		} else {
			if h.MsgID == "" {
				h.MsgID = message.OffsetMsgID(b.storeHost, res.WroteOffset)
			}
			// An ext list, not a map: no hashing here and no key sort per
			// frame in the encoder.
			var ext []string
			if sr != nil {
				ext = sr.ext[:0]
			}
			resp.ExtList = protocol.AppendSendResponseHeader(ext, &h)
		}
	} else {
		b.stats.sendFailed.Add(1)
		if res.Status == store.OSPageCacheBusy {
			if n := b.stats.pageCacheBusy.Add(1); n == 1 || n%1000 == 0 {
				b.logger.Warn("send refused: page cache busy [PC_SYNCHRONIZED]", "total", n)
			}
		}
		b.logger.Debug("send failed", "status", res.Status.String(), "remark", res.Remark, "addr", conn.RemoteAddr())
	}
	if !req.IsOneway() {
		if err := conn.WriteResponse(resp); err != nil {
			b.logger.Debug("write send response", "addr", conn.RemoteAddr(), "opaque", req.Opaque, "err", err)
		}
	}
	if sr != nil && len(resp.Body) == 0 && resp.BodyDone == nil {
		clear(sr.ext[:])
		sr.cmd = protocol.Command{}
		sr.enc = protocol.SendResponseExt{}
		b.sendResps.Put(sr)
	}
	return code
}

// sendResponse is a recycled send response: the command and room for its
// header, as an ext list (JSON: protocol.AppendSendResponseHeader writes
// at most 7 pairs) or as the encoder ROCKETMQ frames use, with the offset
// message id's digits. A remoting connection encodes the response before
// WriteResponse returns, so none of it is referenced once it is recycled.
type sendResponse struct {
	cmd protocol.Command
	ext [14]string
	enc protocol.SendResponseExt
	id  [message.OffsetMsgIDLenV6]byte
}

// putStatusResponse maps a store put status to the send response code and
// remark: the one place of docs/broker.md §5.1. diskUtil supplies
// the disk usage figures RocketMQ puts into the SERVICE_NOT_AVAILABLE
// remark (operators read them from client logs); it is called only then.
// maxMessageSize is the body limit the MESSAGE_ILLEGAL remark quotes.
func putStatusResponse(res store.PutResult, diskUtil func() string, maxMessageSize int) (protocol.ResponseCode, string) {
	switch res.Status {
	case store.PutOK:
		return protocol.Success, ""
	case store.FlushDiskTimeout:
		return protocol.FlushDiskTimeout, ""
	case store.FlushSlaveTimeout:
		return protocol.FlushSlaveTimeout, ""
	case store.SlaveNotAvailable:
		return protocol.SlaveNotAvailable, ""
	case store.CreateMappedFileFailed:
		return protocol.SystemError, "create mapped file failed, server is busy or broken."
	case store.MessageIllegal, store.PropertiesSizeExceeded:
		return protocol.MessageIllegal, messageIllegalRemark(maxMessageSize)
	case store.ServiceNotAvailable:
		remark := "service not available now. It may be caused by one of the following reasons: the broker's disk is full [" +
			diskUtil() + "], messages are put to the slave, message store has been shut down, etc."
		if res.Remark != "" {
			remark += " (" + res.Remark + ")"
		}
		return protocol.ServiceNotAvailable, remark
	case store.OSPageCacheBusy:
		return protocol.SystemBusy, "[PC_SYNCHRONIZED]broker busy, start flow control for a while"
	case store.InSyncReplicasNotEnough:
		return protocol.SystemError, "in-sync replicas not enough"
	default:
		remark := "UNKNOWN_ERROR"
		if res.Remark != "" {
			remark += ": " + res.Remark
		}
		return protocol.SystemError, remark
	}
}

// messageIllegalRemark is RocketMQ's remark for a MESSAGE_ILLEGAL put: an
// oversized body or properties, or a batch that may not be stored.
func messageIllegalRemark(maxMessageSize int) string {
	return "the message is illegal, maybe msg body or properties length not matched. msg body length limit " +
		strconv.Itoa(maxMessageSize) + "B, msg properties length limit 32KB."
}

func (b *Broker) messageIllegalRemark() string {
	return messageIllegalRemark(b.cfg.Store.MaxMessageSize)
}

// delayLevelOf is the DELAY property of encoded properties, 0 when absent
// or not a number (RocketMQ's getDelayTimeLevel).
func delayLevelOf(props string) int {
	if !strings.Contains(props, message.PropertyDelayTimeLevel) {
		return 0
	}
	n, _ := strconv.Atoi(message.DecodeProperties(props)[message.PropertyDelayTimeLevel])
	return n
}

// sendCheck is RocketMQ 5's msgCheck (docs/broker.md §1.1), in its order:
// the broker's write permission (enforced for ordered topics only: other
// producers follow the route's permission, and in-flight sends to a broker
// being drained by wipeWritePerm still land), the topic name, topics
// nobody may send to, auto-creation, and the queue id. The topic's own
// permission is not checked on send, as in RocketMQ: the name server's
// route carries it to producers.
func (b *Broker) sendCheck(conn sendConn, h *protocol.SendMessageRequestHeader) (protocol.TopicConfig, error) {
	if b.dyn.brokerPermission.Load()&protocol.PermWrite == 0 {
		if tc, ok := b.Topics.getShared(h.Topic); ok && tc.Order {
			return protocol.TopicConfig{}, protocol.Errorf(protocol.NoPermission,
				"the broker[%s] sending message is forbidden", b.addr)
		}
	}
	if err := names.ValidateTopic(h.Topic); err != nil {
		return protocol.TopicConfig{}, protocol.Errorf(protocol.InvalidParameter, "%s", err)
	}
	if names.NotAllowedToSend(h.Topic) {
		return protocol.TopicConfig{}, protocol.Errorf(protocol.NoPermission,
			"Sending message to topic[%s] is forbidden.", h.Topic)
	}
	tc, ok := b.Topics.getShared(h.Topic) // read only: tc.Attributes is the table's
	if !ok {
		var err error
		if h.DefaultTopic != "" {
			tc, ok, err = b.Topics.CreateInSendMessage(h.Topic, h.DefaultTopic, h.DefaultTopicQueueNums, 0, b.dyn.autoCreateTopic.Load())
		}
		if !ok && err == nil && strings.HasPrefix(h.Topic, names.RetryGroupTopicPrefix) {
			tc, err = b.Topics.CreateIfAbsent(h.Topic, 1, protocol.PermRead|protocol.PermWrite, 0)
			ok = err == nil
		}
		if err != nil {
			b.logger.Error("persist auto-created topic", "topic", h.Topic, "err", err)
		}
		if !ok {
			return protocol.TopicConfig{}, protocol.Errorf(protocol.TopicNotExist,
				"topic[%s] not exist, apply first please!%s", h.Topic, faqSuffix)
		}
		b.registerCreated(h.Topic)
	}
	if n := max(tc.WriteQueueNums, tc.ReadQueueNums); h.QueueID >= n {
		return protocol.TopicConfig{}, protocol.Errorf(protocol.InvalidParameter,
			"request queueId[%d] is illegal, %s Producer: %s", h.QueueID, topicConfigString(&tc), conn.RemoteAddr())
	}
	return tc, nil
}

// topicConfigString is Java's TopicConfig.toString, which RocketMQ quotes
// in the illegal-queue remark.
func topicConfigString(tc *protocol.TopicConfig) string {
	perm := []byte("---")
	if tc.Perm&protocol.PermRead != 0 {
		perm[0] = 'R'
	}
	if tc.Perm&protocol.PermWrite != 0 {
		perm[1] = 'W'
	}
	if tc.Perm&protocol.PermInherit != 0 {
		perm[2] = 'X'
	}
	keys := slices.Sorted(maps.Keys(tc.Attributes))
	attrs := make([]string, len(keys))
	for i, k := range keys {
		attrs[i] = k + "=" + tc.Attributes[k]
	}
	filter := tc.TopicFilterType
	if filter == "" {
		filter = protocol.TopicFilterSingleTag
	}
	return fmt.Sprintf("TopicConfig [topicName=%s, readQueueNums=%d, writeQueueNums=%d, perm=%s, topicFilterType=%s, topicSysFlag=%d, order=%t, attributes={%s}]",
		tc.TopicName, tc.ReadQueueNums, tc.WriteQueueNums, perm, filter, tc.TopicSysFlag, tc.Order, strings.Join(attrs, ", "))
}

// retryTopicCheck applies the %RETRY% rules of docs/protocol.md §3.3.1 step 4:
// the group must exist; a message past its retry limit, or sent while the
// group holds ordered-consumption locks, goes to the DLQ without delay.
func (b *Broker) retryTopicCheck(h *protocol.SendMessageRequestHeader, req *protocol.Command, props map[string]string) (string, int32, error) {
	group := strings.TrimPrefix(h.Topic, names.RetryGroupTopicPrefix)
	gc, ok, err := b.Groups.FindOrCreate(group, b.dyn.autoCreateGroup.Load())
	if err != nil {
		b.logger.Error("persist auto-created group", "group", group, "err", err)
	}
	if !ok {
		return "", 0, protocol.Errorf(protocol.SubscriptionGroupNotExist, "subscription group not exist, %s", group)
	}
	maxTimes := gc.RetryMaxTimes
	if req.Version >= 121 && h.MaxReconsumeTimes > 0 {
		maxTimes = h.MaxReconsumeTimes
	}
	if h.ReconsumeTimes <= maxTimes && !b.Locks.HasActiveLocks(group) {
		return h.Topic, h.QueueID, nil
	}
	dlq := names.DLQTopic(group)
	if _, err := b.Topics.CreateIfAbsent(dlq, 1, protocol.PermRead|protocol.PermWrite, 0); err != nil {
		b.logger.Error("persist DLQ topic", "topic", dlq, "err", err)
	}
	props[message.PropertyDelayTimeLevel] = "-1"
	return dlq, 0, nil
}
