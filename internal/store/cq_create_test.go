package store

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestQueueCreatedOffDispatch: while a new queue's first file is not made
// yet, its units are served from memory, the persisted checkpoint stays
// below the oldest of them, a topic deleted meanwhile leaves no file, and
// once the file is made (and after a restart) every message is reachable.
func TestQueueCreatedOffDispatch(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	s := openStore(t, cfg)
	release := make(chan struct{})
	s.creator.beforeCreate = func() { <-release }

	var first PutResult
	for i := 0; i < 3; i++ {
		r := mustPut(t, s, newMsg("NewQ", 0, "body", nil))
		if i == 0 {
			first = r
		}
	}
	mustPut(t, s, newMsg("DelQ", 0, "gone", nil))
	waitDispatched(t, s, "NewQ", 0, 3)
	waitDispatched(t, s, "DelQ", 0, 1)
	if _, err := os.Stat(filepath.Join(dir, consumeQueueDirName, "NewQ")); !os.IsNotExist(err) {
		t.Fatalf("queue directory made on the dispatch path (stat: %v)", err)
	}
	res := s.GetMessage("g", "NewQ", 0, 0, 32, 1<<20, nil)
	if res.Status != Found || len(res.Messages) != 3 || res.NextBeginOffset != 3 {
		t.Fatalf("pending units: %v, %d messages, next %d", res.Status, len(res.Messages), res.NextBeginOffset)
	}
	if err := s.cp.persist(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, checkpointFileName))
	if err != nil {
		t.Fatal(err)
	}
	if ts := int64(binary.BigEndian.Uint64(b[cpLogicsMsgTimestamp:])); ts >= first.StoreTimestamp {
		t.Fatalf("checkpoint logics time %d not below the oldest pending unit's %d", ts, first.StoreTimestamp)
	}
	if err := s.DeleteTopics([]string{"DelQ"}); err != nil {
		t.Fatal(err)
	}
	close(release)
	testutil.Eventually(t, 10*time.Second, func() bool { return s.creator.pendingQueues() == 0 }, "creator never drained")
	if _, err := os.Stat(filepath.Join(dir, consumeQueueDirName, "NewQ", "0", fileName(0))); err != nil {
		t.Fatalf("first file not made: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, consumeQueueDirName, "DelQ")); !os.IsNotExist(err) {
		t.Fatalf("deleted topic's queue made anyway (stat: %v)", err)
	}
	mustPut(t, s, newMsg("NewQ", 0, "after", nil))
	waitDispatched(t, s, "NewQ", 0, 4)
	if res := s.GetMessage("g", "NewQ", 0, 0, 32, 1<<20, nil); res.Status != Found || len(res.Messages) != 4 {
		t.Fatalf("after creation: %v, %d messages", res.Status, len(res.Messages))
	}
	s.Close()

	s2 := openStore(t, cfg)
	if res := s2.GetMessage("g", "NewQ", 0, 0, 32, 1<<20, nil); res.Status != Found || len(res.Messages) != 4 {
		t.Fatalf("after restart: %v, %d messages", res.Status, len(res.Messages))
	}
	if n := s2.MaxOffsetInQueue("DelQ", 0); n != 0 {
		t.Fatalf("deleted queue back after restart with %d units", n)
	}
}

// TestQueueCreationDrainedAtClose: units still pending when the store
// closes are written before the final flush (a clean stop loses none).
func TestQueueCreationDrainedAtClose(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	s := openStore(t, cfg)
	release := make(chan struct{})
	s.creator.beforeCreate = func() { <-release }
	const queues = 20
	for q := int32(0); q < queues; q++ {
		mustPut(t, s, newMsg("Drain", q, "x", nil))
	}
	for q := int32(0); q < queues; q++ {
		waitDispatched(t, s, "Drain", q, 1)
	}
	go func() { time.Sleep(50 * time.Millisecond); close(release) }()
	s.Close()
	s2 := openStore(t, cfg)
	if s2.Recovery().Abnormal {
		t.Fatal("clean close reported abnormal")
	}
	for q := int32(0); q < queues; q++ {
		if res := s2.GetMessage("g", "Drain", q, 0, 32, 1<<20, nil); res.Status != Found || len(res.Messages) != 1 {
			t.Fatalf("queue %d after close: %v", q, res.Status)
		}
	}
}

// TestForcedCleaningOfQueueWithoutFile: forced cleaning deletes commit-log
// files while a queue's units still wait in memory for its first file; the
// queue's first readable offset moves past the deleted messages (a read
// there is OFFSET_TOO_SMALL) and stays there once the file is made.
func TestForcedCleaningOfQueueWithoutFile(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.DiskUsage = func(string) (float64, error) { return 0.88, nil }
	cfg.CleanFileForciblyEnable = true
	cfg.DeleteCommitLogFilesInterval = 0
	cfg.DeleteConsumeQueueFilesInterval = 0
	s := openStore(t, cfg)
	release := make(chan struct{})
	var once sync.Once
	s.creator.beforeCreate = func() { <-release }
	defer once.Do(func() { close(release) })
	for i := range 300 {
		mustPut(t, s, newMsg("Pend", 0, fmt.Sprintf("%0900d", i), nil))
	}
	waitDispatched(t, s, "Pend", 0, 300)
	s.CleanupOnce()
	s.CleanupOnce()
	minPhy := s.commitLog.minOffset()
	if minPhy == 0 {
		t.Fatal("forced cleaning deleted no commit-log file")
	}
	check := func(when string) {
		t.Helper()
		m := s.MinOffsetInQueue("Pend", 0)
		if m == 0 || m >= 300 {
			t.Fatalf("%s: min offset %d, want inside (0, 300)", when, m)
		}
		if r := s.GetMessage("g", "Pend", 0, 0, 1, 1<<20, nil); r.Status != OffsetTooSmall {
			t.Fatalf("%s: read at 0: %v", when, r.Status)
		}
		r := s.GetMessage("g", "Pend", 0, m, 1, 1<<20, nil)
		if r.Status != Found || len(r.Messages) != 1 {
			t.Fatalf("%s: read at the min offset %d: %v", when, m, r.Status)
		}
		if v, _, err := message.ViewStored(r.Messages[0]); err != nil || v.CommitLogOffset() < minPhy {
			t.Fatalf("%s: first readable message at %d, below the commit log's start %d (%v)", when, v.CommitLogOffset(), minPhy, err)
		}
	}
	check("pending")
	once.Do(func() { close(release) })
	testutil.Eventually(t, 10*time.Second, func() bool { return s.creator.pendingQueues() == 0 }, "creator never drained")
	check("file made")
}
