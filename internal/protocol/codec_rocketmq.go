package protocol

import (
	"encoding/binary"
	"math"
	"slices"
	"unsafe"
)

// The ROCKETMQ binary header (docs/protocol.md §1.5), all big-endian:
//
//	off  size  field
//	  0     2  code      int16
//	  2     1  language  LanguageCode byte
//	  3     2  version   int16
//	  5     4  opaque    int32
//	  9     4  flag      int32
//	 13     4  remark length R (0 = no remark)
//	 17     R  remark, UTF-8
//	17+R    4  ext block length E (0 = none)
//	21+R    E  ext entries: keyLen int16, key, valueLen int32, value
//
// Part of the wire protocol; never change.
const rocketMQFixedLength = 21

// appendRocketMQHeader appends c's ROCKETMQ header. Codes and versions that
// do not fit int16 give ErrUnencodable (Java would truncate them silently).
// ExtFields are written in key order so the bytes are deterministic, then
// ExtList in its own order (ext order is not significant on the wire), then
// ExtEncoder's fields.
func appendRocketMQHeader(dst []byte, c *Command) ([]byte, error) {
	if c.Code < math.MinInt16 || c.Code > math.MaxInt16 || c.Version < math.MinInt16 || c.Version > math.MaxInt16 {
		return dst, ErrUnencodable
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(int16(c.Code)))
	dst = append(dst, byte(c.Language))
	dst = binary.BigEndian.AppendUint16(dst, uint16(int16(c.Version)))
	dst = binary.BigEndian.AppendUint32(dst, uint32(c.Opaque))
	dst = binary.BigEndian.AppendUint32(dst, uint32(c.Flag))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(c.Remark)))
	dst = append(dst, c.Remark...)
	extStart := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	if len(c.ExtFields) > 0 {
		var stack [32]string
		keys := stack[:0]
		for k := range c.ExtFields {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			var err error
			if dst, err = appendRocketMQExt(dst, k, c.ExtFields[k]); err != nil {
				return dst, err
			}
		}
	}
	for i := 0; i+1 < len(c.ExtList); i += 2 {
		var err error
		if dst, err = appendRocketMQExt(dst, c.ExtList[i], c.ExtList[i+1]); err != nil {
			return dst, err
		}
	}
	if c.ExtEncoder != nil {
		var err error
		if dst, err = c.ExtEncoder.AppendRocketMQExt(dst); err != nil {
			return dst, err
		}
	}
	extLen := len(dst) - extStart - 4
	if extLen > math.MaxInt32 {
		return dst, ErrUnencodable
	}
	binary.BigEndian.PutUint32(dst[extStart:], uint32(extLen))
	return dst, nil
}

// appendRocketMQExt appends one ext entry.
func appendRocketMQExt(dst []byte, k, v string) ([]byte, error) {
	if len(k) > math.MaxInt16 || len(v) > math.MaxInt32 {
		return dst, ErrUnencodable
	}
	return appendExtString(dst, k, v), nil
}

// decodeRocketMQHeader fills c from a ROCKETMQ header. Any declared length
// exceeding what is left of the header is an error, as in Java. A zero-length
// value decodes as "" (Java: null). A later duplicate key wins. Bytes after
// the ext block are ignored.
func decodeRocketMQHeader(b []byte, c *Command) error { return decodeRocketMQHeaderCodes(b, c, nil) }

// decodeRocketMQHeaderCodes is decodeRocketMQHeader; a request whose code
// is in listCodes gets its ext fields in ExtList (decodeRocketMQExtList).
func decodeRocketMQHeaderCodes(b []byte, c *Command, listCodes []int32) error {
	return decodeRocketMQHeaderList(b, c, listCodes, false, nil)
}

