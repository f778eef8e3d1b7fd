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

// batchAckAny accepts both spellings in one pass (no map of raw values).
type batchAckAny struct {
	batchAckWire
	LC  *string `json:"consumerGroup"`
	LT  *string `json:"topic"`
	LR  *string `json:"retry"`
	LSO *int64  `json:"startOffset"`
	LQ  *int32  `json:"queueId"`
	LRQ *int32  `json:"reviveQueueId"`
	LPT *int64  `json:"popTime"`
	LIT *int64  `json:"invisibleTime"`
	LB  []byte  `json:"bitSet"`
}

// UnmarshalJSON reads the short names or the long ones (a long name
// applies only when its short one is absent).
func (a *BatchAck) UnmarshalJSON(b []byte) error {
	var w batchAckAny
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("protocol: batch ack: %w", err)
	}
	var short map[string]json.RawMessage
	if w.LC != nil || w.LT != nil || w.LR != nil || w.LSO != nil || w.LQ != nil || w.LRQ != nil || w.LPT != nil || w.LIT != nil || w.LB != nil {
		// Rare (clients send the short names): find which short names are present.
		if err := json.Unmarshal(b, &short); err != nil {
			return fmt.Errorf("protocol: batch ack: %w", err)
		}
	}
	has := func(k string) bool { _, ok := short[k]; return ok }
	if w.LC != nil && !has("c") {
		w.C = *w.LC
	}
	if w.LT != nil && !has("t") {
		w.T = *w.LT
	}
	if w.LR != nil && !has("r") {
		w.R = *w.LR
	}
	if w.LSO != nil && !has("so") {
		w.SO = *w.LSO
	}
	if w.LQ != nil && !has("q") {
		w.Q = *w.LQ
	}
	if w.LRQ != nil && !has("rq") {
		w.RQ = *w.LRQ
	}
	if w.LPT != nil && !has("pt") {
		w.PT = *w.LPT
	}
	if w.LIT != nil && !has("it") {
		w.IT = *w.LIT
	}
	if w.LB != nil && !has("b") {
		w.B = w.LB
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

// SetOffsetsFrom sets StartOffset to start (a checkpoint's ckQueueOffset,
// which may precede its first message) and BitSet to offsets relative to
// it; every offset must be in [start, start+65536).
func (a *BatchAck) SetOffsetsFrom(start int64, offsets []int64) error {
	hi := start
	for _, o := range offsets {
		if o < start || o-start >= maxBatchAckBits {
			return fmt.Errorf("%w: batch ack offset %d outside [%d, %d)", ErrBadPopHandle, o, start, start+maxBatchAckBits)
		}
		hi = max(hi, o)
	}
	a.StartOffset = start
	a.BitSet = nil
	if len(offsets) == 0 {
		return nil
	}
	a.BitSet = make([]byte, (hi-start)/8+1)
	for _, o := range offsets {
		d := o - start
		a.BitSet[d/8] |= 1 << (d % 8)
	}
	return nil
}

// DecodeBatchAckBody decodes BATCH_ACK_MESSAGE's body.
func DecodeBatchAckBody(b []byte) (*BatchAckMessageRequestBody, error) {
	if body, ok := decodeBatchAckFast(b); ok {
		return body, nil
	}
	var body BatchAckMessageRequestBody
	if err := json.Unmarshal(b, &body); err != nil {
		return nil, fmt.Errorf("protocol: decode batch ack body: %w", err)
	}
	return &body, nil
}
