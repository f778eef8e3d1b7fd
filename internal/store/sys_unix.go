//go:build unix

package store

import (
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Memory maps, advice, file locks and disk usage on every Unix (Linux and
// macOS). sys_windows.go has the Windows equivalents.

// mmapFile maps size bytes of f shared and writable; the mapping outlives f.
func mmapFile(f *os.File, size int64) ([]byte, error) {
	return unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

// munmap releases a mapping made by mmapFile or mmapAnon.
func munmap(b []byte) error { return unix.Munmap(b) }

// msync writes a mapped range back to its file and waits.
func msync(b []byte) error { return unix.Msync(b, unix.MS_SYNC) }

// adviseRandom turns readahead off for b (appends and point reads); it
// reports whether the advice was taken. adviseNormal turns it back on.
func adviseRandom(b []byte) bool { return unix.Madvise(b, unix.MADV_RANDOM) == nil }
func adviseNormal(b []byte)      { _ = unix.Madvise(b, unix.MADV_NORMAL) }

// mmapAnon maps size bytes of private anonymous memory and locks it when
// the limit allows (the transient store pool).
func mmapAnon(size int64) ([]byte, error) {
	b, err := unix.Mmap(-1, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, err
	}
	_ = unix.Mlock(b) // best effort, as RocketMQ
	return b, nil
}

// lockFile takes an exclusive lock on f without waiting; unlockFile drops it.
func lockFile(f *os.File) error   { return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) }
func unlockFile(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_UN) }

// diskUsed returns the used fraction of the file system holding path, as
// RocketMQ computes it: used / (used + available to unprivileged users).
func diskUsed(path string) (float64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return -1, err
	}
	total := float64(st.Blocks) * float64(st.Bsize)
	free := float64(st.Bavail) * float64(st.Bsize)
	used := total - float64(st.Bfree)*float64(st.Bsize)
	if used+free <= 0 {
		return -1, errors.New("store: statfs reports an empty file system")
	}
	return used / (used + free), nil
}

// The resource errors the store names (errors.go).
func isTooManyFiles(err error) bool {
	return errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE)
}
func isNoMemory(err error) bool { return errors.Is(err, unix.ENOMEM) }
func isNoSpace(err error) bool  { return errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) }

// dataRanges lists the [from, to) ranges of path within [from, to) that
// may hold data (lseek SEEK_DATA/SEEK_HOLE); the whole range when the file
// system cannot tell.
func dataRanges(path string, from, to int64) [][2]int64 {
	whole := [][2]int64{{from, to}}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return whole
	}
	defer unix.Close(fd)
	var out [][2]int64
	for p := from; p < to; {
		d, err := unix.Seek(fd, p, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // no data after p
		}
		if err != nil {
			return whole
		}
		if d >= to {
			break
		}
		h, err := unix.Seek(fd, d, unix.SEEK_HOLE)
		if err != nil {
			return whole
		}
		out = append(out, [2]int64{max(d, from), min(h, to)})
		p = h
	}
	return out
}

// preadPath fills b from off of the file at path with a descriptor held
// for the call only: open, pread, close. os.Open would add the non-blocking
// switch and the poller registration a regular file then refuses (five
// more system calls), which the lazily mapped files' reads and writes pay
// per unit once the mapping budget is spent.
func preadPath(path string, b []byte, off int64) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	for len(b) > 0 {
		n, err := unix.Pread(fd, b, off)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return &os.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return &os.PathError{Op: "read", Path: path, Err: io.ErrUnexpectedEOF}
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}

// pwritePath writes b at off of the file at path, as preadPath reads.
func pwritePath(path string, b []byte, off int64) error {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	for len(b) > 0 {
		n, err := unix.Pwrite(fd, b, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			unix.Close(fd)
			return &os.PathError{Op: "write", Path: path, Err: err}
		}
		b, off = b[n:], off+int64(n)
	}
	if err := unix.Close(fd); err != nil {
		return &os.PathError{Op: "close", Path: path, Err: err}
	}
	return nil
}
