package message

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Batch item layout (docs/protocol.md §6.7), as RocketMQ's
// MessageDecoder.encodeMessage writes it. Part of the wire format; never
// change.
//
//	TOTALSIZE int32 | MAGICCODE int32 (0) | BODYCRC int32 (0) | FLAG int32 |
//	BODYLEN int32 | BODY | PROPERTIESLEN int16 | PROPERTIES
const batchItemFixedSize = 4 + 4 + 4 + 4 + 4 + 2

// BatchItemSize returns the encoded size of m inside a batch body.
func BatchItemSize(m *Message) int {
	return batchItemFixedSize + len(m.Body) + PropertiesLen(m.Properties)
}

// AppendBatch appends the batch body of msgs (SEND_BATCH_MESSAGE) to dst.
// Topics are not encoded: every item has the request's topic. Errors:
// ErrPropertiesTooLarge, ErrBodyTooLarge (an item over 2 GiB); dst is
// returned unchanged on error.
func AppendBatch(dst []byte, msgs []Message) ([]byte, error) {
	start := len(dst)
	for i := range msgs {
		m := &msgs[i]
		propsLen := PropertiesLen(m.Properties)
		if propsLen > MaxPropertiesSize {
			return dst[:start], fmt.Errorf("message: batch item %d: properties of %d bytes: %w", i, propsLen, ErrPropertiesTooLarge)
		}
		size := batchItemFixedSize + len(m.Body) + propsLen
		if size > math.MaxInt32 {
			return dst[:start], fmt.Errorf("message: batch item %d of %d bytes: %w", i, size, ErrBodyTooLarge)
		}
		be := binary.BigEndian
		dst = be.AppendUint32(dst, uint32(size))
		dst = be.AppendUint32(dst, 0) // MAGICCODE: ignored by brokers
		dst = be.AppendUint32(dst, 0) // BODYCRC: computed by the broker
		dst = be.AppendUint32(dst, uint32(m.Flag))
		dst = be.AppendUint32(dst, uint32(len(m.Body)))
		dst = append(dst, m.Body...)
		dst = be.AppendUint16(dst, uint16(propsLen))
		dst = AppendProperties(dst, m.Properties)
	}
	return dst, nil
}

// EncodeBatch returns the batch body of msgs. It returns nil when an item
// cannot be encoded (see AppendBatch); producers validate messages first.
func EncodeBatch(msgs []Message) []byte {
	n := 0
	for i := range msgs {
		n += BatchItemSize(&msgs[i])
	}
	b, err := AppendBatch(make([]byte, 0, n), msgs)
	if err != nil {
		return nil
	}
	return b
}

// DecodeBatch parses a SEND_BATCH_MESSAGE body into messages (Topic left
// empty). Every item's TOTALSIZE must equal its field lengths; MAGICCODE and
// BODYCRC are ignored. Truncated or inconsistent items fail with
// ErrShortBuffer or ErrCorrupt naming the item; an empty body is an empty
// batch. Bodies share one copy of body; property strings are copied.
func DecodeBatch(body []byte) ([]Message, error) {
	if len(body) == 0 {
		return nil, nil
	}
	// Count first so the slice is allocated once; each item is at least
	// batchItemFixedSize bytes, which bounds the count by the input.
	count := 0
	for off := 0; off < len(body); count++ {
		size, err := batchItemLen(body[off:], count, off)
		if err != nil {
			return nil, err
		}
		off += size
	}
	own := make([]byte, len(body))
	copy(own, body)
	msgs := make([]Message, count)
	be := binary.BigEndian
	off := 0
	for i := range msgs {
		size := int(be.Uint32(own[off:]))
		item := own[off : off+size]
		m := &msgs[i]
		m.Flag = int32(be.Uint32(item[12:]))
		bodyLen := int(be.Uint32(item[16:]))
		m.Body = item[20 : 20+bodyLen : 20+bodyLen]
		m.Properties = DecodeProperties(string(item[20+bodyLen+2:]))
		off += size
	}
	return msgs, nil
}

// DecodeBatchRaw is DecodeBatch without decoding the properties: props[i]
// is item i's encoded properties string (all of them substrings of one
// allocation), msgs[i].Properties is nil and msgs[i].Body aliases body
// (which the caller must not modify while the messages are in use). For a
// broker that stores the items' properties verbatim.
func DecodeBatchRaw(body []byte) (msgs []Message, props []string, err error) {
	count, propsLen := 0, 0
	for off := 0; off < len(body); count++ {
		size, err := batchItemLen(body[off:], count, off)
		if err != nil {
			return nil, nil, err
		}
		bodyLen := int(binary.BigEndian.Uint32(body[off+16:]))
		propsLen += size - batchItemFixedSize - bodyLen
		off += size
	}
	if count == 0 {
		return nil, nil, nil
	}
	all := make([]byte, 0, propsLen)
	msgs = make([]Message, count)
	ends := make([]int, count)
	be := binary.BigEndian
	off := 0
	for i := range msgs {
		size := int(be.Uint32(body[off:]))
		item := body[off : off+size]
		m := &msgs[i]
		m.Flag = int32(be.Uint32(item[12:]))
		bodyLen := int(be.Uint32(item[16:]))
		m.Body = item[20 : 20+bodyLen : 20+bodyLen]
		all = append(all, item[20+bodyLen+2:]...)
		ends[i] = len(all)
		off += size
	}
	str := string(all)
	props = make([]string, count)
	from := 0
	for i, end := range ends {
		props[i] = str[from:end]
		from = end
	}
	return msgs, props, nil
}

// batchItemLen validates the item at the start of b and returns its size.
func batchItemLen(b []byte, index, off int) (int, error) {
	be := binary.BigEndian
	if len(b) < batchItemFixedSize {
		return 0, fmt.Errorf("message: batch item %d at %d: %d bytes left, need %d: %w", index, off, len(b), batchItemFixedSize, ErrShortBuffer)
	}
	size := int(int32(be.Uint32(b)))
	if size < batchItemFixedSize {
		return 0, fmt.Errorf("message: batch item %d at %d: total size %d: %w", index, off, size, ErrCorrupt)
	}
	if size > len(b) {
		return 0, fmt.Errorf("message: batch item %d at %d: total size %d, %d bytes left: %w", index, off, size, len(b), ErrShortBuffer)
	}
	bodyLen := int(int32(be.Uint32(b[16:])))
	if bodyLen < 0 || bodyLen > size-batchItemFixedSize {
		return 0, fmt.Errorf("message: batch item %d at %d: body length %d, total size %d: %w", index, off, bodyLen, size, ErrCorrupt)
	}
	propsLen := int(int16(be.Uint16(b[20+bodyLen:])))
	if propsLen < 0 || batchItemFixedSize+bodyLen+propsLen != size {
		return 0, fmt.Errorf("message: batch item %d at %d: properties length %d, body %d, total size %d: %w", index, off, propsLen, bodyLen, size, ErrCorrupt)
	}
	return size, nil
}
