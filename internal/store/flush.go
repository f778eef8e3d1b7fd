package store

import (
	"runtime"
	"sync"
	"time"
)

// flushWaiter is one SYNC_FLUSH put waiting for durability.
type flushWaiter struct {
	next     int64 // the put is durable once flushedWhere >= next
	deadline int64 // unix nanos; FLUSH_DISK_TIMEOUT after it
	res      PutResult
	done     func(PutResult)
}

// groupCommit holds the waiters of SYNC_FLUSH puts (RocketMQ
// GroupCommitService + FlushDiskWatcher). Writers register and wake the
// flusher; after every msync the flusher releases every waiter whose offset
// is durable, so one sync serves all puts that arrived meanwhile.
type groupCommit struct {
	mu      sync.Mutex
	waiters []flushWaiter // registration order; guarded by mu
}

func (g *groupCommit) add(w flushWaiter) {
	g.mu.Lock()
	g.waiters = append(g.waiters, w)
	g.mu.Unlock()
}

// take moves the waiters satisfying pred into out and returns it.
func (g *groupCommit) take(out []flushWaiter, pred func(*flushWaiter) bool) []flushWaiter {
	g.mu.Lock()
	keep := g.waiters[:0]
	for i := range g.waiters {
		if pred(&g.waiters[i]) {
			out = append(out, g.waiters[i])
		} else {
			keep = append(keep, g.waiters[i])
		}
	}
	clear(g.waiters[len(keep):])
	g.waiters = keep
	g.mu.Unlock()
	return out
}

func (g *groupCommit) pending() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.waiters)
}

// runGroupCommit is the SYNC_FLUSH flusher goroutine (GroupCommitService).
// Every put wakes it; it syncs everything appended so far and releases every
// waiter that is now durable. Writers that append while a sync is running
// are served together by the next one: that is the group commit. (Waiting
// to gather a batch before syncing was tried and halved throughput: the
// sync itself is the natural batching window.)
func (s *Store) runGroupCommit() {
	timer := time.NewTimer(10 * time.Millisecond)
	defer timer.Stop()
	var ready []flushWaiter
	for {
		select {
		case <-s.quit:
			s.flushCommitLogOnce(0)
			ready = s.releaseFlushed(ready[:0])
			return
		case <-s.wakeFlush:
		case <-timer.C:
		}
		s.flushCommitLogOnce(0)
		ready = s.releaseFlushed(ready[:0])
		released := len(ready)
		clear(ready)
		if released > 0 {
			s.gather()
		}
		timer.Reset(10 * time.Millisecond)
	}
}

// gather yields the processor so that the writers the last release made
// runnable append (and register) before the next sync, as long as each
// yield brings new waiters.
func (s *Store) gather() {
	n := s.group.pending()
	for i := 0; i < 64; i++ {
		runtime.Gosched()
		m := s.group.pending()
		if m == n {
			return
		}
		n = m
	}
}

// flushCommitLogOnce commits (pool) and flushes the commit log up to its
// current end; an msync failure becomes sticky.
func (s *Store) flushCommitLogOnce(leastPages int) {
	if s.flushFailed.Load() {
		return
	}
	if s.pool != nil {
		for i := 0; i < 4 && !s.commitLog.commit(0); i++ {
		}
	}
	before := s.commitLog.flushedWhere.Load()
	var err error
	if leastPages == 0 {
		err = s.commitLog.flushTo(s.commitLog.writtenOffset())
	} else {
		_, err = s.commitLog.flush(leastPages)
	}
	if err != nil {
		s.setFlushFailed(err)
		return
	}
	if after := s.commitLog.flushedWhere.Load(); after != before {
		s.stats.flushes.Add(1)
		if ts := s.commitLog.flushedTimestamp.Load(); ts > 0 {
			s.cp.physicMsgTimestamp.Store(ts)
		}
		if s.cfg.syncFlush() {
			wake(s.wakeDispatch)
		}
	}
}

func (s *Store) setFlushFailed(err error) {
	if s.flushFailed.CompareAndSwap(false, true) {
		s.stats.flushErrors.Add(1)
		s.log.Error("commit-log flush failed; the store refuses writes from now on", "err", err)
	}
}

