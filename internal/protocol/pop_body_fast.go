package protocol

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// decodeBatchAckFast decodes the BATCH_ACK_MESSAGE body in the shape
// clients send (one object, exact lowercase field names, plain strings,
// integer numbers, each key once) without encoding/json; ok is false for
// anything else, and the caller then takes the general decoder, so the
// result is always the one json.Unmarshal gives (FuzzBatchAckFast holds
// the two to each other). A batch ack per pop makes this decoder part of
// the POP hot path.
func decodeBatchAckFast(b []byte) (body *BatchAckMessageRequestBody, ok bool) {
	s := &fastJSON{b: b}
	body = &BatchAckMessageRequestBody{}
	if !s.eat('{') {
		return nil, false
	}
	var seen uint8
	for first := true; ; first = false {
		if s.eat('}') {
			break
		}
		if !first && !s.eat(',') {
			return nil, false
		}
		key, ok := s.str()
		if !ok || !s.eat(':') {
			return nil, false
		}
		switch string(key) {
		case "brokerName":
			v, ok := s.str()
			if !ok || seen&1 != 0 {
				return nil, false
			}
			seen |= 1
			body.BrokerName = string(v)
		case "acks":
			if seen&2 != 0 || !s.eat('[') {
				return nil, false
			}
			seen |= 2
			body.Acks = []BatchAck{}
			for firstAck := true; ; firstAck = false {
				if s.eat(']') {
					break
				}
				if !firstAck && !s.eat(',') {
					return nil, false
				}
				a, ok := s.batchAck()
				if !ok {
					return nil, false
				}
				body.Acks = append(body.Acks, a)
			}
		default:
			return nil, false
		}
	}
	s.ws()
	return body, s.i == len(s.b)
}

// batchAck field bits: the short name's bit, and the long name's bit
// shifted by 9.
var batchAckFields = map[string]uint32{
	"c": 1 << 0, "t": 1 << 1, "r": 1 << 2, "so": 1 << 3, "q": 1 << 4, "rq": 1 << 5, "pt": 1 << 6, "it": 1 << 7, "b": 1 << 8,
	"consumerGroup": 1 << 9, "topic": 1 << 10, "retry": 1 << 11, "startOffset": 1 << 12, "queueId": 1 << 13,
	"reviveQueueId": 1 << 14, "popTime": 1 << 15, "invisibleTime": 1 << 16, "bitSet": 1 << 17,
}

// batchAck reads one element of acks. A long name applies only when its
// short one is absent (BatchAck.UnmarshalJSON).
func (s *fastJSON) batchAck() (BatchAck, bool) {
	var a BatchAck
	if !s.eat('{') {
		return a, false
	}
	var seen uint32
	for first := true; ; first = false {
		if s.eat('}') {
			return a, true
		}
		if !first && !s.eat(',') {
			return a, false
		}
		key, ok := s.str()
		if !ok || !s.eat(':') {
			return a, false
		}
		bit := batchAckFields[string(key)]
		if bit == 0 || seen&bit != 0 {
			return a, false
		}
		seen |= bit
		field := bits.TrailingZeros32(bit) % 9 // 0 c, 1 t, 2 r, 3 so, 4 q, 5 rq, 6 pt, 7 it, 8 b
		slot := uint32(1) << field
		if bit != slot && seen&slot != 0 { // a long name after its short one: the short one wins
			slot = 0
		}
		var v []byte
		var n int64
		if field <= 2 || field == 8 {
			v, ok = s.str()
		} else {
			n, ok = s.int()
		}
		if !ok {
			return a, false
		}
		switch slot {
		case 1 << 0:
			a.ConsumerGroup = string(v)
		case 1 << 1:
			a.Topic = string(v)
		case 1 << 2:
			a.Retry = string(v)
		case 1 << 3:
			a.StartOffset = n
		case 1 << 4:
			if n != int64(int32(n)) {
				return a, false
			}
			a.QueueID = int32(n)
		case 1 << 5:
			if n != int64(int32(n)) {
				return a, false
			}
			a.ReviveQueueID = int32(n)
		case 1 << 6:
			a.PopTime = n
		case 1 << 7:
			a.InvisibleTime = n
		case 1 << 8:
			bs := make([]byte, base64.StdEncoding.DecodedLen(len(v)))
			m, err := base64.StdEncoding.Decode(bs, v)
			if err != nil {
				return a, false
			}
			a.BitSet = bs[:m]
		}
	}
}

