package store

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/testutil"
)

var restartQueues = flag.Int("store.restart.queues", 100000,
	"BenchmarkRestartManyQueues: queues of one message each")

// BenchmarkRestartManyQueues: -store.restart.queues topics of one queue with
// one message each (RocketMQ's consume-queue file size, default mapping
// limit), then a clean Close and a Start of the same directory, timed; and
// the Go heap per queue after the restart. MQ_PROF=prefix writes CPU
// profiles of the stop (prefix-stop) and start (prefix-start).
//
//	go test -run '^$' -bench RestartManyQueues -benchtime 1x ./internal/store -args -store.restart.queues=100000
//
// MQ_NOWAIT=1 stops while the new queues still wait for their files;
// MQ_TEAR=1 tears the snapshot before the start (the fallback).
func BenchmarkRestartManyQueues(b *testing.B) {
	n := *restartQueues
	dir := b.TempDir()
	cfg := benchConfig(dir)
	cfg.MappedFileSizeCommitLog = 1 << 30
	s, err := New(cfg, testutil.DiscardLogger())
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	done := func(r PutResult) {
		if r.Status != PutOK {
			panic(r.Status.String())
		}
	}
	t0 := time.Now()
	for i := 0; i < n; i++ {
		m := benchMsg(0)
		m.Body = m.Body[:100]
		m.Topic = fmt.Sprintf("RQ-%07d", i)
		s.PutMessage(m, done)
	}
	for s.reputFrom.Load() < s.commitLog.maxOffset() || (os.Getenv("MQ_NOWAIT") == "" && s.creator.pendingQueues() > 0) {
		time.Sleep(time.Millisecond)
	}
	b.Logf("queues without a file at the stop: %d", s.creator.pendingQueues())
	b.Logf("%d queues written in %v", n, time.Since(t0))
	prof := os.Getenv("MQ_PROF")
	profile := func(name string, fn func()) time.Duration {
		if prof != "" {
			f, _ := os.Create(prof + "-" + name)
			pprof.StartCPUProfile(f)
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
		t := time.Now()
		fn()
		return time.Since(t)
	}
	b.ResetTimer()
	stop := profile("stop", func() {
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	})
	s = nil // the closed store's queues are garbage now
	if os.Getenv("MQ_TEAR") != "" {
		// A torn snapshot: the start falls back to the full load (or,
		// with queues left pending, to abnormal recovery).
		p := filepath.Join(dir, cqSnapshotFileName)
		if b, err := os.ReadFile(p); err == nil {
			os.WriteFile(p, b[:len(b)/2], 0o644)
		}
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	s2, err := New(cfg, testutil.DiscardLogger())
	if err != nil {
		b.Fatal(err)
	}
	start := profile("start", func() {
		if err := s2.Start(); err != nil {
			b.Fatal(err)
		}
	})
	b.StopTimer()
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	heap := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	if prof != "" {
		f, _ := os.Create(prof + "-heap")
		pprof.WriteHeapProfile(f)
		f.Close()
	}
	if got := s2.MaxOffsetInQueue(fmt.Sprintf("RQ-%07d", n-1), 0); got != 1 {
		b.Fatalf("max offset after restart %d, want 1", got)
	}
	b.ReportMetric(stop.Seconds(), "stop-s")
	b.ReportMetric(start.Seconds(), "start-s")
	b.ReportMetric(heap/float64(n), "heap-B/queue")
	b.Logf("%d queues: clean stop %v, start %v, heap %.0f B/queue, mapped %d, recovery %+v", n, stop, start, heap/float64(n), s2.mapper.mapped(), s2.Recovery())
	t1 := time.Now()
	s2.Close()
	b.Logf("second stop (nothing written) %v", time.Since(t1))
}
