// Package procstat reads what a child server process holds (open files,
// mappings, RSS from /proc) and what its data directory occupies, for the
// benchmarks that start `apogee` as a child (benchmarks/scale,
// benchmarks/lite). Linux only in effect: elsewhere the /proc figures stay
// zero.
package procstat

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Resources is one reading.
type Resources struct {
	FDs, Maps   int
	RSSMB       float64
	DataMB      float64 // allocated blocks under the data dir
	CQMB        float64 // of which the consume queues
	ApparentGiB float64 // sum of file sizes (sparse files count whole)
}

// Read takes a reading of process pid and data directory dir.
func Read(pid int, dir string) Resources {
	var r Resources
	if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		r.FDs = len(ents)
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid)); err == nil {
		r.Maps = strings.Count(string(b), "\n")
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				r.RSSMB = kb / 1024
			}
		}
	}
	var blocks, size, cq int64
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		allocated := allocatedBytes(fi)
		blocks += allocated
		if strings.Contains(p, "/consumequeue/") {
			cq += allocated
		}
		if !d.IsDir() {
			size += fi.Size()
		}
		return nil
	})
	r.DataMB = float64(blocks) / (1 << 20)
	r.CQMB = float64(cq) / (1 << 20)
	r.ApparentGiB = float64(size) / (1 << 30)
	return r
}

// Report records r as benchmark metrics named prefix+fds, maps, rssMB,
// dataMB and consumequeueMB, and logs it.
func (r Resources) Report(b *testing.B, prefix string) {
	b.ReportMetric(float64(r.FDs), prefix+"fds")
	b.ReportMetric(float64(r.Maps), prefix+"maps")
	b.ReportMetric(r.RSSMB, prefix+"rssMB")
	b.ReportMetric(r.DataMB, prefix+"dataMB")
	b.ReportMetric(r.CQMB, prefix+"consumequeueMB")
	b.Logf("%sopen files %d, mappings %d, RSS %.0f MiB, data dir %.1f MiB allocated (consume queues %.1f MiB; %.1f GiB apparent)",
		prefix, r.FDs, r.Maps, r.RSSMB, r.DataMB, r.CQMB, r.ApparentGiB)
}

// CPU is process pid's user+system CPU time (/proc/pid/stat utime and
// stime, in clock ticks of 1/100 s on Linux); 0 when it cannot be read.
func CPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces: count from after it.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
