package store

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestTruncateOnStart: a store reopened with TruncateOnStart cuts its
// commit log and consume queues at a record boundary (controller mode's
// rejoin), across a file boundary too, and the next put continues there
// with the right queue offset. Both a clean and a crashed (abort file
// left) previous run are covered.
func TestTruncateOnStart(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(fmt.Sprintf("crash=%v", crash), func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			s := openStore(t, cfg)
			var ends []int64
			for i := range 200 { // ~700 B each: 64 KiB files, so several files
				r := mustPut(t, s, newMsg("T", 0, fmt.Sprintf("m-%03d-%0690d", i, 0), nil))
				ends = append(ends, r.WroteOffset+int64(r.WroteBytes))
			}
			waitDispatched(t, s, "T", 0, 200)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if crash { // the abort file left behind: abnormal recovery
				if err := os.WriteFile(filepath.Join(cfg.StorePathRootDir, abortFileName), []byte("1"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cut := ends[119] // after message 119, some files back
			cfg.TruncateOnStart, cfg.TruncateOffset = true, cut
			s2 := openStore(t, cfg)
			if got := s2.MaxPhyOffset(); got != cut {
				t.Fatalf("max offset %d, want %d", got, cut)
			}
			if got := s2.MaxOffsetInQueue("T", 0); got != 120 {
				t.Fatalf("queue max %d, want 120", got)
			}
			r := mustPut(t, s2, newMsg("T", 0, "after", nil))
			if r.WroteOffset != cut || r.QueueOffset != 120 {
				t.Fatalf("next put at %d queue offset %d, want %d 120", r.WroteOffset, r.QueueOffset, cut)
			}
			waitDispatched(t, s2, "T", 0, 121)
			res := s2.GetMessage("g", "T", 0, 119, 2, 1<<20, nil)
			if res.Status != Found || len(res.Messages) != 2 || string(decode(t, res.Messages[1]).Body) != "after" {
				t.Fatalf("read across the cut: %v %d", res.Status, len(res.Messages))
			}
		})
	}
}

// TestWriteGate: a gate status refuses the put before anything is written.
func TestWriteGate(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	s.SetWriteGate(func() (PutStatus, string) { return InSyncReplicasNotEnough, "in-sync replicas not enough" })
	if r := put(t, s, newMsg("T", 0, "x", nil)); r.Status != InSyncReplicasNotEnough || s.MaxPhyOffset() != 0 {
		t.Fatalf("gated put: %v, max offset %d", r.Status, s.MaxPhyOffset())
	}
	s.SetWriteGate(nil)
	mustPut(t, s, newMsg("T", 0, "x", nil))
}
