package protocol

import (
	"encoding/json"
	"fmt"
	"math"
)

// BatchAckMessageRequestBody is BATCH_ACK_MESSAGE's (200151) JSON body.
type BatchAckMessageRequestBody struct {
	BrokerName string     `json:"brokerName"`
	Acks       []BatchAck `json:"acks"`
}

// BatchAck acks several messages of one pop checkpoint: bit i of BitSet
// acks queue offset StartOffset+i. Topic is the original topic and Retry
// the topic type digit ("0", "1" or "2"), so the acked topic is
// PopTopicType.RealTopic(Topic, ConsumerGroup). On the wire the fields have
// one- or two-letter names (c, t, r, so, q, rq, pt, it, b); decoders also
// accept the long names, as fastjson's alternateNames do. BitSet is Java's
// BitSet.toByteArray (little-endian: bit i is byte i/8, bit i%8), Base64 in
// JSON.
type BatchAck struct {
	ConsumerGroup string
	Topic         string
	Retry         string
	StartOffset   int64
	QueueID       int32
	ReviveQueueID int32
	PopTime       int64
	InvisibleTime int64
	BitSet        []byte
}

// maxBatchAckBits bounds the offsets one BatchAck may name; a bit set
// longer than this is refused rather than walked (a pop returns at most a
// few hundred messages per queue).
const maxBatchAckBits = 1 << 16

type batchAckWire struct {
	C  string `json:"c"`
	T  string `json:"t"`
	R  string `json:"r"`
	SO int64  `json:"so"`
	Q  int32  `json:"q"`
	RQ int32  `json:"rq"`
	PT int64  `json:"pt"`
	IT int64  `json:"it"`
	B  []byte `json:"b"`
}

// MarshalJSON writes the short field names, as RocketMQ does.
func (a BatchAck) MarshalJSON() ([]byte, error) {
	return json.Marshal(batchAckWire{a.ConsumerGroup, a.Topic, a.Retry, a.StartOffset, a.QueueID,
		a.ReviveQueueID, a.PopTime, a.InvisibleTime, a.BitSet})
}

// UnmarshalJSON reads the short names or the long ones.
func (a *BatchAck) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	field := func(short, long string, dst any) error {
		raw, ok := m[short]
		if !ok {
			raw, ok = m[long]
		}
		if !ok || string(raw) == "null" {
			return nil
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			return fmt.Errorf("protocol: batch ack field %s: %w", short, err)
		}
		return nil
	}
	var w batchAckWire
	for _, f := range []struct {
		short, long string
		dst         any
	}{
		{"c", "consumerGroup", &w.C}, {"t", "topic", &w.T}, {"r", "retry", &w.R},
		{"so", "startOffset", &w.SO}, {"q", "queueId", &w.Q}, {"rq", "reviveQueueId", &w.RQ},
		{"pt", "popTime", &w.PT}, {"it", "invisibleTime", &w.IT}, {"b", "bitSet", &w.B},
	} {
		if err := field(f.short, f.long, f.dst); err != nil {
			return err
		}
	}
	*a = BatchAck{w.C, w.T, w.R, w.SO, w.Q, w.RQ, w.PT, w.IT, w.B}
	return nil
}

// TopicType parses Retry; an empty Retry is the normal topic.
func (a *BatchAck) TopicType() (PopTopicType, error) {
	if a.Retry == "" {
		return PopTopicNormal, nil
	}
	return parsePopTopicType(a.Retry)
}

// Offsets returns the acked queue offsets in ascending order. A bit set
// naming more than 65536 offsets, or offsets past math.MaxInt64, is an
// error.
func (a *BatchAck) Offsets() ([]int64, error) {
	if len(a.BitSet)*8 > maxBatchAckBits {
		return nil, fmt.Errorf("%w: batch ack bit set of %d bytes", ErrBadPopHandle, len(a.BitSet))
	}
	var out []int64
	for i, by := range a.BitSet {
		for bit := 0; bit < 8; bit++ {
			if by&(1<<bit) == 0 {
				continue
			}
			d := int64(i*8 + bit)
			if a.StartOffset < 0 || a.StartOffset > math.MaxInt64-d {
				return nil, fmt.Errorf("%w: batch ack offset overflows", ErrBadPopHandle)
			}
			out = append(out, a.StartOffset+d)
		}
	}
	return out, nil
}

// SetOffsets sets StartOffset to the smallest of offsets (any order, none
// negative, all within 65536 of the smallest) and BitSet to the rest.
func (a *BatchAck) SetOffsets(offsets []int64) error {
	if len(offsets) == 0 {
		a.BitSet = nil
		return nil
	}
	lo, hi := offsets[0], offsets[0]
	for _, o := range offsets {
		lo, hi = min(lo, o), max(hi, o)
	}
	if lo < 0 || hi-lo >= maxBatchAckBits {
		return fmt.Errorf("%w: batch ack offsets %d..%d", ErrBadPopHandle, lo, hi)
	}
	a.StartOffset = lo
	a.BitSet = make([]byte, (hi-lo)/8+1)
	for _, o := range offsets {
		d := o - lo
		a.BitSet[d/8] |= 1 << (d % 8)
	}
	return nil
}

// DecodeBatchAckBody decodes BATCH_ACK_MESSAGE's body.
func DecodeBatchAckBody(b []byte) (*BatchAckMessageRequestBody, error) {
	var body BatchAckMessageRequestBody
	if err := json.Unmarshal(b, &body); err != nil {
		return nil, fmt.Errorf("protocol: decode batch ack body: %w", err)
	}
	return &body, nil
}
