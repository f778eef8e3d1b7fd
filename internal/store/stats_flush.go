package store

import (
	"sync/atomic"
	"time"
)

// Flush histograms for internal/metrics (apogee_group_commit_size,
// apogee_fsync_latency_seconds): how many SYNC_FLUSH puts one flush
// released, and how long one flush (msync/fdatasync of the commit log)
// took. Fixed buckets, atomics only; the flusher records once per sync.

// GroupCommitBounds are the upper bounds of the group-commit size buckets.
var GroupCommitBounds = [...]int64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}

// FsyncBounds are the upper bounds of the commit-log flush latency buckets.
var FsyncBounds = [...]time.Duration{
	50 * time.Microsecond, 100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond,
	25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
	500 * time.Millisecond, time.Second,
}

type flushHistograms struct {
	groupSizes [len(GroupCommitBounds) + 1]atomic.Int64
	groupSum   atomic.Int64
	fsync      [len(FsyncBounds) + 1]atomic.Int64
	fsyncNanos atomic.Int64
}

func (h *flushHistograms) observeGroupCommit(n int) {
	i := 0
	for i < len(GroupCommitBounds) && int64(n) > GroupCommitBounds[i] {
		i++
	}
	h.groupSizes[i].Add(1)
	h.groupSum.Add(int64(n))
}

func (h *flushHistograms) observeFsync(d time.Duration) {
	i := 0
	for i < len(FsyncBounds) && d > FsyncBounds[i] {
		i++
	}
	h.fsync[i].Add(1)
	h.fsyncNanos.Add(int64(d))
}

// FlushHistogramStats is a snapshot of the flush histograms; counts are
// per bucket (not cumulative), the last bucket is +Inf.
type FlushHistogramStats struct {
	GroupCommitCounts []int64 // len(GroupCommitBounds)+1
	GroupCommitSum    int64   // puts released in total
	FsyncCounts       []int64 // len(FsyncBounds)+1
	FsyncSum          time.Duration
}

// FlushHistograms returns the flush histograms.
func (s *Store) FlushHistograms() FlushHistogramStats {
	h := &s.stats.flush
	out := FlushHistogramStats{
		GroupCommitCounts: make([]int64, len(h.groupSizes)),
		GroupCommitSum:    h.groupSum.Load(),
		FsyncCounts:       make([]int64, len(h.fsync)),
		FsyncSum:          time.Duration(h.fsyncNanos.Load()),
	}
	for i := range h.groupSizes {
		out.GroupCommitCounts[i] = h.groupSizes[i].Load()
	}
	for i := range h.fsync {
		out.FsyncCounts[i] = h.fsync[i].Load()
	}
	return out
}
