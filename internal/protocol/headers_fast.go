package protocol

import (
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Hand-written codecs of the send and pull headers, the two on every
// message's path. DecodeHeader and AppendHeader use them instead of walking
// the struct with reflect (reflect.Value per field, a closure per emitted
// field); they follow the `ext` / `v2` tags of the structs exactly, and
// TestFastHeadersMatchReflect and FuzzFastHeaders hold them to the generic
// code's results, errors included. A new field in one of these structs
// needs a line here too (the tests fail until it has one).

// extDecoder reads fields from an ext map with DecodeHeader's rules, keeping
// the first error; later reads are no-ops once it is set.
type extDecoder struct {
	ext  map[string]string
	list []string // key, value pairs searched after ext (a Command's ExtList)
	// next is where the list search starts: just past the last hit. The
	// SDKs write a header's fields in the order its decoder reads them,
	// so each read then matches at its first comparison.
	next int
	err  error
}

func (d *extDecoder) lookup(name string, required bool) (string, bool) {
	if d.err != nil {
		return "", false
	}
	var s string
	var ok bool
	if d.ext != nil { // the broker's sends come with a list only
		s, ok = d.ext[name]
	}
	if !ok && len(d.list) > 1 {
		n := len(d.list) &^ 1
		start := d.next // even
		if start >= n {
			start = 0
		}
		if d.list[start] == name { // the usual case: the next pair
			d.next = start + 2
			return d.list[start+1], true
		}
		for j := 2; j < n; j += 2 {
			i := start + j
			if i >= n {
				i -= n
			}
			if d.list[i] == name {
				s, ok = d.list[i+1], true
				d.next = i + 2
				break
			}
		}
	}
	if !ok && required {
		d.err = missingField(name)
	}
	return s, ok
}

func (d *extDecoder) str(name string, required bool, dst *string) {
	if s, ok := d.lookup(name, required); ok {
		*dst = s
	}
}

func (d *extDecoder) boolean(name string, dst *bool) {
	if s, ok := d.lookup(name, false); ok {
		*dst = strings.EqualFold(strings.TrimSpace(s), "true")
	}
}

func (d *extDecoder) int64(name string, required bool, dst *int64) {
	if s, ok := d.lookup(name, required); ok {
		if n, ok := parseDecimal(s); ok {
			*dst = n
			return
		}
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			d.err = badFieldValue(name, s, err)
			return
		}
		*dst = n
	}
}

func (d *extDecoder) int32(name string, required bool, dst *int32) {
	if s, ok := d.lookup(name, required); ok {
		if n, ok := parseDecimal(s); ok && n == int64(int32(n)) {
			*dst = int32(n)
			return
		}
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
		if err != nil {
			d.err = badFieldValue(name, s, err)
			return
		}
		*dst = int32(n)
	}
}

// parseDecimal is strconv.ParseInt(s, 10, 64) for what headers carry: an
// optional sign and 1 to 18 digits, nothing else (no overflow is
// possible). It reports false for anything else, which the caller hands
// to strconv (with its TrimSpace, error and range rules).
func parseDecimal(s string) (int64, bool) {
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return 0, false
		}
		n = n*10 + int64(c)
	}
	if neg {
		n = -n
	}
	return n, true
}

// badFieldValue is DecodeHeader's error for an unparsable value.
func badFieldValue(name, s string, err error) *Error {
	return Errorf(SystemError, "the custom field <%s> has a bad value %q: %v", name, s, err)
}

// pick returns the v2 alias when v2 is set.
func pick(v2 bool, long, short string) string {
	if v2 {
		return short
	}
	return long
}

// DecodeSendHeader is DecodeHeader for a send header, without the
// interface conversion (h can stay on the caller's stack).
func DecodeSendHeader(ext map[string]string, h *SendMessageRequestHeader, v2 bool) error {
	return decodeSendHeader(extDecoder{ext: ext}, h, v2)
}

