package timer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
)

// Checkpoint layout (doc.go). Part of the on-disk format; never change.
const (
	checkpointMagic   = 0x54494D52 // "TIMR"
	checkpointVersion = 1
	checkpointSize    = 4 + 4 + 8 + 8 + 8 + 4
)

// checkpoint is the durable progress of the timer.
type checkpoint struct {
	doneMs      int64 // first slot not fully delivered
	flushPos    int64 // timer log synced up to here
	queueOffset int64 // next timer-topic unit to enqueue
}

func (c checkpoint) encode() []byte {
	b := make([]byte, checkpointSize)
	binary.BigEndian.PutUint32(b[0:], checkpointMagic)
	binary.BigEndian.PutUint32(b[4:], checkpointVersion)
	binary.BigEndian.PutUint64(b[8:], uint64(c.doneMs))
	binary.BigEndian.PutUint64(b[16:], uint64(c.flushPos))
	binary.BigEndian.PutUint64(b[24:], uint64(c.queueOffset))
	binary.BigEndian.PutUint32(b[32:], crc32.ChecksumIEEE(b[:32]))
	return b
}

func decodeCheckpoint(b []byte) (checkpoint, error) {
	if len(b) != checkpointSize || binary.BigEndian.Uint32(b) != checkpointMagic ||
		binary.BigEndian.Uint32(b[4:]) != checkpointVersion || binary.BigEndian.Uint32(b[32:]) != crc32.ChecksumIEEE(b[:32]) {
		return checkpoint{}, errors.New("timer: checkpoint damaged")
	}
	c := checkpoint{
		doneMs:      int64(binary.BigEndian.Uint64(b[8:])),
		flushPos:    int64(binary.BigEndian.Uint64(b[16:])),
		queueOffset: int64(binary.BigEndian.Uint64(b[24:])),
	}
	if c.flushPos < 0 || c.queueOffset < 0 {
		return checkpoint{}, errors.New("timer: checkpoint has negative positions")
	}
	return c, nil
}

// loadCheckpoint reads the checkpoint; ok is false when none exists.
func loadCheckpoint(path string) (checkpoint, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return checkpoint{}, false, nil
	}
	if err != nil {
		return checkpoint{}, false, fmt.Errorf("timer: %w", err)
	}
	c, err := decodeCheckpoint(b)
	if err != nil {
		return checkpoint{}, false, fmt.Errorf("%w: %s", err, path)
	}
	return c, true, nil
}

// storeCheckpoint writes the checkpoint atomically (temp file, fsync,
// rename, directory fsync).
func storeCheckpoint(path string, c checkpoint) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("timer: %w", err)
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("timer: %w", err)
	}
	if _, err := f.Write(c.encode()); err != nil {
		f.Close()
		return fmt.Errorf("timer: write checkpoint: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("timer: sync checkpoint: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("timer: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("timer: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
