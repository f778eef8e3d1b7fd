package store

import (
	"cmp"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apogeemq/apogee/internal/message"
)

// cleaner is the state of CleanCommitLogService / CleanConsumeQueueService
// (section 7); owned by the cleanup goroutine.
type cleaner struct {
	lastMinPhy     int64
	manualRuns     int
	cleanImmediate bool
}

// diskCheckInterval is how often the disk-full flag is refreshed between
// cleanup passes: one statfs a second, so writes are refused within about
// a second of the disk filling (not only at the next 10 s cleanup pass, or
// a minute after start).
const diskCheckInterval = time.Second

// runCleanup runs the cleanup services every cleanResourceInterval after
// the initial delay, and the disk-full check every diskCheckInterval.
func (s *Store) runCleanup() {
	t := time.NewTimer(s.cfg.CleanupInitialDelay)
	defer t.Stop()
	check := time.NewTicker(diskCheckInterval)
	defer check.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-check.C:
			s.checkDiskSpace()
		case <-t.C:
			s.CleanupOnce()
			t.Reset(s.cfg.CleanResourceInterval)
		}
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
	u, err := diskUsed(path)
	if err != nil {
		return -1
	}
	return u
}

func clampRatio(v, lo, hi int) float64 {
	return float64(min(max(v, lo), hi)) / 100
}

// checkDiskSpace updates the disk-full flag from the commit log's disk
// usage and reports the usage and whether cleanup should run at once.
//
// The flag has a hysteresis band, as RocketMQ's CleanCommitLogService: it
// is set above diskSpaceWarningLevelRatio (90 %) and cleared only at or
// below diskSpaceCleanForciblyRatio (85 %), so a broker at the edge does
// not flap between refusing and accepting writes. Between the two ratios
// the flag keeps its value and cleanup runs immediately. A usage that
// cannot be read (-1) changes nothing.
func (s *Store) checkDiskSpace() (usage float64, cleanImmediate bool) {
	usage = s.diskUsage(s.cfg.commitLogDir())
	warn := clampRatio(s.cfg.DiskSpaceWarningLevelRatio, 35, 90)
	force := clampRatio(s.cfg.DiskSpaceCleanForciblyRatio, 30, 85)
	switch {
	case usage > warn:
		if s.diskFull.CompareAndSwap(false, true) {
			s.log.Error("disk full: the store refuses writes", "usage", usage, "disk", s.DiskUtil())
		}
		return usage, true
	case usage > force:
		return usage, true
	case usage >= 0:
		if s.diskFull.CompareAndSwap(true, false) {
			s.log.Info("disk space ok again: writes accepted", "usage", usage)
		}
	}
	return usage, false
}

// DiskRatios returns the used fraction (0..1) of the file systems holding
// the commit log, the consume queues and the index, as RocketMQ's
// getDiskPartitionSpaceUsedPercent computes them (-1 when unreadable).
func (s *Store) DiskRatios() (commitLog, consumeQueue, index float64) {
	root := s.cfg.StorePathRootDir
	at := func(dir string) float64 {
		if u := s.diskUsage(dir); u >= 0 {
			return u
		}
		return s.diskUsage(root) // the directory is made on first use
	}
	return at(s.cfg.commitLogDir()), at(filepath.Join(root, consumeQueueDirName)), at(filepath.Join(root, indexDirName))
}

// DiskUtil formats DiskRatios as RocketMQ's send processor does in its
// "disk is full" remark: "CL:  0.96 CQ:  0.96 INDEX:  0.96".
func (s *Store) DiskUtil() string {
	cl, cq, idx := s.DiskRatios()
	return fmt.Sprintf("CL: %5.2f CQ: %5.2f INDEX: %5.2f", cl, cq, idx)
}