// DecodeSendHeaderOf is DecodeSendHeader reading c's ext fields wherever
// they are: ExtFields, or ExtList (a request decoded by a FrameReader with
// SetExtListCodes, or built by a local caller).
func DecodeSendHeaderOf(c *Command, h *SendMessageRequestHeader, v2 bool) error {
	if c.ExtFields == nil && decodeSendHeaderList(c.ExtList, h, v2) {
		return nil
	}
	return decodeSendHeader(extDecoder{ext: c.ExtFields, list: c.ExtList}, h, v2)
}

// Send header fields in decodeSendHeader's order: a field's index is its
// bit in decodeSendHeaderList's masks and, with v2, its key's letter less
// 'a'.
const (
	sendFieldProducerGroup = iota
	sendFieldTopic
	sendFieldDefaultTopic
	sendFieldDefaultTopicQueueNums
	sendFieldQueueID
	sendFieldSysFlag
	sendFieldBornTimestamp
	sendFieldFlag
	sendFieldProperties
	sendFieldReconsumeTimes
	sendFieldUnitMode
	sendFieldMaxReconsumeTimes
	sendFieldBatch
	sendFieldBrokerName
	sendFields
)

// sendFieldsRequired are the fields decodeSendHeader requires.
const sendFieldsRequired = 1<<sendFieldProducerGroup | 1<<sendFieldTopic | 1<<sendFieldQueueID |
	1<<sendFieldSysFlag | 1<<sendFieldBornTimestamp | 1<<sendFieldFlag

// sendHeaderField is the field a send header key names (V1 long names or
// V2 letters), -1 for any other key.
func sendHeaderField(k string, v2 bool) int {
	if v2 {
		if len(k) == 1 && k[0] >= 'a' && k[0] < 'a'+sendFields {
			return int(k[0] - 'a')
		}
		return -1
	}
	switch k {
	case "producerGroup":
		return sendFieldProducerGroup
	case "topic":
		return sendFieldTopic
	case "defaultTopic":
		return sendFieldDefaultTopic
	case "defaultTopicQueueNums":
		return sendFieldDefaultTopicQueueNums
	case "queueId":
		return sendFieldQueueID
	case "sysFlag":
		return sendFieldSysFlag
	case "bornTimestamp":
		return sendFieldBornTimestamp
	case "flag":
		return sendFieldFlag
	case "properties":
		return sendFieldProperties
	case "reconsumeTimes":
		return sendFieldReconsumeTimes
	case "unitMode":
		return sendFieldUnitMode
	case "maxReconsumeTimes":
		return sendFieldMaxReconsumeTimes
	case "batch":
		return sendFieldBatch
	case "bname":
		return sendFieldBrokerName
	}
	return -1
}

// decodeSendHeaderList is decodeSendHeader over an ext list in one pass:
// each pair is matched to its field by its key instead of each field
// searching the list. It reports false, leaving h untouched, whenever the
// two could differ: a key that repeats, a required field missing, or a
// number parseDecimal does not take (with or without an error); the
// caller then runs decodeSendHeader, which gives the result and the error
// it always gave. TestSendHeaderListOnePass and FuzzSendHeaderListOnePass
// hold the two to the same headers.
func decodeSendHeaderList(list []string, h *SendMessageRequestHeader, v2 bool) bool {
	out := *h
	var seen uint32
	for i := 0; i+1 < len(list); i += 2 {
		f := sendHeaderField(list[i], v2)
		if f < 0 {
			continue
		}
		if seen&(1<<f) != 0 {
			return false
		}
		seen |= 1 << f
		v := list[i+1]
		switch f {
		case sendFieldProducerGroup:
			out.ProducerGroup = v
			continue
		case sendFieldTopic:
			out.Topic = v
			continue
		case sendFieldDefaultTopic:
			out.DefaultTopic = v
			continue
		case sendFieldProperties:
			out.Properties = v
			continue
		case sendFieldBrokerName:
			out.BrokerName = v
			continue
		case sendFieldUnitMode:
			out.UnitMode = strings.EqualFold(strings.TrimSpace(v), "true")
			continue
		case sendFieldBatch:
			out.Batch = strings.EqualFold(strings.TrimSpace(v), "true")
			continue
		}
		n, ok := parseDecimal(v)
		if !ok {
			return false
		}
		if f == sendFieldBornTimestamp {
			out.BornTimestamp = n
			continue
		}
		if n != int64(int32(n)) {
			return false
		}
		switch f {
		case sendFieldDefaultTopicQueueNums:
			out.DefaultTopicQueueNums = int32(n)
		case sendFieldQueueID:
			out.QueueID = int32(n)
		case sendFieldSysFlag:
			out.SysFlag = int32(n)
		case sendFieldFlag:
			out.Flag = int32(n)
		case sendFieldReconsumeTimes:
			out.ReconsumeTimes = int32(n)
		case sendFieldMaxReconsumeTimes:
			out.MaxReconsumeTimes = int32(n)
		}
	}
	if seen&sendFieldsRequired != sendFieldsRequired {
		return false
	}
	*h = out
	return true
}

