package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apogeemq/apogee/internal/run"
)

// stageRingSize is the staged-append ring (Config.stagedAppends): it only
// holds puts not yet written out by the flusher or the staged committer (a
// few batches), and a put that finds it full writes out the staged bytes
// itself.
const stageRingSize = 2 << 20

const (
	stateNew int32 = iota
	stateRunning
	stateClosing
	stateClosed
)

// Store is the file-based message store: commit log, consume queues, index
// files, flush/dispatch/cleanup services and recovery. See doc.go and
// DESIGN.md.
type Store struct {
	cfg         Config
	log         *slog.Logger
	delayLevels []time.Duration
	totalMemory int64

	state atomic.Int32
	// routines owns every store goroutine (services, background jobs);
	// quit is its Done channel, closed when Close stops the services.
	routines *run.Group
	quit     <-chan struct{}
	// inflight counts puts between their state check and the hand-off of
	// their completion; Close waits for it to drain.
	inflight atomic.Int64

	lockFile *os.File
	cp       *checkpoint

	commitLog *mappedFileQueue
	alloc     *allocator
	pool      *transientPool

	// putMu is the append lock: offset assignment and the copy only.
	putMu sync.Mutex
	// topicQueueTable maps topic-queue to the next queue offset to assign
	// (a pointer: the append path looks a queue up once and bumps it in
	// place); guarded by putMu.
	topicQueueTable map[tqKey]*int64
	// beginTimeInLock is the unix ms at which the current append took putMu;
	// 0 when no append holds it.
	beginTimeInLock atomic.Int64
	encodePool      sync.Pool
	// getBufs recycles GetMessage buffers a caller hands back
	// (GetResult.Release; get_buf.go).
	getBufs getBufPool

	queuesMu sync.RWMutex
	queues   map[string]topicQueues // guarded by queuesMu
	// queueList is every queue of queues as one slice (nil: rebuild it);
	// guarded by queuesMu. Additions append (readers hold a prefix, never
	// an element that changes); removals drop it. The per-second
	// consume-queue flush walks it: walking the nested maps of 100,000
	// topics cost ~60 ms a pass.
	queueList []*consumeQueue
	// queueDead counts the queues of queueList removed since it was built
	// (they stay in it, deleted and without files, until more than half
	// are: removing a topic must not copy the list); guarded by queuesMu.
	queueDead int
	// queueCount is the number of queues in queues; guarded by queuesMu.
	queueCount int
	// mapper bounds the consume-queue mappings (lazy_map.go).
	mapper *mapper
	// creator makes new queues' first files off dispatch (cq_create.go).
	creator *queueCreator
	// behind buffers the units of queues not mapped past the mapping
	// limit (cq_behind.go); nil when disabled.
	behind *writeBehind

	index *indexService

	group       groupCommit
	replicator  atomic.Pointer[Replicator]
	writeGate   atomic.Pointer[WriteGate]
	flushFailed atomic.Bool // sticky msync/fsync failure
	diskFull    atomic.Bool
	logicsError atomic.Bool
	// logicsErrReason is the last consume-queue write error (the remark of
	// refused puts while logicsError is set).
	logicsErrReason atomic.Pointer[string]

	// reputFrom is the dispatch frontier; only the dispatch goroutine moves
	// it after Start.
	reputFrom atomic.Int64
	// dispatchMu serialises dispatch passes (doReput): the dispatch
	// goroutine's, and those CommitStaged runs in place.
	dispatchMu sync.Mutex
	// confirmOffset is -1 unless set by SetConfirmOffset (HA).
	confirmOffset atomic.Int64

	listenersMu sync.Mutex
	listeners   atomic.Pointer[[]ArrivalListener]
	notifiers   atomic.Pointer[[]ArrivalNotifier]

	// stage is the staged-append ring (Config.stagedAppends,
	// mappedFile.stage); nil otherwise.
	stage []byte
	// staged holds the ASYNC_FLUSH puts whose staged bytes are not yet
	// written to the file; runStagedCommit completes them.
	staged groupCommit

	wakeDispatch chan struct{}
	wakeFlush    chan struct{}
	wakeCommit   chan struct{}
	wakePrefault chan struct{}
	prefault     prefaulter

	recovery RecoveryReport
	stats    statCounters
	// createBudget is closeCreateBudget (tests shorten it).
	createBudget time.Duration
	// snapshotEnd is the commit-log end recorded by the consume-queue
	// snapshot the queues were restored from (cq_snapshot.go), -1 when they
	// were loaded from their directories. Set by open, read by recover.
	snapshotEnd int64

	cleanMu sync.Mutex // serialises cleanup runs

	forcedMu sync.Mutex                // guards forced
	forced   map[string]ForcedDeletion // early deletions per topic (cleanup.go)
	cleaner  cleaner                   // guarded by cleanMu
}