// decodeRocketMQHeaderList is decodeRocketMQHeaderCodes; with list set the
// ext fields go to ExtList whatever the code (a response whose caller asked
// for it). A listed ext block that fits spare's capacity is copied into
// spare instead of a new string (decodeRocketMQExtList).
func decodeRocketMQHeaderList(b []byte, c *Command, listCodes []int32, list bool, spare []byte) error {
	if len(b) < rocketMQFixedLength {
		return badFrame("ROCKETMQ header of %d bytes is shorter than %d", len(b), rocketMQFixedLength)
	}
	c.Code = int32(int16(binary.BigEndian.Uint16(b[0:])))
	c.Language = LanguageCode(b[2])
	c.Version = int32(int16(binary.BigEndian.Uint16(b[3:])))
	c.Opaque = int32(binary.BigEndian.Uint32(b[5:]))
	c.Flag = int32(binary.BigEndian.Uint32(b[9:]))
	r := binary.BigEndian.Uint32(b[13:])
	rest := b[17:]
	if uint64(r) > uint64(len(rest)) {
		return badFrame("ROCKETMQ remark length %d exceeds header", r)
	}
	if r > 0 {
		c.Remark = string(rest[:r])
	}
	rest = rest[r:]
	if len(rest) < 4 {
		return badFrame("ROCKETMQ header truncated before ext length")
	}
	e := binary.BigEndian.Uint32(rest)
	rest = rest[4:]
	if uint64(e) > uint64(len(rest)) {
		return badFrame("ROCKETMQ ext length %d exceeds header", e)
	}
	ext := rest[:e]
	if len(ext) == 0 {
		return nil
	}
	if (list || !c.IsResponse() && slices.Contains(listCodes, c.Code)) && decodeRocketMQExtList(ext, c, spare) {
		return nil
	}
	// One string holds the whole ext block; keys and values are substrings
	// of it (one allocation per header instead of one per entry; they keep
	// the block alive together). The map is sized to the exact entry count
	// (a length-only pre-pass): a send header has 13-14 entries, and a map
	// sized by guess grew once per frame.
	str := string(ext)
	off := 0 // position of ext[0] in str
	c.ExtFields = make(map[string]string, countRocketMQExt(ext))
	for len(ext) > 0 {
		if len(ext) < 2 {
			return badFrame("ROCKETMQ ext entry truncated")
		}
		kl := int(int16(binary.BigEndian.Uint16(ext)))
		ext = ext[2:]
		if kl < 0 || kl > len(ext) {
			return badFrame("ROCKETMQ ext key length %d exceeds ext block", kl)
		}
		k := str[off+2 : off+2+kl]
		ext = ext[kl:]
		if len(ext) < 4 {
			return badFrame("ROCKETMQ ext entry truncated")
		}
		vl := binary.BigEndian.Uint32(ext)
		ext = ext[4:]
		if uint64(vl) > uint64(len(ext)) {
			return badFrame("ROCKETMQ ext value length %d exceeds ext block", vl)
		}
		vs := off + 2 + kl + 4
		c.ExtFields[k] = str[vs : vs+int(vl)]
		ext = ext[vl:]
		off = vs + int(vl)
	}
	return nil
}

// countRocketMQExt counts the entries of a ROCKETMQ ext block by their
// lengths alone; a malformed block counts the entries before the damage
// (the decoder then reports it).
func countRocketMQExt(ext []byte) int {
	n := 0
	for len(ext) >= 2 {
		kl := int(int16(binary.BigEndian.Uint16(ext)))
		if kl < 0 || kl+6 > len(ext) {
			break
		}
		vl := uint64(binary.BigEndian.Uint32(ext[2+kl:]))
		if vl > uint64(len(ext)-kl-6) {
			break
		}
		ext = ext[6+kl+int(vl):]
		n++
	}
	return n
}

// decodeRocketMQExtList decodes a ROCKETMQ ext block into c.ExtList (key,
// value pairs, substrings of one string: one allocation and no hashing for
// the whole header) and reports whether it did. A block that is malformed
// or repeats a key is left to the map decoder, which reports the damage or
// keeps the last value as Java's HashMap does; ExtList keys never repeat.
// A block that fits spare's capacity is copied there and the string
// shares spare's bytes: the caller must never write them again.
func decodeRocketMQExtList(ext []byte, c *Command, spare []byte) bool {
	n := countRocketMQExt(ext)
	if n == 0 || n > maxListExt {
		return false
	}
	var str string
	if len(ext) <= cap(spare) {
		spare = append(spare[:0], ext...)
		str = unsafe.String(unsafe.SliceData(spare), len(spare))
	} else {
		str = string(ext)
	}
	list := c.ExtList[:0] // a recycled frame's list (FrameReader)
	if cap(list) < 2*n {
		list = make([]string, 0, 2*n)
	}
	var seen uint64 // filter of the keys so far
	for off := 0; off < len(str); {
		if len(str)-off < 6 {
			return false
		}
		kl := int(int16(binary.BigEndian.Uint16(ext[off:])))
		if kl < 0 || off+2+kl+4 > len(str) {
			return false
		}
		k := str[off+2 : off+2+kl]
		vl := uint64(binary.BigEndian.Uint32(ext[off+2+kl:]))
		vs := off + 2 + kl + 4
		if vl > uint64(len(str)-vs) {
			return false
		}
		// Repeats are rare: a 64-bit filter on (length, last byte) sends
		// only keys that may repeat one to the comparison loop.
		bit := uint64(1) << ((uint(kl) + 7*uint(lastByte(k))) & 63)
		if seen&bit != 0 {
			for i := 0; i < len(list); i += 2 {
				if list[i] == k {
					return false
				}
			}
		}
		seen |= bit
		list = append(list, k, str[vs:vs+int(vl)])
		off = vs + int(vl)
	}
	c.ExtList = list
	return true
}

func lastByte(s string) byte {
	if s == "" {
		return 0
	}
	return s[len(s)-1]
}

// maxListExt bounds the entries decoded into an ExtList (its duplicate
// check is quadratic); longer headers go to the map.
const maxListExt = 32
