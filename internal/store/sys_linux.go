//go:build linux

package store

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// The store's operating-system calls that differ between platforms. Linux
// has all of them; sys_darwin.go and sys_windows.go say what stands in.

// fdatasync makes f's data durable (without forcing a metadata write).
func fdatasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }

// fallocate reserves [off, off+n) of f; errUnsupported when the file
// system cannot (callers then grow the file with Truncate).
func fallocate(f *os.File, off, n int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, off, n)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return errUnsupported
	}
	return err
}

// populateWrite maps b's pages writable ahead of use
// (MADV_POPULATE_WRITE, Linux 5.14); an error means "touch them instead".
func populateWrite(b []byte) error { return unix.Madvise(b, unix.MADV_POPULATE_WRITE) }

// totalMemory is the machine's RAM in bytes, 0 when unknown.
func totalMemory() int64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}

// syncFS syncs the whole file system holding dir (one syncfs for every
// dirty consume-queue file).
func syncFS(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Syncfs(fd)
}
