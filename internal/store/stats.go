package store

import (
	"sync/atomic"
	"time"
)

// putLatencyBuckets are the upper bounds of the put-latency histogram
// (time from the put's start, PutMessage's call or the start given to
// PutMessageRawPropertiesAt, to the append lock's clock read; flush waits
// excluded).
var putLatencyBuckets = [...]time.Duration{
	10 * time.Microsecond, 50 * time.Microsecond, 100 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 500 * time.Millisecond, time.Second,
}

type statCounters struct {
	puts           atomic.Int64
	putBytes       atomic.Int64
	putFailures    atomic.Int64
	putLatency     [len(putLatencyBuckets) + 1]atomic.Int64
	pageCacheBusy  atomic.Int64
	flushes        atomic.Int64
	flushTimeouts  atomic.Int64
	flushErrors    atomic.Int64
	dispatched     atomic.Int64
	gets           atomic.Int64
	getMessages    atomic.Int64
	filesDeleted   atomic.Int64
	forcedMessages atomic.Int64
	forcedBytes    atomic.Int64
	flush          flushHistograms // stats_flush.go
}

func (c *statCounters) observePutLatency(d time.Duration) {
	for i, b := range putLatencyBuckets {
		if d <= b {
			c.putLatency[i].Add(1)
			return
		}
	}
	c.putLatency[len(putLatencyBuckets)].Add(1)
}

// Stats is a snapshot of the store's counters (internal/metrics exports it).
type Stats struct {
	PutMessages      int64
	PutBytes         int64
	PutFailures      int64
	PutLatencyBounds []time.Duration // bucket upper bounds; the last bucket is +Inf
	PutLatencyCounts []int64         // len(PutLatencyBounds)+1
	PageCacheBusy    int64
	Flushes          int64
	FlushTimeouts    int64
	FlushErrors      int64
	Dispatched       int64
	DispatchLagBytes int64
	GetRequests      int64
	GetMessages      int64
	FilesDeleted     int64
	MinPhyOffset     int64
	MaxPhyOffset     int64
	FlushedOffset    int64
	ConsumeQueues    int
	FlushFailed      bool
	DiskFull         bool
	PoolFreeBuffers  int // -1 without the transient pool

	// Index health: IndexUnavailable while no index file can be created;
	// IndexCreateFailures counts failed creations; IndexNotIndexed counts
	// records dispatched meanwhile and IndexReindexed those indexed again
	// from the commit log afterwards (or after a crash dropped a file).
	IndexUnavailable    bool
	IndexCreateFailures int64
	IndexNotIndexed     int64
	IndexReindexed      int64

	// Forced cleaning (cleanFileForciblyEnable under disk pressure):
	// messages and bytes deleted before their retention time, in total.
	// ForcedDeletions has them per topic.
	ForcedDeletedMessages int64
	ForcedDeletedBytes    int64
}

// Stats returns a snapshot of the counters.
func (s *Store) Stats() Stats {
	c := &s.stats
	st := Stats{
		PutMessages:      c.puts.Load(),
		PutBytes:         c.putBytes.Load(),
		PutFailures:      c.putFailures.Load(),
		PutLatencyBounds: putLatencyBuckets[:],
		PutLatencyCounts: make([]int64, len(c.putLatency)),
		PageCacheBusy:    c.pageCacheBusy.Load(),
		Flushes:          c.flushes.Load(),
		FlushTimeouts:    c.flushTimeouts.Load(),
		FlushErrors:      c.flushErrors.Load(),
		Dispatched:       c.dispatched.Load(),
		GetRequests:      c.gets.Load(),
		GetMessages:      c.getMessages.Load(),
		FilesDeleted:     c.filesDeleted.Load(),
		FlushFailed:      s.flushFailed.Load(),
		DiskFull:         s.diskFull.Load(),
		PoolFreeBuffers:  -1,
	}
	for i := range c.putLatency {
		st.PutLatencyCounts[i] = c.putLatency[i].Load()
	}
	if s.commitLog != nil {
		st.DispatchLagBytes = s.dispatchBehind()
		st.MinPhyOffset = s.MinPhyOffset()
		st.MaxPhyOffset = s.MaxPhyOffset()
		st.FlushedOffset = s.FlushedOffset()
	}
	if s.pool != nil {
		st.PoolFreeBuffers = s.pool.available()
	}
	if ix := s.index; ix != nil {
		st.IndexUnavailable = ix.unavailable.Load()
		st.IndexCreateFailures = ix.createFailures.Load()
		st.IndexNotIndexed = ix.notIndexed.Load()
		st.IndexReindexed = ix.reindexed.Load()
	}
	st.ForcedDeletedMessages = c.forcedMessages.Load()
	st.ForcedDeletedBytes = c.forcedBytes.Load()
	s.queuesMu.RLock()
	st.ConsumeQueues = s.queueCount
	s.queuesMu.RUnlock()
	return st
}

// TransientPoolAvailable reports free transient-pool buffers (-1 without the
// pool); the broker rejects sends when it is 0 (8.17).
func (s *Store) TransientPoolAvailable() int {
	if s.pool == nil {
		return -1
	}
	return s.pool.available()
}
