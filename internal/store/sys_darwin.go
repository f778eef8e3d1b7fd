//go:build darwin

package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdatasync on macOS is F_FULLFSYNC: fsync there does not flush the
// drive's cache, so it would not make an acknowledged SYNC_FLUSH message
// durable. A file system that refuses F_FULLFSYNC falls back to fsync.
func fdatasync(f *os.File) error {
	if _, err := unix.FcntlInt(f.Fd(), unix.F_FULLFSYNC, 0); err == nil {
		return nil
	}
	return f.Sync()
}

// fallocate: macOS has no fallocate; files grow with Truncate (sparse
// until written). A full disk then shows as a write error or SIGBUS on a
// mapping rather than as a refused reservation, so the disk-full check
// (checkDiskSpace) is what keeps the store from writing into it.
func fallocate(*os.File, int64, int64) error { return errUnsupported }

// populateWrite: no populate advice on macOS; pages are touched instead.
func populateWrite([]byte) error { return errUnsupported }

// totalMemory is hw.memsize.
func totalMemory() int64 {
	n, err := unix.SysctlUint64("hw.memsize")
	if err != nil {
		return 0
	}
	return int64(n)
}

// syncFS: macOS has no syncfs; dirty files are synced one by one.
func syncFS(string) error { return errUnsupported }
