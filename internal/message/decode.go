package message

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
)

// DecodeOptions tunes DecodeStored.
type DecodeOptions struct {
	// SkipBody leaves Ext.Body nil (the CRC is still checked if asked).
	SkipBody bool
	// Decompress inflates compressed bodies (SysFlagCompressed with
	// compression type 0 or ZLIB, LZ4 or ZSTD: DecompressBody) and clears
	// SysFlagCompressed in the result, as RocketMQ consumers do. A body
	// that fails to inflate, or names an unknown type, is returned as
	// stored with the flag kept.
	Decompress bool
	// VerifyCRC checks BODYCRC against the stored body: ErrBadCRC.
	VerifyCRC bool
	// MaxDecompressedSize bounds an inflated body; 0 means
	// DefaultMaxDecompressedSize. A larger body is left compressed.
	MaxDecompressedSize int
}

// DefaultMaxDecompressedSize bounds inflated bodies when DecodeOptions does
// not say otherwise.
const DefaultMaxDecompressedSize = 64 << 20

// DecodeStored decodes the record at the start of b and returns it with the
// number of bytes it occupies (TOTALSIZE). The result does not alias b.
//
// Errors (errors.Is): ErrShortBuffer when the header or the record extends
// past b; ErrBlank with n = the blank's TOTALSIZE for an end-of-file
// record; ErrBadMagic; ErrCorrupt when the field lengths do not add up to
// TOTALSIZE; ErrBadCRC. It never panics and allocates no more than
// TOTALSIZE bytes (plus a decompressed body when asked).
func DecodeStored(b []byte, opt DecodeOptions) (*Ext, int, error) {
	n, err := storedLen(b)
	if err != nil {
		return nil, n, err
	}
	m := new(Ext)
	if err := decodeRecord(m, b[:n], opt, false); err != nil {
		return nil, n, err
	}
	return m, n, nil
}

// DecodeStoredAll decodes a concatenation of records (a pull or query
// response body). It stops at the first error and returns the messages
// decoded before it together with the error. The messages' bodies share one
// copy of b, made once.
func DecodeStoredAll(b []byte, opt DecodeOptions) ([]*Ext, error) {
	if len(b) == 0 {
		return nil, nil
	}
	own := make([]byte, len(b))
	copy(own, b)
	return decodeAll(own, opt, nil)
}

// DecodeStoredAllOwned is DecodeStoredAll for a buffer the caller hands
// over (a response frame read for this call): the bodies alias b instead
// of a copy of it, so b must not be modified or reused afterwards.
func DecodeStoredAllOwned(b []byte, opt DecodeOptions) ([]*Ext, error) {
	if len(b) == 0 {
		return nil, nil
	}
	return decodeAll(b, opt, nil)
}

// ExtScratch is storage for the Ext structs of one decode that a caller
// reuses from call to call (a pull loop converting every batch to its own
// types before the next): DecodeStoredAllOwnedScratch then allocates no
// Ext structs. The zero value is ready; it must not be shared by
// concurrent decodes.
type ExtScratch struct {
	slab []Ext
	ptrs []*Ext
}

// Clear drops the references the last decode left in s (topics,
// properties, bodies), so that they do not outlive their messages.
func (s *ExtScratch) Clear() {
	clear(s.slab) // s.ptrs point into s.slab only
}

// DecodeStoredAllOwnedScratch is DecodeStoredAllOwned with the Ext structs
// (and the returned slice) in s: they are valid until the next decode into
// s or s.Clear. A nil s allocates them, as DecodeStoredAllOwned does.
func DecodeStoredAllOwnedScratch(b []byte, opt DecodeOptions, s *ExtScratch) ([]*Ext, error) {
	if len(b) == 0 {
		return nil, nil
	}
	return decodeAll(b, opt, s)
}

// decodeAll decodes the records of own, which the result may alias. The
// records are checked first, so that the Ext structs take one allocation
// (none with a scratch that has room) and the topics and properties of all
// records one string.
func decodeAll(own []byte, opt DecodeOptions, scratch *ExtScratch) ([]*Ext, error) {
	var (
		stack  [64]StoredView
		views  = stack[:0]
		strLen int
		bad    error
	)
	for off := 0; off < len(own); {
		n, err := storedLen(own[off:])
		if err == nil {
			var v StoredView
			if v, err = parseView(own[off : off+n]); err == nil && opt.VerifyCRC {
				err = v.VerifyCRC()
			}
			if err == nil {
				views = append(views, v)
				strLen += n - v.topicAt
				off += n
				continue
			}
		}
		bad = fmt.Errorf("message: record at %d: %w", off, err)
		break
	}
	if len(views) == 0 {
		return nil, bad
	}
	var sb strings.Builder
	sb.Grow(strLen)
	for _, v := range views {
		sb.Write(v.rec[v.topicAt:])
	}
	strs := sb.String()
	var slab []Ext
	var msgs []*Ext
	if scratch == nil {
		slab, msgs = make([]Ext, len(views)), make([]*Ext, len(views))
	} else {
		if cap(scratch.slab) < len(views) {
			scratch.slab, scratch.ptrs = make([]Ext, len(views)), make([]*Ext, len(views))
		}
		// fillFromView sets every field, so the slab needs no clearing.
		slab, msgs = scratch.slab[:len(views)], scratch.ptrs[:len(views)]
	}
	for i, v := range views {
		m := &slab[i]
		n := len(v.rec) - v.topicAt
		fillFromView(m, v, strs[:n], opt, true)
		strs = strs[n:]
		msgs[i] = m
	}
	return msgs, bad
}