// ArrivalListener is told about every message dispatched to a consume queue
// (long polling hangs on this). It runs on the dispatch goroutine and must
// not block; props must not be modified.
type ArrivalListener func(topic string, queueID int32, queueOffset int64, tagsCode int64, storeTimestamp int64, props map[string]string)

// ArrivalNotifier is an ArrivalListener without the properties: dispatch
// decodes a message's properties into a map only for listeners, so
// notifiers cost no allocation per message. Same rules: it runs on the
// dispatch goroutine and must not block.
type ArrivalNotifier func(topic string, queueID int32, queueOffset int64, tagsCode int64, storeTimestamp int64)

// New validates cfg and prepares a store; it touches no file and starts
// nothing. logger may be nil.
func New(cfg Config, logger *slog.Logger) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	levels, _ := ParseDelayLevels(cfg.MessageDelayLevel)
	s := &Store{
		cfg:             cfg,
		log:             logger.With("component", "store"),
		delayLevels:     levels,
		routines:        run.NewGroup("store"),
		topicQueueTable: make(map[tqKey]*int64),
		queues:          make(map[string]topicQueues),
		wakeDispatch:    make(chan struct{}, 1),
		wakeFlush:       make(chan struct{}, 1),
		wakeCommit:      make(chan struct{}, 1),
		wakePrefault:    make(chan struct{}, 1),
	}
	s.quit = s.routines.Done()
	s.prefault.ahead = cfg.PrefaultAheadBytes
	limit := cfg.MaxMappedConsumeQueueFiles
	if limit <= 0 {
		limit = defaultMappedLimit()
	}
	s.mapper = newMapper(limit)
	s.creator = newQueueCreator(s.log, func(ts int64) { s.cp.logicsHold.Store(ts) }, s.mapper, s.creatorError)
	if cfg.ConsumeQueueWriteBehindBytes > 0 {
		s.behind = newWriteBehind(s.log, cfg.ConsumeQueueWriteBehindBytes, cfg.ConsumeQueueWriteBehindMaxAge,
			func(ts int64) { s.cp.behindHold.Store(ts) }, s.behindError)
	}
	s.confirmOffset.Store(-1)
	s.snapshotEnd = -1
	s.createBudget = closeCreateBudget
	s.encodePool.New = func() any { b := make([]byte, 0, 4096); return &b }
	if s.totalMemory = totalMemory(); s.totalMemory <= 0 {
		s.totalMemory = 8 << 30
	}
	return s, nil
}

// Config returns the effective configuration.
func (s *Store) Config() Config { return s.cfg }

// Recovery returns what the last Start's recovery kept and dropped.
func (s *Store) Recovery() RecoveryReport { return s.recovery }

