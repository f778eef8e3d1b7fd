package pop

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Record types (doc.go). Part of the on-disk format; never change.
const (
	recCheckpoint    byte = 1
	recAck           byte = 2
	recChange        byte = 3
	recRevived       byte = 4
	recPopOffset     byte = 5
	recOrderPop      byte = 6
	recOrderAck      byte = 7
	recOrderChange   byte = 8
	recOrderCommit   byte = 9
	recSnapshotBegin byte = 10
	recSnapshotEnd   byte = 11
	recAckBits       byte = 12
	recDrop          byte = 13
)

const (
	frameHeader     = 8
	maxRecordLen    = 1 << 20 // a record is a few hundred bytes at most
	logFileSuffix   = ".poplog"
	defaultSegments = 64 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt marks a log frame that failed its length or CRC check, or a
// payload that does not decode.
var ErrCorrupt = errors.New("pop: corrupt log record")

// enc builds one record payload.
type enc struct{ b []byte }

func (e *enc) byte(x byte)    { e.b = append(e.b, x) }
func (e *enc) v(x int64)      { e.b = binary.AppendVarint(e.b, x) }
func (e *enc) u(x uint64)     { e.b = binary.AppendUvarint(e.b, x) }
func (e *enc) s(x string)     { e.u(uint64(len(x))); e.b = append(e.b, x...) }
func (e *enc) key(k QueueKey) { e.s(k.Group); e.s(k.Topic); e.v(int64(k.QueueID)) }

// dec reads one record payload; the first error sticks.
type dec struct {
	b   []byte
	err error
}

func (d *dec) fail() {
	if d.err == nil {
		d.err = ErrCorrupt
	}
	d.b = nil
}

func (d *dec) byte() byte {
	if len(d.b) < 1 {
		d.fail()
		return 0
	}
	x := d.b[0]
	d.b = d.b[1:]
	return x
}

func (d *dec) v() int64 {
	x, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *dec) u() uint64 {
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *dec) s() string {
	n := d.u()
	if d.err != nil || n > uint64(len(d.b)) {
		d.fail()
		return ""
	}
	x := string(d.b[:n])
	d.b = d.b[n:]
	return x
}

func (d *dec) key() QueueKey {
	k := QueueKey{Group: d.s(), Topic: d.s()}
	q := d.v()
	if q < -1<<31 || q > 1<<31-1 {
		d.fail()
	}
	k.QueueID = int32(q)
	return k
}

// appendFrame wraps payload in a frame.
func appendFrame(dst, payload []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(payload)))
	dst = binary.BigEndian.AppendUint32(dst, crc32.Checksum(payload, castagnoli))
	return append(dst, payload...)
}

// nextFrame returns the payload of the frame at the start of b and the
// frame's total length; n == 0 means b holds no complete valid frame (a
// torn or corrupt tail).
func nextFrame(b []byte) (payload []byte, n int) {
	if len(b) < frameHeader {
		return nil, 0
	}
	l := binary.BigEndian.Uint32(b)
	if l == 0 || l > maxRecordLen || int(l) > len(b)-frameHeader {
		return nil, 0
	}
	p := b[frameHeader : frameHeader+int(l)]
	if crc32.Checksum(p, castagnoli) != binary.BigEndian.Uint32(b[4:]) {
		return nil, 0
	}
	return p, frameHeader + int(l)
}

// logFile is the active log: frames are appended with one write each.
type logFile struct {
	f    *os.File
	seq  uint64
	size int64
	path string
}

func logName(dir string, seq uint64) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", seq, logFileSuffix))
}

// listLogs returns the log sequence numbers in dir, ascending.
func listLogs(dir string) ([]uint64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("pop: list %s: %w", dir, err)
	}
	var seqs []uint64
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), logFileSuffix)
		if !ok || e.IsDir() {
			continue
		}
		seq, err := strconv.ParseUint(name, 10, 64)
		if err != nil {
			continue
		}
		seqs = append(seqs, seq)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	return seqs, nil
}

func (l *logFile) write(frames []byte) error {
	if _, err := l.f.Write(frames); err != nil {
		return fmt.Errorf("pop: append %s: %w", l.path, err)
	}
	l.size += int64(len(frames))
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
