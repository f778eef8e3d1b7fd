package client

import (
	"bytes"
	"strconv"
	"strings"
)

// TraceType names a trace record (docs/broker.md §1.15).
type TraceType string

// Trace record types.
const (
	TracePub            TraceType = "Pub"            // a send
	TraceSubBefore      TraceType = "SubBefore"      // a consume started
	TraceSubAfter       TraceType = "SubAfter"       // a consume finished
	TraceEndTransaction TraceType = "EndTransaction" // a transaction committed or rolled back
)

// Separators of RocketMQ's trace encoding: fields of one record are
// separated by 0x01, and every record ends with 0x02.
const (
	traceFieldSep  = '\x01'
	traceRecordSep = '\x02'
)

// Trace message types (RocketMQ's MessageType ordinal in Pub records).
const (
	TraceMsgNormal       = 0
	TraceMsgTransHalf    = 1
	TraceMsgTransCommit  = 2
	TraceMsgDelay        = 3
	traceContextSuccess  = 0 // ConsumeReturnType SUCCESS
	traceContextExcept   = 2 // EXCEPTION (the listener panicked or returned an error)
	traceContextFailed   = 4 // FAILED (retry later)
	traceNullPlaceholder = "null"
)

// TraceRecord is one decoded trace record. Which fields are set depends on
// Type; the field order on the wire is RocketMQ's (see AppendTraceRecord).
type TraceRecord struct {
	Type       TraceType
	Timestamp  int64 // ms since the epoch: send or consume start
	RegionID   string
	Group      string // producer or consumer group
	Topic      string
	MsgID      string // UNIQ_KEY
	Tags       string
	Keys       string // space separated
	StoreHost  string // broker address (Pub, EndTransaction)
	ClientHost string // producer or consumer host
	BodyLength int
	CostMs     int64
	MsgType    int // TraceMsgNormal, ...
	// OffsetMsgID is the broker's offset id (Pub).
	OffsetMsgID string
	Success     bool
	// RequestID pairs a SubBefore with its SubAfter.
	RequestID   string
	RetryTimes  int
	ContextCode int // consume outcome (SubAfter): 0 success, 2 exception, 4 failed

	TransactionID        string // EndTransaction
	TransactionState     string // COMMIT_MESSAGE, ROLLBACK_MESSAGE, UNKNOW
	FromTransactionCheck bool
}

// AppendTraceRecord appends r in RocketMQ's trace text encoding, fields in
// the order Java and Go clients write them:
//
//	Pub:            type ts region group topic msgId tags keys storeHost bodyLength cost msgType offsetMsgId success clientHost
//	SubBefore:      type ts region group requestId msgId retryTimes keys clientHost
//	SubAfter:       type requestId msgId cost success keys contextCode ts group
//	EndTransaction: type ts region group topic msgId tags keys storeHost msgType transactionId transactionState fromTransactionCheck
//
// Empty keys of consume records are written as "null" (for the Java
// console). Separator characters inside values are replaced by spaces.
func AppendTraceRecord(dst []byte, r *TraceRecord) []byte {
	w := traceWriter{dst}
	switch r.Type {
	case TracePub:
		w.field(string(r.Type), strconv.FormatInt(r.Timestamp, 10), r.RegionID, r.Group, r.Topic, r.MsgID, r.Tags, r.Keys,
			r.StoreHost, strconv.Itoa(r.BodyLength), strconv.FormatInt(r.CostMs, 10), strconv.Itoa(r.MsgType), r.OffsetMsgID,
			strconv.FormatBool(r.Success), r.ClientHost)
	case TraceSubBefore:
		w.field(string(r.Type), strconv.FormatInt(r.Timestamp, 10), r.RegionID, r.Group, r.RequestID, r.MsgID,
			strconv.Itoa(r.RetryTimes), orNull(r.Keys), r.ClientHost)
	case TraceSubAfter:
		w.field(string(r.Type), r.RequestID, r.MsgID, strconv.FormatInt(r.CostMs, 10), strconv.FormatBool(r.Success),
			orNull(r.Keys), strconv.Itoa(r.ContextCode), strconv.FormatInt(r.Timestamp, 10), r.Group)
	case TraceEndTransaction:
		w.field(string(r.Type), strconv.FormatInt(r.Timestamp, 10), r.RegionID, r.Group, r.Topic, r.MsgID, r.Tags, r.Keys,
			r.StoreHost, strconv.Itoa(r.MsgType), r.TransactionID, r.TransactionState, strconv.FormatBool(r.FromTransactionCheck))
	default:
		return dst
	}
	return append(w.b, traceRecordSep)
}