// Start locks the store directory, loads and recovers the files, and starts
// the flush, dispatch and cleanup services. It fails if another process
// holds the store.
func (s *Store) Start() error {
	if !s.state.CompareAndSwap(stateNew, stateRunning) {
		return fmt.Errorf("store: start: %w", ErrClosed)
	}
	// Recovery keeps the units of queues without a file in memory too
	// (the creator makes the files once it runs): an abnormal recovery
	// with 10^5 such queues would otherwise make their files inline,
	// ~1 ms each, before the store opens.
	s.creator.running.Store(true)
	if err := s.open(); err != nil {
		s.state.Store(stateClosed)
		s.routines.Close() // jobs recovery started (index flush) end before the unmap
		s.releaseResources()
		return err
	}
	if last := s.commitLog.last(); last != nil && s.cfg.WarmMapedFileEnable {
		from := last.wrote.Load()
		s.goFunc("store-warm", func() { last.warmFrom(from, s.quit) })
	}
	// The disk-full flag is known before the first put, not only after the
	// first cleanup pass (cleanupInitialDelay after start).
	s.checkDiskSpace()
	s.goFunc("store-dispatch", s.runDispatch)
	s.creator.running.Store(true) // before any put can be dispatched
	s.goFunc("store-cq-create", func() { s.creator.run(s.quit) })
	if s.behind != nil {
		s.behind.running.Store(true)
		s.goFunc("store-cq-behind", func() { s.behind.run(s.quit) })
	}
	if s.prefault.ahead > 0 && !s.cfg.WarmMapedFileEnable && s.stage == nil {
		s.goFunc("store-prefault", s.runPrefault)
	}
	if s.cfg.syncFlush() {
		s.goFunc("store-group-commit", s.runGroupCommit)
		s.goFunc("store-flush-watchdog", s.runFlushWatchdog)
	} else {
		s.goFunc("store-async-flush", s.runAsyncFlush)
	}
	if s.pool != nil {
		s.goFunc("store-commit", s.runCommit)
	} else if s.stage != nil && !s.cfg.syncFlush() {
		s.goFunc("store-stage-commit", s.runStagedCommit)
	}
	s.goFunc("store-logics-flush", s.runLogicsFlush)
	s.goFunc("store-cleanup", s.runCleanup)
	s.log.Info("store started", "root", s.cfg.StorePathRootDir, "flushDiskType", s.cfg.FlushDiskType,
		"minOffset", s.commitLog.minOffset(), "maxOffset", s.commitLog.maxOffset(),
		"abnormalRecovery", s.recovery.Abnormal)
	return nil
}