func decodeSendHeader(d extDecoder, h *SendMessageRequestHeader, v2 bool) error {
	d.str(pick(v2, "producerGroup", "a"), true, &h.ProducerGroup)
	d.str(pick(v2, "topic", "b"), true, &h.Topic)
	d.str(pick(v2, "defaultTopic", "c"), false, &h.DefaultTopic)
	d.int32(pick(v2, "defaultTopicQueueNums", "d"), false, &h.DefaultTopicQueueNums)
	d.int32(pick(v2, "queueId", "e"), true, &h.QueueID)
	d.int32(pick(v2, "sysFlag", "f"), true, &h.SysFlag)
	d.int64(pick(v2, "bornTimestamp", "g"), true, &h.BornTimestamp)
	d.int32(pick(v2, "flag", "h"), true, &h.Flag)
	d.str(pick(v2, "properties", "i"), false, &h.Properties)
	d.int32(pick(v2, "reconsumeTimes", "j"), false, &h.ReconsumeTimes)
	d.boolean(pick(v2, "unitMode", "k"), &h.UnitMode)
	d.int32(pick(v2, "maxReconsumeTimes", "l"), false, &h.MaxReconsumeTimes)
	d.boolean(pick(v2, "batch", "m"), &h.Batch)
	d.str(pick(v2, "bname", "n"), false, &h.BrokerName)
	return d.err
}

// DecodePullHeader is DecodeHeader for a pull header (it has no v2
// aliases).
func DecodePullHeader(ext map[string]string, h *PullMessageRequestHeader) error {
	d := extDecoder{ext: ext}
	d.str("consumerGroup", true, &h.ConsumerGroup)
	d.str("topic", true, &h.Topic)
	d.int32("queueId", true, &h.QueueID)
	d.int64("queueOffset", true, &h.QueueOffset)
	d.int32("maxMsgNums", true, &h.MaxMsgNums)
	d.int32("sysFlag", true, &h.SysFlag)
	d.int64("commitOffset", false, &h.CommitOffset)
	d.int64("suspendTimeoutMillis", false, &h.SuspendTimeoutMillis)
	d.str("subscription", false, &h.Subscription)
	d.int64("subVersion", false, &h.SubVersion)
	d.str("expressionType", false, &h.ExpressionType)
	d.int32("maxMsgBytes", false, &h.MaxMsgBytes)
	d.str("bname", false, &h.BrokerName)
	return d.err
}

