package message

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// StoredView is a validated, zero-copy view of one stored record: its
// accessors read the record's bytes on demand and allocate nothing. It is
// for hot paths that need a few fields of many records (dispatch to the
// consume queue and index, pull filtering, recovery scans). It stays valid
// while the underlying bytes are unchanged; slices it returns alias them.
type StoredView struct {
	rec      []byte // exactly one record
	sysFlag  int32
	bodyAt   int // BODY position; its length is bodyLen
	bodyLen  int
	topicAt  int
	topicLen int
	propsLen int // PROPERTIES end the record
}

// ViewStored validates the record at the start of b like DecodeStored
// (without the CRC check; see StoredView.VerifyCRC) and returns a view of it
// and its length, with the same errors.
func ViewStored(b []byte) (StoredView, int, error) {
	n, err := storedLen(b)
	if err != nil {
		return StoredView{}, n, err
	}
	v, err := parseView(b[:n])
	return v, n, err
}

// parseView checks every length of rec, which is exactly one record whose
// header storedLen accepted.
func parseView(rec []byte) (StoredView, error) {
	be := binary.BigEndian
	total := len(rec)
	v := StoredView{rec: rec, sysFlag: int32(be.Uint32(rec[OffsetSysFlag:]))}
	topicLenSize := 1
	v2 := be.Uint32(rec[OffsetMagic:]) == MagicV2
	if v2 {
		topicLenSize = 2
	}
	// Everything up to and including BODYLENGTH, then the two length
	// prefixes after the body, must fit.
	bodyLenAt := BodyLengthOffset(v.sysFlag)
	if need := bodyLenAt + 4 + topicLenSize + 2; need > total {
		return StoredView{}, fmt.Errorf("message: sysflag %#x needs %d fixed bytes, record has %d: %w", v.sysFlag, need, total, ErrCorrupt)
	}
	if _, _, ok := readHost(rec, OffsetBornHost, v.sysFlag&SysFlagBornHostV6 != 0); !ok {
		return StoredView{}, fmt.Errorf("message: born host port out of range: %w", ErrCorrupt)
	}
	if _, _, ok := readHost(rec, StoreHostOffset(v.sysFlag), v.sysFlag&SysFlagStoreHostV6 != 0); !ok {
		return StoredView{}, fmt.Errorf("message: store host port out of range: %w", ErrCorrupt)
	}
	pos := bodyLenAt + 4
	v.bodyAt = pos
	v.bodyLen = int(int32(be.Uint32(rec[bodyLenAt:])))
	// The topic and properties length prefixes still follow the body.
	if v.bodyLen < 0 || v.bodyLen > total-pos-topicLenSize-2 {
		return StoredView{}, fmt.Errorf("message: body length %d, record has %d: %w", v.bodyLen, total, ErrCorrupt)
	}
	pos += v.bodyLen
	if v2 {
		v.topicLen = int(int16(be.Uint16(rec[pos:])))
	} else {
		v.topicLen = int(int8(rec[pos]))
	}
	pos += topicLenSize
	if v.topicLen < 0 || v.topicLen > total-pos-2 {
		return StoredView{}, fmt.Errorf("message: topic length %d, record has %d: %w", v.topicLen, total, ErrCorrupt)
	}
	v.topicAt = pos
	pos += v.topicLen
	v.propsLen = int(int16(be.Uint16(rec[pos:])))
	pos += 2
	if v.propsLen < 0 || pos+v.propsLen != total {
		return StoredView{}, fmt.Errorf("message: properties length %d ends at %d, total size %d: %w", v.propsLen, pos+v.propsLen, total, ErrCorrupt)
	}
	return v, nil
}

// Bytes returns the whole record.
func (v StoredView) Bytes() []byte { return v.rec }

// Size returns TOTALSIZE.
func (v StoredView) Size() int { return len(v.rec) }

// BodyCRC returns the stored BODYCRC.
func (v StoredView) BodyCRC() uint32 { return binary.BigEndian.Uint32(v.rec[OffsetBodyCRC:]) }

// QueueID returns QUEUEID.
func (v StoredView) QueueID() int32 { return int32(binary.BigEndian.Uint32(v.rec[OffsetQueueID:])) }

// Flag returns the user FLAG.
func (v StoredView) Flag() int32 { return int32(binary.BigEndian.Uint32(v.rec[OffsetFlag:])) }

// QueueOffset returns QUEUEOFFSET.
func (v StoredView) QueueOffset() int64 {
	return int64(binary.BigEndian.Uint64(v.rec[OffsetQueueOffset:]))
}

// CommitLogOffset returns PHYSICALOFFSET.
func (v StoredView) CommitLogOffset() int64 {
	return int64(binary.BigEndian.Uint64(v.rec[OffsetPhysicalOffset:]))
}

