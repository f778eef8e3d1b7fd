package store

import (
	"bufio"
	"flag"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/testutil"
)

var memTestBytes = flag.Int64("store.memtest.bytes", 0,
	"TestMemoryBounded: bytes to write with 1 GiB commit-log files (e.g. 4294967296); 0 skips")

// rssAnonKiB reads RssAnon (resident anonymous memory, i.e. RSS without
// page cache / file mappings) from /proc/self/status.
func rssAnonKiB() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "RssAnon:"); ok {
			n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return n
		}
	}
	return -1
}

// TestMemoryBounded writes -store.memtest.bytes of 1 KiB messages (ASYNC_FLUSH,
// 1 GiB files, index on) and reports peak anonymous RSS and Go heap: the
// store keeps no per-message heap object, so both stay flat however much is
// written.
//
//	go test -run TestMemoryBounded -v ./internal/store -args -store.memtest.bytes=4294967296
func TestMemoryBounded(t *testing.T) {
	if *memTestBytes <= 0 {
		t.Skip("set -store.memtest.bytes to run")
	}
	cfg := DefaultConfig()
	cfg.StorePathRootDir = t.TempDir()
	cfg.CleanupInitialDelay = time.Hour
	cfg.StoreHost = testConfig("").StoreHost
	s, err := New(cfg, testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var peakRSS, peakHeap atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if r := rssAnonKiB(); r > peakRSS.Load() {
				peakRSS.Store(r)
			}
			runtime.ReadMemStats(&ms)
			if h := int64(ms.HeapInuse); h > peakHeap.Load() {
				peakHeap.Store(h)
			}
		}
	}()
	m := benchMsg(0)
	sz := int64(recordSize())
	start := time.Now()
	var n int64
	for written := int64(0); written < *memTestBytes; written += sz {
		m.QueueID = int32(n % 8)
		m.Properties["KEYS"] = strconv.FormatInt(n, 10)
		s.PutMessage(m, func(r PutResult) {
			if r.Status != PutOK {
				t.Errorf("put: %v", r.Status)
			}
		})
		n++
	}
	el := time.Since(start)
	testutil.Eventually(t, 2*time.Minute, func() bool { return s.Stats().DispatchLagBytes == 0 })
	close(stop)
	<-sampled
	t.Logf("wrote %d messages (%.1f GiB) in %v (%.0f MB/s); peak RssAnon %d MiB, peak Go heap in use %d MiB",
		n, float64(n*sz)/(1<<30), el.Round(time.Millisecond), float64(n*sz)/el.Seconds()/1e6,
		peakRSS.Load()/1024, peakHeap.Load()>>20)
	if peakHeap.Load() > 256<<20 {
		t.Fatalf("Go heap grew to %d MiB while writing", peakHeap.Load()>>20)
	}
}
