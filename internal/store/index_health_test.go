package store

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/message"
)

// keyedMsg is message i of topic IdxT with a KEYS and a UNIQ_KEY.
func keyedMsg(i int) *message.Ext {
	return newMsg("IdxT", 0, fmt.Sprintf("body-%04d-%0900d", i, i), map[string]string{
		message.PropertyKeys:                      fmt.Sprintf("k-%d", i),
		message.PropertyUniqClientMessageIDKeyidx: fmt.Sprintf("U%06d", i),
	})
}

// findsKey reports whether key (KEYS or UNIQ_KEY) finds the message at phy.
func findsKey(t *testing.T, s *Store, key string, phy int64) bool {
	t.Helper()
	got, err := s.QueryMessage("IdxT", key, 32, 0, time.Now().UnixMilli()+10_000)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range got {
		if m.CommitLogOffset == phy {
			return true
		}
	}
	return false
}

// TestCrashDroppedIndexFileIsRebuilt: after an abnormal exit the index
// files newer than the checkpoint are dropped; recovery indexes their range
// again from the commit log, so every stored message is found by KEYS and
// by UNIQ_KEY, including those before the commit-log file recovery starts
// its scan at, and none is listed twice.
func TestCrashDroppedIndexFileIsRebuilt(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Now().UnixMilli() - 60_000)
	cfg := testConfig(t.TempDir())
	cfg.Now = func() time.Time { return time.UnixMilli(clock.Load()) }
	s := openStore(t, cfg)
	const n = 200
	res := make([]PutResult, n)
	for i := range res {
		if i == 150 {
			// Recovery scans from a commit-log file stored at least 3 s
			// before the checkpoint's time: put the last messages 10 s
			// after the others so the scan starts past offset 0.
			clock.Add(10_000)
		}
		res[i] = mustPut(t, s, keyedMsg(i))
	}
	waitDispatched(t, s, "IdxT", 0, n)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A crash: the abort file stays and the checkpoint's index time is
	// older than every index file (none was flushed before the kill).
	root := cfg.StorePathRootDir
	if err := os.WriteFile(filepath.Join(root, abortFileName), []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	cp, err := os.ReadFile(filepath.Join(root, checkpointFileName))
	if err != nil {
		t.Fatal(err)
	}
	binary.BigEndian.PutUint64(cp[cpIndexMsgTimestamp:], 1)
	if err := os.WriteFile(filepath.Join(root, checkpointFileName), cp, 0o644); err != nil {
		t.Fatal(err)
	}

	s2 := openStore(t, cfg)
	rep := s2.Recovery()
	if rep.IndexFilesDropped == 0 {
		t.Fatal("no index file dropped: the test does not exercise the rebuild")
	}
	if rep.StartOffset == 0 {
		t.Fatal("recovery scanned from offset 0: the test does not exercise the range before the scan")
	}
	for i, r := range res {
		if !findsKey(t, s2, fmt.Sprintf("k-%d", i), r.WroteOffset) {
			t.Fatalf("message %d (offset %d) not found by KEYS after recovery (scan started at %d, %d index files dropped)",
				i, r.WroteOffset, rep.StartOffset, rep.IndexFilesDropped)
		}
		if !findsKey(t, s2, fmt.Sprintf("U%06d", i), r.WroteOffset) {
			t.Fatalf("message %d not found by UNIQ_KEY after recovery", i)
		}
	}
	if got, _ := s2.QueryMessage("IdxT", "k-0", 32, 0, time.Now().UnixMilli()+10_000); len(got) != 1 {
		t.Fatalf("key k-0 listed %d times, want once", len(got))
	}
	if s2.Stats().IndexReindexed == 0 {
		t.Fatal("stats do not count re-indexed records")
	}
}

// TestIndexCreationFailureBacksOff: while no index file can be created the
// store keeps storing and serving messages, tries again only after a
// back-off (not once per message), and once a file can be created it
// indexes the messages it missed from the commit log.
func TestIndexCreationFailureBacksOff(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Now().UnixMilli())
	cfg := testConfig(t.TempDir())
	cfg.Now = func() time.Time { return time.UnixMilli(clock.Load()) }
	s := openStore(t, cfg)
	// No index file can be created (a full disk) from the first message on.
	enospc := error(syscall.ENOSPC)
	s.index.failCreate.Store(&enospc)
	var res []PutResult
	for i := 0; i < 178; i++ {
		res = append(res, mustPut(t, s, keyedMsg(i)))
	}
	waitDispatched(t, s, "IdxT", 0, 178)
	st := s.Stats()
	if !st.IndexUnavailable || st.IndexNotIndexed == 0 {
		t.Fatalf("stats %+v: index unavailability not reported", st)
	}
	if st.IndexCreateFailures != 1 {
		t.Fatalf("%d creation attempts for 178 messages within the back-off, want 1", st.IndexCreateFailures)
	}
	if r := s.GetMessage("g", "IdxT", 0, 177, 1, 1<<20, nil); r.Status != Found {
		t.Fatalf("message stored while the index is down not readable: %v", r.Status)
	}
	// Space is back and the back-off has passed.
	s.index.failCreate.Store(nil)
	clock.Add((2 * time.Second).Milliseconds())
	for i := 178; i < 180; i++ {
		res = append(res, mustPut(t, s, keyedMsg(i)))
	}
	waitDispatched(t, s, "IdxT", 0, 180)
	for i, r := range res {
		if !findsKey(t, s, fmt.Sprintf("k-%d", i), r.WroteOffset) {
			t.Fatalf("message %d not found by key after the index came back", i)
		}
	}
	if st := s.Stats(); st.IndexUnavailable || st.IndexReindexed < 178 {
		t.Fatalf("stats %+v after recovery of the index", st)
	}
}

