package protocol

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"sync"
)

// FrameReader reads frames from a byte stream. The length word is checked
// against the limit before anything is allocated, and a large frame's buffer
// grows only as its bytes actually arrive, so a peer claiming 2 GiB costs
// nothing and one claiming 16 MiB costs only what it sends.
type FrameReader struct {
	r        *bufio.Reader
	maxFrame int // largest accepted L + 4 (the Java limit counts the length word)
	lenBuf   [4]byte
	// listCodes: requests with these codes get their ROCKETMQ ext fields
	// in ExtList instead of ExtFields (SetExtListCodes).
	listCodes []int32
	// listResp: ROCKETMQ responses whose opaque it accepts get their ext
	// fields in ExtList (SetExtListResponses).
	listResp func(opaque int32) bool
	// frames recycles the buffers of ROCKETMQ requests of listCodes of at
	// most pooledFrameMax bytes, by size class of 1 KiB: their owners give
	// them back with Command.Release (the broker's plain send, once the
	// store has copied the body). A frame never released is garbage, as
	// any other.
	frames [pooledFrameMax >> 10]sync.Pool
	// recycled, when set, provides the buffers of the other frames of at
	// least RecycleMin bytes (SetRecycledFrames).
	recycled *RecycledFrames
	// responses recycles the listed responses (SetExtListResponses) their
	// owners give back with Command.Release.
	responses sync.Pool
}

// pooledFrameMax is the largest frame FrameReader recycles.
const pooledFrameMax = 16 << 10

// pooledFrame is a recycled frame buffer, the ExtList storage of the
// command decoded from it, and the pool they return to.
type pooledFrame struct {
	buf  []byte
	list []string
	// owned is the first element of the ExtList decoded into list: Release
	// takes back only that storage.
	owned *string
	pool  *sync.Pool
	// resp is set when this is the frame of a recycled listed response
	// (SetExtListResponses): Release gives back resp, whose pool is pool.
	resp *listedResponse
}

// pooledFrameFor reports whether the frame p (the L bytes after the length
// word) is a ROCKETMQ-serialized request whose code is in listCodes.
func (f *FrameReader) pooledFrameFor(p []byte) bool {
	if len(f.listCodes) == 0 || len(p) < 4+rocketMQFixedLength || SerializeType(p[0]) != SerializeRocketMQ {
		return false
	}
	if int32(binary.BigEndian.Uint32(p[4+9:]))&FlagResponse != 0 {
		return false
	}
	return slices.Contains(f.listCodes, int32(int16(binary.BigEndian.Uint16(p[4:]))))
}

// SetExtListCodes makes Next decode the ext fields of ROCKETMQ-serialized
// requests with these codes into Command.ExtList (key, value pairs) instead
// of the ExtFields map: for hot requests whose processors read their fields
// through Command.Ext or DecodeSendHeaderOf, this saves building and
// hashing a map per frame. Headers that are malformed or repeat a key, JSON
// headers and responses keep the map. Call before the first Next.
func (f *FrameReader) SetExtListCodes(codes []RequestCode) {
	f.listCodes = f.listCodes[:0]
	for _, c := range codes {
		f.listCodes = append(f.listCodes, int32(c))
	}
}

// SetExtListResponses makes Next decode the ext fields of ROCKETMQ-serialized
// responses for whose opaque want reports true into Command.ExtList instead
// of the ExtFields map: for callers that read the response through
// Command.Ext (a producer's send results). want runs on Next's goroutine,
// before the response is decoded. Headers that are malformed or repeat a
// key keep the map. Call before the first Next.
//
// Such a response and its strings live in one block of storage that its
// owner may give back with Command.Release once done with it, for a later
// response: its ExtList strings (and Body) are invalid from then on, so
// an owner that releases it keeps copies of what it keeps. One never
// released is garbage, as any other.
func (f *FrameReader) SetExtListResponses(want func(opaque int32) bool) { f.listResp = want }

// SetRecycledFrames makes the reader take the buffers of frames of
// RecycleMin bytes or more from p (except those SetExtListCodes already
// recycles), so that they are reused once nothing refers to them. Call
// before the first Next.
func (f *FrameReader) SetRecycledFrames(p *RecycledFrames) { f.recycled = p }

// eagerAlloc is the frame size up to which the whole buffer is allocated at
// once; larger frames grow while they are read.
const eagerAlloc = 1 << 20

// NewFrameReader reads frames of at most maxFrame bytes including the 4-byte
// length word (DefaultMaxFrameSize when maxFrame <= 0) from r, through a
// bufio.Reader of bufSize bytes (32 KiB when <= 0).
func NewFrameReader(r io.Reader, maxFrame, bufSize int) *FrameReader {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrameSize
	}
	if bufSize <= 0 {
		bufSize = 32 << 10
	}
	return &FrameReader{r: bufio.NewReaderSize(r, bufSize), maxFrame: maxFrame}
}

