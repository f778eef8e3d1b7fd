package store

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/testutil"
)

// behindConfig allows 2 mappings for 20 queues: most queues' files are not
// mapped, so their units go to the write-behind buffers.
func behindConfig(dir string) Config {
	cfg := testConfig(dir)
	cfg.MaxMappedConsumeQueueFiles = 2
	cfg.ConsumeQueueWriteBehindMaxAge = time.Hour
	return cfg
}

const behindQueues = 20

// fillBehind puts n messages to each of the queues of topic, round-robin,
// after one message each (their files made by the creator).
func fillBehind(t *testing.T, s *Store, topic string, n int) {
	t.Helper()
	for q := int32(0); q < behindQueues; q++ {
		mustPut(t, s, newMsg(topic, q, fmt.Sprintf("%d-0", q), nil))
	}
	for q := int32(0); q < behindQueues; q++ {
		waitDispatched(t, s, topic, q, 1)
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return s.creator.pendingQueues() == 0 },
		"queue files never made")
	for i := 1; i < n; i++ {
		for q := int32(0); q < behindQueues; q++ {
			mustPut(t, s, newMsg(topic, q, fmt.Sprintf("%d-%d", q, i), nil))
		}
	}
	for q := int32(0); q < behindQueues; q++ {
		waitDispatched(t, s, topic, q, int64(n))
	}
}

// checkBehindQueues reads every message of the queues back through them.
func checkBehindQueues(t *testing.T, s *Store, topic string, n int) {
	t.Helper()
	for q := int32(0); q < behindQueues; q++ {
		if got := s.MaxOffsetInQueue(topic, q); got != int64(n) {
			t.Fatalf("queue %d: max offset %d, want %d", q, got, n)
		}
		for off := int64(0); off < int64(n); {
			res := s.GetMessage("g", topic, q, off, 32, 1<<20, nil)
			if res.Status != Found {
				t.Fatalf("queue %d offset %d: %v", q, off, res.Status)
			}
			for i, raw := range res.Messages {
				m := decode(t, raw)
				if want := fmt.Sprintf("%d-%d", q, off+int64(i)); string(m.Body) != want || m.QueueOffset != off+int64(i) {
					t.Fatalf("queue %d offset %d: body %q offset %d, want %q", q, off+int64(i), m.Body, m.QueueOffset, want)
				}
			}
			off = res.NextBeginOffset
		}
	}
}

// persistedLogics is the logicsMsgTimestamp in the checkpoint file.
func persistedLogics(t *testing.T, dir string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, checkpointFileName))
	if err != nil || len(b) < checkpointUsedBytes {
		t.Fatalf("checkpoint: %v", err)
	}
	return int64(binary.BigEndian.Uint64(b[cpLogicsMsgTimestamp:]))
}

// TestWriteBehind: units of queues that are not mapped stay in memory,
// readable, with the checkpoint held below the oldest; a clean stop
// writes them (batched: fewer writes than units) and a restart reads them
// from the files.
func TestWriteBehind(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, behindConfig(dir))
	fillBehind(t, s, "WB", 12)
	st := s.WriteBehind()
	if st.Units == 0 || st.Queues == 0 || st.Bytes < st.Units*cqUnitMem {
		t.Fatalf("no units buffered: %+v", st)
	}
	checkBehindQueues(t, s, "WB", 12)
	hold := s.cp.behindHold.Load()
	if hold <= 0 {
		t.Fatalf("no checkpoint hold with %d units buffered", st.Units)
	}
	// The persisted checkpoint stays below the oldest buffered unit.
	testutil.Eventually(t, 5*time.Second, func() bool { return persistedLogics(t, dir) > 0 }, "checkpoint never written")
	if got := persistedLogics(t, dir); got >= hold {
		t.Fatalf("checkpoint logics %d not below the oldest buffered unit %d", got, hold)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	st = s.WriteBehind()
	if st.Units != 0 || st.Queues != 0 || st.Bytes != 0 || st.Writes == 0 || st.Written < 2*st.Writes {
		t.Fatalf("after Close: %+v (want nothing buffered, at least 2 units a write)", st)
	}
	s2 := openStore(t, behindConfig(dir))
	checkBehindQueues(t, s2, "WB", 12)
}

// TestWriteBehindTriggers: the budget (largest first), the age bound and
// topic deletion each empty the buffers and release the hold.
func TestWriteBehindTriggers(t *testing.T) {
	tests := []struct {
		name   string
		budget int64
		maxAge time.Duration
		act    func(t *testing.T, s *Store)
	}{
		{"budget", 2 << 10, time.Hour, nil},
		{"age", 64 << 20, 50 * time.Millisecond, nil},
		{"delete", 64 << 20, time.Hour, func(t *testing.T, s *Store) {
			if err := s.DeleteTopics([]string{"WB"}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := behindConfig(t.TempDir())
			cfg.ConsumeQueueWriteBehindBytes = tc.budget
			cfg.ConsumeQueueWriteBehindMaxAge = tc.maxAge
			s := openStore(t, cfg)
			fillBehind(t, s, "WB", 30)
			if tc.act != nil {
				if s.WriteBehind().Units == 0 {
					t.Fatal("nothing buffered")
				}
				tc.act(t, s)
				wake(s.behind.wake)
			}
			if tc.name == "budget" {
				testutil.Eventually(t, 10*time.Second, func() bool { return s.WriteBehind().Bytes <= tc.budget },
					"buffers above the budget: %+v", s.WriteBehind())
				if st := s.WriteBehind(); st.Peak < tc.budget || st.Writes == 0 {
					t.Fatalf("budget never reached or nothing written: %+v", st)
				}
				checkBehindQueues(t, s, "WB", 30)
				return
			}
			testutil.Eventually(t, 10*time.Second, func() bool {
				st := s.WriteBehind()
				return st.Units == 0 && st.Queues == 0 && st.Bytes == 0 && s.cp.behindHold.Load() == 0
			}, "buffers not emptied: %+v hold %d", s.WriteBehind(), s.cp.behindHold.Load())
			if tc.name == "age" {
				checkBehindQueues(t, s, "WB", 30)
			}
		})
	}
}

// TestWriteBehindHardBound: past twice the budget a unit is written at
// once instead of buffered.
func TestWriteBehindHardBound(t *testing.T) {
	s := openStore(t, behindConfig(t.TempDir()))
	fillBehind(t, s, "WB", 3)
	var cq *consumeQueue
	for q := int32(0); q < behindQueues && cq == nil; q++ {
		if c := s.getQueue("WB", q); c.wbGen.Load() != 0 {
			cq = c
		}
	}
	if cq == nil {
		t.Fatal("no queue buffered")
	}
	if !s.behind.flushQueue(cq, 0) || cq.wbGen.Load() != 0 {
		t.Fatal("buffered units not written")
	}
	cq.writeMu.Lock()
	defer cq.writeMu.Unlock()
	if !cq.behindTail(cq.maxOffset()) {
		t.Fatal("an unmapped queue's next unit is not buffered")
	}
	s.behind.mem.Add(2*s.behind.budget + 1)
	defer s.behind.mem.Add(-(2*s.behind.budget + 1))
	if cq.behindTail(cq.maxOffset()) {
		t.Fatal("buffered past twice the budget")
	}
}
