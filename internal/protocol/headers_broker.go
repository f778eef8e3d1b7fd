package protocol

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// Custom headers of the requests the broker serves (docs/protocol.md §3.3, §3.4,
// §3.7, §7). Each struct field carries its ext-field name in an `ext` tag;
// `,req` marks fields the Java header class declares not-null (we reject
// their absence with a named error) and `v2:"x"` the one-letter alias of
// SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE. DecodeHeader and EncodeHeader
// convert between the structs and Command.ExtFields.

// Pull request sysFlag bits (docs/protocol.md §7.2).
const (
	PullFlagCommitOffset = 0x1
	PullFlagSuspend      = 0x2
	PullFlagSubscription = 0x4
	PullFlagClassFilter  = 0x8
	PullFlagLitePull     = 0x10
)

// SendMessageRequestHeader is the header of SEND_MESSAGE (10, long names),
// SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320) (letters a..n).
type SendMessageRequestHeader struct {
	ProducerGroup         string `ext:"producerGroup,req" v2:"a"`
	Topic                 string `ext:"topic,req" v2:"b"`
	DefaultTopic          string `ext:"defaultTopic" v2:"c"`
	DefaultTopicQueueNums int32  `ext:"defaultTopicQueueNums" v2:"d"`
	QueueID               int32  `ext:"queueId,req" v2:"e"`
	SysFlag               int32  `ext:"sysFlag,req" v2:"f"`
	BornTimestamp         int64  `ext:"bornTimestamp,req" v2:"g"`
	Flag                  int32  `ext:"flag,req" v2:"h"`
	Properties            string `ext:"properties" v2:"i"`
	ReconsumeTimes        int32  `ext:"reconsumeTimes" v2:"j"`
	UnitMode              bool   `ext:"unitMode" v2:"k"`
	MaxReconsumeTimes     int32  `ext:"maxReconsumeTimes" v2:"l"`
	Batch                 bool   `ext:"batch" v2:"m"`
	BrokerName            string `ext:"bname" v2:"n"`
}

// SendMessageResponseHeader answers a send.
type SendMessageResponseHeader struct {
	MsgID         string `ext:"msgId"`
	QueueID       int32  `ext:"queueId"`
	QueueOffset   int64  `ext:"queueOffset"`
	TransactionID string `ext:"transactionId,omitempty"`
	BatchUniqID   string `ext:"batchUniqId,omitempty"`
	MsgRegion     string `ext:"MSG_REGION,omitempty"`
	TraceOn       string `ext:"TRACE_ON,omitempty"`
	// RecallHandle is set for a timer (delay) message parked in the timer
	// wheel: the handle RECALL_MESSAGE (370) takes (EncodeRecallHandle).
	RecallHandle string `ext:"recallHandle,omitempty"`
}

// PullMessageRequestHeader is PULL_MESSAGE's (11) and LITE_PULL_MESSAGE's
// (361) header (docs/protocol.md §7.1).
type PullMessageRequestHeader struct {
	ConsumerGroup        string `ext:"consumerGroup,req"`
	Topic                string `ext:"topic,req"`
	QueueID              int32  `ext:"queueId,req"`
	QueueOffset          int64  `ext:"queueOffset,req"`
	MaxMsgNums           int32  `ext:"maxMsgNums,req"`
	SysFlag              int32  `ext:"sysFlag,req"`
	CommitOffset         int64  `ext:"commitOffset"`
	SuspendTimeoutMillis int64  `ext:"suspendTimeoutMillis"`
	Subscription         string `ext:"subscription"`
	SubVersion           int64  `ext:"subVersion"`
	ExpressionType       string `ext:"expressionType"`
	MaxMsgBytes          int32  `ext:"maxMsgBytes"`
	BrokerName           string `ext:"bname"`
}

// PullMessageResponseHeader: all four offsets are always present (Java
// clients unbox them).
type PullMessageResponseHeader struct {
	SuggestWhichBrokerID int64 `ext:"suggestWhichBrokerId"`
	NextBeginOffset      int64 `ext:"nextBeginOffset"`
	MinOffset            int64 `ext:"minOffset"`
	MaxOffset            int64 `ext:"maxOffset"`
	TopicSysFlag         int32 `ext:"topicSysFlag"`
	GroupSysFlag         int32 `ext:"groupSysFlag"`
	ForbiddenType        int32 `ext:"forbiddenType,omitempty"`
}

