package message

import (
	"bytes"
	"strings"
)

// Properties string separators (docs/protocol.md §6.2). Part of the wire and
// on-disk format; never change.
const (
	NameValueSeparator = '\x01'
	PropertySeparator  = '\x02'
)

// KeySeparator separates business keys inside the KEYS property.
const KeySeparator = " "

// Well-known property keys (docs/protocol.md §6.3, docs/broker.md §5.5).
// The values are RocketMQ's spellings; part of the wire format.
const (
	PropertyKeys                           = "KEYS"
	PropertyTags                           = "TAGS"
	PropertyWaitStoreMsgOK                 = "WAIT"
	PropertyDelayTimeLevel                 = "DELAY"
	PropertyRetryTopic                     = "RETRY_TOPIC"
	PropertyRealTopic                      = "REAL_TOPIC"
	PropertyRealQueueID                    = "REAL_QID"
	PropertyTransactionPrepared            = "TRAN_MSG"
	PropertyProducerGroup                  = "PGROUP"
	PropertyMinOffset                      = "MIN_OFFSET"
	PropertyMaxOffset                      = "MAX_OFFSET"
	PropertyBuyerID                        = "BUYER_ID"
	PropertyOriginMessageID                = "ORIGIN_MESSAGE_ID"
	PropertyTransferFlag                   = "TRANSFER_FLAG"
	PropertyCorrectionFlag                 = "CORRECTION_FLAG"
	PropertyMQ2Flag                        = "MQ2_FLAG"
	PropertyReconsumeTime                  = "RECONSUME_TIME"
	PropertyMsgRegion                      = "MSG_REGION"
	PropertyTraceSwitch                    = "TRACE_ON"
	PropertyUniqClientMessageIDKeyidx      = "UNIQ_KEY"
	PropertyExtendUniqInfo                 = "EXTEND_UNIQ_INFO"
	PropertyMaxReconsumeTimes              = "MAX_RECONSUME_TIMES"
	PropertyConsumeStartTimestamp          = "CONSUME_START_TIME"
	PropertyInnerNum                       = "INNER_NUM"
	PropertyInnerBase                      = "INNER_BASE"
	PropertyTransactionPreparedQueueOffset = "TRAN_PREPARED_QUEUE_OFFSET"
	PropertyTransactionCheckTimes          = "TRANSACTION_CHECK_TIMES"
	PropertyCheckImmunityTimeInSeconds     = "CHECK_IMMUNITY_TIME_IN_SECONDS"
	PropertyTransactionID                  = "__transactionId__"
	PropertyInstanceID                     = "INSTANCE_ID"
	PropertyCorrelationID                  = "CORRELATION_ID"
	PropertyMessageReplyToClient           = "REPLY_TO_CLIENT"
	PropertyMessageTTL                     = "TTL"
	PropertyReplyMessageArriveTime         = "ARRIVE_TIME"
	PropertyPushReplyTime                  = "PUSH_REPLY_TIME"
	PropertyCluster                        = "CLUSTER"
	PropertyMessageType                    = "MSG_TYPE"
	PropertyPopCK                          = "POP_CK"
	PropertyPopCKOffset                    = "POP_CK_OFFSET"
	PropertyFirstPopTime                   = "1ST_POP_TIME"
	PropertyShardingKey                    = "__SHARDINGKEY" // Java producers
	PropertyGoShardingKey                  = "SHARDING_KEY"  // Go producers
	PropertyForwardQueueID                 = "PROPERTY_FORWARD_QUEUE_ID"
	PropertyRedirect                       = "REDIRECT"
	PropertyInnerMultiDispatch             = "INNER_MULTI_DISPATCH"
	PropertyInnerMultiQueueOffset          = "INNER_MULTI_QUEUE_OFFSET"
	PropertyTraceContext                   = "TRACE_CONTEXT"
	PropertyTimerDeliverMS                 = "TIMER_DELIVER_MS"
	PropertyTimerDelaySec                  = "TIMER_DELAY_SEC"
	PropertyTimerDelayMS                   = "TIMER_DELAY_MS"
	PropertyTimerOutMS                     = "TIMER_OUT_MS"
	PropertyTimerEnqueueMS                 = "TIMER_ENQUEUE_MS"
	PropertyTimerDequeueMS                 = "TIMER_DEQUEUE_MS"
	PropertyTimerRollTimes                 = "TIMER_ROLL_TIMES"
	PropertyTimerDelUniqKey                = "TIMER_DEL_UNIQKEY"
	PropertyTimerDelayLevel                = "TIMER_DELAY_LEVEL"
	PropertyBornHost                       = "__BORNHOST"
	PropertyBornTimestamp                  = "BORN_TIMESTAMP"
	PropertyDLQOriginTopic                 = "DLQ_ORIGIN_TOPIC"
	PropertyDLQOriginMessageID             = "DLQ_ORIGIN_MESSAGE_ID"
	PropertyDupInfo                        = "DUP_INFO"
	PropertyCRC32                          = "__CRC32#"
	PropertyStartDeliverTime               = "__STARTDELIVERTIME"

	// PropertyTransientPrefix starts the names of properties the broker
	// keeps in memory only; they are never stored.
	PropertyTransientPrefix = "__RMQ.TRANSIENT."
)

