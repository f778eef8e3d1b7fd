//go:build !unix

package procstat

import "os"

// allocatedBytes is fi's size where block counts are not available.
func allocatedBytes(fi os.FileInfo) int64 { return fi.Size() }
