package protocol

// Custom headers of the POP family (docs/broker.md §1.14, docs/grpc.md §8)
// and RECALL_MESSAGE (370). The ext names are those of RocketMQ's header
// classes (PopMessageRequestHeader, AckMessageRequestHeader, ...); `,req`
// marks the fields Java declares @CFNotNull. The POP codes (200050+) do
// not fit the ROCKETMQ header's int16 code, so these travel in JSON headers
// only. DecodeHeader / EncodeHeader / AppendHeader convert them.

// Pop consume init modes (ConsumeInitMode): where a group that has never
// popped a queue starts.
const (
	PopInitModeMin = 0 // the queue's minimum offset
	PopInitModeMax = 1 // the queue's maximum offset (new messages only)
)

// PopMessageRequestHeader is POP_MESSAGE's (200050) header. QueueID -1 pops
// every queue of the topic on this broker. InvisibleTime and PollTime are
// milliseconds; BornTime is the client's clock (ms epoch) when it sent the
// request, so a broker answers a held pop before BornTime+PollTime.
// ExpType is "TAG" (default) or "SQL92"; Exp the expression ("*" = all).
// Order pops in FIFO mode (no retry topic, the queue blocks until the batch
// is acked). AttemptID lets a FIFO client retrying a lost response get the
// same messages again.
type PopMessageRequestHeader struct {
	ConsumerGroup string `ext:"consumerGroup,req"`
	Topic         string `ext:"topic,req"`
	QueueID       int32  `ext:"queueId,req"`
	MaxMsgNums    int32  `ext:"maxMsgNums,req"`
	InvisibleTime int64  `ext:"invisibleTime,req"`
	PollTime      int64  `ext:"pollTime,req"`
	BornTime      int64  `ext:"bornTime,req"`
	InitMode      int32  `ext:"initMode,req"`
	ExpType       string `ext:"expType,omitempty"`
	Exp           string `ext:"exp,omitempty"`
	Order         bool   `ext:"order"`
	AttemptID     string `ext:"attemptId,omitempty"`
}

// PopMessageResponseHeader answers POP_MESSAGE and PEEK_MESSAGE.
// StartOffsetInfo, MsgOffsetInfo and OrderCountInfo are the per-queue
// strings of AppendStartOffsetInfo / AppendMsgOffsetInfo /
// AppendOrderCountInfo, from which a client rebuilds each message's
// ExtraInfo (POP_CK). RestNum counts the messages left behind the pop.
type PopMessageResponseHeader struct {
	PopTime         int64  `ext:"popTime"`
	InvisibleTime   int64  `ext:"invisibleTime"`
	ReviveQid       int32  `ext:"reviveQid"`
	RestNum         int64  `ext:"restNum"`
	StartOffsetInfo string `ext:"startOffsetInfo,omitempty"`
	MsgOffsetInfo   string `ext:"msgOffsetInfo,omitempty"`
	OrderCountInfo  string `ext:"orderCountInfo,omitempty"`
}

// AckMessageRequestHeader is ACK_MESSAGE's (200051) header. Topic is the
// real topic the message was popped from (the pop retry topic for a retry
// message: ExtraInfo.RealTopic), QueueID and Offset the message's own
// queue and queue offset, ExtraInfo the message's POP_CK string.
type AckMessageRequestHeader struct {
	ConsumerGroup string `ext:"consumerGroup,req"`
	Topic         string `ext:"topic,req"`
	QueueID       int32  `ext:"queueId,req"`
	ExtraInfo     string `ext:"extraInfo,req"`
	Offset        int64  `ext:"offset,req"`
}

// ChangeInvisibleTimeRequestHeader is CHANGE_MESSAGE_INVISIBLETIME's
// (200053) header: AckMessageRequestHeader plus the new invisible time in
// milliseconds from now (0 makes the message visible again at once: a
// nack).
type ChangeInvisibleTimeRequestHeader struct {
	ConsumerGroup string `ext:"consumerGroup,req"`
	Topic         string `ext:"topic,req"`
	QueueID       int32  `ext:"queueId,req"`
	ExtraInfo     string `ext:"extraInfo,req"`
	Offset        int64  `ext:"offset,req"`
	InvisibleTime int64  `ext:"invisibleTime,req"`
}

// ChangeInvisibleTimeResponseHeader answers CHANGE_MESSAGE_INVISIBLETIME.
// The message's new ExtraInfo is (Offset, PopTime, InvisibleTime,
// ReviveQid, the request's topic type, broker, QueueID, Offset): the new
// checkpoint starts at the message itself.
type ChangeInvisibleTimeResponseHeader struct {
	PopTime       int64 `ext:"popTime"`
	InvisibleTime int64 `ext:"invisibleTime"`
	ReviveQid     int32 `ext:"reviveQid"`
}

