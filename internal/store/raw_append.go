package store

import (
	"fmt"
)

// AppendRawCommitLog appends bytes read from a master's commit log
// (ReadCommitLog) at startOffset, which must equal the current end of this
// log. data must not cross a commit-log file boundary (ReadCommitLog never
// returns such a range). The records are dispatched like local appends; the
// topic-queue table is rebuilt from the consume queues at the next start.
// Used by slaves (HA); it bypasses the put checks.
func (s *Store) AppendRawCommitLog(startOffset int64, data []byte) error {
	s.inflight.Add(1)
	defer s.inflight.Add(-1)
	if s.state.Load() != stateRunning {
		return ErrClosed
	}
	if s.flushFailed.Load() {
		return fmt.Errorf("store: append raw: %w", ErrFlushFailed)
	}
	s.putMu.Lock()
	defer s.putMu.Unlock()
	f, err := s.commitLog.lastOrCreate(startOffset)
	if err != nil {
		return fmt.Errorf("store: append raw: %w", err)
	}
	if end := f.fromOffset + f.wrote.Load(); end != startOffset {
		return fmt.Errorf("store: append raw at %d, log ends at %d: %w", startOffset, end, ErrCorrupt)
	}
	if int64(len(data)) > f.size-f.wrote.Load() {
		return fmt.Errorf("store: append raw: %d bytes cross the file end at %d: %w", len(data), f.fromOffset+f.size, ErrCorrupt)
	}
	if err := f.appendBytes(data); err != nil {
		s.setFlushFailed(err)
		return err
	}
	if f.stage != nil {
		// A replicated chunk is written out at once (one pwrite): HA
		// chunks are large, nothing else completes a slave's appends under
		// ASYNC_FLUSH, and the slave reports MaxPhyOffset (the committed
		// end) to its master right after this returns, so under SYNC_FLUSH
		// too it must already cover the chunk (the flusher then syncs it).
		if err := f.commitStaged(); err != nil {
			s.setFlushFailed(err)
			return err
		}
	}
	// The file's age for expiry: now, as for a file modified now.
	f.storeTimestamp.Store(s.cfg.now().UnixMilli())
	if s.pool != nil {
		wake(s.wakeCommit)
	}
	if s.cfg.syncFlush() {
		wake(s.wakeFlush)
	} else {
		wake(s.wakeDispatch)
	}
	return nil
}
