package store

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// snapWrite puts rounds messages into each of queues topics (S000..), so
// that some queues span several consume-queue files, and returns the
// bodies by topic.
func snapWrite(t *testing.T, s *Store, queues, from, rounds int, got map[string][]string) {
	t.Helper()
	for r := from; r < from+rounds; r++ {
		for i := 0; i < queues; i++ {
			topic := fmt.Sprintf("S%03d", i)
			n := 1 + i%3*70 // 1, 71 or 141 units a round: 1 or 2 files of 100
			if r > from {
				n = 1
			}
			for k := 0; k < n; k++ {
				body := fmt.Sprintf("%s-%d-%d", topic, r, k)
				res := mustPut(t, s, newMsg(topic, 0, body, nil))
				if res.QueueOffset != int64(len(got[topic])) {
					t.Fatalf("%s: queue offset %d, want %d", topic, res.QueueOffset, len(got[topic]))
				}
				got[topic] = append(got[topic], body)
			}
		}
	}
	for topic, bodies := range got {
		waitDispatched(t, s, topic, 0, int64(len(bodies)))
	}
	waitQueueFiles(t, s)
}

// snapCheck reads every message back and checks the next offsets.
func snapCheck(t *testing.T, s *Store, want map[string][]string, when string) {
	t.Helper()
	for topic, bodies := range want {
		if mx := s.MaxOffsetInQueue(topic, 0); mx != int64(len(bodies)) {
			t.Fatalf("%s: %s max offset %d, want %d", when, topic, mx, len(bodies))
		}
		for off := int64(0); off < int64(len(bodies)); {
			res := s.GetMessage("g", topic, 0, off, 32, 1<<20, nil)
			if res.Status != Found {
				t.Fatalf("%s: %s offset %d: %v", when, topic, off, res.Status)
			}
			for _, raw := range res.Messages {
				if b := decode(t, raw).Body; !bytes.Equal(b, []byte(bodies[off])) {
					t.Fatalf("%s: %s offset %d: body %q, want %q", when, topic, off, b, bodies[off])
				}
				off++
			}
		}
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		if d.Name() == lockFileName {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCQSnapshot: a clean stop writes the consume-queue snapshot and the
// next start restores every queue from it (reads, next offsets, appends
// into the restored files); a snapshot that is torn, damaged, missing,
// older than the last stop, or found after a crash is not used, and the
// start loads every queue directory instead with nothing lost. The
// snapshot never survives a start.
func TestCQSnapshot(t *testing.T) {
	const queues = 12
	snapPath := func(dir string) string { return filepath.Join(dir, cqSnapshotFileName) }
	// base: a store stopped cleanly once; returns its dir and contents.
	base := func(t *testing.T) (Config, map[string][]string) {
		cfg := testConfig(t.TempDir())
		want := map[string][]string{}
		s := openStore(t, cfg)
		snapWrite(t, s, queues, 0, 1, want)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(snapPath(cfg.StorePathRootDir)); err != nil {
			t.Fatalf("no snapshot after a clean stop: %v", err)
		}
		return cfg, want
	}
	restart := func(t *testing.T, cfg Config, want map[string][]string, fromSnapshot bool) {
		t.Helper()
		s := openStore(t, cfg)
		if _, err := os.Stat(snapPath(cfg.StorePathRootDir)); !os.IsNotExist(err) {
			t.Fatalf("the snapshot survived the start: %v", err)
		}
		n := s.Recovery().SnapshotQueues
		if fromSnapshot && n != queues {
			t.Fatalf("%d queues restored from the snapshot, want %d", n, queues)
		}
		if !fromSnapshot && n != 0 {
			t.Fatalf("%d queues restored from a snapshot that must not be used", n)
		}
		snapCheck(t, s, want, "after restart")
		// Appending continues the restored queues (also into the next file).
		snapWrite(t, s, queues, 1, 1, want)
		snapCheck(t, s, want, "after appending")
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("restored", func(t *testing.T) {
		cfg, want := base(t)
		restart(t, cfg, want, true)
		restart(t, cfg, want, true)
	})
	damage := map[string]func(b []byte) []byte{
		"torn":     func(b []byte) []byte { return b[:len(b)/2] },
		"bit flip": func(b []byte) []byte { b[len(b)/2] ^= 0x10; return b },
		"empty":    func(b []byte) []byte { return nil },
		"trailer":  func(b []byte) []byte { return b[:len(b)-1] },
	}
	for name, fn := range damage {
		t.Run(name, func(t *testing.T) {
			cfg, want := base(t)
			p := snapPath(cfg.StorePathRootDir)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, fn(b), 0o644); err != nil {
				t.Fatal(err)
			}
			restart(t, cfg, want, false)
		})
	}
	t.Run("missing", func(t *testing.T) {
		cfg, want := base(t)
		os.Remove(snapPath(cfg.StorePathRootDir))
		restart(t, cfg, want, false)
	})
	t.Run("stale", func(t *testing.T) {
		// The snapshot of an earlier stop put back after a later one:
		// its queue ends are behind the data and must not be used.
		cfg, want := base(t)
		old, err := os.ReadFile(snapPath(cfg.StorePathRootDir))
		if err != nil {
			t.Fatal(err)
		}
		restart(t, cfg, want, true)
		if err := os.WriteFile(snapPath(cfg.StorePathRootDir), old, 0o644); err != nil {
			t.Fatal(err)
		}
		restart(t, cfg, want, false)
	})
	t.Run("crash", func(t *testing.T) {
		// A copy of a running store (abort file present) with the
		// snapshot of the stop before: abnormal recovery ignores it.
		cfg, want := base(t)
		old, err := os.ReadFile(snapPath(cfg.StorePathRootDir))
		if err != nil {
			t.Fatal(err)
		}
		s := openStore(t, cfg)
		snapWrite(t, s, queues, 1, 1, want)
		if err := s.flushAll(); err != nil {
			t.Fatal(err)
		}
		crashed := cfg
		crashed.StorePathRootDir = t.TempDir()
		copyDir(t, cfg.StorePathRootDir, crashed.StorePathRootDir)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(crashed.StorePathRootDir, abortFileName)); err != nil {
			t.Fatalf("the copy of a running store has no abort file: %v", err)
		}
		if err := os.WriteFile(snapPath(crashed.StorePathRootDir), old, 0o644); err != nil {
			t.Fatal(err)
		}
		s2 := openStore(t, crashed)
		if !s2.Recovery().Abnormal || s2.Recovery().SnapshotQueues != 0 {
			t.Fatalf("recovery %+v: want abnormal, no snapshot", s2.Recovery())
		}
		snapCheck(t, s2, want, "after the crash")
	})
}

// TestCQSnapshotPending: queues still waiting for their first file when the
// store closes keep their units pending in the snapshot, the abort file
// stays with its mark, and the next start restores them (the files are made
// afterwards); without a usable snapshot the start is an abnormal recovery
// that rebuilds them from the commit log. Nothing is lost either way.
func TestCQSnapshotPending(t *testing.T) {
	const queues = 20
	setup := func(t *testing.T) (Config, map[string][]string) {
		cfg := testConfig(t.TempDir())
		want := map[string][]string{}
		s := openStore(t, cfg)
		snapWrite(t, s, 2, 0, 1, want) // queues with files
		s.createBudget = time.Millisecond
		gate := make(chan struct{})
		s.creator.beforeCreate = func() { <-gate; time.Sleep(20 * time.Millisecond) }
		for i := 0; i < queues; i++ {
			topic := fmt.Sprintf("P%03d", i)
			for k := 0; k <= i%3; k++ {
				body := fmt.Sprintf("%s-%d", topic, k)
				mustPut(t, s, newMsg(topic, 0, body, nil))
				want[topic] = append(want[topic], body)
			}
		}
		for topic, bodies := range want {
			waitDispatched(t, s, topic, 0, int64(len(bodies)))
		}
		close(gate)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(cfg.StorePathRootDir, abortFileName))
		if err != nil || string(b) != abortSnapshotMark {
			t.Fatalf("abort file after a stop with pending units: %q, %v", b, err)
		}
		return cfg, want
	}
	t.Run("restored", func(t *testing.T) {
		cfg, want := setup(t)
		s := openStore(t, cfg)
		rep := s.Recovery()
		if rep.Abnormal || rep.SnapshotQueues != queues+2 {
			t.Fatalf("recovery %+v: want clean, %d queues from the snapshot", rep, queues+2)
		}
		snapCheck(t, s, want, "restored pending")
		waitQueueFiles(t, s)
		for i := 0; i < queues; i++ {
			if _, err := os.Stat(filepath.Join(cfg.StorePathRootDir, consumeQueueDirName, fmt.Sprintf("P%03d", i), "0", fileName(0))); err != nil {
				t.Fatalf("pending queue's file not made after the restart: %v", err)
			}
		}
		snapWrite(t, s, 2, 1, 1, want)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s2 := openStore(t, cfg)
		if s2.Recovery().Abnormal {
			t.Fatal("abnormal after a clean stop")
		}
		snapCheck(t, s2, want, "second restart")
	})
	for name, fn := range map[string]func(string){
		"snapshot torn":    func(p string) { b, _ := os.ReadFile(p); os.WriteFile(p, b[:len(b)-7], 0o644) },
		"snapshot missing": func(p string) { os.Remove(p) },
	} {
		t.Run(name, func(t *testing.T) {
			cfg, want := setup(t)
			fn(filepath.Join(cfg.StorePathRootDir, cqSnapshotFileName))
			s := openStore(t, cfg)
			if rep := s.Recovery(); !rep.Abnormal || rep.SnapshotQueues != 0 {
				t.Fatalf("recovery %+v: want abnormal, no snapshot", rep)
			}
			snapCheck(t, s, want, name)
		})
	}
}

// flushAll flushes the commit log and every consume queue (tests that copy
// a running store's directory).
func (s *Store) flushAll() error {
	if err := s.commitLog.flushTo(s.commitLog.maxOffset()); err != nil {
		return err
	}
	s.flushConsumeQueues(0)
	return nil
}

// FuzzCQSnapshot decodes arbitrary bytes as a snapshot: never a panic, and
// whatever it accepts is within the bounds restoreQueue relies on.
func FuzzCQSnapshot(f *testing.F) {
	const fileSize = 100 * CQUnitSize
	var cp [checkpointUsedBytes]byte
	dir := f.TempDir()
	cq := &consumeQueue{topic: "T", queueID: 1}
	cq.files = newMappedFileQueueLazy(dir, fileSize, nil, newMapper(4))
	mf := &mappedFile{fromOffset: 0, size: fileSize}
	mf.setPositions(40)
	cq.files.files = []*mappedFile{mf}
	cq.files.flushedWhere.Store(40)
	if err := writeCQSnapshot(dir, fileSize, 1234, cp, []*consumeQueue{cq, cq}, nil); err != nil {
		f.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(dir, cqSnapshotFileName))
	if err != nil {
		f.Fatal(err)
	}
	if _, e, err := parseCQSnapshot(good, fileSize, cp); err != nil || len(e) != 2 {
		f.Fatalf("the seed does not parse: %v %v", e, err)
	}
	f.Add(good)
	f.Add(good[:len(good)-5])
	f.Add([]byte(cqSnapshotMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, entries, err := parseCQSnapshot(b, fileSize, cp)
		if err != nil {
			return
		}
		for _, e := range entries {
			if (e.files == 0 && len(e.pending) == 0) || e.lastWrote > fileSize || e.firstFrom%fileSize != 0 || e.topic == "" {
				t.Fatalf("accepted an entry out of range: %+v", e)
			}
		}
	})
}

func TestLazyFilePath(t *testing.T) {
	for _, off := range []int64{0, 6000000, 123456789012} {
		mf := newLazyFileIn(filepath.Join("a", "b"), off, 6000000, nil)
		if got, want := mf.filePath(), filepath.Join("a", "b", fileName(off)); got != want {
			t.Fatalf("filePath %q, want %q", got, want)
		}
	}
}

// TestNonEmptyQueues: the topics kept by the filter whose queue 0 holds
// messages; deleted and empty queues are left out.
func TestNonEmptyQueues(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	for _, topic := range []string{"lite-a", "lite-b", "plain", "lite-gone"} {
		mustPut(t, s, newMsg(topic, 0, "x", nil))
		waitDispatched(t, s, topic, 0, 1)
	}
	s.findOrCreateQueue("lite-empty", 0)
	if err := s.DeleteTopics([]string{"lite-gone"}); err != nil {
		t.Fatal(err)
	}
	got := s.NonEmptyQueues(func(t string) bool { return len(t) > 5 && t[:5] == "lite-" })
	slices.Sort(got)
	if want := []string{"lite-a", "lite-b"}; !slices.Equal(got, want) {
		t.Fatalf("NonEmptyQueues = %v, want %v", got, want)
	}
}
