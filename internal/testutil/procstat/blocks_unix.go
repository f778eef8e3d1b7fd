//go:build unix

package procstat

import (
	"os"
	"syscall"
)

// allocatedBytes is what fi occupies on disk (sparse files count only
// their allocated blocks).
func allocatedBytes(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int64(st.Blocks) * 512
	}
	return fi.Size()
}
