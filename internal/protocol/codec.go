package protocol

import (
	"encoding/binary"
	"math"
	"sync"
)

// DefaultMaxFrameSize is the Java default frame limit (16 MiB) including the
// 4-byte length word, so the largest accepted L is DefaultMaxFrameSize-4
// (docs/protocol.md §1.7).
const DefaultMaxFrameSize = 16 << 20

// maxHeaderLength is the largest header the 24-bit header-length field holds.
const maxHeaderLength = 1<<24 - 1

// AppendFrame appends the whole frame of c (length word, header-length word,
// header, body) to dst, with the header in c.SerializeType.
func AppendFrame(dst []byte, c *Command) ([]byte, error) {
	dst, err := AppendFrameHeader(dst, c)
	if err != nil {
		return dst, err
	}
	return append(dst, c.Body...), nil
}

// AppendFrameHeader appends everything of c's frame except the body: the
// length word (which counts the body), the header-length word and the
// header. Writing the result followed by c.Body gives the frame; remoting
// uses it to send large bodies without copying them.
func AppendFrameHeader(dst []byte, c *Command) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	var err error
	switch c.SerializeType {
	case SerializeJSON:
		if c.ExtEncoder != nil {
			err = ErrUnencodable // its fields exist only in the ROCKETMQ form
			break
		}
		dst = appendJSONHeader(dst, c)
	case SerializeRocketMQ:
		dst, err = appendRocketMQHeader(dst, c)
	default:
		err = ErrUnencodable
	}
	if err != nil {
		return dst[:start], err
	}
	h := len(dst) - start - 8
	if h > maxHeaderLength {
		return dst[:start], ErrUnencodable
	}
	total := 4 + h + len(c.Body)
	if total > math.MaxInt32 {
		return dst[:start], ErrUnencodable
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(total))
	binary.BigEndian.PutUint32(dst[start+4:], uint32(c.SerializeType)<<24|uint32(h))
	return dst, nil
}

// DecodeFrame decodes one frame: the L bytes that follow the length word.
// The returned Command's Body aliases frame; strings are copied. Errors wrap
// ErrBadFrame. It never panics on any input.
func DecodeFrame(frame []byte) (*Command, error) { return decodeFrame(frame, nil, nil) }

// decodeFrame is DecodeFrame; ROCKETMQ-serialized requests whose code is in
// listCodes get their ext fields in ExtList instead of ExtFields.
// A listed request's ExtList reuses scratch's capacity when it suffices.
func decodeFrame(frame []byte, listCodes []int32, scratch []string) (*Command, error) {
	return decodeFrameResp(frame, listCodes, nil, scratch, nil)
}

// decodeFrameResp is decodeFrame; a ROCKETMQ-serialized response for whose
// opaque listResp reports true also gets its ext fields in ExtList, with
// the Command, the list's storage and its strings' bytes allocated
// together (a listedResponse), taken from resps when it is not nil, and
// then recycled there by Command.Release.
func decodeFrameResp(frame []byte, listCodes []int32, listResp func(opaque int32) bool, scratch []string, resps *sync.Pool) (*Command, error) {
	if len(frame) < 4 {
		return nil, badFrame("frame of %d bytes has no header-length word", len(frame))
	}
	word := binary.BigEndian.Uint32(frame)
	typ := SerializeType(word >> 24)
	h := int(word & maxHeaderLength)
	if h > len(frame)-4 {
		return nil, badFrame("header length %d exceeds frame length %d", h, len(frame))
	}
	header := frame[4 : 4+h]
	var c *Command
	var spare []byte // storage for the ext block's string (listedResponse)
	list := false
	if listResp != nil && typ == SerializeRocketMQ && len(header) >= rocketMQFixedLength &&
		int32(binary.BigEndian.Uint32(header[9:]))&FlagResponse != 0 &&
		listResp(int32(binary.BigEndian.Uint32(header[5:]))) {
		var r *listedResponse
		if resps != nil {
			r, _ = resps.Get().(*listedResponse)
		}
		if r == nil {
			r = new(listedResponse)
			r.pf.resp, r.pf.pool = r, resps
		}
		c, scratch, spare, list = &r.cmd, r.ext[:0], r.str[:0], true
		if resps != nil {
			c.frame = &r.pf // Release recycles it
		}
	} else {
		c = new(Command)
	}
	c.SerializeType, c.ExtList = typ, scratch[:0]
	var err error
	switch typ {
	case SerializeJSON:
		err = decodeJSONHeader(header, c)
	case SerializeRocketMQ:
		err = decodeRocketMQHeaderList(header, c, listCodes, list, spare)
	default:
		return nil, badFrame("unknown serialize type %d", typ)
	}
	if err != nil {
		return nil, err
	}
	if len(c.ExtList) == 0 {
		c.ExtList = nil // decoders set no ExtList unless the list decode ran
	}
	if len(frame) > 4+h {
		c.Body = frame[4+h:]
	}
	return c, nil
}

// listedResponse is a response decoded with an ExtList, the list's
// backing array and the bytes of its keys and values, allocated together:
// a send response has 5-7 ext fields (an Apogee or RocketMQ broker's: 6,
// ~180 bytes). The strings alias str, which nothing writes until the
// response is released (Command.Release) and decoded into again.
type listedResponse struct {
	cmd Command
	pf  pooledFrame // cmd.frame while recycled: resp is the response itself
	ext [14]string
	str [listedResponseStr]byte // last: the GC's scan stops before it
}

// listedResponseStr is the ext block a listedResponse holds itself (a
// longer one gets a string of its own); with it the struct and its 8-byte
// malloc header (objects over 512 bytes with pointers) fill the 640-byte
// size class.
const listedResponseStr = 208

// release clears r and gives it back to its pool: Command.Release of a
// recycled listed response. The strings decoded into r are invalid from
// now on.
func (r *listedResponse) release() {
	clear(r.ext[:])
	r.cmd = Command{}
	r.pf.pool.Put(r)
}