// ReplyMessageType is the PropertyMessageType value of a request/reply reply.
const ReplyMessageType = "reply"

// MaxPropertiesSize is the largest properties string the stored layout can
// hold: its length field is a signed 16-bit byte count.
const MaxPropertiesSize = 32767

// PropertiesLen returns the byte length EncodeProperties(props) would have,
// without encoding.
func PropertiesLen(props map[string]string) int {
	n := 0
	for k, v := range props {
		n += len(k) + len(v) + 2
	}
	return n
}

// EncodeProperties renders props as RocketMQ's properties string:
// name 0x01 value 0x02 for every pair, keys in ascending order so equal maps
// encode to equal bytes. Names must not contain 0x01/0x02 and values must not
// contain 0x02; empty values are written but dropped by decoders.
func EncodeProperties(props map[string]string) string {
	if len(props) == 0 {
		return ""
	}
	return string(AppendProperties(make([]byte, 0, PropertiesLen(props)), props))
}

// sortInline bounds the number of properties sorted without allocating.
const sortInline = 32

// property is one name/value pair.
type property struct{ name, value string }

// sortedProperties returns props' pairs in ascending name order, in buf
// when it has room (so small maps cost no allocation).
func sortedProperties(props map[string]string, buf []property) []property {
	pairs := buf[:0]
	if len(props) > cap(buf) {
		pairs = make([]property, 0, len(props))
	}
	for k, v := range props {
		// Insertion sort while collecting: maps here hold a handful of
		// entries, and this avoids a second pass and any lookups.
		i := len(pairs)
		pairs = append(pairs, property{})
		for i > 0 && pairs[i-1].name > k {
			pairs[i] = pairs[i-1]
			i--
		}
		pairs[i] = property{k, v}
	}
	return pairs
}

// propertiesSize is the encoded length of pairs.
func propertiesSize(pairs []property) int {
	n := 0
	for _, p := range pairs {
		n += len(p.name) + len(p.value) + 2
	}
	return n
}

func appendPairs(dst []byte, pairs []property) []byte {
	for _, p := range pairs {
		dst = append(dst, p.name...)
		dst = append(dst, NameValueSeparator)
		dst = append(dst, p.value...)
		dst = append(dst, PropertySeparator)
	}
	return dst
}

// AppendProperties appends the encoding of props (see EncodeProperties) to
// dst. For up to 32 properties it allocates nothing when dst has room.
func AppendProperties(dst []byte, props map[string]string) []byte {
	if len(props) == 0 {
		return dst
	}
	var buf [sortInline]property
	return appendPairs(dst, sortedProperties(props, buf[:]))
}

// DecodeProperties parses a properties string the way the Java broker does
// (MessageDecoder.string2messageProperties): split on 0x02; in each segment
// the name ends at the first 0x01; segments with an empty name or an empty
// value are skipped; a value may contain further 0x01 bytes. It never fails
// and never panics. The result is never nil; its strings share s's memory.
func DecodeProperties(s string) map[string]string {
	// The hint is capped: a hostile string of separators must not size a
	// map far beyond what its valid pairs could fill.
	props := make(map[string]string, min(strings.Count(s, string(PropertySeparator))+1, 32))
	for len(s) > 0 {
		seg := s
		if i := strings.IndexByte(s, PropertySeparator); i >= 0 {
			seg, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		k, v, ok := strings.Cut(seg, string(NameValueSeparator))
		if !ok || k == "" || v == "" {
			continue
		}
		props[k] = v
	}
	return props
}

// LookupProperty finds name in a raw properties string without building a
// map, with DecodeProperties' rules (the last occurrence wins). It is meant
// for hot paths that need one or two values (tags, keys, unique key).
func LookupProperty(s, name string) (string, bool) {
	if name == "" || strings.IndexByte(name, NameValueSeparator) >= 0 {
		return "", false
	}
	value, found := "", false
	for len(s) > 0 {
		seg := s
		if i := strings.IndexByte(s, PropertySeparator); i >= 0 {
			seg, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		if len(seg) <= len(name)+1 || seg[len(name)] != NameValueSeparator || seg[:len(name)] != name {
			continue
		}
		value, found = seg[len(name)+1:], true
	}
	return value, found
}

// LookupPropertyBytes is LookupProperty over raw bytes; the value aliases s.
func LookupPropertyBytes(s []byte, name string) ([]byte, bool) {
	if name == "" || strings.IndexByte(name, NameValueSeparator) >= 0 {
		return nil, false
	}
	var value []byte
	found := false
	for len(s) > 0 {
		var seg []byte
		seg, s = cutProperty(s)
		if propertyIs(seg, name) {
			value, found = seg[len(name)+1:], true
		}
	}
	return value, found
}

// cutProperty splits the first name=value pair off a raw properties
// string: seg is the pair without its separator, rest what follows.
func cutProperty(s []byte) (seg, rest []byte) {
	if i := bytes.IndexByte(s, PropertySeparator); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, nil
}

// propertyIs reports whether seg is a name=value pair of name with a
// non-empty value (LookupPropertyBytes' rule: an empty value is absent).
func propertyIs(seg []byte, name string) bool {
	return len(seg) > len(name)+1 && seg[len(name)] == NameValueSeparator && string(seg[:len(name)]) == name
}
