package protocol

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/apogeemq/apogee/internal/names"
)

// The string formats of POP consumption, RocketMQ's (ExtraInfoUtil,
// ReceiptHandle, KeyBuilder, RecallMessageHandle). Part of the wire
// protocol; never change.
//
// ExtraInfo, the POP_CK property of a popped message (space-separated):
//
//	ckQueueOffset popTime invisibleTime reviveQid topicType brokerName queueId queueOffset
//
// The receipt handle of the 5.x proxy and gRPC clients is the ExtraInfo with
// the message's commit-log offset appended (9 fields). Parsers read the
// fields they know and ignore any that follow (a handle re-issued by a Java
// proxy in local mode can carry a 10th).
//
// The per-queue strings of PopMessageResponseHeader are ';'-separated
// entries of space-separated fields:
//
//	startOffsetInfo  topicType queueId startOffset
//	msgOffsetInfo    topicType queueId offset[,offset...]
//	orderCountInfo   topicType queueId count      (whole queue)
//	                 topicType qo<queueId>%<offset> count   (one message)
//
// The recall handle is the URL-safe Base64 (padded) of
// "v1 <topic> <brokerName> <deliverTimeMs> <messageId>".

// PopOrderReviveQueue is the revive queue id that marks an orderly (FIFO)
// pop in ExtraInfo and receipt handles (KeyBuilder.POP_ORDER_REVIVE_QUEUE).
const PopOrderReviveQueue = 999

// PopTopicType says which topic a popped message was read from: the normal
// topic or the group's pop retry topic (v1 `%RETRY%group_topic`, v2
// `%RETRY%group+topic`). Its decimal digit is field 5 of ExtraInfo.
type PopTopicType uint8

// Pop topic types.
const (
	PopTopicNormal  PopTopicType = 0
	PopTopicRetry   PopTopicType = 1
	PopTopicRetryV2 PopTopicType = 2
)

// ErrBadPopHandle is wrapped by every ExtraInfo, receipt-handle, offset-info
// and recall-handle parse error.
var ErrBadPopHandle = errors.New("protocol: malformed pop handle")

// PopRetryTopicV1 is the group's v1 pop retry topic, `%RETRY%group_topic`
// (names.PopRetryTopicV1, in KeyBuilder's argument order).
func PopRetryTopicV1(topic, group string) string { return names.PopRetryTopicV1(group, topic) }

// PopRetryTopicV2 is the group's v2 pop retry topic, `%RETRY%group+topic`
// (used when the broker's enableRetryTopicV2 is set; names.PopRetryTopicV2).
func PopRetryTopicV2(topic, group string) string { return names.PopRetryTopicV2(group, topic) }

// PopRetryTopic is the group's pop retry topic in the form v2 selects.
func PopRetryTopic(topic, group string, v2 bool) string {
	if v2 {
		return PopRetryTopicV2(topic, group)
	}
	return PopRetryTopicV1(topic, group)
}

// PopTopicTypeOf classifies a topic as RocketMQ's ExtraInfoUtil does: a
// `%RETRY%` topic containing '+' is a v2 retry topic, any other `%RETRY%`
// topic a v1 one, everything else normal.
func PopTopicTypeOf(topic string) PopTopicType {
	if !strings.HasPrefix(topic, names.RetryGroupTopicPrefix) {
		return PopTopicNormal
	}
	if strings.IndexByte(topic, '+') >= 0 {
		return PopTopicRetryV2
	}
	return PopTopicRetry
}

// RealTopic is the topic a message of this type was stored in, given the
// original topic and the consumer group.
func (t PopTopicType) RealTopic(topic, group string) string {
	switch t {
	case PopTopicRetry:
		return PopRetryTopicV1(topic, group)
	case PopTopicRetryV2:
		return PopRetryTopicV2(topic, group)
	}
	return topic
}

// IsRetry reports whether t names a pop retry topic.
func (t PopTopicType) IsRetry() bool { return t == PopTopicRetry || t == PopTopicRetryV2 }

func parsePopTopicType(s string) (PopTopicType, error) {
	switch s {
	case "0":
		return PopTopicNormal, nil
	case "1":
		return PopTopicRetry, nil
	case "2":
		return PopTopicRetryV2, nil
	}
	return 0, fmt.Errorf("%w: topic type %q is not 0, 1 or 2", ErrBadPopHandle, s)
}