// cleanCommitLog is CleanCommitLogService (7.1, 7.2).
// REQUIRES: s.cleanMu held.
func (s *Store) cleanCommitLog() {
	c := &s.cleaner
	now := s.cfg.now()
	usage, immediate := s.checkDiskSpace()
	maxUsed := clampRatio(s.cfg.DiskMaxUsedSpaceRatio, 10, 95)
	c.cleanImmediate = immediate
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
	var early forcedPass // unexpired messages this pass deletes
	for i := 0; i < len(files)-1 && deleted < s.cfg.DeleteFileBatchMax; i++ {
		f := files[i]
		expired := now.UnixMilli() >= f.lastModifiedMillis()+reserved.Milliseconds()
		if !expired && !forcibly {
			break
		}
		var t fileTally
		if !expired {
			t = s.tallyFile(f) // before destroy: the mapping goes with it
		}
		if !s.destroyPatiently(f, now) {
			break
		}
		if !expired {
			early.add(f, t)
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
	if early.files > 0 {
		s.recordForced(&early, usage)
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

// ForcedDeletion counts messages deleted by forced cleaning before their
// retention time (fileReservedTime) for one topic.
type ForcedDeletion struct {
	Messages int64
	Bytes    int64
}

// fileTally is what one commit-log file holds, per topic.
type fileTally struct {
	messages, bytes int64
	topics          map[string]ForcedDeletion
}

// forcedPass accumulates one cleanup pass's early deletions.
type forcedPass struct {
	files           int
	messages, bytes int64
	from, to        int64 // commit-log offsets deleted: [from, to)
	topics          map[string]ForcedDeletion
}

func (p *forcedPass) add(f *mappedFile, t fileTally) {
	if p.files == 0 {
		p.from = f.fromOffset
		p.topics = make(map[string]ForcedDeletion)
	}
	p.files++
	p.to = f.fromOffset + f.size
	p.messages += t.messages
	p.bytes += t.bytes
	for k, v := range t.topics {
		c := p.topics[k]
		c.Messages += v.Messages
		c.Bytes += v.Bytes
		p.topics[k] = c
	}
}

// tallyFile counts the messages of f per topic (a sequential read of the
// mapped file, done only for files deleted before their time).
func (s *Store) tallyFile(f *mappedFile) fileTally {
	t := fileTally{topics: make(map[string]ForcedDeletion)}
	if !f.hold() {
		return t
	}
	defer f.release()
	for pos := int64(0); pos < f.size; {
		res, size, _ := s.checkRecord(f, pos)
		if res != recordValid {
			break
		}
		if v, _, err := message.ViewStored(f.data[pos : pos+size]); err == nil {
			c := t.topics[string(v.Topic())]
			c.Messages++
			c.Bytes += size
			t.topics[string(v.Topic())] = c
			t.messages++
			t.bytes += size
		}
		pos += size
	}
	return t
}

// recordForced adds a pass's early deletions to the per-topic totals and
// says so in one WARN line with the counts and the offset range.
func (s *Store) recordForced(p *forcedPass, usage float64) {
	s.stats.forcedMessages.Add(p.messages)
	s.stats.forcedBytes.Add(p.bytes)
	s.forcedMu.Lock()
	if s.forced == nil {
		s.forced = make(map[string]ForcedDeletion)
	}
	for k, v := range p.topics {
		c := s.forced[k]
		c.Messages += v.Messages
		c.Bytes += v.Bytes
		s.forced[k] = c
	}
	s.forcedMu.Unlock()
	names := make([]string, 0, len(p.topics))
	for k := range p.topics {
		names = append(names, k)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(p.topics[b].Messages, p.topics[a].Messages) })
	var top strings.Builder
	for i, k := range names {
		if i == 10 {
			fmt.Fprintf(&top, " +%d more", len(names)-i)
			break
		}
		if i > 0 {
			top.WriteByte(' ')
		}
		fmt.Fprintf(&top, "%s=%d", k, p.topics[k].Messages)
	}
	s.log.Warn("forced cleaning deleted messages before their retention time (cleanFileForciblyEnable, disk pressure)",
		"files", p.files, "messages", p.messages, "bytes", p.bytes, "fromOffset", p.from, "toOffset", p.to,
		"diskUsage", usage, "topics", top.String())
}

// ForcedDeletions returns, per topic, the messages and bytes forced
// cleaning deleted before their retention time since start.
func (s *Store) ForcedDeletions() map[string]ForcedDeletion {
	s.forcedMu.Lock()
	defer s.forcedMu.Unlock()
	return maps.Clone(s.forced)
}
