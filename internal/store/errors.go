package store

import (
	"errors"
	"fmt"
)

// Sentinels callers branch on (errors.Is).
var (
	ErrClosed      = errors.New("store: closed")
	ErrNotFound    = errors.New("store: not found")
	ErrCorrupt     = errors.New("store: corrupt data")
	ErrBadFileSize = errors.New("store: file size differs from configuration")
	ErrLocked      = errors.New("store: already started (lock file held)")
	// ErrFlushFailed marks a failed msync/fsync; it is sticky: the store
	// refuses writes from then on (a retried sync can silently lose data).
	ErrFlushFailed = errors.New("store: flush failed")

	// Resource limits. A file operation that hits one wraps the OS error
	// with the sentinel, so the broker can say what is short.
	ErrTooManyOpenFiles = errors.New("open files limit reached (raise ulimit -n / LimitNOFILE)")
	ErrMapLimit         = errors.New("memory map limit reached (vm.max_map_count, or address space)")
	ErrNoSpace          = errors.New("no space left on device")
)

// openErr marks descriptor exhaustion (EMFILE, ENFILE).
func openErr(err error) error {
	if isTooManyFiles(err) {
		return fmt.Errorf("%w: %w", ErrTooManyOpenFiles, err)
	}
	return diskErr(err)
}

// mapErr marks mmap's ENOMEM: the process reached vm.max_map_count (or its
// address space limit).
func mapErr(err error) error {
	if isNoMemory(err) {
		return fmt.Errorf("%w: %w", ErrMapLimit, err)
	}
	return err
}

// diskErr marks ENOSPC and EDQUOT.
func diskErr(err error) error {
	if isNoSpace(err) {
		return fmt.Errorf("%w: %w", ErrNoSpace, err)
	}
	return err
}

// CorruptError describes damage found on disk.
type CorruptError struct {
	File   string
	Offset int64 // offset in the file's address space
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("store: corrupt %s at offset %d: %s", e.File, e.Offset, e.Reason)
}

func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// RecoveryReport says what recovery kept and what it dropped. A torn tail
// (crash in the middle of an append) and mid-file damage (bit flip) are both
// reported; the store serves everything before the first bad record.
type RecoveryReport struct {
	Abnormal bool // the abort file was present: the last exit was a crash
	// StartOffset is where the verifying scan began.
	StartOffset int64
	// ValidEnd is the end of the last verified record (the new write position).
	ValidEnd int64
	// Dropped is the number of bytes cut from the commit log after ValidEnd
	// (up to the old write position); 0 on a clean restart.
	DroppedBytes int64
	// Reason explains the first bad record (empty when the log ended cleanly).
	Reason string
	// Messages is the number of records verified by the scan.
	Messages int64
	// TruncatedQueueUnits counts consume-queue units removed because they
	// pointed at or beyond ValidEnd.
	TruncatedQueueUnits int64
	// IndexFilesDropped counts index files discarded after a crash.
	IndexFilesDropped int
	// SnapshotQueues is the number of consume queues restored from the
	// snapshot of the last clean stop (0: every queue directory was
	// loaded and recovered).
	SnapshotQueues int
}

// errUnsupported: the platform or file system lacks a call (sys_*.go); the
// caller takes its fallback.
var errUnsupported = errors.New("store: not supported here")