// appendFastHeader appends src's fields as AppendHeader would, reporting
// false for types without a hand-written encoder.
func appendFastHeader(dst []string, src any, v2 bool) ([]string, bool) {
	switch h := src.(type) {
	case *SendMessageRequestHeader:
		return AppendSendHeader(dst, h, v2), true
	case *PullMessageRequestHeader:
		return AppendPullHeader(dst, h), true
	case *SendMessageResponseHeader:
		return AppendSendResponseHeader(dst, h), true
	case *PullMessageResponseHeader:
		return AppendPullResponseHeader(dst, h), true
	case *PopMessageResponseHeader:
		return AppendPopResponseHeader(dst, h), true
	}
	return dst, false
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// AppendSendHeader is AppendHeader for a send header, without the
// interface conversion (h can stay on the caller's stack).
func AppendSendHeader(dst []string, h *SendMessageRequestHeader, v2 bool) []string {
	return append(grow(dst, 14),
		pick(v2, "producerGroup", "a"), h.ProducerGroup,
		pick(v2, "topic", "b"), h.Topic,
		pick(v2, "defaultTopic", "c"), h.DefaultTopic,
		pick(v2, "defaultTopicQueueNums", "d"), itoa(int64(h.DefaultTopicQueueNums)),
		pick(v2, "queueId", "e"), itoa(int64(h.QueueID)),
		pick(v2, "sysFlag", "f"), itoa(int64(h.SysFlag)),
		pick(v2, "bornTimestamp", "g"), itoa(h.BornTimestamp),
		pick(v2, "flag", "h"), itoa(int64(h.Flag)),
		pick(v2, "properties", "i"), h.Properties,
		pick(v2, "reconsumeTimes", "j"), itoa(int64(h.ReconsumeTimes)),
		pick(v2, "unitMode", "k"), strconv.FormatBool(h.UnitMode),
		pick(v2, "maxReconsumeTimes", "l"), itoa(int64(h.MaxReconsumeTimes)),
		pick(v2, "batch", "m"), strconv.FormatBool(h.Batch),
		pick(v2, "bname", "n"), h.BrokerName,
	)
}

// ExtEncoder appends ext entries in the ROCKETMQ form (docs/protocol.md
// §1.5: key length int16, key, value length int32, value) to a header
// being encoded: Command.ExtEncoder.
type ExtEncoder interface {
	AppendRocketMQExt(dst []byte) ([]byte, error)
}

// SendHeaderExt is a send header as a Command.ExtEncoder. The frame gets
// the bytes that AppendSendHeader's list would give it (without
// maxReconsumeTimes when OmitMaxReconsumeTimes is set, as the producers'
// DeleteExt), written straight into the frame: no list, no strings for the
// numbers. TestSendHeaderExtMatchesList and FuzzSendHeaderExtMatchesList
// hold the two to the same frame bytes.
type SendHeaderExt struct {
	Header                SendMessageRequestHeader
	V2                    bool
	OmitMaxReconsumeTimes bool
	// Template, if not nil, keeps the encoded entries that a producer's
	// sends to one broker share, from one encoding to the next: same
	// bytes, only queueId, bornTimestamp and properties encoded per send.
	Template *SendHeaderTemplate
}

// SendHeaderTemplate is the encoded form of a send header's entries other
// than queueId, bornTimestamp and properties (which change from one send
// to the next), in four runs around those three: [producerGroup topic
// defaultTopic defaultTopicQueueNums] queueId [sysFlag] bornTimestamp
// [flag] properties [reconsumeTimes unitMode maxReconsumeTimes batch
// bname]. SendHeaderExt rebuilds it whenever one of the fields it holds
// differs from the header being encoded, so a stale template can only
// cost a rebuild, never wrong bytes. Not safe for concurrent use: one per
// request object.
type SendHeaderTemplate struct {
	key      SendMessageRequestHeader // what buf encodes; QueueID, BornTimestamp, Properties unused
	v2, omit bool
	built    bool
	buf      []byte                  // the runs back to back
	cut      [sendHeaderRuns - 1]int // where each run but the last ends in buf
}

// holds reports whether t encodes h's shared entries.
func (t *SendHeaderTemplate) holds(h *SendMessageRequestHeader, v2, omit bool) bool {
	k := &t.key
	return t.built && t.v2 == v2 && t.omit == omit &&
		k.ProducerGroup == h.ProducerGroup && k.Topic == h.Topic && k.DefaultTopic == h.DefaultTopic &&
		k.DefaultTopicQueueNums == h.DefaultTopicQueueNums && k.SysFlag == h.SysFlag && k.Flag == h.Flag &&
		k.ReconsumeTimes == h.ReconsumeTimes && k.UnitMode == h.UnitMode &&
		k.MaxReconsumeTimes == h.MaxReconsumeTimes && k.Batch == h.Batch && k.BrokerName == h.BrokerName
}

// build encodes h's shared entries into t.
func (t *SendHeaderTemplate) build(h *SendMessageRequestHeader, v2, omit bool) {
	t.key, t.v2, t.omit, t.built = *h, v2, omit, true
	t.key.QueueID, t.key.BornTimestamp, t.key.Properties = 0, 0, ""
	b := t.buf[:0]
	for run := range sendHeaderRuns {
		b = appendSendRun(b, h, v2, omit, run)
		if run < len(t.cut) {
			t.cut[run] = len(b)
		}
	}
	t.buf = b
}

// sendHeaderRuns is the number of runs of shared entries in a send header;
// one per-send entry (appendSendEntry) follows each run but the last.
const sendHeaderRuns = 4

// appendSendRun appends the shared entries of run (0..3), in
// AppendSendHeader's order: [producerGroup topic defaultTopic
// defaultTopicQueueNums] [sysFlag] [flag] [reconsumeTimes unitMode
// maxReconsumeTimes (unless omit) batch bname].
func appendSendRun(dst []byte, h *SendMessageRequestHeader, v2, omit bool, run int) []byte {
	switch run {
	case 0:
		dst = appendExtString(dst, pick(v2, "producerGroup", "a"), h.ProducerGroup)
		dst = appendExtString(dst, pick(v2, "topic", "b"), h.Topic)
		dst = appendExtString(dst, pick(v2, "defaultTopic", "c"), h.DefaultTopic)
		return appendExtInt(dst, pick(v2, "defaultTopicQueueNums", "d"), int64(h.DefaultTopicQueueNums))
	case 1:
		return appendExtInt(dst, pick(v2, "sysFlag", "f"), int64(h.SysFlag))
	case 2:
		return appendExtInt(dst, pick(v2, "flag", "h"), int64(h.Flag))
	default:
		dst = appendExtInt(dst, pick(v2, "reconsumeTimes", "j"), int64(h.ReconsumeTimes))
		dst = appendExtString(dst, pick(v2, "unitMode", "k"), strconv.FormatBool(h.UnitMode))
		if !omit {
			dst = appendExtInt(dst, pick(v2, "maxReconsumeTimes", "l"), int64(h.MaxReconsumeTimes))
		}
		dst = appendExtString(dst, pick(v2, "batch", "m"), strconv.FormatBool(h.Batch))
		return appendExtString(dst, pick(v2, "bname", "n"), h.BrokerName)
	}
}

// appendSendEntry appends the per-send entry that follows run: queueId,
// bornTimestamp, properties.
func appendSendEntry(dst []byte, h *SendMessageRequestHeader, v2 bool, run int) []byte {
	switch run {
	case 0:
		return appendExtInt(dst, pick(v2, "queueId", "e"), int64(h.QueueID))
	case 1:
		return appendExtInt(dst, pick(v2, "bornTimestamp", "g"), h.BornTimestamp)
	default:
		return appendExtString(dst, pick(v2, "properties", "i"), h.Properties)
	}
}

// AppendRocketMQExt appends the header's ext entries in AppendSendHeader's
// order; a value too long for its length field gives ErrUnencodable. With
// a Template the shared runs are copied from it (rebuilt first when one of
// its fields differs).
func (e *SendHeaderExt) AppendRocketMQExt(dst []byte) ([]byte, error) {
	h, v2, omit := &e.Header, e.V2, e.OmitMaxReconsumeTimes
	strs := len(h.ProducerGroup) + len(h.Topic) + len(h.DefaultTopic) + len(h.Properties) + len(h.BrokerName)
	if strs > math.MaxInt32 {
		return dst, ErrUnencodable
	}
	// 14 entries of 6 length bytes, the keys (V1's long ones), at most
	// 20 digits for each of the 7 numbers, 5 for each boolean.
	dst = slices.Grow(dst, 14*6+200+7*20+2*5+strs)
	if t := e.Template; t != nil {
		if !t.holds(h, v2, omit) {
			t.build(h, v2, omit)
		}
		// Straight-line: the per-send cost of a templated header.
		dst = append(dst, t.buf[:t.cut[0]]...)
		dst = appendSendEntry(dst, h, v2, 0)
		dst = append(dst, t.buf[t.cut[0]:t.cut[1]]...)
		dst = appendSendEntry(dst, h, v2, 1)
		dst = append(dst, t.buf[t.cut[1]:t.cut[2]]...)
		dst = appendSendEntry(dst, h, v2, 2)
		return append(dst, t.buf[t.cut[2]:]...), nil
	}
	for run := range sendHeaderRuns {
		dst = appendSendRun(dst, h, v2, omit, run)
		if run < sendHeaderRuns-1 {
			dst = appendSendEntry(dst, h, v2, run)
		}
	}
	return dst, nil
}

// SendResponseExt is a send response header as a Command.ExtEncoder: the
// frame gets the bytes AppendSendResponseHeader's list would give it
// (same entries, same order), written straight into the frame, with no
// strings for the numbers. When MsgID is not empty it is the msgId value in
// place of Header.MsgID: a caller's buffer (an offset message id's hex
// digits, message.AppendOffsetMsgID), so no string is built per response.
// The encoder keeps no reference past AppendRocketMQExt.
// TestSendResponseExtMatchesList and FuzzSendResponseExtMatchesList hold
// it to the list's frame bytes. It has no JSON form (AppendFrameHeader
// refuses ExtEncoder there): JSON responses keep the list.
type SendResponseExt struct {
	Header SendMessageResponseHeader
	MsgID  []byte
}

// AppendRocketMQExt appends the header's ext entries in
// AppendSendResponseHeader's order; a value too long for its length field
// gives ErrUnencodable, as appendRocketMQExt does.
func (e *SendResponseExt) AppendRocketMQExt(dst []byte) ([]byte, error) {
	h := &e.Header
	id := len(e.MsgID)
	if id == 0 {
		id = len(h.MsgID)
	}
	for _, n := range [...]int{id, len(h.TransactionID), len(h.BatchUniqID), len(h.MsgRegion), len(h.TraceOn), len(h.RecallHandle)} {
		if n > math.MaxInt32 {
			return dst, ErrUnencodable
		}
	}
	// 8 entries of 6 length bytes, keys of at most 13 bytes, 2 numbers of
	// at most 20 digits, the strings.
	dst = slices.Grow(dst, 8*(6+13)+2*20+id+len(h.TransactionID)+len(h.BatchUniqID)+len(h.MsgRegion)+
		len(h.TraceOn)+len(h.RecallHandle))
	if len(e.MsgID) > 0 {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len("msgId")))
		dst = append(dst, "msgId"...)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(e.MsgID)))
		dst = append(dst, e.MsgID...)
	} else {
		dst = appendExtString(dst, "msgId", h.MsgID)
	}
	dst = appendExtInt(dst, "queueId", int64(h.QueueID))
	dst = appendExtInt(dst, "queueOffset", h.QueueOffset)
	if h.TransactionID != "" {
		dst = appendExtString(dst, "transactionId", h.TransactionID)
	}
	if h.BatchUniqID != "" {
		dst = appendExtString(dst, "batchUniqId", h.BatchUniqID)
	}
	if h.MsgRegion != "" {
		dst = appendExtString(dst, "MSG_REGION", h.MsgRegion)
	}
	if h.TraceOn != "" {
		dst = appendExtString(dst, "TRACE_ON", h.TraceOn)
	}
	if h.RecallHandle != "" {
		dst = appendExtString(dst, "recallHandle", h.RecallHandle)
	}
	return dst, nil
}