// fastJSON is the scanner of decodeBatchAckFast.
type fastJSON struct {
	b []byte
	i int
}

func (s *fastJSON) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// eat consumes c (after spaces) when it is next.
func (s *fastJSON) eat(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads a string without escapes or control characters, valid UTF-8.
func (s *fastJSON) str() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	start := s.i
	for ; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			v := s.b[start:s.i]
			s.i++
			return v, utf8.Valid(v)
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// int reads an integer: optional '-', digits without a leading zero,
// within int64.
func (s *fastJSON) int() (int64, bool) {
	s.ws()
	neg := s.i < len(s.b) && s.b[s.i] == '-'
	if neg {
		s.i++
	}
	start := s.i
	var n uint64
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		if n > (1<<63)/10 {
			return 0, false
		}
		n = n*10 + uint64(s.b[s.i]-'0')
		s.i++
	}
	digits := s.i - start
	if digits == 0 || digits > 1 && s.b[start] == '0' || digits > 19 {
		return 0, false
	}
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return 0, false
	}
	if neg {
		if n > 1<<63 {
			return 0, false
		}
		return -int64(n), true
	}
	if n > 1<<63-1 {
		return 0, false
	}
	return int64(n), true
}

// AppendBatchAckBody appends body as BATCH_ACK_MESSAGE's JSON (short
// field names, as RocketMQ's clients write it) without reflection; a name
// that JSON would have to escape falls back to encoding/json. A batch ack
// per pop makes this the client side of the POP hot path.
func AppendBatchAckBody(dst []byte, body *BatchAckMessageRequestBody) ([]byte, error) {
	plain := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
				return false
			}
		}
		return true
	}
	ok := plain(body.BrokerName)
	for i := range body.Acks {
		a := &body.Acks[i]
		ok = ok && plain(a.ConsumerGroup) && plain(a.Topic) && plain(a.Retry)
	}
	if !ok {
		b, err := json.Marshal(body)
		if err != nil {
			return dst, fmt.Errorf("protocol: encode batch ack body: %w", err)
		}
		return append(dst, b...), nil
	}
	str := func(k, v string) {
		dst = append(dst, '"')
		dst = append(dst, k...)
		dst = append(dst, `":"`...)
		dst = append(dst, v...)
		dst = append(dst, '"')
	}
	num := func(k string, v int64) {
		dst = append(dst, ',', '"')
		dst = append(dst, k...)
		dst = append(dst, '"', ':')
		dst = strconv.AppendInt(dst, v, 10)
	}
	dst = append(dst, '{')
	str("brokerName", body.BrokerName)
	dst = append(dst, `,"acks":`...)
	if body.Acks == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range body.Acks {
			a := &body.Acks[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '{')
			str("c", a.ConsumerGroup)
			dst = append(dst, ',')
			str("t", a.Topic)
			dst = append(dst, ',')
			str("r", a.Retry)
			num("so", a.StartOffset)
			num("q", int64(a.QueueID))
			num("rq", int64(a.ReviveQueueID))
			num("pt", a.PopTime)
			num("it", a.InvisibleTime)
			dst = append(dst, `,"b":`...)
			if a.BitSet == nil {
				dst = append(dst, "null"...)
			} else {
				dst = append(dst, '"')
				dst = base64.StdEncoding.AppendEncode(dst, a.BitSet)
				dst = append(dst, '"')
			}
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	return append(dst, '}'), nil
}
