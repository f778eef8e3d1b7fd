//go:build windows

package store

import (
	"errors"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The store on Windows: files are mapped with CreateFileMapping and
// MapViewOfFile, flushed with FlushViewOfFile, locked with LockFileEx, and
// disk usage comes from GetDiskFreeSpaceEx. There is no madvise,
// fallocate or populate advice (files grow with Truncate, pages are
// touched). FlushViewOfFile hands dirty pages to the system cache without
// waiting for the disk, so a SYNC_FLUSH broker on Windows should set
// writeWithoutMmap=true, where every group commit is a write followed by
// FlushFileBuffers (see docs/storage.md, "Platforms").

// mmapFile maps size bytes of f shared and writable; the view outlives f
// and the mapping handle.
func mmapFile(f *os.File, size int64) ([]byte, error) {
	if size <= 0 {
		return nil, errors.New("store: empty mapping")
	}
	h, err := windows.CreateFileMapping(windows.Handle(f.Fd()), nil, windows.PAGE_READWRITE,
		uint32(uint64(size)>>32), uint32(size), nil)
	if err != nil {
		return nil, os.NewSyscallError("CreateFileMapping", err)
	}
	defer windows.CloseHandle(h) // the view keeps the mapping alive
	addr, err := windows.MapViewOfFile(h, windows.FILE_MAP_WRITE, 0, 0, uintptr(size))
	if err != nil {
		return nil, os.NewSyscallError("MapViewOfFile", err)
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(addr)), size), nil
}

// munmap releases a view made by mmapFile or memory from mmapAnon.
func munmap(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return windows.UnmapViewOfFile(uintptr(unsafe.Pointer(&b[0])))
}

// msync writes a mapped range back to the system cache.
func msync(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return windows.FlushViewOfFile(uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
}

// No readahead advice on Windows.
func adviseRandom([]byte) bool { return false }
func adviseNormal([]byte)      {}

// populateWrite: no populate advice; pages are touched instead.
func populateWrite([]byte) error { return errUnsupported }

// mmapAnon: the transient pool's buffers are a view of an anonymous
// (page-file backed) mapping, as on Unix.
func mmapAnon(size int64) ([]byte, error) {
	h, err := windows.CreateFileMapping(windows.InvalidHandle, nil, windows.PAGE_READWRITE,
		uint32(uint64(size)>>32), uint32(size), nil)
	if err != nil {
		return nil, os.NewSyscallError("CreateFileMapping", err)
	}
	defer windows.CloseHandle(h)
	addr, err := windows.MapViewOfFile(h, windows.FILE_MAP_WRITE, 0, 0, uintptr(size))
	if err != nil {
		return nil, os.NewSyscallError("MapViewOfFile", err)
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(addr)), size), nil
}

// fdatasync is FlushFileBuffers (os.File.Sync).
func fdatasync(f *os.File) error { return f.Sync() }

// fallocate: files grow with Truncate.
func fallocate(*os.File, int64, int64) error { return errUnsupported }

// lockFile takes an exclusive lock on the file's first byte without
// waiting; unlockFile drops it.
func lockFile(f *os.File) error {
	var ol windows.Overlapped
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
}

func unlockFile(f *os.File) error {
	var ol windows.Overlapped
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}

// diskUsed is the used fraction of the volume holding path.
func diskUsed(path string) (float64, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return -1, err
	}
	var avail, total, free uint64
	if err := windows.GetDiskFreeSpaceEx(p, &avail, &total, &free); err != nil {
		return -1, os.NewSyscallError("GetDiskFreeSpaceEx", err)
	}
	used := float64(total) - float64(free)
	if used+float64(avail) <= 0 {
		return -1, errors.New("store: empty volume")
	}
	return used / (used + float64(avail)), nil
}

// totalMemory is the physical memory GlobalMemoryStatusEx reports.
func totalMemory() int64 {
	var m memoryStatusEx
	m.length = uint32(unsafe.Sizeof(m))
	r, _, _ := procGlobalMemoryStatusEx.Call(uintptr(unsafe.Pointer(&m)))
	if r == 0 {
		return 0
	}
	return int64(m.totalPhys)
}

type memoryStatusEx struct {
	length, memoryLoad                   uint32
	totalPhys, availPhys                 uint64
	totalPageFile, availPageFile         uint64
	totalVirtual, availVirtual, availExt uint64
}

var procGlobalMemoryStatusEx = windows.NewLazySystemDLL("kernel32.dll").NewProc("GlobalMemoryStatusEx")

// The resource errors the store names (errors.go).
func isTooManyFiles(err error) bool { return errors.Is(err, windows.ERROR_TOO_MANY_OPEN_FILES) }
func isNoMemory(err error) bool {
	return errors.Is(err, windows.ERROR_NOT_ENOUGH_MEMORY) || errors.Is(err, windows.ERROR_COMMITMENT_LIMIT)
}
func isNoSpace(err error) bool {
	return errors.Is(err, windows.ERROR_DISK_FULL) || errors.Is(err, windows.ERROR_HANDLE_DISK_FULL)
}

// syncFS: no per-volume sync; dirty files are synced one by one.
func syncFS(string) error { return errUnsupported }

// dataRanges: the whole range may hold data (no SEEK_DATA).
func dataRanges(_ string, from, to int64) [][2]int64 { return [][2]int64{{from, to}} }

// preadPath fills b from off of the file at path (a descriptor for the
// call only).
func preadPath(path string, b []byte, off int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.ReadAt(b, off)
	return err
}

// pwritePath writes b at off of the file at path (a descriptor for the
// call only).
func pwritePath(path string, b []byte, off int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(b, off)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