// StoredLen reads the header at the start of b and returns the record's
// TOTALSIZE without decoding it, with DecodeStored's header errors
// (ErrShortBuffer, ErrBadMagic, ErrBlank with the blank's size, ErrCorrupt
// for an impossible TOTALSIZE). A nil error means b holds the whole record.
func StoredLen(b []byte) (int, error) { return storedLen(b) }

func storedLen(b []byte) (int, error) {
	if len(b) < BlankHeaderSize {
		return 0, fmt.Errorf("message: %d bytes, need a %d-byte header: %w", len(b), BlankHeaderSize, ErrShortBuffer)
	}
	total := int32(binary.BigEndian.Uint32(b[OffsetTotalSize:]))
	switch magic := binary.BigEndian.Uint32(b[OffsetMagic:]); magic {
	case MagicV1, MagicV2:
	case BlankMagic:
		if total < BlankHeaderSize {
			return 0, fmt.Errorf("message: blank record of size %d: %w", total, ErrCorrupt)
		}
		return int(total), ErrBlank
	default:
		return 0, fmt.Errorf("message: magic %#08x (size %d): %w", magic, total, ErrBadMagic)
	}
	if total < MinStoredSize {
		return 0, fmt.Errorf("message: total size %d below minimum %d: %w", total, MinStoredSize, ErrCorrupt)
	}
	if int(total) > len(b) {
		return 0, fmt.Errorf("message: record of %d bytes, %d available: %w", total, len(b), ErrShortBuffer)
	}
	return int(total), nil
}

// decodeRecord decodes rec, which is exactly one record whose header
// storedLen accepted. With alias the body slices rec.
func decodeRecord(m *Ext, rec []byte, opt DecodeOptions, alias bool) error {
	v, err := parseView(rec)
	if err != nil {
		return err
	}
	if opt.VerifyCRC {
		if err := v.VerifyCRC(); err != nil {
			return err
		}
	}
	// One string holds topic and properties, so both cost a single
	// allocation and the property values share it.
	fillFromView(m, v, string(rec[v.topicAt:]), opt, alias)
	return nil
}

// fillFromView decodes a checked record into m, setting every field (m
// may hold a previous record); strs is a copy of the record from its topic
// on (topic, properties length, properties).
func fillFromView(m *Ext, v StoredView, strs string, opt DecodeOptions, alias bool) {
	m.StoreSize = int32(len(v.rec))
	m.BodyCRC = v.BodyCRC()
	m.QueueID = v.QueueID()
	m.Flag = v.Flag()
	m.QueueOffset = v.QueueOffset()
	m.CommitLogOffset = v.CommitLogOffset()
	m.SysFlag = v.sysFlag
	m.BornTimestamp = v.BornTimestamp()
	m.BornHost = v.BornHost()
	m.StoreTimestamp = v.StoreTimestamp()
	m.StoreHost = v.StoreHost()
	m.ReconsumeTimes = v.ReconsumeTimes()
	m.PreparedTransactionOffset = v.PreparedTransactionOffset()
	m.Topic = strs[:v.topicLen]
	m.Properties = DecodeProperties(strs[len(strs)-v.propsLen:])

	if opt.SkipBody {
		m.Body = nil
		return
	}
	body := v.Body()
	if opt.Decompress && IsDecompressible(m.SysFlag) {
		limit := opt.MaxDecompressedSize
		if limit <= 0 {
			limit = DefaultMaxDecompressedSize
		}
		if out, err := DecompressBody(m.SysFlag, body, limit); err == nil {
			m.Body = out
			m.SysFlag &^= SysFlagCompressed
			return
		}
	}
	if alias {
		m.Body = body
	} else {
		m.Body = append([]byte(nil), body...)
	}
}

// readHost reads a host of the stored layout at pos. ok is false when the
// port does not fit 16 bits. REQUIRES: rec holds the whole host.
func readHost(rec []byte, pos int, v6 bool) (netip.AddrPort, int, bool) {
	var addr netip.Addr
	if v6 {
		addr = netip.AddrFrom16([16]byte(rec[pos : pos+16]))
		pos += 16
	} else {
		addr = netip.AddrFrom4([4]byte(rec[pos : pos+4]))
		pos += 4
	}
	port := binary.BigEndian.Uint32(rec[pos:])
	pos += 4
	if port > 0xFFFF {
		return netip.AddrPort{}, pos, false
	}
	return netip.AddrPortFrom(addr, uint16(port)), pos, true
}
