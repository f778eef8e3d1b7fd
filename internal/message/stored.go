package message

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"net/netip"
	"slices"
)

// Magic codes (docs/storage.md §2.3). Part of the on-disk format;
// never change.
const (
	MagicV1    uint32 = 0xDAA320A7 // topic length is 1 byte
	MagicV2    uint32 = 0xDAA320AB // topic length is 2 bytes
	BlankMagic uint32 = 0xCBD43194 // end-of-file filler
)

// Fixed byte positions inside a stored record. Part of the on-disk format;
// never change. Fields after BORNHOST move with the host sizes: use
// StoreTimestampOffset, StoreHostOffset and friends.
const (
	OffsetTotalSize      = 0
	OffsetMagic          = 4
	OffsetBodyCRC        = 8
	OffsetQueueID        = 12
	OffsetFlag           = 16
	OffsetQueueOffset    = 20
	OffsetPhysicalOffset = 28
	OffsetSysFlag        = 36
	OffsetBornTimestamp  = 40
	OffsetBornHost       = 48

	// OffsetStoreTimestampV4 is STORETIMESTAMP's position when the born host
	// is IPv4 (the common case).
	OffsetStoreTimestampV4 = 56
)

// Sizes of the variable parts of the stored layout.
const (
	HostSizeV4 = 8  // 4-byte address + int32 port
	HostSizeV6 = 20 // 16-byte address + int32 port

	// MinStoredSize is the smallest valid record: V1, IPv4 hosts, empty
	// body, topic and properties.
	MinStoredSize = 91

	// BlankHeaderSize is how much of a blank record is written.
	BlankHeaderSize = 8

	// MaxTopicSizeV1 is the longest topic (bytes) a V1 record holds; longer
	// topics are written with MagicV2.
	MaxTopicSizeV1 = 127
	// MaxTopicSize is the longest topic (bytes) any record can hold.
	MaxTopicSize = math.MaxInt16
)

// Ext is a stored message (RocketMQ's MessageExt): the message plus what the
// broker assigned when it appended it.
type Ext struct {
	Message
	StoreSize                 int32 // TOTALSIZE; set by decoders, ignored by encoders
	QueueID                   int32
	SysFlag                   int32
	BornTimestamp             int64 // ms since epoch
	BornHost                  netip.AddrPort
	StoreTimestamp            int64 // ms since epoch
	StoreHost                 netip.AddrPort
	QueueOffset               int64
	CommitLogOffset           int64
	BodyCRC                   uint32
	ReconsumeTimes            int32
	PreparedTransactionOffset int64
}

// OffsetMsgID returns the offset message id of the record (STOREHOST and
// commit-log offset, docs/protocol.md §6.9).
func (m *Ext) OffsetMsgID() string { return OffsetMsgID(m.StoreHost, m.CommitLogOffset) }

// MsgID returns the id users see: UNIQ_KEY when present, else the offset id.
func (m *Ext) MsgID() string {
	if id := m.UniqKey(); id != "" {
		return id
	}
	return m.OffsetMsgID()
}

// BodyCRC returns RocketMQ's body checksum: CRC-32 (IEEE) & 0x7FFFFFFF.
func BodyCRC(body []byte) uint32 { return crc32.ChecksumIEEE(body) & 0x7FFFFFFF }

// hostIs4 reports whether a host is written as 4 bytes. IPv4-mapped IPv6
// addresses (what a dual-stack listener reports for IPv4 peers) are written
// as IPv4, as the Java broker sees them; invalid addresses as 0.0.0.0.
func hostIs4(h netip.AddrPort) bool {
	a := h.Addr()
	return !a.IsValid() || a.Unmap().Is4()
}

// HostSysFlag returns sysFlag with SysFlagBornHostV6 and SysFlagStoreHostV6
// set from the host addresses, as the encoder writes them.
func HostSysFlag(sysFlag int32, born, store netip.AddrPort) int32 {
	sysFlag &^= SysFlagBornHostV6 | SysFlagStoreHostV6
	if !hostIs4(born) {
		sysFlag |= SysFlagBornHostV6
	}
	if !hostIs4(store) {
		sysFlag |= SysFlagStoreHostV6
	}
	return sysFlag
}