// SysFlag returns SYSFLAG.
func (v StoredView) SysFlag() int32 { return v.sysFlag }

// BornTimestamp returns BORNTIMESTAMP (ms).
func (v StoredView) BornTimestamp() int64 {
	return int64(binary.BigEndian.Uint64(v.rec[OffsetBornTimestamp:]))
}

// BornHost returns BORNHOST.
func (v StoredView) BornHost() netip.AddrPort {
	h, _, _ := readHost(v.rec, OffsetBornHost, v.sysFlag&SysFlagBornHostV6 != 0)
	return h
}

// StoreTimestamp returns STORETIMESTAMP (ms).
func (v StoredView) StoreTimestamp() int64 {
	return int64(binary.BigEndian.Uint64(v.rec[StoreTimestampOffset(v.sysFlag):]))
}

// StoreHost returns STOREHOST.
func (v StoredView) StoreHost() netip.AddrPort {
	h, _, _ := readHost(v.rec, StoreHostOffset(v.sysFlag), v.sysFlag&SysFlagStoreHostV6 != 0)
	return h
}

// ReconsumeTimes returns RECONSUMETIMES.
func (v StoredView) ReconsumeTimes() int32 {
	return int32(binary.BigEndian.Uint32(v.rec[ReconsumeTimesOffset(v.sysFlag):]))
}

// PreparedTransactionOffset returns PREPAREDTXOFFSET.
func (v StoredView) PreparedTransactionOffset() int64 {
	return int64(binary.BigEndian.Uint64(v.rec[PreparedTransactionOffsetOffset(v.sysFlag):]))
}

// Body returns the stored body (compressed if SysFlagCompressed), aliasing
// the record; its capacity ends with it.
func (v StoredView) Body() []byte {
	return v.rec[v.bodyAt : v.bodyAt+v.bodyLen : v.bodyAt+v.bodyLen]
}

// Topic returns the topic bytes, aliasing the record.
func (v StoredView) Topic() []byte {
	return v.rec[v.topicAt : v.topicAt+v.topicLen : v.topicAt+v.topicLen]
}

// TopicIs reports whether the topic equals topic, without allocating.
func (v StoredView) TopicIs(topic string) bool { return string(v.Topic()) == topic }

// RawProperties returns the properties string's bytes, aliasing the record.
func (v StoredView) RawProperties() []byte { return v.rec[len(v.rec)-v.propsLen:] }

// Property looks one property up with DecodeProperties' rules, without
// building a map; the value aliases the record.
func (v StoredView) Property(name string) ([]byte, bool) {
	return LookupPropertyBytes(v.RawProperties(), name)
}

// DispatchProperties returns the UNIQ_KEY, KEYS and TAGS values, as three
// Property calls would (the last occurrence of each, nil when absent), in one
// pass over the properties: dispatch wants all three of every record.
func (v StoredView) DispatchProperties() (uniqKey, keys, tags []byte) {
	return lookupProperties3(v.RawProperties(), PropertyUniqClientMessageIDKeyidx, PropertyKeys, PropertyTags)
}

// lookupProperties3 is LookupPropertyBytes for three names at once (each
// non-empty and without NameValueSeparator), values aliasing s.
func lookupProperties3(s []byte, n0, n1, n2 string) (v0, v1, v2 []byte) {
	for len(s) > 0 {
		var seg []byte
		seg, s = cutProperty(s)
		switch {
		case propertyIs(seg, n0):
			v0 = seg[len(n0)+1:]
		case propertyIs(seg, n1):
			v1 = seg[len(n1)+1:]
		case propertyIs(seg, n2):
			v2 = seg[len(n2)+1:]
		}
	}
	return v0, v1, v2
}

// TagsCode returns TagsHashCode of the TAGS property, 0 when untagged.
func (v StoredView) TagsCode() int64 {
	tags, _ := v.Property(PropertyTags)
	return TagsHashCodeBytes(tags)
}

// VerifyCRC checks BODYCRC against the body: ErrBadCRC on mismatch.
func (v StoredView) VerifyCRC() error {
	if crc, stored := BodyCRC(v.Body()), v.BodyCRC(); crc != stored {
		return fmt.Errorf("message: body crc %#x, stored %#x at offset %d: %w", crc, stored, v.CommitLogOffset(), ErrBadCRC)
	}
	return nil
}

// Decode materialises the record as an Ext, as DecodeStored does.
func (v StoredView) Decode(opt DecodeOptions) (*Ext, error) {
	m := new(Ext)
	if err := decodeRecord(m, v.rec, opt, false); err != nil {
		return nil, err
	}
	return m, nil
}