// TestDiskFullHysteresis: writes are refused above the warning ratio (90 %)
// and accepted again only at or below the forced-cleaning ratio (85 %), not
// as soon as usage dips under 90 %; the refusal happens from start, before
// any cleanup pass.
func TestDiskFullHysteresis(t *testing.T) {
	var usage atomic.Value
	usage.Store(0.95)
	cfg := testConfig(t.TempDir())
	cfg.DiskUsage = func(string) (float64, error) { return usage.Load().(float64), nil }
	cfg.CleanFileForciblyEnable = false
	s := openStore(t, cfg) // no CleanupOnce: the first pass is an hour away
	if r := put(t, s, newMsg("T", 0, "x", nil)); r.Status != ServiceNotAvailable {
		t.Fatalf("full disk at start: %v", r.Status)
	}
	for _, step := range []struct {
		usage float64
		want  PutStatus
	}{
		{0.89, ServiceNotAvailable}, // inside the band: still refused
		{0.86, ServiceNotAvailable},
		{0.85, PutOK}, // at the forced-cleaning ratio: accepted
		{0.88, PutOK}, // inside the band from below: still accepted
		{0.91, ServiceNotAvailable},
	} {
		usage.Store(step.usage)
		s.CleanupOnce()
		if r := put(t, s, newMsg("T", 0, "x", nil)); r.Status != step.want {
			t.Fatalf("usage %.2f: %v, want %v", step.usage, r.Status, step.want)
		}
	}
	if got := s.DiskUtil(); got != "CL:  0.91 CQ:  0.91 INDEX:  0.91" {
		t.Fatalf("DiskUtil %q", got)
	}
}

// TestForcedCleaningIsCounted: forced cleaning under disk pressure deletes
// unexpired files and counts what it deleted per topic (exactly what a
// consumer can no longer read); with cleanFileForciblyEnable off a full
// disk deletes nothing unexpired.
func TestForcedCleaningIsCounted(t *testing.T) {
	for _, forcibly := range []bool{true, false} {
		t.Run(fmt.Sprintf("forcibly=%v", forcibly), func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			cfg.DiskUsage = func(string) (float64, error) { return 0.88, nil } // above 85 %: clean at once
			cfg.CleanFileForciblyEnable = forcibly
			cfg.DeleteCommitLogFilesInterval = 0
			cfg.DeleteConsumeQueueFilesInterval = 0
			s := openStore(t, cfg)
			for i := 0; i < 300; i++ {
				topic := "A"
				if i%3 == 0 {
					topic = "B"
				}
				mustPut(t, s, newMsg(topic, 0, fmt.Sprintf("%0900d", i), nil))
			}
			waitDispatched(t, s, "A", 0, 200)
			waitDispatched(t, s, "B", 0, 100)
			files := len(s.commitLog.snapshot())
			s.CleanupOnce()
			s.CleanupOnce() // the consume queues follow the commit log
			gone := map[string]int64{"A": s.MinOffsetInQueue("A", 0), "B": s.MinOffsetInQueue("B", 0)}
			got := s.ForcedDeletions()
			st := s.Stats()
			if !forcibly {
				if len(s.commitLog.snapshot()) != files || len(got) != 0 || st.ForcedDeletedMessages != 0 {
					t.Fatalf("forced cleaning off deleted unexpired data: %d -> %d files, %v", files, len(s.commitLog.snapshot()), got)
				}
				return
			}
			if gone["A"] == 0 || gone["B"] == 0 {
				t.Fatalf("nothing deleted: min offsets %v", gone)
			}
			for topic, n := range gone {
				if got[topic].Messages != n {
					t.Fatalf("topic %s: %d counted deleted, consumer lost %d (all %v)", topic, got[topic].Messages, n, got)
				}
				if got[topic].Bytes < n*900 {
					t.Fatalf("topic %s: %d bytes counted for %d messages", topic, got[topic].Bytes, n)
				}
			}
			if st.ForcedDeletedMessages != gone["A"]+gone["B"] {
				t.Fatalf("stats %d, want %d", st.ForcedDeletedMessages, gone["A"]+gone["B"])
			}
			if r := s.GetMessage("g", "A", 0, 0, 1, 1<<20, nil); r.Status != OffsetTooSmall {
				t.Fatalf("read in the deleted range: %v", r.Status)
			}
		})
	}
}