func bornHostSize(sysFlag int32) int {
	if sysFlag&SysFlagBornHostV6 != 0 {
		return HostSizeV6
	}
	return HostSizeV4
}

func storeHostSize(sysFlag int32) int {
	if sysFlag&SysFlagStoreHostV6 != 0 {
		return HostSizeV6
	}
	return HostSizeV4
}

// StoreTimestampOffset is STORETIMESTAMP's position in a record with this
// sysFlag.
func StoreTimestampOffset(sysFlag int32) int { return OffsetBornHost + bornHostSize(sysFlag) }

// StoreHostOffset is STOREHOST's position in a record with this sysFlag.
func StoreHostOffset(sysFlag int32) int { return StoreTimestampOffset(sysFlag) + 8 }

// ReconsumeTimesOffset is RECONSUMETIMES' position.
func ReconsumeTimesOffset(sysFlag int32) int {
	return StoreHostOffset(sysFlag) + storeHostSize(sysFlag)
}

// PreparedTransactionOffsetOffset is PREPAREDTXOFFSET's position.
func PreparedTransactionOffsetOffset(sysFlag int32) int { return ReconsumeTimesOffset(sysFlag) + 4 }

// BodyLengthOffset is BODYLENGTH's position; the body follows it, then
// the topic length at BodyLengthOffset + 4 + bodyLen.
func BodyLengthOffset(sysFlag int32) int { return PreparedTransactionOffsetOffset(sysFlag) + 8 }

// StoredSizeOf returns the record length for the given sysFlag (its IPv6
// bits decide the host sizes) and field lengths in bytes. A topic longer
// than MaxTopicSizeV1 costs one more byte (MagicV2).
func StoredSizeOf(sysFlag int32, bodyLen, topicLen, propertiesLen int) int {
	topicLenSize := 1
	if topicLen > MaxTopicSizeV1 {
		topicLenSize = 2
	}
	return BodyLengthOffset(sysFlag) + 4 + bodyLen + topicLenSize + topicLen + 2 + propertiesLen
}

// StoredSize returns the length AppendStored(dst, m) appends.
func StoredSize(m *Ext) int {
	return StoredSizeOf(HostSysFlag(m.SysFlag, m.BornHost, m.StoreHost), len(m.Body), len(m.Topic), PropertiesLen(m.Properties))
}

// CheckLimits applies the store's size rules (docs/storage.md §2.5) to
// a record with these field lengths: ErrPropertiesTooLarge when the
// properties exceed MaxPropertiesSize, ErrBodyTooLarge when the body exceeds
// maxMessageSize or the whole record exceeds maxMessageSize + 64 KiB,
// ErrTopicTooLong past MaxTopicSize. maxMessageSize <= 0 checks only what the
// layout itself cannot hold.
func CheckLimits(bodyLen, topicLen, propertiesLen, storedSize, maxMessageSize int) error {
	switch {
	case propertiesLen > MaxPropertiesSize:
		return fmt.Errorf("message: properties of %d bytes exceed %d: %w", propertiesLen, MaxPropertiesSize, ErrPropertiesTooLarge)
	case topicLen > MaxTopicSize:
		return fmt.Errorf("message: topic of %d bytes exceeds %d: %w", topicLen, MaxTopicSize, ErrTopicTooLong)
	case storedSize > math.MaxInt32:
		return fmt.Errorf("message: record of %d bytes: %w", storedSize, ErrBodyTooLarge)
	case maxMessageSize > 0 && bodyLen > maxMessageSize:
		return fmt.Errorf("message: body of %d bytes exceeds maxMessageSize %d: %w", bodyLen, maxMessageSize, ErrBodyTooLarge)
	case maxMessageSize > 0 && storedSize > maxMessageSize+64<<10:
		return fmt.Errorf("message: record of %d bytes exceeds maxMessageSize %d + 64 KiB: %w", storedSize, maxMessageSize, ErrBodyTooLarge)
	}
	return nil
}