// PopNormalTopic recovers the original topic from a pop retry topic of
// group (KeyBuilder.parseNormalTopic); other topics are returned unchanged.
func PopNormalTopic(topic, group string) string {
	if p := names.PopRetryTopicV2(group, ""); strings.HasPrefix(topic, p) {
		return topic[len(p):]
	}
	if p := names.PopRetryTopicV1(group, ""); strings.HasPrefix(topic, p) {
		return topic[len(p):]
	}
	return topic
}

// ReceiptHandle is a popped message's handle: the fields of its ExtraInfo
// (POP_CK) plus its commit-log offset. A handle is valid for ack until
// PopTime+InvisibleTime.
type ReceiptHandle struct {
	CkQueueOffset   int64        // first queue offset covered by the pop's checkpoint
	PopTime         int64        // ms epoch of the pop (retrieveTime)
	InvisibleTime   int64        // ms
	ReviveQueueID   int32        // PopOrderReviveQueue for an orderly pop
	TopicType       PopTopicType // which topic QueueID/QueueOffset index
	BrokerName      string       // broker that owns the checkpoint
	QueueID         int32        // the message's queue
	QueueOffset     int64        // the message's queue offset; -1 when absent (7-field ExtraInfo)
	CommitLogOffset int64        // -1 when absent (8-field ExtraInfo)
}

// NextVisibleTime is when the message becomes visible again (ms epoch).
func (h *ReceiptHandle) NextVisibleTime() int64 { return h.PopTime + h.InvisibleTime }

// IsOrder reports whether the handle comes from an orderly pop.
func (h *ReceiptHandle) IsOrder() bool { return h.ReviveQueueID == PopOrderReviveQueue }

// RealTopic is the topic the message was read from (see PopTopicType).
func (h *ReceiptHandle) RealTopic(topic, group string) string {
	return h.TopicType.RealTopic(topic, group)
}

// AppendExtraInfo appends the 8-field ExtraInfo (POP_CK) form of h.
func (h *ReceiptHandle) AppendExtraInfo(dst []byte) []byte {
	dst = strconv.AppendInt(dst, h.CkQueueOffset, 10)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, h.PopTime, 10)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, h.InvisibleTime, 10)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, int64(h.ReviveQueueID), 10)
	dst = append(dst, ' ', '0'+byte(h.TopicType), ' ')
	dst = append(dst, h.BrokerName...)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, int64(h.QueueID), 10)
	dst = append(dst, ' ')
	return strconv.AppendInt(dst, h.QueueOffset, 10)
}

// ExtraInfo returns the 8-field ExtraInfo (POP_CK) form of h.
func (h *ReceiptHandle) ExtraInfo() string { return string(h.AppendExtraInfo(make([]byte, 0, 64))) }

// String returns the 9-field receipt-handle form of h.
func (h *ReceiptHandle) String() string {
	b := h.AppendExtraInfo(make([]byte, 0, 80))
	b = append(b, ' ')
	return string(strconv.AppendInt(b, h.CommitLogOffset, 10))
}

// ParseReceiptHandle parses a receipt handle: at least 8 fields
// (ReceiptHandle.decode), the 9th (commit-log offset) optional, any further
// fields ignored.
func ParseReceiptHandle(s string) (ReceiptHandle, error) {
	return parseHandle(s, 8)
}

// ParseExtraInfo parses a POP_CK ExtraInfo: at least 7 fields, the 8th
// (the message's queue offset) and 9th optional.
func ParseExtraInfo(s string) (ReceiptHandle, error) {
	return parseHandle(s, 7)
}

func parseHandle(s string, minFields int) (ReceiptHandle, error) {
	h := ReceiptHandle{QueueOffset: -1, CommitLogOffset: -1}
	var f [9]string
	n := 0
	for rest := s; n < len(f); n++ {
		i := strings.IndexByte(rest, ' ')
		if i < 0 {
			f[n] = rest
			n++
			break
		}
		f[n], rest = rest[:i], rest[i+1:]
	}
	if n < minFields {
		return h, fmt.Errorf("%w: %d fields, want at least %d", ErrBadPopHandle, n, minFields)
	}
	var err error
	num := func(i int, bits int) int64 {
		if err != nil {
			return 0
		}
		v, e := strconv.ParseInt(f[i], 10, bits)
		if e != nil {
			err = fmt.Errorf("%w: field %d %q is not a number", ErrBadPopHandle, i+1, f[i])
		}
		return v
	}
	h.CkQueueOffset = num(0, 64)
	h.PopTime = num(1, 64)
	h.InvisibleTime = num(2, 64)
	h.ReviveQueueID = int32(num(3, 32))
	h.QueueID = int32(num(6, 32))
	if n > 7 {
		h.QueueOffset = num(7, 64)
	}
	if n > 8 {
		h.CommitLogOffset = num(8, 64)
	}
	if err != nil {
		return ReceiptHandle{}, err
	}
	if h.TopicType, err = parsePopTopicType(f[4]); err != nil {
		return ReceiptHandle{}, err
	}
	if f[5] == "" {
		return ReceiptHandle{}, fmt.Errorf("%w: empty broker name", ErrBadPopHandle)
	}
	h.BrokerName = f[5]
	return h, nil
}

