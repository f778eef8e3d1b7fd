package ha

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Wire sizes of the classic HA protocol (docs/broker.md §2.1). Part of
// the wire format shared with Java brokers; never change.
const (
	reportSize         = 8  // slave -> master: maxPhyOffset int64
	transferHeaderSize = 12 // master -> slave: physicalOffset int64, bodySize int32
)

// handshakeMagic opens a controller-mode slave's stream: magic then its
// controller broker id (two int64), before the first report. No classic
// report is negative, so a master tells the two apart by the first word.
// Apogee's own framing (RocketMQ's controller mode uses a different HA
// protocol): a Java slave never sends it.
const handshakeMagic int64 = -0x41504f474545 // "APOGEE"

// MaxFrameBody bounds the body of one transfer frame a slave accepts. Java
// masters send at most haTransferBatchSize (32 KiB by default); anything
// beyond this is treated as a corrupt stream.
const MaxFrameBody = 16 << 20

// errBadFrame reports a transfer header no master would send.
var errBadFrame = errors.New("ha: bad transfer frame")

func appendReport(dst []byte, maxPhyOffset int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(maxPhyOffset))
}

func putTransferHeader(dst []byte, offset int64, bodySize int32) {
	binary.BigEndian.PutUint64(dst[0:8], uint64(offset))
	binary.BigEndian.PutUint32(dst[8:12], uint32(bodySize))
}

// readReport reads one 8-byte slave report.
func readReport(r io.Reader, buf *[reportSize]byte) (int64, error) {
	off, err := readWord(r, buf)
	if err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, fmt.Errorf("ha: negative report offset %d: %w", off, errBadFrame)
	}
	return off, nil
}

// readWord reads one big-endian int64.
func readWord(r io.Reader, buf *[reportSize]byte) (int64, error) {
	if _, err := io.ReadFull(r, buf[:]); err != nil {
		return 0, err
	}
	return int64(binary.BigEndian.Uint64(buf[:])), nil
}

func appendHandshake(dst []byte, brokerID int64) []byte {
	magic := handshakeMagic
	dst = binary.BigEndian.AppendUint64(dst, uint64(magic))
	return binary.BigEndian.AppendUint64(dst, uint64(brokerID))
}

// transferDecoder splits the master's byte stream into transfer frames.
// Reads that time out mid-frame lose nothing: bytes stay buffered until the
// frame is complete. Not safe for concurrent use.
type transferDecoder struct {
	buf     []byte // buf[start:] is undecoded input
	start   int
	maxBody int
}

func newTransferDecoder(maxBody int) *transferDecoder {
	return &transferDecoder{buf: make([]byte, 0, 64<<10), maxBody: maxBody}
}

// readFrom performs one Read from r into the buffer.
func (d *transferDecoder) readFrom(r io.Reader) (int, error) {
	if d.start > 0 && d.start == len(d.buf) {
		d.buf, d.start = d.buf[:0], 0
	}
	if cap(d.buf)-len(d.buf) < 16<<10 {
		// Compact, then grow if still short.
		n := copy(d.buf[:cap(d.buf)], d.buf[d.start:])
		d.buf, d.start = d.buf[:n], 0
		if cap(d.buf)-n < 16<<10 {
			nb := make([]byte, n, 2*cap(d.buf)+16<<10)
			copy(nb, d.buf)
			d.buf = nb
		}
	}
	n, err := r.Read(d.buf[len(d.buf):cap(d.buf)])
	d.buf = d.buf[:len(d.buf)+n]
	return n, err
}

// write appends p to the undecoded input (tests and fuzzing).
func (d *transferDecoder) write(p []byte) { d.buf = append(d.buf, p...) }

// next returns the next complete frame. body aliases the decoder's buffer
// and is valid until the next readFrom/write. ok is false when more input
// is needed; err is set for a header no master would send.
func (d *transferDecoder) next() (offset int64, body []byte, ok bool, err error) {
	in := d.buf[d.start:]
	if len(in) < transferHeaderSize {
		return 0, nil, false, nil
	}
	offset = int64(binary.BigEndian.Uint64(in[0:8]))
	size := int64(int32(binary.BigEndian.Uint32(in[8:12])))
	if offset < 0 || size < 0 || size > int64(d.maxBody) {
		return 0, nil, false, fmt.Errorf("ha: offset %d body %d: %w", offset, size, errBadFrame)
	}
	end := transferHeaderSize + int(size)
	if len(in) < end {
		return 0, nil, false, nil
	}
	d.start += end
	return offset, in[transferHeaderSize:end:end], true, nil
}

// buffered is the number of undecoded bytes.
func (d *transferDecoder) buffered() int { return len(d.buf) - d.start }