// AppendStored appends m as one commit-log record (docs/storage.md
// §2.3) to dst and returns the extended slice. TOTALSIZE is computed; the
// magic is MagicV1 unless the topic is longer than 127 bytes; the IPv6 bits
// of SYSFLAG follow the host addresses (IPv4-mapped addresses are written as
// IPv4); BODYCRC is computed when m.BodyCRC is 0; m.StoreSize is ignored.
// Properties are written with AppendProperties (sorted keys). m is not
// modified. With enough capacity in dst it allocates nothing.
//
// Errors: ErrPropertiesTooLarge, ErrTopicTooLong, ErrBodyTooLarge (only when
// the record cannot be represented; the maxMessageSize rule is CheckLimits).
// On error dst is returned unchanged.
func AppendStored(dst []byte, m *Ext) ([]byte, error) {
	var buf [sortInline]property
	pairs := sortedProperties(m.Properties, buf[:])
	return appendStored(dst, m, pairs, "", nil, propertiesSize(pairs))
}

// AppendStoredRawProperties is AppendStored with an already encoded
// properties string written verbatim instead of m.Properties, followed by
// the extra name/value pairs (extra holds name, value, name, value ...; an
// odd last element is ignored). properties must be empty or end with the
// property separator for the extra pairs to decode. extra is not retained.
func AppendStoredRawProperties(dst []byte, m *Ext, properties string, extra ...string) ([]byte, error) {
	extra = extra[:len(extra)&^1]
	return appendStored(dst, m, nil, properties, extra, rawPropertiesLen(properties, extra))
}

// StoredSizeRawProperties returns the length AppendStoredRawProperties(dst,
// m, properties, extra...) appends and the error it would return instead
// (CheckLimits without maxMessageSize): a caller that knows the size can
// give AppendStoredRawProperties a destination of exactly that capacity.
func StoredSizeRawProperties(m *Ext, properties string, extra ...string) (int, error) {
	extra = extra[:len(extra)&^1]
	propsLen := rawPropertiesLen(properties, extra)
	sysFlag := HostSysFlag(m.SysFlag, m.BornHost, m.StoreHost)
	size := StoredSizeOf(sysFlag, len(m.Body), len(m.Topic), propsLen)
	return size, CheckLimits(len(m.Body), len(m.Topic), propsLen, size, 0)
}

// rawPropertiesLen is the encoded length of properties and the extra pairs
// (an even number of strings).
func rawPropertiesLen(properties string, extra []string) int {
	n := len(properties)
	for _, e := range extra {
		n += len(e) + 1 // a separator after every name and every value
	}
	return n
}