// PopQueueKey names one queue of a pop response's offset-info strings.
type PopQueueKey struct {
	TopicType PopTopicType
	QueueID   int32
}

// PopOrderCountKey names an orderCountInfo entry: a whole queue (Offset -1)
// or one message of it.
type PopOrderCountKey struct {
	TopicType PopTopicType
	QueueID   int32
	Offset    int64
}

func appendInfoSep(dst []byte) []byte {
	if len(dst) > 0 {
		dst = append(dst, ';')
	}
	return dst
}

// AppendStartOffsetInfo appends one startOffsetInfo entry.
func AppendStartOffsetInfo(dst []byte, t PopTopicType, queueID int32, startOffset int64) []byte {
	dst = appendInfoSep(dst)
	dst = append(dst, '0'+byte(t), ' ')
	dst = strconv.AppendInt(dst, int64(queueID), 10)
	dst = append(dst, ' ')
	return strconv.AppendInt(dst, startOffset, 10)
}

// AppendMsgOffsetInfo appends one msgOffsetInfo entry.
func AppendMsgOffsetInfo(dst []byte, t PopTopicType, queueID int32, offsets []int64) []byte {
	dst = appendInfoSep(dst)
	dst = append(dst, '0'+byte(t), ' ')
	dst = strconv.AppendInt(dst, int64(queueID), 10)
	dst = append(dst, ' ')
	for i, o := range offsets {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, o, 10)
	}
	return dst
}

// AppendOrderCountInfo appends one orderCountInfo entry: for the whole queue
// when offset < 0, else for the message at offset.
func AppendOrderCountInfo(dst []byte, t PopTopicType, queueID int32, offset int64, count int32) []byte {
	dst = appendInfoSep(dst)
	dst = append(dst, '0'+byte(t), ' ')
	if offset >= 0 {
		dst = append(dst, 'q', 'o')
		dst = strconv.AppendInt(dst, int64(queueID), 10)
		dst = append(dst, '%')
		dst = strconv.AppendInt(dst, offset, 10)
	} else {
		dst = strconv.AppendInt(dst, int64(queueID), 10)
	}
	dst = append(dst, ' ')
	return strconv.AppendInt(dst, int64(count), 10)
}

// splitInfo calls fn with the three fields of each ';'-separated entry.
func splitInfo(s string, fn func(t PopTopicType, queue, value string) error) error {
	if s == "" {
		return nil
	}
	for _, entry := range strings.Split(s, ";") {
		f := strings.Split(entry, " ")
		if len(f) != 3 {
			return fmt.Errorf("%w: offset info entry %q has %d fields, want 3", ErrBadPopHandle, entry, len(f))
		}
		t, err := parsePopTopicType(f[0])
		if err != nil {
			return err
		}
		if err := fn(t, f[1], f[2]); err != nil {
			return err
		}
	}
	return nil
}

func parseQueueID(s string) (int32, error) {
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: queue id %q", ErrBadPopHandle, s)
	}
	return int32(v), nil
}

func parseOffset(s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: offset %q", ErrBadPopHandle, s)
	}
	return v, nil
}