// appendExtString appends one ext entry, unchecked: k fits the int16
// length and v the int32 one (appendRocketMQExt checks).
func appendExtString(dst []byte, k, v string) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(k)))
	dst = append(dst, k...)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(v)))
	return append(dst, v...)
}

// appendExtInt appends one ext entry whose value is n in decimal, as
// itoa gives it; k fits the int16 length.
func appendExtInt(dst []byte, k string, n int64) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(k)))
	dst = append(dst, k...)
	at := len(dst)
	dst = strconv.AppendInt(append(dst, 0, 0, 0, 0), n, 10)
	binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
	return dst
}

// AppendPullHeader is AppendHeader for a pull header.
func AppendPullHeader(dst []string, h *PullMessageRequestHeader) []string {
	return append(grow(dst, 13),
		"consumerGroup", h.ConsumerGroup,
		"topic", h.Topic,
		"queueId", itoa(int64(h.QueueID)),
		"queueOffset", itoa(h.QueueOffset),
		"maxMsgNums", itoa(int64(h.MaxMsgNums)),
		"sysFlag", itoa(int64(h.SysFlag)),
		"commitOffset", itoa(h.CommitOffset),
		"suspendTimeoutMillis", itoa(h.SuspendTimeoutMillis),
		"subscription", h.Subscription,
		"subVersion", itoa(h.SubVersion),
		"expressionType", h.ExpressionType,
		"maxMsgBytes", itoa(int64(h.MaxMsgBytes)),
		"bname", h.BrokerName,
	)
}