func (s *Store) open() error {
	root := s.cfg.StorePathRootDir
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("store: create %s: %w", root, err)
	}
	lf, err := os.OpenFile(filepath.Join(root, lockFileName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("store: open lock file: %w", err)
	}
	if err := lockFile(lf); err != nil {
		lf.Close()
		return fmt.Errorf("store: lock %s: %w", root, ErrLocked)
	}
	s.lockFile = lf
	_, _ = lf.WriteAt([]byte("lock"), 0)

	abortPath := filepath.Join(root, abortFileName)
	abort, statErr := os.ReadFile(abortPath)
	lastExitOK := errors.Is(statErr, os.ErrNotExist)
	// A clean stop that left units pending in the consume-queue snapshot
	// keeps the abort file with this mark (cq_snapshot.go): clean if the
	// snapshot is usable, abnormal recovery otherwise.
	marked := statErr == nil && string(abort) == abortSnapshotMark

	if s.cfg.poolActive() {
		s.pool = newTransientPool(s.cfg.TransientStorePoolSize, s.cfg.MappedFileSizeCommitLog)
	}
	s.alloc = &allocator{store: s, dir: s.cfg.commitLogDir(), size: s.cfg.MappedFileSizeCommitLog}
	s.commitLog = newMappedFileQueue(s.cfg.commitLogDir(), s.cfg.MappedFileSizeCommitLog, s.alloc.get)
	if err := s.commitLog.load(); err != nil {
		return err
	}
	if s.cfg.stagedAppends() {
		s.stage = make([]byte, stageRingSize)
		s.prefault.ahead = 0 // nothing writes through the mapping
	}
	for _, f := range s.commitLog.snapshot() {
		f.writeThrough = s.stage != nil
		f.stage = s.stage
	}
	if s.cp, err = openCheckpoint(filepath.Join(root, checkpointFileName)); err != nil {
		return err
	}
	if s.loadFromSnapshot(lastExitOK, marked) {
		lastExitOK = true
	} else if err := s.loadConsumeQueues(); err != nil {
		return err
	}
	if s.cfg.MessageIndexEnable {
		s.index = &indexService{dir: filepath.Join(root, indexDirName), slotNum: s.cfg.MaxHashSlotNum,
			indexNum: s.cfg.MaxIndexNum, cp: s.cp, log: s.log, now: s.cfg.now, spawn: s.spawn, gapFrom: -1}
		dropped, err := s.index.load(lastExitOK)
		if err != nil {
			return err
		}
		s.recovery.IndexFilesDropped = dropped
		if dropped > 0 {
			// Re-index from the newest entry kept (or the log's start).
			s.index.gapFrom = max(s.commitLog.minOffset(), 0)
			if last, ok := s.index.lastIndexed(); ok {
				s.index.gapFrom = max(last, s.index.gapFrom)
			}
		}
	}
	if err := s.recover(lastExitOK); err != nil {
		return err
	}
	// The files appended from now on get one-page folios (adviseAppend):
	// the commit log under SYNC_FLUSH (ASYNC_FLUSH puts measured ~35%
	// slower with one-page folios, and its flushes are rare enough that
	// rewriting a large folio costs little); consume-queue files get
	// MADV_RANDOM whenever they are mapped while not full (lazy_map.go).
	if f := s.commitLog.last(); f != nil && !f.isFull() && s.cfg.syncFlush() {
		f.adviseAppend(f.wrote.Load())
	}
	if err := os.WriteFile(abortPath, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return fmt.Errorf("store: create abort file: %w", err)
	}
	if d, err := os.Open(root); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// Close stops every service, flushes everything, writes the checkpoint,
// unmaps the files and removes the abort file (a clean exit). It is
// idempotent and returns after every goroutine has exited.
func (s *Store) Close() error {
	for {
		st := s.state.Load()
		if st == stateClosing || st == stateClosed {
			s.routines.Wait()
			return nil
		}
		if st == stateNew {
			if s.state.CompareAndSwap(stateNew, stateClosed) {
				s.routines.Stop()
				return nil
			}
			continue
		}
		if s.state.CompareAndSwap(stateRunning, stateClosing) {
			break
		}
	}
	// New puts now fail; wait for those already past the state check.
	t0 := time.Now()
	pending := s.creator.pendingQueues()
	for deadline := time.Now().Add(10 * time.Second); s.inflight.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	// Let dispatch catch up (up to 5 s) before stopping it.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && s.dispatchBehind() > 0 && !s.flushFailed.Load() {
		if s.cfg.syncFlush() {
			wake(s.wakeFlush)
		}
		wake(s.wakeDispatch)
		time.Sleep(time.Millisecond)
	}
	tDispatch := time.Now()
	s.routines.Close()
	tRoutines := time.Now()
	// After dispatch stopped: pending units to their files, for a few
	// seconds at most; the units of the queues left go into the snapshot.
	s.creator.drainFor(s.createBudget)
	s.behind.drainFor(s.createBudget)
	tServices := time.Now()
	jobTimes := s.creator.jobTimes()
	left := s.creator.pendingQueues() + s.behind.jobTimes(jobTimes)
	wbStats := s.behind.stats()
	clean := s.dispatchBehind() == 0 && !s.flushFailed.Load()
	if !s.flushFailed.Load() {
		for i := 0; i < 10; i++ {
			if unchanged, err := s.commitLog.flush(0); err != nil || unchanged {
				break
			}
		}
	}
	tLog := time.Now()
	s.flushConsumeQueues(0)
	tQueues := time.Now()
	var err error
	if s.cp != nil {
		s.cp.confirmPhyOffset.Store(s.ConfirmOffset())
		err = s.cp.close()
	}
	if s.index != nil {
		s.index.close()
	}
	snapshot := false
	if clean && err == nil && s.commitLog != nil && s.cp != nil {
		// The next start restores the queues from this snapshot instead
		// of loading every queue directory (cq_snapshot.go).
		t0 := time.Now()
		queues := s.allQueues()
		if serr := writeCQSnapshot(s.cfg.StorePathRootDir, s.cfg.MappedFileSizeConsumeQueue,
			s.reputFrom.Load(), s.cp.lastImage(), queues, jobTimes); serr != nil {
			s.log.Warn("consume-queue snapshot not written; the next start loads every queue directory", "err", serr)
		} else {
			snapshot = true
			s.log.Info("consume-queue snapshot written", "queues", len(queues), "queuesWithoutFile", left, "took", time.Since(t0))
		}
	}
	abortPath := filepath.Join(s.cfg.StorePathRootDir, abortFileName)
	switch {
	case clean && err == nil && left == 0:
		os.Remove(abortPath)
	case clean && err == nil && snapshot:
		// Units pending in the snapshot only: without it the next start
		// must re-dispatch them (abnormal recovery), so the abort file
		// stays, marked.
		if merr := writeFileSync(abortPath, []byte(abortSnapshotMark)); merr != nil {
			s.log.Warn("abort file not marked; the next start recovers as after a crash", "err", merr)
		}
	default:
		clean = false
	}
	tSnap := time.Now()
	s.releaseResources()
	s.state.Store(stateClosed)
	s.log.Info("store stopped", "clean", clean && err == nil, "queuesLeftPending", left, "took", time.Since(t0),
		"dispatch", tDispatch.Sub(t0), "services", tRoutines.Sub(tDispatch),
		"queueFiles", tServices.Sub(tRoutines), "queuesWithoutFile", pending, "commitLogFlush", tLog.Sub(tServices),
		"consumeQueueFlush", tQueues.Sub(tLog), "snapshot", tSnap.Sub(tQueues), "unmap", time.Since(tSnap),
		"writeBehindPeakBytes", wbStats.Peak, "writeBehindWrites", wbStats.Writes, "writeBehindUnits", wbStats.Written)
	return err
}

