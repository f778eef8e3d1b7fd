package timer

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/testutil"
)

// BenchmarkPendingTimerMemory measures what a million pending timers cost:
// heap (the wheel holds one map entry per occupied slot, nothing per
// timer) and timer-log disk (52 bytes per timer). The parked messages
// themselves live in the commit log and are not counted. Run with
// -benchtime=1x:
//
//	go test -run='^$' -bench=PendingTimerMemory -benchtime=1x ./internal/timer
func BenchmarkPendingTimerMemory(b *testing.B) {
	const timers = 1_000_000
	for _, spread := range []time.Duration{time.Hour, 24 * time.Hour, 72 * time.Hour} {
		b.Run("spread="+spread.String(), func(b *testing.B) {
			for b.Loop() {
				cfg := timerConfig(b.TempDir(), 1000)
				cfg.LogFileSize = 100 << 20
				l, err := openLog(cfg.Dir, cfg.LogFileSize, 0)
				if err != nil {
					b.Fatal(err)
				}
				now := time.Now().UnixMilli()
				now -= now % 1000
				tm := &Timer{cfg: cfg, log: l, wheel: make(map[int64]slot), readMs: now}
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				slots := spread.Milliseconds() / 1000
				for i := range int64(timers) {
					slotMs := now + 1000 + (i*7919)%slots*1000 // scattered, not sequential
					if err := tm.addLocked(now, slotMs, recordMagic, i*200, 200, 0, i); err != nil {
						b.Fatal(err)
					}
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				heap := float64(int64(after.HeapAlloc) - int64(before.HeapAlloc))
				b.ReportMetric(heap/(1<<20), "heap-MiB/1M-timers")
				b.ReportMetric(float64(l.diskBytes())/(1<<20), "disk-MiB/1M-timers")
				b.ReportMetric(float64(len(tm.wheel)), "slots")
				runtime.KeepAlive(tm)
				l.close()
			}
		})
	}
}

// BenchmarkDeliveryLateness sends timers through a real store and reports
// how late they reach their topic (store time minus requested delivery
// time) at two precisions. Run with -benchtime=1x:
//
//	go test -run='^$' -bench=DeliveryLateness -benchtime=1x ./internal/timer
func BenchmarkDeliveryLateness(b *testing.B) {
	for _, precision := range []int64{100, 1000} {
		b.Run(fmt.Sprintf("precision=%dms", precision), func(b *testing.B) {
			for b.Loop() {
				d := newDeliveries()
				e := openEnv(b, b.TempDir(), precision, d)
				const n = 2000
				base := time.Now().UnixMilli() + 500
				for i := range n {
					id := strconv.Itoa(i)
					at := base + int64(i)*3*precision/2000*1 + int64(i)%precision // spread over ~3 precisions, all phases
					d.want[id] = at
					e.putTimer(b, id, at, precision)
				}
				testutil.Eventually(b, 30*time.Second, func() bool { return d.count() == n }, "deliveries")
				d.mu.Lock()
				late := make([]float64, 0, n)
				for id, at := range d.at {
					late = append(late, float64(at[0]-d.want[id]))
				}
				d.mu.Unlock()
				slices.Sort(late)
				b.ReportMetric(late[len(late)/2], "p50-late-ms")
				b.ReportMetric(late[len(late)*99/100], "p99-late-ms")
				b.ReportMetric(late[len(late)-1], "max-late-ms")
				if late[0] < 0 {
					b.Fatalf("a timer was delivered %v ms early", -late[0])
				}
				e.close()
			}
		})
	}
}