// AppendSendResponseHeader is AppendHeader for a send response header.
func AppendSendResponseHeader(dst []string, h *SendMessageResponseHeader) []string {
	dst = append(grow(dst, 7), "msgId", h.MsgID, "queueId", itoa(int64(h.QueueID)), "queueOffset", itoa(h.QueueOffset))
	if h.TransactionID != "" {
		dst = append(dst, "transactionId", h.TransactionID)
	}
	if h.BatchUniqID != "" {
		dst = append(dst, "batchUniqId", h.BatchUniqID)
	}
	if h.MsgRegion != "" {
		dst = append(dst, "MSG_REGION", h.MsgRegion)
	}
	if h.TraceOn != "" {
		dst = append(dst, "TRACE_ON", h.TraceOn)
	}
	if h.RecallHandle != "" {
		dst = append(dst, "recallHandle", h.RecallHandle)
	}
	return dst
}

// AppendPullResponseHeader is AppendHeader for a pull response header.
func AppendPullResponseHeader(dst []string, h *PullMessageResponseHeader) []string {
	dst = append(grow(dst, 7),
		"suggestWhichBrokerId", itoa(h.SuggestWhichBrokerID),
		"nextBeginOffset", itoa(h.NextBeginOffset),
		"minOffset", itoa(h.MinOffset),
		"maxOffset", itoa(h.MaxOffset),
		"topicSysFlag", itoa(int64(h.TopicSysFlag)),
		"groupSysFlag", itoa(int64(h.GroupSysFlag)))
	if h.ForbiddenType != 0 {
		dst = append(dst, "forbiddenType", itoa(int64(h.ForbiddenType)))
	}
	return dst
}

// grow makes room for n more key, value pairs in one allocation.
func grow(dst []string, n int) []string {
	if cap(dst)-len(dst) >= 2*n {
		return dst
	}
	out := make([]string, len(dst), len(dst)+2*n)
	copy(out, dst)
	return out
}

// SendHeaderMaxReconsumeTimesKey is the ext key AppendSendHeader gives
// MaxReconsumeTimes ("l" with v2). Producers drop the field when it is 0
// (DeleteExt): absent, a broker applies the group's retry limit to a
// %RETRY% send, while "0" means no retry at all.
func SendHeaderMaxReconsumeTimesKey(v2 bool) string { return pick(v2, "maxReconsumeTimes", "l") }

// DeleteExt removes the first key/value pair named key from an ExtList
// (key, value, key, value ...) in place and returns the shortened list.
func DeleteExt(ext []string, key string) []string {
	for i := 0; i+1 < len(ext); i += 2 {
		if ext[i] == key {
			return append(ext[:i], ext[i+2:]...)
		}
	}
	return ext
}