// closeCreateBudget bounds how long Close makes the first files of queues
// still waiting for theirs (the rest stay pending in the snapshot).
const closeCreateBudget = 3 * time.Second

// writeFileSync replaces path's content and fsyncs it.
func writeFileSync(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err = f.Write(b); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// releaseResources unmaps all files and releases the lock (also used when
// Start fails half-way).
func (s *Store) releaseResources() {
	if s.alloc != nil {
		s.alloc.close()
	}
	if s.commitLog != nil {
		s.commitLog.shutdownAll()
	}
	if s.pool != nil {
		s.pool.close()
	}
	for _, cq := range s.allQueues() {
		cq.files.shutdownAll()
	}
	if s.cp != nil {
		s.cp.close()
	}
	if s.index != nil {
		s.index.close()
	}
	if s.lockFile != nil {
		_ = unlockFile(s.lockFile)
		s.lockFile.Close()
		s.lockFile = nil
	}
}

// goFunc starts a service goroutine owned by the store (Start only: the
// group is open until Close).
func (s *Store) goFunc(name string, fn func()) {
	s.routines.Go(name, func(context.Context) { fn() })
}

// spawn runs a background job (index flush); Close waits for it. While the
// store is closing or not started the job runs inline.
func (s *Store) spawn(fn func()) {
	if s.state.Load() != stateRunning || !s.routines.Go("store-job", func(context.Context) { fn() }) {
		fn()
	}
}

// spawnOptional runs an optional background job (warm-up), skipped while
// the store is closing.
func (s *Store) spawnOptional(fn func()) {
	if s.state.Load() == stateRunning {
		s.routines.Go("store-job", func(context.Context) { fn() })
	}
}

// dispatchBehind is the number of bytes not yet dispatched.
func (s *Store) dispatchBehind() int64 {
	if s.commitLog == nil {
		return 0
	}
	return max(0, s.dispatchEnd()-s.reputFrom.Load())
}

// --- consume queue table ---

func (s *Store) loadConsumeQueues() error {
	dir := filepath.Join(s.cfg.StorePathRootDir, consumeQueueDirName)
	topics, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: list %s: %w", dir, err)
	}
	for _, t := range topics {
		if !t.IsDir() {
			continue
		}
		qs, err := os.ReadDir(filepath.Join(dir, t.Name()))
		if err != nil {
			return fmt.Errorf("store: list queues of %s: %w", t.Name(), err)
		}
		for _, q := range qs {
			id, err := strconv.ParseInt(q.Name(), 10, 32)
			if err != nil || !q.IsDir() {
				continue
			}
			cq := newConsumeQueue(s.cfg.StorePathRootDir, t.Name(), int32(id), s.cfg.MappedFileSizeConsumeQueue, s.log, s.mapper)
			cq.bg = s.creator
			cq.wb = s.behind
			if err := cq.files.load(); err != nil {
				return err
			}
			s.putQueue(cq)
		}
	}
	return nil
}

