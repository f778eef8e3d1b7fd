package store

import (
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// cleaner is the state of CleanCommitLogService / CleanConsumeQueueService
// (section 7); owned by the cleanup goroutine.
type cleaner struct {
	lastMinPhy     int64
	manualRuns     int
	cleanImmediate bool
}

// runCleanup runs the cleanup services every cleanResourceInterval after
// the initial delay.
func (s *Store) runCleanup() {
	t := time.NewTimer(s.cfg.CleanupInitialDelay)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
		}
		s.CleanupOnce()
		t.Reset(s.cfg.CleanResourceInterval)
	}
}

// DeleteExpiredFilesManually arms 20 deletion runs regardless of the hour
// (the admin "delete expired commit log" request).
func (s *Store) DeleteExpiredFilesManually() {
	s.putMuCleaner(func(c *cleaner) { c.manualRuns = 20 })
}

func (s *Store) putMuCleaner(fn func(*cleaner)) {
	s.cleanMu.Lock()
	defer s.cleanMu.Unlock()
	fn(&s.cleaner)
}

// CleanupOnce runs one commit-log cleanup pass followed by the consume-queue
// and index cleanup (7.1-7.4). Exported for tests and admin commands; it is
// also what the cleanup goroutine runs.
func (s *Store) CleanupOnce() {
	s.cleanMu.Lock()
	defer s.cleanMu.Unlock()
	if s.state.Load() != stateRunning {
		return
	}
	s.cleanCommitLog()
	s.cleanLogics()
}

func (s *Store) diskUsage(path string) float64 {
	if s.cfg.DiskUsage != nil {
		u, err := s.cfg.DiskUsage(path)
		if err != nil {
			return -1
		}
		return u
	}
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return -1
	}
	total := float64(st.Blocks) * float64(st.Bsize)
	free := float64(st.Bavail) * float64(st.Bsize)
	used := total - float64(st.Bfree)*float64(st.Bsize)
	if used+free <= 0 {
		return -1
	}
	return used / (used + free)
}

func clampRatio(v, lo, hi int) float64 {
	return float64(min(max(v, lo), hi)) / 100
}

// cleanCommitLog is CleanCommitLogService (7.1, 7.2).
// REQUIRES: s.cleanMu held.
func (s *Store) cleanCommitLog() {
	c := &s.cleaner
	now := s.cfg.now()
	usage := s.diskUsage(s.cfg.commitLogDir())
	warn := clampRatio(s.cfg.DiskSpaceWarningLevelRatio, 35, 90)
	force := clampRatio(s.cfg.DiskSpaceCleanForciblyRatio, 30, 85)
	maxUsed := clampRatio(s.cfg.DiskMaxUsedSpaceRatio, 10, 95)
	c.cleanImmediate = false
	switch {
	case usage > warn:
		if s.diskFull.CompareAndSwap(false, true) {
			s.log.Error("disk full: the store refuses writes", "usage", usage)
		}
		c.cleanImmediate = true
	case usage > force:
		c.cleanImmediate = true
		fallthrough
	default:
		if usage >= 0 && usage <= warn && s.diskFull.CompareAndSwap(true, false) {
			s.log.Info("disk space ok again: writes accepted", "usage", usage)
		}
	}
	hours, _ := parseDeleteWhen(s.cfg.DeleteWhen)
	timeUp := slices.Contains(hours, now.Hour())
	spaceFull := usage > maxUsed
	manual := c.manualRuns > 0
	if manual {
		c.manualRuns--
	}
	if !timeUp && !spaceFull && !manual && !c.cleanImmediate {
		return
	}
	forcibly := c.cleanImmediate && s.cfg.CleanFileForciblyEnable
	reserved := time.Duration(s.cfg.FileReservedTime) * time.Hour
	files := s.commitLog.snapshot()
	deleted := 0
	for i := 0; i < len(files)-1 && deleted < s.cfg.DeleteFileBatchMax; i++ {
		f := files[i]
		expired := now.UnixMilli() >= f.lastModifiedMillis()+reserved.Milliseconds()
		if !expired && !forcibly {
			break
		}
		if !s.destroyPatiently(f, now) {
			break
		}
		deleted++
		s.log.Info("commit-log file deleted", "file", f.path, "expired", expired, "forcibly", forcibly)
		if s.cfg.DeleteCommitLogFilesInterval > 0 && i < len(files)-2 && deleted < s.cfg.DeleteFileBatchMax {
			select {
			case <-s.quit:
				i = len(files)
			case <-time.After(s.cfg.DeleteCommitLogFilesInterval):
			}
		}
	}
	if deleted > 0 {
		s.commitLog.removeFirst(deleted)
		s.stats.filesDeleted.Add(int64(deleted))
	}
	// Retry files shut down earlier but still referenced.
	if first := s.commitLog.first(); first != nil && !first.available.Load() {
		if first.destroy(now, s.cfg.RedeleteHangedFileInterval) {
			s.commitLog.removeFirst(1)
		}
	}
}

// cleanLogics is CleanConsumeQueueService (7.3) plus min-offset correction
// (7.4). REQUIRES: s.cleanMu held.
func (s *Store) cleanLogics() {
	minPhy := s.commitLog.minOffset()
	if minPhy <= s.cleaner.lastMinPhy {
		return
	}
	s.cleaner.lastMinPhy = minPhy
	now := s.cfg.now()
	for _, cq := range s.allQueues() {
		cq.writeMu.Lock()
		n := cq.deleteExpired(minPhy, now, s.cfg.DestroyMapedFileIntervalForcibly)
		cq.correctMinOffset(minPhy)
		cq.writeMu.Unlock()
		if n > 0 && s.cfg.DeleteConsumeQueueFilesInterval > 0 {
			select {
			case <-s.quit:
				return
			case <-time.After(s.cfg.DeleteConsumeQueueFilesInterval):
			}
		}
	}
	if s.index != nil {
		s.index.deleteExpired(minPhy, s.cfg.DestroyMapedFileIntervalForcibly)
	}
}

// destroyPatiently destroys f, giving short-lived holders (a flush in
// msync, a reader copying) up to ~100 ms to let go; longer holders are
// handled by the hanged-file retry with destroyMapedFileIntervalForcibly.
func (s *Store) destroyPatiently(f *mappedFile, now time.Time) bool {
	for i := 0; i < 20; i++ {
		if f.destroy(now, s.cfg.DestroyMapedFileIntervalForcibly) {
			return true
		}
		select {
		case <-s.quit:
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
	return false
}