// ParseStartOffsetInfo parses a startOffsetInfo string; "" gives nil.
// Duplicate queues are an error, as in RocketMQ.
func ParseStartOffsetInfo(s string) (map[PopQueueKey]int64, error) {
	var out map[PopQueueKey]int64
	err := splitInfo(s, func(t PopTopicType, queue, value string) error {
		q, err := parseQueueID(queue)
		if err != nil {
			return err
		}
		v, err := parseOffset(value)
		if err != nil {
			return err
		}
		if out == nil {
			out = make(map[PopQueueKey]int64, 4)
		}
		k := PopQueueKey{t, q}
		if _, dup := out[k]; dup {
			return fmt.Errorf("%w: duplicate queue %d@%d", ErrBadPopHandle, t, q)
		}
		out[k] = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ParseMsgOffsetInfo parses a msgOffsetInfo string; "" gives nil.
func ParseMsgOffsetInfo(s string) (map[PopQueueKey][]int64, error) {
	var out map[PopQueueKey][]int64
	err := splitInfo(s, func(t PopTopicType, queue, value string) error {
		q, err := parseQueueID(queue)
		if err != nil {
			return err
		}
		parts := strings.Split(value, ",")
		offs := make([]int64, 0, len(parts))
		for _, p := range parts {
			v, err := parseOffset(p)
			if err != nil {
				return err
			}
			offs = append(offs, v)
		}
		if out == nil {
			out = make(map[PopQueueKey][]int64, 4)
		}
		k := PopQueueKey{t, q}
		if _, dup := out[k]; dup {
			return fmt.Errorf("%w: duplicate queue %d@%d", ErrBadPopHandle, t, q)
		}
		out[k] = offs
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ParseOrderCountInfo parses an orderCountInfo string; "" gives nil.
func ParseOrderCountInfo(s string) (map[PopOrderCountKey]int32, error) {
	var out map[PopOrderCountKey]int32
	err := splitInfo(s, func(t PopTopicType, queue, value string) error {
		k := PopOrderCountKey{TopicType: t, Offset: -1}
		if rest, ok := strings.CutPrefix(queue, "qo"); ok {
			qs, os, found := strings.Cut(rest, "%")
			if !found {
				return fmt.Errorf("%w: order count key %q", ErrBadPopHandle, queue)
			}
			q, err := parseQueueID(qs)
			if err != nil {
				return err
			}
			o, err := parseOffset(os)
			if err != nil {
				return err
			}
			if o < 0 {
				return fmt.Errorf("%w: order count key %q", ErrBadPopHandle, queue)
			}
			k.QueueID, k.Offset = q, o
		} else {
			q, err := parseQueueID(queue)
			if err != nil {
				return err
			}
			k.QueueID = q
		}
		c, err := strconv.ParseInt(value, 10, 32)
		if err != nil {
			return fmt.Errorf("%w: order count %q", ErrBadPopHandle, value)
		}
		if out == nil {
			out = make(map[PopOrderCountKey]int32, 4)
		}
		if _, dup := out[k]; dup {
			return fmt.Errorf("%w: duplicate order count key %q", ErrBadPopHandle, queue)
		}
		out[k] = int32(c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RecallHandle is the decoded recall handle of a delay or timer message.
type RecallHandle struct {
	Topic         string
	BrokerName    string
	DeliverTimeMs int64  // the message's scheduled delivery time, ms epoch
	MessageID     string // the message's UNIQ_KEY
}

// EncodeRecallHandle builds the recall handle returned in the send result of
// a delay or timer message.
func EncodeRecallHandle(h RecallHandle) string {
	raw := "v1 " + h.Topic + " " + h.BrokerName + " " + strconv.FormatInt(h.DeliverTimeMs, 10) + " " + h.MessageID
	return base64.URLEncoding.EncodeToString([]byte(raw))
}

// ParseRecallHandle decodes a recall handle. Version "v1" with at least five
// fields is required; a non-numeric time is an error here (RocketMQ reports
// it later as "timestamp invalid"; both answer ILLEGAL_OPERATION).
func ParseRecallHandle(s string) (RecallHandle, error) {
	if s == "" {
		return RecallHandle{}, fmt.Errorf("%w: recall handle is invalid", ErrBadPopHandle)
	}
	raw, err := base64.URLEncoding.DecodeString(s)
	if err != nil {
		// Java's URL decoder also accepts unpadded input.
		if raw, err = base64.RawURLEncoding.DecodeString(s); err != nil {
			return RecallHandle{}, fmt.Errorf("%w: recall handle is invalid", ErrBadPopHandle)
		}
	}
	f := strings.Split(string(raw), " ")
	if f[0] != "v1" || len(f) < 5 {
		return RecallHandle{}, fmt.Errorf("%w: recall handle is invalid", ErrBadPopHandle)
	}
	ts, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil {
		return RecallHandle{}, fmt.Errorf("%w: recall handle timestamp %q", ErrBadPopHandle, f[3])
	}
	return RecallHandle{Topic: f[1], BrokerName: f[2], DeliverTimeMs: ts, MessageID: f[4]}, nil
}