func (s *Store) putQueue(cq *consumeQueue) {
	s.queuesMu.Lock()
	defer s.queuesMu.Unlock()
	tq := s.queues[cq.topic]
	if old := tq.get(cq.queueID); old != nil {
		s.queueList = nil
	} else {
		s.queueCount++
		if s.queueList != nil {
			s.queueList = append(s.queueList, cq)
		}
	}
	s.queues[cq.topic] = tq.set(cq)
}

// getQueue returns an existing consume queue or nil.
func (s *Store) getQueue(topic string, queueID int32) *consumeQueue {
	s.queuesMu.RLock()
	defer s.queuesMu.RUnlock()
	tq := s.queues[topic]
	return tq.get(queueID)
}

// findOrCreateQueueBytes is findOrCreateQueue for a topic held in bytes;
// it allocates only when the queue is new.
func (s *Store) findOrCreateQueueBytes(topic []byte, queueID int32) *consumeQueue {
	s.queuesMu.RLock()
	tq := s.queues[string(topic)]
	cq := tq.get(queueID)
	s.queuesMu.RUnlock()
	if cq != nil {
		return cq
	}
	return s.findOrCreateQueue(string(topic), queueID)
}

// findOrCreateQueue returns the consume queue, creating it (no files yet).
func (s *Store) findOrCreateQueue(topic string, queueID int32) *consumeQueue {
	if cq := s.getQueue(topic, queueID); cq != nil {
		return cq
	}
	s.queuesMu.Lock()
	defer s.queuesMu.Unlock()
	tq := s.queues[topic]
	if cq := tq.get(queueID); cq != nil {
		return cq
	}
	cq := newConsumeQueue(s.cfg.StorePathRootDir, topic, queueID, s.cfg.MappedFileSizeConsumeQueue, s.log, s.mapper)
	cq.bg = s.creator
	cq.wb = s.behind
	s.queues[topic] = tq.set(cq)
	s.queueCount++
	if s.queueList != nil {
		s.queueList = append(s.queueList, cq)
	}
	return cq
}

// removeQueueLocked drops cq from the table (its topic's entry when it was
// the last). queueList keeps it until more than half of the list is
// removed queues: callers of allQueues see removed queues (deleted, no
// files) and skip them or find nothing to do. REQUIRES: queuesMu held.
func (s *Store) removeQueueLocked(cq *consumeQueue) bool {
	tq, ok := s.queues[cq.topic]
	if !ok || tq.get(cq.queueID) != cq {
		return false
	}
	if tq = tq.del(cq.queueID); tq.empty() {
		delete(s.queues, cq.topic)
	} else {
		s.queues[cq.topic] = tq
	}
	s.queueCount--
	if s.queueList != nil {
		if s.queueDead++; s.queueDead > len(s.queueList)/2 {
			s.queueList, s.queueDead = nil, 0
		}
	}
	return true
}

// allQueues returns every consume queue, and possibly queues removed
// since the list was built (deleted, without files). The slice is shared:
// callers must not modify it.
func (s *Store) allQueues() []*consumeQueue {
	s.queuesMu.RLock()
	out := s.queueList
	s.queuesMu.RUnlock()
	if out != nil {
		return out
	}
	s.queuesMu.Lock()
	defer s.queuesMu.Unlock()
	if s.queueList == nil {
		out := make([]*consumeQueue, 0, s.queueCount)
		for _, tq := range s.queues {
			tq.each(func(cq *consumeQueue) { out = append(out, cq) })
		}
		s.queueList, s.queueDead = out, 0
	}
	return s.queueList
}