// QueryConsumerOffsetRequestHeader (14). SetZeroIfNotFound defaults to true
// when absent.
type QueryConsumerOffsetRequestHeader struct {
	ConsumerGroup     string `ext:"consumerGroup,req"`
	Topic             string `ext:"topic,req"`
	QueueID           int32  `ext:"queueId,req"`
	SetZeroIfNotFound *bool  `ext:"setZeroIfNotFound"`
}

// UpdateConsumerOffsetRequestHeader (15).
type UpdateConsumerOffsetRequestHeader struct {
	ConsumerGroup string `ext:"consumerGroup,req"`
	Topic         string `ext:"topic,req"`
	QueueID       int32  `ext:"queueId,req"`
	CommitOffset  int64  `ext:"commitOffset,req"`
}

// OffsetResponseHeader carries `offset` (14, 29, 30, 31).
type OffsetResponseHeader struct {
	Offset int64 `ext:"offset"`
}

// ConsumerGroupHeader is the header of GET_CONSUMER_LIST_BY_GROUP (38),
// NOTIFY_CONSUMER_IDS_CHANGED (40), GET_CONSUMER_CONNECTION_LIST (203) and
// GET_CONSUME_STATS (208, plus topic).
type ConsumerGroupHeader struct {
	ConsumerGroup string `ext:"consumerGroup,req"`
	Topic         string `ext:"topic,omitempty"`
}

// QueueHeader is the header of GET_MAX_OFFSET (30, plus committed),
// GET_MIN_OFFSET (31) and GET_EARLIEST_MSG_STORETIME (32).
type QueueHeader struct {
	Topic     string `ext:"topic,req"`
	QueueID   int32  `ext:"queueId,req"`
	Committed *bool  `ext:"committed"`
}

// SearchOffsetRequestHeader (29).
type SearchOffsetRequestHeader struct {
	Topic        string `ext:"topic,req"`
	QueueID      int32  `ext:"queueId,req"`
	Timestamp    int64  `ext:"timestamp,req"`
	BoundaryType string `ext:"boundaryType"`
}

// TimestampResponseHeader carries `timestamp` (32).
type TimestampResponseHeader struct {
	Timestamp int64 `ext:"timestamp"`
}

// UnregisterClientRequestHeader (35); note the upper-case "ID".
type UnregisterClientRequestHeader struct {
	ClientID      string `ext:"clientID,req"`
	ProducerGroup string `ext:"producerGroup"`
	ConsumerGroup string `ext:"consumerGroup"`
}

// CreateTopicRequestHeader (17).
type CreateTopicRequestHeader struct {
	Topic           string `ext:"topic,req"`
	DefaultTopic    string `ext:"defaultTopic"`
	ReadQueueNums   int32  `ext:"readQueueNums,req"`
	WriteQueueNums  int32  `ext:"writeQueueNums,req"`
	Perm            int32  `ext:"perm,req"`
	TopicFilterType string `ext:"topicFilterType"`
	TopicSysFlag    int32  `ext:"topicSysFlag"`
	Order           bool   `ext:"order"`
	Attributes      string `ext:"attributes"`
	Force           bool   `ext:"force"`
}

// TopicHeader is the header of DELETE_TOPIC_IN_BROKER (215),
// GET_TOPIC_STATS_INFO (202), GET_TOPIC_CONFIG (351) and
// QUERY_TOPIC_CONSUME_BY_WHO (300).
type TopicHeader struct {
	Topic string `ext:"topic,req"`
}

// DeleteSubscriptionGroupRequestHeader (207).
type DeleteSubscriptionGroupRequestHeader struct {
	GroupName   string `ext:"groupName,req"`
	CleanOffset bool   `ext:"cleanOffset"`
}

// GroupHeader is the header of GET_SUBSCRIPTIONGROUP_CONFIG (352) and
// QUERY_TOPICS_BY_CONSUMER (343).
type GroupHeader struct {
	Group string `ext:"group,req"`
}

// DecodeHeader fills the struct dst points to from ext. With v2 set, the
// one-letter `v2` aliases are read instead of the long names (fields without
// an alias keep their long name). A missing required field or an unparsable
// number is a *Error with SYSTEM_ERROR and the remark Java's decoder gives,
// so processors can return it as is.
func DecodeHeader(ext map[string]string, dst any, v2 bool) error {
	switch h := dst.(type) { // the hot headers skip reflect (headers_fast.go)
	case *SendMessageRequestHeader:
		return DecodeSendHeader(ext, h, v2)
	case *PullMessageRequestHeader:
		return DecodePullHeader(ext, h)
	case *PopMessageRequestHeader:
		return DecodePopHeader(ext, h)
	case *AckMessageRequestHeader:
		return DecodeAckHeader(ext, h)
	}
	return decodeHeaderReflect(ext, dst, v2)
}

