package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/testutil"
)

// writeN appends n messages to queue 0 of T and returns their put results.
func writeN(t *testing.T, s *Store, n int) []PutResult {
	t.Helper()
	out := make([]PutResult, n)
	for i := range out {
		out[i] = mustPut(t, s, newMsg("T", 0, fmt.Sprintf("m%03d-%s", i, bytes.Repeat([]byte("p"), 900)), nil))
	}
	waitDispatched(t, s, "T", 0, int64(n))
	return out
}

// damageAt modifies the commit-log bytes at physical offset off.
func damageAt(t *testing.T, cfg Config, off int64, fn func(b []byte)) {
	t.Helper()
	name := filepath.Join(cfg.commitLogDir(), fileName(off-off%cfg.MappedFileSizeCommitLog))
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	fn(data[off%cfg.MappedFileSizeCommitLog:])
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRecoveryDropsDamage covers 6.4: a torn or garbled tail and a bit flip
// in the middle of the log are cut at the last verified message; everything
// before it is served, the damage is reported, nothing after it is returned,
// and new appends continue at the cut.
func TestRecoveryDropsDamage(t *testing.T) {
	const n = 200
	tests := []struct {
		name    string
		victim  func(res []PutResult) int // index of the first damaged message
		damage  func(b []byte, size int32)
		crashed bool // leave the abort file: abnormal recovery from the checkpoint
	}{
		{"torn tail zeroed", func(r []PutResult) int { return len(r) - 1 },
			func(b []byte, size int32) { clear(b[size-40 : size]) }, false},
		{"garbled tail", func(r []PutResult) int { return len(r) - 1 },
			func(b []byte, size int32) {
				for i := size - 25; i < size; i++ {
					b[i] ^= 0x5A
				}
			}, false},
		{"truncated header", func(r []PutResult) int { return len(r) - 1 },
			func(b []byte, size int32) { clear(b[4:size]) }, true},
		{"bit flip in last file body", func(r []PutResult) int { return len(r) - 5 },
			func(b []byte, size int32) { b[100] ^= 0x04 }, false},
		{"bit flip in an old file after a crash", func(r []PutResult) int { return 30 },
			func(b []byte, size int32) { b[200] ^= 0x01 }, true},
		{"bad magic mid-log after a crash", func(r []PutResult) int { return 77 },
			func(b []byte, size int32) { b[5] ^= 0xFF }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			s := openStore(t, cfg)
			res := writeN(t, s, n)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			v := tc.victim(res)
			damageAt(t, cfg, res[v].WroteOffset, func(b []byte) { tc.damage(b, res[v].WroteBytes) })
			if tc.crashed {
				if err := os.WriteFile(filepath.Join(cfg.StorePathRootDir, abortFileName), []byte("1"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			s2 := openStore(t, cfg)
			rep := s2.Recovery()
			if rep.ValidEnd != res[v].WroteOffset {
				t.Fatalf("valid end %d, want %d (report %+v)", rep.ValidEnd, res[v].WroteOffset, rep)
			}
			if rep.Reason == "" || rep.DroppedBytes == 0 {
				t.Fatalf("damage not reported: %+v", rep)
			}
			if got := s2.MaxOffsetInQueue("T", 0); got != int64(v) {
				t.Fatalf("queue max offset %d, want %d", got, v)
			}
			for i := 0; i < v; i++ {
				r := s2.GetMessage("g", "T", 0, int64(i), 1, 1<<20, nil)
				if r.Status != Found {
					t.Fatalf("message %d before the damage: %v", i, r.Status)
				}
				if m := decode(t, r.Messages[0]); m.CommitLogOffset != res[i].WroteOffset {
					t.Fatalf("message %d at %d, want %d", i, m.CommitLogOffset, res[i].WroteOffset)
				}
			}
			if r := s2.GetMessage("g", "T", 0, int64(v), 1, 1<<20, nil); r.Status == Found {
				t.Fatalf("damaged message %d is still returned", v)
			}
			if _, err := s2.LookMessageByOffset(res[v].WroteOffset); err == nil {
				t.Fatalf("damaged record at %d still readable", res[v].WroteOffset)
			}
			r := mustPut(t, s2, newMsg("T", 0, "new", nil))
			if r.WroteOffset != res[v].WroteOffset || r.QueueOffset != int64(v) {
				t.Fatalf("append after recovery at %d/%d, want %d/%d", r.WroteOffset, r.QueueOffset, res[v].WroteOffset, v)
			}
			// Reopening again finds no damage and keeps the new message.
			if err := s2.Close(); err != nil {
				t.Fatal(err)
			}
			s3 := openStore(t, cfg)
			if rep := s3.Recovery(); rep.DroppedBytes != 0 || rep.Reason != "" {
				t.Fatalf("second recovery found damage again: %+v", rep)
			}
			waitDispatched(t, s3, "T", 0, int64(v+1))
			got := s3.GetMessage("g", "T", 0, int64(v), 1, 1<<20, nil)
			if got.Status != Found || string(decode(t, got.Messages[0]).Body) != "new" {
				t.Fatalf("new message after second reopen: %v", got.Status)
			}
			if s3.MaxOffsetInQueue("T", 0) != int64(v+1) {
				t.Fatalf("stale messages resurrected: max offset %d", s3.MaxOffsetInQueue("T", 0))
			}
		})
	}
}

// TestRecoveryRebuildsLostConsumeQueue: consume queues are derived data; if
// they are deleted the store rebuilds them from the commit log after a
// crash (6.3, 6.4 abnormal recovery).
func TestRecoveryRebuildsLostConsumeQueue(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := openStore(t, cfg)
	res := writeN(t, s, 120)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(cfg.StorePathRootDir, consumeQueueDirName)); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(cfg.StorePathRootDir, abortFileName), []byte("1"), 0o644)
	os.WriteFile(filepath.Join(cfg.StorePathRootDir, checkpointFileName), make([]byte, checkpointFileSize), 0o644)
	s2 := openStore(t, cfg)
	if got := s2.MaxOffsetInQueue("T", 0); got != 120 {
		t.Fatalf("rebuilt queue max offset %d", got)
	}
	r := s2.GetMessage("g", "T", 0, 119, 1, 1<<20, nil)
	if r.Status != Found || decode(t, r.Messages[0]).CommitLogOffset != res[119].WroteOffset {
		t.Fatalf("rebuilt queue does not reach the last message: %v", r.Status)
	}
}

// TestLoadOddFiles covers 2.1/2.2 loading rules: a zero-length last file (a
// crash during creation) is deleted, an empty pre-created next file is
// harmless, and a file of the wrong size refuses to load.
func TestLoadOddFiles(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := openStore(t, cfg)
	res := writeN(t, s, 10)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	dir := cfg.commitLogDir()
	size := cfg.MappedFileSizeCommitLog
	// A zero-length file after the last one.
	os.WriteFile(filepath.Join(dir, fileName(5*size)), nil, 0o644)
	s2 := openStore(t, cfg)
	if _, err := os.Stat(filepath.Join(dir, fileName(5*size))); !os.IsNotExist(err) {
		t.Fatalf("zero-length last file kept: %v", err)
	}
	if r := mustPut(t, s2, newMsg("T", 0, "more", nil)); r.QueueOffset != 10 {
		t.Fatalf("queue offset %d", r.QueueOffset)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	// A file of the wrong size.
	bad := filepath.Join(dir, fileName(res[0].WroteOffset-res[0].WroteOffset%size+size))
	os.WriteFile(bad, make([]byte, 100), 0o644)
	s3, _ := New(cfg, testutil.Logger(t))
	if err := s3.Start(); !errors.Is(err, ErrBadFileSize) {
		s3.Close()
		t.Fatalf("wrong-size file: %v", err)
	}
}

// TestRebuiltQueueStartsWithPreBlank covers 4.1 pre-blank units: a queue
// rebuilt from a commit log whose oldest message of the queue has offset
// q > 0 starts at q (min offset q, filler units below), also after a restart.
func TestRebuiltQueueStartsWithPreBlank(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := openStore(t, cfg)
	writeN(t, s, 300)
	var clock atomic.Int64
	clock.Store(time.Now().Add(100 * time.Hour).UnixMilli())
	s.cfg.Now = func() time.Time { return time.UnixMilli(clock.Load()) }
	s.cfg.DiskUsage = func(string) (float64, error) { return 0.99, nil } // forced deletion
	s.cfg.DeleteCommitLogFilesInterval = 0
	s.CleanupOnce()
	minPhy := s.MinPhyOffset()
	if minPhy == 0 {
		t.Fatal("cleanup deleted nothing")
	}
	wantMin := s.MinOffsetInQueue("T", 0)
	if wantMin == 0 {
		t.Fatal("queue min offset not corrected")
	}
	s.diskFull.Store(false)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Lose the consume queues and crash: they are rebuilt from what is left.
	os.RemoveAll(filepath.Join(cfg.StorePathRootDir, consumeQueueDirName))
	os.WriteFile(filepath.Join(cfg.StorePathRootDir, abortFileName), []byte("1"), 0o644)
	os.WriteFile(filepath.Join(cfg.StorePathRootDir, checkpointFileName), make([]byte, checkpointFileSize), 0o644)
	for round := 0; round < 2; round++ {
		s2 := openStore(t, cfg)
		if got := s2.MinOffsetInQueue("T", 0); got != wantMin {
			var offs []int64
			for _, f := range s2.commitLog.snapshot() {
				offs = append(offs, f.fromOffset)
			}
			t.Fatalf("round %d: min offset %d, want %d (minPhy before %d, files now %v, minPhy now %d)", round, got, wantMin, minPhy, offs, s2.MinPhyOffset())
		}
		if got := s2.MaxOffsetInQueue("T", 0); got != 300 {
			t.Fatalf("round %d: max offset %d", round, got)
		}
		r := s2.GetMessage("g", "T", 0, 0, 4, 1<<20, nil)
		if r.Status != OffsetTooSmall || r.NextBeginOffset != wantMin {
			t.Fatalf("round %d: read from 0: %v next %d", round, r.Status, r.NextBeginOffset)
		}
		r = s2.GetMessage("g", "T", 0, wantMin, 4, 1<<20, nil)
		if r.Status != Found || decode(t, r.Messages[0]).QueueOffset != wantMin {
			t.Fatalf("round %d: read at min: %v", round, r.Status)
		}
		if err := s2.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMinOffsetCorrectionPastHeldFile: when cleanup cannot destroy a
// queue's first file (a reader or a flush holds it), the files after it
// that lie wholly below the commit log's new start must not stop the
// min-offset correction: the queue's min offset is its first unit that
// still points into the commit log.
func TestMinOffsetCorrectionPastHeldFile(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := openStore(t, cfg)
	res := writeN(t, s, 300)
	waitQueueFiles(t, s)
	cq := s.getQueue("T", 0)
	first := cq.files.snapshot()[0]
	if !first.hold() {
		t.Fatal("cannot hold the first consume-queue file")
	}
	var clock atomic.Int64
	clock.Store(time.Now().Add(100 * time.Hour).UnixMilli())
	s.cfg.Now = func() time.Time { return time.UnixMilli(clock.Load()) }
	s.cfg.DiskUsage = func(string) (float64, error) { return 0.5, nil }
	s.cfg.DeleteCommitLogFilesInterval = 0
	s.cfg.DeleteConsumeQueueFilesInterval = 0
	s.DeleteExpiredFilesManually() // expired files go now, whatever deleteWhen says
	s.CleanupOnce()
	first.release()
	minPhy := s.MinPhyOffset()
	want := int64(0)
	for want < int64(len(res)) && res[want].WroteOffset < minPhy {
		want++
	}
	if want < 200 {
		t.Fatalf("cleanup left the commit log from %d (message %d): the test needs the first two queue files below it", minPhy, want)
	}
	if got := s.MinOffsetInQueue("T", 0); got != want {
		t.Fatalf("min offset %d, want %d (first message at or after commit-log offset %d)", got, want, minPhy)
	}
}