// PeekMessageRequestHeader is PEEK_MESSAGE's (200052) header: read without
// changing any state.
type PeekMessageRequestHeader struct {
	Topic         string `ext:"topic,req"`
	QueueID       int32  `ext:"queueId,req"`
	MaxMsgNums    int32  `ext:"maxMsgNums,req"`
	ConsumerGroup string `ext:"consumerGroup,req"`
}

// NotificationRequestHeader is NOTIFICATION's (200054) header: a long poll
// that answers whether the group has messages to pop (QueueID -1 = any).
type NotificationRequestHeader struct {
	ConsumerGroup string `ext:"consumerGroup,req"`
	Topic         string `ext:"topic,req"`
	QueueID       int32  `ext:"queueId,req"`
	PollTime      int64  `ext:"pollTime,req"`
	BornTime      int64  `ext:"bornTime,req"`
	Order         bool   `ext:"order"`
	AttemptID     string `ext:"attemptId,omitempty"`
}

// NotificationResponseHeader answers NOTIFICATION.
type NotificationResponseHeader struct {
	HasMsg      bool `ext:"hasMsg"`
	PollingFull bool `ext:"pollingFull"`
}

// PollingInfoRequestHeader is POLLING_INFO's (200055) header.
type PollingInfoRequestHeader struct {
	ConsumerGroup string `ext:"consumerGroup,req"`
	Topic         string `ext:"topic,req"`
	QueueID       int32  `ext:"queueId,req"`
}

// PollingInfoResponseHeader answers POLLING_INFO: the number of pops held
// for the topic, group and queue.
type PollingInfoResponseHeader struct {
	PollingNum int32 `ext:"pollingNum"`
}

// RecallMessageRequestHeader is RECALL_MESSAGE's (370) header. RecallHandle
// is the send result's recall handle (EncodeRecallHandle).
type RecallMessageRequestHeader struct {
	ProducerGroup string `ext:"producerGroup,omitempty"`
	Topic         string `ext:"topic,req"`
	RecallHandle  string `ext:"recallHandle,req"`
}

// RecallMessageResponseHeader answers RECALL_MESSAGE with the recalled
// message's id (its UNIQ_KEY).
type RecallMessageResponseHeader struct {
	MsgID string `ext:"msgId"`
}

// DecodePopHeader is DecodeHeader for POP_MESSAGE's header without
// reflect (DecodeHeader dispatches to it; TestPopFastHeadersMatchReflect
// holds it to the reflect path).
func DecodePopHeader(ext map[string]string, h *PopMessageRequestHeader) error {
	d := extDecoder{ext: ext}
	d.str("consumerGroup", true, &h.ConsumerGroup)
	d.str("topic", true, &h.Topic)
	d.int32("queueId", true, &h.QueueID)
	d.int32("maxMsgNums", true, &h.MaxMsgNums)
	d.int64("invisibleTime", true, &h.InvisibleTime)
	d.int64("pollTime", true, &h.PollTime)
	d.int64("bornTime", true, &h.BornTime)
	d.int32("initMode", true, &h.InitMode)
	d.str("expType", false, &h.ExpType)
	d.str("exp", false, &h.Exp)
	d.boolean("order", &h.Order)
	d.str("attemptId", false, &h.AttemptID)
	return d.err
}

// DecodeAckHeader is DecodeHeader for ACK_MESSAGE's header without
// reflect.
func DecodeAckHeader(ext map[string]string, h *AckMessageRequestHeader) error {
	d := extDecoder{ext: ext}
	d.str("consumerGroup", true, &h.ConsumerGroup)
	d.str("topic", true, &h.Topic)
	d.int32("queueId", true, &h.QueueID)
	d.str("extraInfo", true, &h.ExtraInfo)
	d.int64("offset", true, &h.Offset)
	return d.err
}

// AppendPopResponseHeader is AppendHeader for a pop response header
// without reflect.
func AppendPopResponseHeader(dst []string, h *PopMessageResponseHeader) []string {
	dst = append(grow(dst, 7), "popTime", itoa(h.PopTime), "invisibleTime", itoa(h.InvisibleTime),
		"reviveQid", itoa(int64(h.ReviveQid)), "restNum", itoa(h.RestNum))
	if h.StartOffsetInfo != "" {
		dst = append(dst, "startOffsetInfo", h.StartOffsetInfo)
	}
	if h.MsgOffsetInfo != "" {
		dst = append(dst, "msgOffsetInfo", h.MsgOffsetInfo)
	}
	if h.OrderCountInfo != "" {
		dst = append(dst, "orderCountInfo", h.OrderCountInfo)
	}
	return dst
}
