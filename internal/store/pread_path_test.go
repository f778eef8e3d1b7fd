package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestPreadPwritePath: the brief-descriptor reads and writes of lazily
// mapped files land where asked, refuse a missing file with a path error,
// and a read past the end fails instead of returning zeros.
func TestPreadPwritePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := pwritePath(path, []byte("unit"), 100); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 6)
	if err := preadPath(path, got, 99); err != nil || !bytes.Equal(got, []byte("\x00unit\x00")) {
		t.Fatalf("read %q %v", got, err)
	}
	if err := preadPath(path, got, 4093); err == nil {
		t.Fatal("a read past the end succeeded")
	}
	var pe *os.PathError
	if err := preadPath(path+"x", got, 0); !errors.As(err, &pe) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	if err := pwritePath(path+"x", got, 0); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

// BenchmarkPreadPath: one 20-byte consume-queue unit read from a file
// that is not mapped, through os.Open + ReadAt + Close and through
// preadPath, in one run.
func BenchmarkPreadPath(b *testing.B) {
	path := filepath.Join(b.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o644); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, CQUnitSize)
	b.Run("os", func(b *testing.B) {
		for i := range b.N {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			_, err = f.ReadAt(buf, int64(i%1000)*CQUnitSize)
			f.Close()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		for i := range b.N {
			if err := preadPath(path, buf, int64(i%1000)*CQUnitSize); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkReadOnceManyQueues: after a restart (no consume-queue file
// mapped), each of 5,000 queues holding one message is read once, as a
// lite consumer pops a backlog of one message per lite topic. Per op: one
// queue's read (consume-queue unit and message).
func BenchmarkReadOnceManyQueues(b *testing.B) {
	const queues = 5000
	cfg := testConfig(b.TempDir())
	s := openStore(b, cfg)
	for i := range queues {
		mustPut(b, s, newMsg("Q"+strconv.Itoa(i), 0, "m", nil))
	}
	waitDispatched(b, s, "Q"+strconv.Itoa(queues-1), 0, 1)
	// The creator makes the queues' files (a few thousand a second on a
	// quiet disk, far fewer under fsync load).
	for t0 := time.Now(); s.creator.pendingQueues() > 0; time.Sleep(50 * time.Millisecond) {
		if time.Since(t0) > 5*time.Minute {
			b.Fatalf("%d queues still wait for their first file", s.creator.pendingQueues())
		}
	}
	s.Close()
	s = openStore(b, cfg)
	i := 0
	for b.Loop() {
		if i == queues {
			b.StopTimer()
			s.Close()
			s = openStore(b, cfg)
			i = 0
			b.StartTimer()
		}
		r := s.GetMessage("g", "Q"+strconv.Itoa(i), 0, 0, 32, 1<<20, nil)
		if r.Status != Found || len(r.Messages) != 1 {
			b.Fatalf("queue %d: %v", i, r.Status)
		}
		r.Release()
		i++
	}
}

// TestTailUnit: the queue's newest unit is served from memory, the same
// unit the file holds; after truncateDirtyLogic removes it, the offset
// reads what is written there next, not the forgotten unit.
func TestTailUnit(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	var last PutResult
	for i := range 3 {
		last = mustPut(t, s, newMsg("Tail", 0, "m"+strconv.Itoa(i), nil))
	}
	waitDispatched(t, s, "Tail", 0, 3)
	waitQueueFiles(t, s)
	cq := s.getQueue("Tail", 0)
	u, ok := cq.tailAt(2)
	if !ok || u.PhyOffset != last.WroteOffset {
		t.Fatalf("tail %+v %v, want the unit at %d", u, ok, last.WroteOffset)
	}
	f := cq.files.findHeld(2 * CQUnitSize)
	d, err := f.view()
	if err != nil {
		t.Fatal(err)
	}
	if fileU := decodeCQUnit(d[2*CQUnitSize-f.fromOffset:]); fileU != u {
		t.Fatalf("tail %+v, file %+v", u, fileU)
	}
	f.release()
	if n := cq.truncateDirtyLogic(last.WroteOffset); n != 1 {
		t.Fatalf("truncation removed %d units, want 1", n)
	}
	if _, ok := cq.tailAt(2); ok {
		t.Fatal("the truncated unit is still the tail")
	}
	next := cqUnit{PhyOffset: last.WroteOffset + 1000, Size: 100}
	if err := cq.putUnit(next, 2, time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	if got, ok := cq.unitAt(2); !ok || got != next {
		t.Fatalf("unit at 2 after a rewrite: %+v %v, want %+v", got, ok, next)
	}
}