type traceWriter struct{ b []byte }

func (w *traceWriter) field(values ...string) {
	for i, v := range values {
		if i > 0 {
			w.b = append(w.b, traceFieldSep)
		}
		for j := 0; j < len(v); j++ {
			c := v[j]
			if c == traceFieldSep || c == traceRecordSep {
				c = ' '
			}
			w.b = append(w.b, c)
		}
	}
}

func orNull(s string) string {
	if s == "" {
		return traceNullPlaceholder
	}
	return s
}

func fromNull(s string) string {
	if s == traceNullPlaceholder {
		return ""
	}
	return s
}

// DecodeTraceRecords parses a trace message body. It is tolerant: records
// of unknown types or with too few fields are skipped, numbers that do not
// parse become 0, and the shorter layouts of older Java clients (Pub
// without clientHost, SubBefore without clientHost, SubAfter without
// timestamp and group) are accepted. It never panics.
func DecodeTraceRecords(body []byte) []TraceRecord {
	var out []TraceRecord
	for len(body) > 0 {
		line := body
		if i := bytes.IndexByte(body, traceRecordSep); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		line = bytes.TrimLeft(line, " \r\n\t")
		if len(line) == 0 {
			continue
		}
		f := strings.Split(string(line), string(traceFieldSep))
		get := func(i int) string {
			if i < len(f) {
				return f[i]
			}
			return ""
		}
		num := func(i int) int64 {
			n, _ := strconv.ParseInt(get(i), 10, 64)
			return n
		}
		r := TraceRecord{Type: TraceType(f[0])}
		switch r.Type {
		case TracePub:
			if len(f) < 13 {
				continue
			}
			r.Timestamp, r.RegionID, r.Group, r.Topic, r.MsgID = num(1), get(2), get(3), get(4), get(5)
			r.Tags, r.Keys, r.StoreHost = get(6), get(7), get(8)
			r.BodyLength, r.CostMs, r.MsgType = int(num(9)), num(10), int(num(11))
			r.OffsetMsgID = get(12)
			r.Success = len(f) < 14 || get(13) == "true" // the oldest layout has no flag: only successes were traced
			r.ClientHost = get(14)
		case TraceSubBefore:
			if len(f) < 8 {
				continue
			}
			r.Timestamp, r.RegionID, r.Group, r.RequestID, r.MsgID = num(1), get(2), get(3), get(4), get(5)
			r.RetryTimes, r.Keys, r.ClientHost = int(num(6)), fromNull(get(7)), get(8)
		case TraceSubAfter:
			if len(f) < 6 {
				continue
			}
			r.RequestID, r.MsgID, r.CostMs, r.Success, r.Keys = get(1), get(2), num(3), get(4) == "true", fromNull(get(5))
			r.ContextCode, r.Timestamp, r.Group = int(num(6)), num(7), get(8)
		case TraceEndTransaction:
			if len(f) < 13 {
				continue
			}
			r.Timestamp, r.RegionID, r.Group, r.Topic, r.MsgID = num(1), get(2), get(3), get(4), get(5)
			r.Tags, r.Keys, r.StoreHost, r.MsgType = get(6), get(7), get(8), int(num(9))
			r.TransactionID, r.TransactionState, r.FromTransactionCheck = get(10), get(11), get(12) == "true"
		default:
			continue
		}
		out = append(out, r)
	}
	return out
}
