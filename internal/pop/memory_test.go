package pop

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkInFlightMemory measures the heap the store holds for 1,000,000
// popped, unacked messages, popped in batches of 32 (a full pop), 4, and 1
// (the worst case: every message its own checkpoint, as after a change of
// invisible time), and the log bytes written for them; "+repl" with a
// replica following the store (the replication window, at most 8 MiB, is
// part of the heap then). Run with
//
//	go test -run '^$' -bench InFlightMemory -benchtime 1x ./internal/pop
func BenchmarkInFlightMemory(b *testing.B) {
	const total = 1_000_000
	for _, bc := range []struct {
		batch int
		repl  bool
	}{{32, false}, {4, false}, {1, false}, {32, true}, {1, true}} {
		batch := bc.batch
		name := fmt.Sprintf("batch=%d", batch)
		if bc.repl {
			name += "+repl"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				dir := b.TempDir()
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				s, err := Open(Options{Dir: dir, CompactBytes: 1 << 40})
				if err != nil {
					b.Fatal(err)
				}
				if bc.repl {
					if _, err := s.ReadReplication(ReplRequest{}, 1); err != nil {
						b.Fatal(err)
					}
				}
				offs := make([]int64, batch)
				for i := 0; i < total/batch; i++ {
					k := QueueKey{Group: "GID_bench", Topic: "TopicBench", QueueID: int32(i % 8)}
					start := int64(i/8) * int64(batch)
					for j := range offs {
						offs[j] = start + int64(j)
					}
					if err := s.AddCheckpoint(Checkpoint{Key: k, StartOffset: start, PopTime: 1_700_000_000_000 + int64(i),
						InvisibleTime: 60_000, Offsets: offs, NextOffset: start + int64(batch)}); err != nil {
						b.Fatal(err)
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				st := s.Stats()
				if st.InFlight != total {
					b.Fatalf("in flight %d", st.InFlight)
				}
				heap := float64(after.HeapAlloc) - float64(before.HeapAlloc)
				b.ReportMetric(heap/total, "heap-B/msg")
				b.ReportMetric(heap/(1<<20), "heap-MiB")
				b.ReportMetric(float64(st.LogBytes)/total, "log-B/msg")
				runtime.KeepAlive(s)
				s.Close()
			}
		})
	}
}