// releaseFlushed completes waiters that are durable, and all waiters with
// FLUSH_DISK_TIMEOUT once the flush has failed.
func (s *Store) releaseFlushed(buf []flushWaiter) []flushWaiter {
	flushed := s.commitLog.flushedWhere.Load()
	failed := s.flushFailed.Load()
	buf = s.group.take(buf, func(w *flushWaiter) bool { return failed || w.next <= flushed })
	for i := range buf {
		if failed && buf[i].next > flushed {
			buf[i].res.Status = FlushDiskTimeout
			buf[i].res.Remark = "flush failed"
			s.stats.flushTimeouts.Add(1)
		}
		s.replicate(buf[i].res, true, buf[i].done)
		buf[i].done = nil
	}
	return buf
}

// runFlushWatchdog completes waiters whose deadline passed with
// FLUSH_DISK_TIMEOUT even while the flusher is stuck in msync.
func (s *Store) runFlushWatchdog() {
	period := min(max(s.cfg.SyncFlushTimeout/10, time.Millisecond), 100*time.Millisecond)
	t := time.NewTicker(period)
	defer t.Stop()
	var expired []flushWaiter
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
		}
		now := time.Now().UnixNano()
		expired = s.group.take(expired[:0], func(w *flushWaiter) bool { return now > w.deadline })
		for i := range expired {
			expired[i].res.Status = FlushDiskTimeout
			s.stats.flushTimeouts.Add(1)
			s.replicate(expired[i].res, true, expired[i].done)
			expired[i] = flushWaiter{}
		}
	}
}

// runAsyncFlush is FlushRealTimeService (3.2).
func (s *Store) runAsyncFlush() {
	lastThorough := time.Now()
	for {
		interval := s.cfg.FlushIntervalCommitLog
		t := time.NewTimer(interval)
		if s.cfg.FlushCommitLogTimed {
			select {
			case <-s.quit:
				t.Stop()
				s.flushCommitLogOnce(0)
				return
			case <-t.C:
			}
		} else {
			select {
			case <-s.quit:
				t.Stop()
				s.flushCommitLogOnce(0)
				return
			case <-t.C:
			case <-s.wakeFlush:
				t.Stop()
			}
		}
		least := s.cfg.FlushCommitLogLeastPages
		if time.Since(lastThorough) >= s.cfg.FlushCommitLogThoroughInterval {
			lastThorough = time.Now()
			least = 0
		}
		s.flushCommitLogOnce(least)
	}
}

// runCommit is CommitRealTimeService (3.3), transient pool only.
func (s *Store) runCommit() {
	lastThorough := time.Now()
	for {
		t := time.NewTimer(s.cfg.CommitIntervalCommitLog)
		select {
		case <-s.quit:
			t.Stop()
			for i := 0; i < 10 && !s.commitLog.commit(0); i++ {
			}
			return
		case <-t.C:
		case <-s.wakeCommit:
			t.Stop()
		}
		least := s.cfg.CommitCommitLogLeastPages
		if time.Since(lastThorough) >= s.cfg.CommitCommitLogThoroughInterval {
			lastThorough = time.Now()
			least = 0
		}
		before := s.commitLog.committedWhere.Load()
		for i := 0; i < 4; i++ {
			if s.commitLog.commit(least) {
				break
			}
		}
		if s.commitLog.committedWhere.Load() != before {
			wake(s.wakeDispatch)
			if s.cfg.syncFlush() {
				wake(s.wakeFlush)
			}
		}
	}
}

// runLogicsFlush is FlushConsumeQueueService plus the once-a-second
// checkpoint write.
func (s *Store) runLogicsFlush() {
	t := time.NewTicker(s.cfg.FlushIntervalConsumeQueue)
	defer t.Stop()
	lastThorough := time.Now()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
		}
		least := s.cfg.FlushConsumeQueueLeastPages
		thorough := time.Since(lastThorough) >= s.cfg.FlushConsumeQueueThoroughInterval
		logicsTs := s.cp.logicsMsgTimestamp.Load()
		if thorough {
			lastThorough = time.Now()
			least = 0
		}
		s.flushConsumeQueues(least)
		if thorough {
			s.cp.logicsMsgTimestamp.Store(logicsTs)
		}
		if err := s.cp.persist(); err != nil {
			s.log.Warn("checkpoint write failed", "err", err)
		}
	}
}

func (s *Store) flushConsumeQueues(least int) {
	for _, cq := range s.allQueues() {
		if err := cq.flush(least); err != nil {
			s.log.Error("consume queue flush failed", "topic", cq.topic, "queueId", cq.queueID, "err", err)
		}
	}
}
