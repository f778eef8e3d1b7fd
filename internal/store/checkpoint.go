package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// Checkpoint file layout (docs/storage.md §6.1). Part of the on-disk
// format; never change. The file is 4096 bytes; only the first 40 are used.
const (
	checkpointFileSize            = 4096
	cpPhysicMsgTimestamp          = 0
	cpLogicsMsgTimestamp          = 8
	cpIndexMsgTimestamp           = 16
	cpMasterFlushedOffset         = 24
	cpConfirmPhyOffset            = 32
	checkpointUsedBytes           = 40
	checkpointFileName            = "checkpoint"
	abortFileName                 = "abort"
	lockFileName                  = "lock"
	consumeQueueDirName           = "consumequeue"
	indexDirName                  = "index"
	checkpointMinTimestampSlackMs = 3000
)

// checkpoint is the in-memory copy of <root>/checkpoint. Values advance
// with flushes and dispatch; persist writes and fsyncs the whole block.
type checkpoint struct {
	path string

	physicMsgTimestamp  atomic.Int64
	logicsMsgTimestamp  atomic.Int64
	indexMsgTimestamp   atomic.Int64
	masterFlushedOffset atomic.Int64
	confirmPhyOffset    atomic.Int64
	// logicsHold, when not 0, is the store time of the oldest consume-queue
	// unit still in memory (cq_create.go): the persisted
	// logicsMsgTimestamp stays below it.
	logicsHold atomic.Int64
	// behindHold, when not 0, is the store time of the oldest unit kept in
	// memory by the consume-queue write-behind (cq_behind.go); the same
	// rule.
	behindHold atomic.Int64

	mu sync.Mutex // serialises persist
	f  *os.File
	// image is the block last read (openCheckpoint) or written (persist);
	// guarded by mu. The consume-queue snapshot embeds it to recognise the
	// checkpoint it was written with (cq_snapshot.go).
	image [checkpointUsedBytes]byte
}

func openCheckpoint(path string) (*checkpoint, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("store: open checkpoint: %w", err)
	}
	cp := &checkpoint{path: path, f: f}
	buf := make([]byte, checkpointUsedBytes)
	n, err := f.ReadAt(buf, 0)
	if err != nil && n < checkpointUsedBytes && n != 0 {
		// A short checkpoint is treated as zeros: recovery then starts early.
		buf = make([]byte, checkpointUsedBytes)
	}
	copy(cp.image[:], buf)
	be := binary.BigEndian
	cp.physicMsgTimestamp.Store(int64(be.Uint64(buf[cpPhysicMsgTimestamp:])))
	cp.logicsMsgTimestamp.Store(int64(be.Uint64(buf[cpLogicsMsgTimestamp:])))
	cp.indexMsgTimestamp.Store(int64(be.Uint64(buf[cpIndexMsgTimestamp:])))
	cp.masterFlushedOffset.Store(int64(be.Uint64(buf[cpMasterFlushedOffset:])))
	cp.confirmPhyOffset.Store(int64(be.Uint64(buf[cpConfirmPhyOffset:])))
	if st, err := f.Stat(); err == nil && st.Size() < checkpointFileSize {
		if err := f.Truncate(checkpointFileSize); err != nil {
			f.Close()
			return nil, fmt.Errorf("store: size checkpoint: %w", err)
		}
	}
	return cp, nil
}

// minTimestamp is where abnormal recovery may start (6.1).
func (cp *checkpoint) minTimestamp() int64 {
	m := min(cp.physicMsgTimestamp.Load(), cp.logicsMsgTimestamp.Load()) - checkpointMinTimestampSlackMs
	return max(0, m)
}

func (cp *checkpoint) minTimestampIndex() int64 {
	return min(cp.minTimestamp(), cp.indexMsgTimestamp.Load())
}

// persist writes the current values and fsyncs.
func (cp *checkpoint) persist() error {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.f == nil {
		return ErrClosed
	}
	var buf [checkpointUsedBytes]byte
	be := binary.BigEndian
	be.PutUint64(buf[cpPhysicMsgTimestamp:], uint64(cp.physicMsgTimestamp.Load()))
	logics := cp.logicsMsgTimestamp.Load()
	if h := cp.logicsHold.Load(); h > 0 && h <= logics {
		logics = h - 1
	}
	if h := cp.behindHold.Load(); h > 0 && h <= logics {
		logics = h - 1
	}
	be.PutUint64(buf[cpLogicsMsgTimestamp:], uint64(logics))
	be.PutUint64(buf[cpIndexMsgTimestamp:], uint64(cp.indexMsgTimestamp.Load()))
	be.PutUint64(buf[cpMasterFlushedOffset:], uint64(cp.masterFlushedOffset.Load()))
	be.PutUint64(buf[cpConfirmPhyOffset:], uint64(cp.confirmPhyOffset.Load()))
	if _, err := cp.f.WriteAt(buf[:], 0); err != nil {
		return fmt.Errorf("store: write checkpoint: %w", err)
	}
	if err := cp.f.Sync(); err != nil {
		return fmt.Errorf("store: sync checkpoint: %w", err)
	}
	cp.image = buf
	return nil
}

// lastImage is the block last read or written.
func (cp *checkpoint) lastImage() [checkpointUsedBytes]byte {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.image
}

func (cp *checkpoint) close() error {
	err := cp.persist()
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.f != nil {
		if cerr := cp.f.Close(); err == nil && !errors.Is(cerr, os.ErrClosed) {
			err = cerr
		}
		cp.f = nil
	}
	return err
}
