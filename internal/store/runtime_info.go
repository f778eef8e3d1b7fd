package store

import (
	"io/fs"
	"path/filepath"
	"slices"
)

// Measured values for the broker's runtime info (GET_BROKER_RUNTIME_INFO)
// and for internal/metrics. Each is read on demand; none is cached.

// EarliestMessageTimeInStore is the store time (ms) of the oldest message still
// in the commit log, 0 when the log is empty.
func (s *Store) EarliestMessageTimeInStore() int64 {
	if s.commitLog == nil {
		return 0
	}
	ts, ok := s.storeTimeAt(s.MinPhyOffset())
	if !ok {
		return 0
	}
	return ts
}

// PageCacheLockTimeMills is how long the append in progress has held the
// append lock (RocketMQ's lockTimeMills), 0 when no append is running.
func (s *Store) PageCacheLockTimeMills() int64 {
	begin := s.beginTimeInLock.Load()
	if begin == 0 {
		return 0
	}
	diff := s.cfg.now().UnixMilli() - begin
	if diff < 0 || diff > 10_000_000 {
		return 0
	}
	return diff
}

// StorageSize is the bytes the store's files take on disk (commit log,
// consume queues, index, checkpoint and metadata under the root), from
// the files' allocated blocks as listed now.
func (s *Store) StorageSize() int64 {
	var total int64
	_ = filepath.WalkDir(s.cfg.StorePathRootDir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil // a file deleted while walking is not an error
		}
		if info, err := d.Info(); err == nil {
			total += info.Size()
		}
		return nil
	})
	return total
}

// NonEmptyQueues returns, in no order, the topics accepted by keep whose
// queue 0 holds messages: one pass over the queue list, no sort (the
// broker's lite-topic rebuild at start, 10^6 topics).
func (s *Store) NonEmptyQueues(keep func(topic string) bool) []string {
	var out []string
	for _, cq := range s.allQueues() {
		if cq.queueID == 0 && !cq.deleted.Load() && keep(cq.topic) && cq.maxOffset() > 0 {
			out = append(out, cq.topic)
		}
	}
	return out
}

// QueueTopics lists the topics that have consume queues, sorted (for
// CLEAN_UNUSED_TOPIC: those the broker no longer knows are deleted).
func (s *Store) QueueTopics() []string {
	s.queuesMu.Lock()
	out := make([]string, 0, len(s.queues))
	for t := range s.queues {
		out = append(out, t)
	}
	s.queuesMu.Unlock()
	slices.Sort(out)
	return out
}