// topicQueues is the consume queues of one topic, in the queue table by
// value: by queue id below denseQueueIDs (a topic has a few queues, a lite
// topic one), in a map above it. A map per topic cost ~200 bytes per
// single-queue topic.
type topicQueues struct {
	dense  []*consumeQueue // index = queue id; nil where absent
	sparse map[int32]*consumeQueue
}

const denseQueueIDs = 1024

func (t topicQueues) get(id int32) *consumeQueue {
	if id >= 0 && int(id) < len(t.dense) {
		return t.dense[id]
	}
	return t.sparse[id]
}

// set returns t with cq as the queue of its id.
func (t topicQueues) set(cq *consumeQueue) topicQueues {
	id := cq.queueID
	if id < 0 || id >= denseQueueIDs {
		if t.sparse == nil {
			t.sparse = make(map[int32]*consumeQueue)
		}
		t.sparse[id] = cq
		return t
	}
	if int(id) >= len(t.dense) {
		// Copy: readers of the old value (under queuesMu shared) keep
		// theirs unchanged.
		grown := make([]*consumeQueue, id+1)
		copy(grown, t.dense)
		t.dense = grown
	}
	t.dense[id] = cq
	return t
}

// del returns t without the queue of id.
func (t topicQueues) del(id int32) topicQueues {
	if id >= 0 && int(id) < len(t.dense) {
		t.dense[id] = nil
	} else {
		delete(t.sparse, id)
	}
	return t
}

func (t topicQueues) empty() bool {
	for _, cq := range t.dense {
		if cq != nil {
			return false
		}
	}
	return len(t.sparse) == 0
}

func (t topicQueues) each(fn func(*consumeQueue)) {
	for _, cq := range t.dense {
		if cq != nil {
			fn(cq)
		}
	}
	for _, cq := range t.sparse {
		fn(cq)
	}
}

// AddArrivalListener registers a listener for dispatched messages.
func (s *Store) AddArrivalListener(l func(topic string, queueID int32, queueOffset int64, tagsCode int64, storeTimestamp int64, props map[string]string)) {
	s.listenersMu.Lock()
	defer s.listenersMu.Unlock()
	var cur []ArrivalListener
	if p := s.listeners.Load(); p != nil {
		cur = *p
	}
	next := append(append([]ArrivalListener(nil), cur...), l)
	s.listeners.Store(&next)
}

// AddArrivalNotifier registers a notifier for dispatched messages: an
// arrival listener that does not need the properties (see ArrivalNotifier).
func (s *Store) AddArrivalNotifier(n ArrivalNotifier) {
	s.listenersMu.Lock()
	defer s.listenersMu.Unlock()
	var cur []ArrivalNotifier
	if p := s.notifiers.Load(); p != nil {
		cur = *p
	}
	next := append(append([]ArrivalNotifier(nil), cur...), n)
	s.notifiers.Store(&next)
}

// DeleteTopics removes the consume queues of the topics (their commit-log
// records expire with the files) and forgets their queue offsets.
func (s *Store) DeleteTopics(topics []string) error {
	for _, t := range topics {
		var qs []*consumeQueue
		s.queuesMu.Lock()
		if tq, ok := s.queues[t]; ok {
			tq.each(func(cq *consumeQueue) { qs = append(qs, cq) })
			for _, cq := range qs {
				s.removeQueueLocked(cq)
			}
		}
		s.queuesMu.Unlock()
		// The creator makes no file of these queues while they are marked
		// deleted and their directory removed (it would make it again).
		s.creator.createMu.Lock()
		for _, cq := range qs {
			cq.writeMu.Lock()
			cq.deleted.Store(true)
			cq.forgetBehind()
			cq.files.destroyAll()
			cq.writeMu.Unlock()
		}
		os.RemoveAll(filepath.Join(s.cfg.StorePathRootDir, consumeQueueDirName, t))
		s.creator.createMu.Unlock()
		// The offsets of the topic's queues (RocketMQ removes those of
		// its consume queues too): no scan of the table per topic.
		s.putMu.Lock()
		for _, cq := range qs {
			delete(s.topicQueueTable, tqKey{t, cq.queueID})
		}
		s.putMu.Unlock()
	}
	return nil
}