// Next reads and decodes one frame. It returns io.EOF at a clean end of the
// stream, io.ErrUnexpectedEOF for a truncated frame, an error wrapping
// ErrFrameTooLarge or ErrBadFrame for bytes that cannot be a frame, or the
// reader's error. After any error the stream is unusable.
func (f *FrameReader) Next() (*Command, error) {
	frame, pf, borrowed, err := f.nextRaw(true)
	if err != nil {
		return nil, err
	}
	if borrowed {
		// A frame without a body, still in the bufio buffer: decoding
		// copies every string, so nothing refers to the buffer after it.
		// (A send's response has no body: the client's read loop copied
		// every one only to decode its header from the copy.)
		c, err := decodeFrameResp(frame, f.listCodes, f.listResp, nil, &f.responses)
		_, _ = f.r.Discard(len(frame))
		if c != nil {
			c.Body = nil // no empty slice of the buffer left behind
		}
		return c, err
	}
	var scratch []string
	if pf != nil {
		scratch, pf.list = pf.list, nil // c owns it until Release
	}
	c, err := decodeFrameResp(frame, f.listCodes, f.listResp, scratch, &f.responses)
	if err != nil || pf == nil {
		return c, err
	}
	c.frame = pf
	pf.owned = nil
	if len(c.ExtList) > 0 {
		pf.owned = &c.ExtList[0]
	}
	return c, nil
}

// NextRaw reads one frame without decoding it: the L bytes after the length
// word. The slice is newly allocated and owned by the caller.
func (f *FrameReader) NextRaw() ([]byte, error) {
	frame, _, _, err := f.nextRaw(false)
	return frame, err
}

// nextRaw is NextRaw; with pool, a frame pooledFrameFor accepts is copied
// into a recycled buffer, returned with it, and a buffered frame without a
// body is not copied at all (borrowed): it is the bufio buffer's bytes,
// valid until the caller discards them, which it must do before reading on.
func (f *FrameReader) nextRaw(pool bool) ([]byte, *pooledFrame, bool, error) {
	if _, err := io.ReadFull(f.r, f.lenBuf[:]); err != nil {
		return nil, nil, false, err
	}
	l := binary.BigEndian.Uint32(f.lenBuf[:])
	if uint64(l)+4 > uint64(f.maxFrame) {
		return nil, nil, false, fmt.Errorf("%w: length %d exceeds limit %d", ErrFrameTooLarge, l, f.maxFrame-4)
	}
	if l < 4 {
		return nil, nil, false, badFrame("frame length %d has no room for the header-length word", l)
	}
	n := int(l)
	if n <= f.r.Size() {
		// Wait until the whole frame is buffered (the same reads as
		// ReadFull would do) and copy it out with append, which unlike
		// make+ReadFull does not zero the bytes it then overwrites.
		p, err := f.r.Peek(n)
		if err != nil {
			return nil, nil, false, unexpected(err)
		}
		if pool && n <= pooledFrameMax && f.pooledFrameFor(p) {
			sp := &f.frames[(n-1)>>10]
			pf, _ := sp.Get().(*pooledFrame)
			if pf == nil {
				pf = &pooledFrame{buf: make([]byte, 0, ((n-1)>>10+1)<<10), pool: sp}
			}
			pf.buf = append(pf.buf[:0], p...)
			_, _ = f.r.Discard(n)
			return pf.buf, pf, false, nil
		}
		if pool && int(binary.BigEndian.Uint32(p)&maxHeaderLength) == n-4 {
			return p, nil, true, nil
		}
		var frame []byte
		if f.recycled != nil {
			frame = f.recycled.Get(n)
		}
		if frame != nil {
			copy(frame, p)
		} else {
			frame = append([]byte(nil), p...)
		}
		_, _ = f.r.Discard(n)
		return frame, nil, false, nil
	}
	if n <= eagerAlloc {
		var frame []byte
		if f.recycled != nil {
			frame = f.recycled.Get(n)
		}
		if frame == nil {
			frame = make([]byte, n)
		}
		if _, err := io.ReadFull(f.r, frame); err != nil {
			return nil, nil, false, unexpected(err)
		}
		return frame, nil, false, nil
	}
	frame := make([]byte, 0, eagerAlloc)
	for len(frame) < n {
		if len(frame) == cap(frame) { // double, so a 16 MiB frame costs < 32 MiB in total
			grown := make([]byte, len(frame), min(2*cap(frame), n))
			copy(grown, frame)
			frame = grown
		}
		end := min(cap(frame), n)
		m, err := io.ReadFull(f.r, frame[len(frame):end])
		frame = frame[:len(frame)+m]
		if err != nil {
			return nil, nil, false, unexpected(err)
		}
	}
	return frame, nil, false, nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