// decodeHeaderReflect is DecodeHeader for any tagged struct.
func decodeHeaderReflect(ext map[string]string, dst any, v2 bool) error {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("protocol: DecodeHeader needs a pointer to a struct, got %T", dst)
	}
	v = v.Elem()
	for _, f := range headerFieldsOf(v.Type()) {
		name := f.name
		if v2 && f.v2 != "" {
			name = f.v2
		}
		s, ok := ext[name]
		if !ok {
			if f.required {
				return missingField(name)
			}
			continue
		}
		if err := setHeaderField(v.Field(f.index), s); err != nil {
			return badFieldValue(name, s, err)
		}
	}
	return nil
}

// EncodeHeader renders a header struct as ext fields (long names, or the
// one-letter aliases with v2). Nil pointers and `omitempty` zero values are
// left out.
func EncodeHeader(src any, v2 bool) map[string]string {
	out := make(map[string]string)
	walkHeader(src, v2, func(name, value string) { out[name] = value })
	return out
}

// AppendHeader is EncodeHeader into a Command.ExtList: the fields as key,
// value pairs appended to dst in struct order, without a map.
func AppendHeader(dst []string, src any, v2 bool) []string {
	if out, ok := appendFastHeader(dst, src, v2); ok {
		return out
	}
	return appendHeaderReflect(dst, src, v2)
}

// appendHeaderReflect is AppendHeader for any tagged struct.
func appendHeaderReflect(dst []string, src any, v2 bool) []string {
	if dst == nil {
		dst = make([]string, 0, 2*len(headerFieldsOf(reflect.Indirect(reflect.ValueOf(src)).Type())))
	}
	walkHeader(src, v2, func(name, value string) { dst = append(dst, name, value) })
	return dst
}

// walkHeader calls emit with each field EncodeHeader renders, in struct
// order.
func walkHeader(src any, v2 bool, emit func(name, value string)) {
	v := reflect.Indirect(reflect.ValueOf(src))
	for _, f := range headerFieldsOf(v.Type()) {
		name := f.name
		if v2 && f.v2 != "" {
			name = f.v2
		}
		fv := v.Field(f.index)
		if fv.Kind() == reflect.Pointer {
			if fv.IsNil() {
				continue
			}
			fv = fv.Elem()
		}
		if f.omitEmpty && fv.IsZero() {
			continue
		}
		switch fv.Kind() {
		case reflect.String:
			emit(name, fv.String())
		case reflect.Bool:
			emit(name, strconv.FormatBool(fv.Bool()))
		case reflect.Int32, reflect.Int64, reflect.Int:
			emit(name, strconv.FormatInt(fv.Int(), 10))
		}
	}
}

type headerField struct {
	index     int
	name, v2  string
	required  bool
	omitEmpty bool
}

// hotHeaderFields holds the parsed tags of the headers on the send and pull
// paths. It is built once during package initialisation and only read
// afterwards (parsing tags per request cost ~15% of a send's CPU).
var hotHeaderFields = func() map[reflect.Type][]headerField {
	m := make(map[reflect.Type][]headerField)
	for _, t := range []reflect.Type{
		reflect.TypeFor[SendMessageRequestHeader](), reflect.TypeFor[SendMessageResponseHeader](),
		reflect.TypeFor[PullMessageRequestHeader](), reflect.TypeFor[PullMessageResponseHeader](),
		reflect.TypeFor[QueryConsumerOffsetRequestHeader](), reflect.TypeFor[UpdateConsumerOffsetRequestHeader](),
		reflect.TypeFor[QueueHeader](), reflect.TypeFor[ConsumerGroupHeader](),
		reflect.TypeFor[ConsumerSendMsgBackRequestHeader](), reflect.TypeFor[EndTransactionRequestHeader](),
		reflect.TypeFor[GetRouteInfoRequestHeader](), reflect.TypeFor[RegisterBrokerRequestHeader](),
		reflect.TypeFor[PopMessageRequestHeader](), reflect.TypeFor[PopMessageResponseHeader](),
		reflect.TypeFor[AckMessageRequestHeader](), reflect.TypeFor[ChangeInvisibleTimeRequestHeader](),
		reflect.TypeFor[ChangeInvisibleTimeResponseHeader](), reflect.TypeFor[NotificationRequestHeader](),
	} {
		m[t] = parseHeaderFields(t)
	}
	return m
}()

// headerFieldsOf returns the parsed tags of a header type.
func headerFieldsOf(t reflect.Type) []headerField {
	if fs, ok := hotHeaderFields[t]; ok {
		return fs
	}
	return parseHeaderFields(t)
}