// appendStored writes the record; the properties are pairs, or raw and
// then the extra pairs when pairs is nil. propsLen is their encoded length.
func appendStored(dst []byte, m *Ext, pairs []property, raw string, extra []string, propsLen int) ([]byte, error) {
	sysFlag := HostSysFlag(m.SysFlag, m.BornHost, m.StoreHost)
	size := StoredSizeOf(sysFlag, len(m.Body), len(m.Topic), propsLen)
	if err := CheckLimits(len(m.Body), len(m.Topic), propsLen, size, 0); err != nil {
		return dst, err
	}
	start := len(dst)
	dst = slices.Grow(dst, size)[:start+size]
	b := dst[start:]
	be := binary.BigEndian

	magic := MagicV1
	if len(m.Topic) > MaxTopicSizeV1 {
		magic = MagicV2
	}
	crc := m.BodyCRC
	if crc == 0 {
		crc = BodyCRC(m.Body)
	}
	be.PutUint32(b[OffsetTotalSize:], uint32(size))
	be.PutUint32(b[OffsetMagic:], magic)
	be.PutUint32(b[OffsetBodyCRC:], crc)
	be.PutUint32(b[OffsetQueueID:], uint32(m.QueueID))
	be.PutUint32(b[OffsetFlag:], uint32(m.Flag))
	be.PutUint64(b[OffsetQueueOffset:], uint64(m.QueueOffset))
	be.PutUint64(b[OffsetPhysicalOffset:], uint64(m.CommitLogOffset))
	be.PutUint32(b[OffsetSysFlag:], uint32(sysFlag))
	be.PutUint64(b[OffsetBornTimestamp:], uint64(m.BornTimestamp))
	pos := OffsetBornHost + putHost(b[OffsetBornHost:], m.BornHost)
	be.PutUint64(b[pos:], uint64(m.StoreTimestamp))
	pos += 8
	pos += putHost(b[pos:], m.StoreHost)
	be.PutUint32(b[pos:], uint32(m.ReconsumeTimes))
	pos += 4
	be.PutUint64(b[pos:], uint64(m.PreparedTransactionOffset))
	pos += 8
	be.PutUint32(b[pos:], uint32(len(m.Body)))
	pos += 4
	pos += copy(b[pos:], m.Body)
	if magic == MagicV2 {
		be.PutUint16(b[pos:], uint16(len(m.Topic)))
		pos += 2
	} else {
		b[pos] = byte(len(m.Topic))
		pos++
	}
	pos += copy(b[pos:], m.Topic)
	be.PutUint16(b[pos:], uint16(propsLen))
	pos += 2
	if pairs != nil {
		appendPairs(b[pos:pos], pairs) // exactly propsLen bytes of room
	} else {
		pos += copy(b[pos:], raw)
		for i := 0; i+1 < len(extra); i += 2 {
			pos += copy(b[pos:], extra[i])
			b[pos] = NameValueSeparator
			pos++
			pos += copy(b[pos:], extra[i+1])
			b[pos] = PropertySeparator
			pos++
		}
	}
	return dst, nil
}

// putHost writes a host as address bytes + int32 port and returns its size.
func putHost(b []byte, h netip.AddrPort) int {
	a := h.Addr().Unmap()
	if !a.IsValid() {
		clear(b[:4])
		binary.BigEndian.PutUint32(b[4:], uint32(h.Port()))
		return HostSizeV4
	}
	if a.Is4() {
		ip := a.As4()
		copy(b, ip[:])
		binary.BigEndian.PutUint32(b[4:], uint32(h.Port()))
		return HostSizeV4
	}
	ip := a.As16()
	copy(b, ip[:])
	binary.BigEndian.PutUint32(b[16:], uint32(h.Port()))
	return HostSizeV6
}

// SetQueueOffset patches QUEUEOFFSET of an encoded record in place.
func SetQueueOffset(rec []byte, queueOffset int64) {
	binary.BigEndian.PutUint64(rec[OffsetQueueOffset:], uint64(queueOffset))
}

// SetPhysicalOffset patches PHYSICALOFFSET of an encoded record in place.
func SetPhysicalOffset(rec []byte, commitLogOffset int64) {
	binary.BigEndian.PutUint64(rec[OffsetPhysicalOffset:], uint64(commitLogOffset))
}

// SetStoreTimestamp patches STORETIMESTAMP of an encoded record in place;
// its position comes from the record's SYSFLAG.
func SetStoreTimestamp(rec []byte, storeTimestamp int64) {
	sysFlag := int32(binary.BigEndian.Uint32(rec[OffsetSysFlag:]))
	binary.BigEndian.PutUint64(rec[StoreTimestampOffset(sysFlag):], uint64(storeTimestamp))
}

// AppendBlank appends a blank (end-of-file) record header: TOTALSIZE =
// size (the bytes left in the file, >= BlankHeaderSize) and BlankMagic. Only
// the 8 header bytes are appended.
func AppendBlank(dst []byte, size int32) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(size))
	return binary.BigEndian.AppendUint32(dst, BlankMagic)
}
