package store

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/run"
)

// flushWaiter is one SYNC_FLUSH put waiting for durability, or one
// ASYNC_FLUSH put waiting for its staged bytes to be written (Store.staged).
type flushWaiter struct {
	next     int64 // the put is complete once flushedWhere (committed end) >= next
	deadline int64 // unix nanos; FLUSH_DISK_TIMEOUT after it (SYNC_FLUSH)
	res      PutResult
	done     func(PutResult)
	noWait   bool // WAIT=false: replication is not awaited (staged puts)
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
// waiter that is now durable. When it released several, gather yields the
// processor to them, so that those that put again at once join the next
// sync instead of the one after it (with 64 writers this raised the batch
// from ~25 to ~40 puts per sync). A lone writer is better served by the
// flusher parking: its next put then readies the flusher on the writer's
// own processor, a cheap hand-off (a yielding flusher was picked up by the
// other processor instead, and the put then had to wake it there). While
// the last sync made progress and more is appended, the flusher does not
// park.
//
// (Sleeping to gather a batch before syncing was tried and halved
// throughput: yielding costs nothing when no writer is runnable.)
func (s *Store) runGroupCommit() {
	timer := time.NewTimer(10 * time.Millisecond)
	defer timer.Stop()
	var ready []flushWaiter
	var lastSync time.Duration
	more := false
	var dw dispatchWaker
	for {
		if more {
			select {
			case <-s.quit:
				s.flushCommitLogOnce(0)
				s.releaseFlushed(ready[:0])
				return
			default:
			}
		} else {
			timer.Reset(dw.idleWait(10 * time.Millisecond))
			select {
			case <-s.quit:
				s.flushCommitLogOnce(0)
				s.releaseFlushed(ready[:0])
				return
			case <-s.wakeFlush:
			case <-timer.C:
			}
		}
		t0 := time.Now()
		advanced := s.flushCommitLogOnce(0)
		now := time.Now()
		if advanced {
			lastSync = now.Sub(t0)
		}
		dw.synced(s, advanced, now)
		ready = s.releaseFlushed(ready[:0])
		released := len(ready)
		if released > 0 {
			s.stats.flush.observeGroupCommit(released) // stats_flush.go
		}
		clear(ready)
		if released > 1 {
			s.gather(released, max(lastSync, 50*time.Microsecond))
		}
		more = advanced && s.commitLog.writtenOffset() > s.commitLog.flushedWhere.Load()
	}
}

// dispatchWaker batches the flusher's wake-ups of the dispatch goroutine
// under SYNC_FLUSH: a wake-up of a parked goroutine costs the waker a futex
// call (several µs on a VM) when a processor is idle, on the path from one
// sync to the next (a wake-up per sync cost a lone writer ~3 µs a put).
// Dispatch is woken once dispatchWakeBytes are flushed or dispatchWakeDelay
// after the first undispatched sync (the idle flusher parks no longer than
// that), so flushed messages reach consume queues within about a
// millisecond (RocketMQ's ReputMessageService polls every millisecond).
type dispatchWaker struct {
	pending  bool      // a sync since the last wake-up
	since    time.Time // of the first such sync
	lastWake int64     // flushed offset at the last wake-up
}

const (
	dispatchWakeBytes = 64 << 10
	dispatchWakeDelay = time.Millisecond
)

func (d *dispatchWaker) synced(s *Store, advanced bool, now time.Time) {
	if advanced && !d.pending {
		d.pending, d.since = true, now
	}
	if d.pending && (s.commitLog.flushedWhere.Load()-d.lastWake >= dispatchWakeBytes || now.Sub(d.since) >= dispatchWakeDelay) {
		d.wake(s)
	}
}

// idleWait is how long the idle flusher may park: until the pending
// wake-up is due.
func (d *dispatchWaker) idleWait(max time.Duration) time.Duration {
	if !d.pending {
		return max
	}
	return min(max, dispatchWakeDelay-time.Since(d.since))
}

func (d *dispatchWaker) wake(s *Store) {
	d.pending = false
	d.lastWake = s.commitLog.flushedWhere.Load()
	wake(s.wakeDispatch)
}

// gather yields the processor so that the released writers that put again
// at once register before the next sync. It stops when as many new waiters
// as were released have registered, when a yield brings none, or after
// limit: a longer gather would idle the disk for longer than a sync takes.
func (s *Store) gather(released int, limit time.Duration) {
	start := time.Now()
	n0 := s.group.pending()
	n := n0
	for i := 0; i < 64; i++ {
		runtime.Gosched()
		m := s.group.pending()
		if m == n || m-n0 >= released || time.Since(start) > limit {
			return
		}
		n = m
	}
}

// flushCommitLogOnce commits (pool) and flushes the commit log up to its
// current end; an msync failure becomes sticky. It reports whether the
// flushed offset moved.
func (s *Store) flushCommitLogOnce(leastPages int) bool {
	if s.flushFailed.Load() {
		return false
	}
	if s.pool != nil {
		for i := 0; i < 4 && !s.commitLog.commit(0); i++ {
		}
	}
	before := s.commitLog.flushedWhere.Load()
	start := time.Now()
	var err error
	if leastPages == 0 {
		err = s.commitLog.flushTo(s.commitLog.writtenOffset())
	} else {
		_, err = s.commitLog.flush(leastPages)
	}
	if err != nil {
		s.setFlushFailed(err)
		return false
	}
	// As RocketMQ's flush services: the checkpoint takes the timestamp of
	// the last complete flush even when this one found nothing new (the
	// least-pages flushes had kept up), so it never lags the flushed data.
	if ts := s.commitLog.flushedTimestamp.Load(); ts > 0 {
		s.cp.physicMsgTimestamp.Store(ts)
	}
	after := s.commitLog.flushedWhere.Load()
	if after == before {
		return false
	}
	s.stats.flushes.Add(1)
	s.stats.flush.observeFsync(time.Since(start)) // stats_flush.go
	return true
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
	var expired []flushWaiter
	run.Every(s.routines.Context(), period, func(context.Context) {
		now := time.Now().UnixNano()
		expired = s.group.take(expired[:0], func(w *flushWaiter) bool { return now > w.deadline })
		for i := range expired {
			expired[i].res.Status = FlushDiskTimeout
			s.stats.flushTimeouts.Add(1)
			s.replicate(expired[i].res, true, expired[i].done)
			expired[i] = flushWaiter{}
		}
	})
}

// runStagedCommit writes the staged appends of ASYNC_FLUSH (without the
// transient pool) to the file and completes their puts. Every put wakes it;
// it writes everything staged so far with one pwrite, wakes dispatch, and
// completes every put whose bytes are now in the file. Puts that arrive
// meanwhile join the next write, so under load one pwrite serves many puts
// (the write a put would otherwise pay alone, or the page faults of the
// mapping). A failed write is sticky: the puts it covered and every later
// one fail. At quit it writes what is left and completes every waiter.
func (s *Store) runStagedCommit() {
	var ready []flushWaiter
	for {
		final := false
		select {
		case <-s.quit:
			final = true
		case <-s.wakeCommit:
		}
		end, err := s.commitStagedOnce()
		wake(s.wakeDispatch)
		ready = s.releaseStaged(ready[:0], end, final || err != nil)
		clear(ready)
		if final {
			return
		}
	}
}

// commitStagedOnce writes the staged bytes of the last commit-log file and
// returns the commit-log offset up to which appends are in the file. An
// earlier file is complete: its BLANK record wrote out everything staged.
func (s *Store) commitStagedOnce() (int64, error) {
	f := s.commitLog.last()
	if f == nil {
		return 0, nil
	}
	if f.wrote.Load() > f.committed.Load() && f.hold() {
		err := f.commitStaged()
		f.release()
		if err != nil {
			s.setFlushFailed(err)
			return f.fromOffset + f.committed.Load(), err
		}
	}
	return f.fromOffset + f.committed.Load(), nil
}

// releaseStaged completes the staged puts that end at or before end; with
// failed, the rest too, with UNKNOWN_ERROR (their bytes never reached the
// file, and readers never see them: they read up to the committed end).
func (s *Store) releaseStaged(buf []flushWaiter, end int64, failed bool) []flushWaiter {
	buf = s.staged.take(buf, func(w *flushWaiter) bool { return failed || w.next <= end })
	for i := range buf {
		w := &buf[i]
		if w.next > end {
			s.stats.putFailures.Add(1)
			w.res = PutResult{Status: UnknownError, Remark: "commit-log write failed"}
		}
		s.replicate(w.res, !w.noWait, w.done)
		w.done = nil
	}
	return buf
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
	lastThorough := time.Now()
	run.Every(s.routines.Context(), s.cfg.FlushIntervalConsumeQueue, func(context.Context) {
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
	})
}

// syncfsMinQueues is how many queues with unflushed units make a full
// consume-queue flush one syncfs instead of one sync per file (with
// 100,000 queues, a sync each took minutes at shutdown).
const syncfsMinQueues = 64

func (s *Store) flushConsumeQueues(least int) {
	queues := s.allQueues()
	if least == 0 {
		var dirty []*consumeQueue
		var targets []int64
		for _, cq := range queues {
			if w := cq.files.writtenOffset(); w > cq.files.flushedWhere.Load() {
				dirty = append(dirty, cq)
				targets = append(targets, w)
			}
		}
		if len(dirty) >= syncfsMinQueues && s.syncfsConsumeQueues() {
			for i, cq := range dirty {
				cq.files.markFlushed(targets[i])
			}
			return
		}
		queues = dirty
	}
	for _, cq := range queues {
		if !cq.files.mayFlush(least) {
			continue
		}
		if err := cq.flush(least); err != nil {
			s.log.Error("consume queue flush failed", "topic", cq.topic, "queueId", cq.queueID, "err", err)
		}
	}
}

// syncfsConsumeQueues syncs the file system holding the consume queues
// (one call for every dirty file). It reports false if that failed.
func (s *Store) syncfsConsumeQueues() bool {
	err := syncFS(filepath.Join(s.cfg.StorePathRootDir, consumeQueueDirName))
	if errors.Is(err, errUnsupported) {
		return false
	}
	if err != nil {
		s.log.Warn("syncfs of the consume queues failed; syncing them one by one", "err", err)
		return false
	}
	return true
}