func parseHeaderFields(t reflect.Type) []headerField {
	fs := make([]headerField, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		tag := sf.Tag.Get("ext")
		if tag == "" {
			continue
		}
		parts := strings.Split(tag, ",")
		f := headerField{index: i, name: parts[0], v2: sf.Tag.Get("v2")}
		for _, p := range parts[1:] {
			switch p {
			case "req":
				f.required = true
			case "omitempty":
				f.omitEmpty = true
			}
		}
		fs = append(fs, f)
	}
	return fs
}

func setHeaderField(f reflect.Value, s string) error {
	if f.Kind() == reflect.Pointer {
		nv := reflect.New(f.Type().Elem())
		if err := setHeaderField(nv.Elem(), s); err != nil {
			return err
		}
		f.Set(nv)
		return nil
	}
	switch f.Kind() {
	case reflect.String:
		f.SetString(s)
	case reflect.Bool:
		// Java Boolean.parseBoolean: only a case-insensitive "true" is true.
		f.SetBool(strings.EqualFold(strings.TrimSpace(s), "true"))
	case reflect.Int32, reflect.Int64, reflect.Int:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, f.Type().Bits())
		if err != nil {
			return err
		}
		f.SetInt(n)
	default:
		return fmt.Errorf("unsupported header field kind %s", f.Kind())
	}
	return nil
}

// ConsumerSendMsgBackRequestHeader is CONSUMER_SEND_MSG_BACK's (36) header
// (docs/protocol.md §3.4, §7.8).
type ConsumerSendMsgBackRequestHeader struct {
	Offset            int64  `ext:"offset,req"` // commit-log offset of the consumed message
	Group             string `ext:"group,req"`
	DelayLevel        int32  `ext:"delayLevel,req"` // 0 = broker picks 3+reconsumeTimes; <0 = straight to DLQ
	OriginMsgID       string `ext:"originMsgId"`
	OriginTopic       string `ext:"originTopic"`
	UnitMode          bool   `ext:"unitMode"`
	MaxReconsumeTimes *int32 `ext:"maxReconsumeTimes"`
}

// ViewMessageRequestHeader is VIEW_MESSAGE_BY_ID's (33) header.
type ViewMessageRequestHeader struct {
	Offset int64  `ext:"offset,req"`
	Topic  string `ext:"topic"`
}

// QueryMessageRequestHeader is QUERY_MESSAGE's (12) header.
type QueryMessageRequestHeader struct {
	Topic          string `ext:"topic,req"`
	Key            string `ext:"key,req"`
	MaxNum         int32  `ext:"maxNum,req"`
	BeginTimestamp int64  `ext:"beginTimestamp,req"`
	EndTimestamp   int64  `ext:"endTimestamp,req"`
}

// QueryMessageResponseHeader answers QUERY_MESSAGE.
type QueryMessageResponseHeader struct {
	IndexLastUpdateTimestamp int64 `ext:"indexLastUpdateTimestamp"`
	IndexLastUpdatePhyoffset int64 `ext:"indexLastUpdatePhyoffset"`
}

// EndTransactionRequestHeader is END_TRANSACTION's (37) header (docs/protocol.md §3.3.2).
type EndTransactionRequestHeader struct {
	ProducerGroup        string `ext:"producerGroup,req"`
	TranStateTableOffset int64  `ext:"tranStateTableOffset,req"`
	CommitLogOffset      int64  `ext:"commitLogOffset,req"`
	CommitOrRollback     int32  `ext:"commitOrRollback,req"` // 0 unknown, 8 commit, 12 rollback
	FromTransactionCheck bool   `ext:"fromTransactionCheck"`
	MsgID                string `ext:"msgId"`
	TransactionID        string `ext:"transactionId"`
	Topic                string `ext:"topic,omitempty"`
	BrokerName           string `ext:"bname,omitempty"`
}

// CheckTransactionStateRequestHeader is CHECK_TRANSACTION_STATE's (39)
// header, broker to producer (docs/protocol.md §3.6).
type CheckTransactionStateRequestHeader struct {
	Topic                string `ext:"topic,omitempty"`
	TranStateTableOffset int64  `ext:"tranStateTableOffset"`
	CommitLogOffset      int64  `ext:"commitLogOffset"`
	MsgID                string `ext:"msgId,omitempty"`
	TransactionID        string `ext:"transactionId,omitempty"`
	OffsetMsgID          string `ext:"offsetMsgId,omitempty"`
	BrokerName           string `ext:"bname,omitempty"`
}
