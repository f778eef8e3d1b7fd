package store

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/testutil"
)

// Benchmarks (1 KiB bodies, 64 MiB commit-log files in b.TempDir). Each
// measures its baseline in the same run and reports the ratio as
// "x-baseline":
//
//	go test -run '^$' -bench . -benchtime 2s ./internal/store

const benchBody = 1024

func benchConfig(dir string) Config {
	cfg := DefaultConfig()
	cfg.StorePathRootDir = dir
	cfg.MappedFileSizeCommitLog = 64 << 20
	cfg.MessageIndexEnable = false
	cfg.CleanupInitialDelay = time.Hour
	cfg.StoreHost = netip.MustParseAddrPort("10.0.0.1:10911")
	return cfg
}

func benchStore(b *testing.B, cfg Config) *Store {
	b.Helper()
	s, err := New(cfg, testutil.DiscardLogger())
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

var benchPayload = bytes.Repeat([]byte("x"), benchBody)

func benchMsg(qid int32) *message.Ext {
	m := &message.Ext{QueueID: qid, BornTimestamp: 1, BornHost: netip.MustParseAddrPort("10.0.0.2:4000")}
	m.Topic = "BenchTopic"
	m.Body = benchPayload
	m.Properties = map[string]string{message.PropertyTags: "TagA", message.PropertyUniqClientMessageIDKeyidx: "0A0000020FA0000000000000000000AB"}
	return m
}

// recordSize is the stored size of benchMsg.
func recordSize() int {
	m := benchMsg(0)
	m.StoreHost = netip.MustParseAddrPort("10.0.0.1:10911")
	rec, _ := message.AppendStored(nil, m)
	return len(rec)
}

// mmapBaseline copies records into fresh mapped files of fileSize bytes,
// rolling like the commit log: the "plain copy into a mapped file" baseline.
type mmapBaseline struct {
	dir      string
	fileSize int64
	rec      []byte
	data     []byte
	pos      int64
	files    int
}

func newMmapBaseline(b *testing.B, sz int, fileSize int64) *mmapBaseline {
	return &mmapBaseline{dir: b.TempDir(), fileSize: fileSize, rec: bytes.Repeat([]byte{7}, sz)}
}

func (m *mmapBaseline) run(b *testing.B, n int) time.Duration {
	start := time.Now()
	sz := int64(len(m.rec))
	for i := 0; i < n; i++ {
		if m.data == nil || m.pos+sz+8 > m.fileSize {
			m.close()
			path := filepath.Join(m.dir, fileName(int64(m.files)*m.fileSize))
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			f.Truncate(m.fileSize)
			m.data, err = unix.Mmap(int(f.Fd()), 0, int(m.fileSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
			f.Close()
			os.Remove(path) // keep disk use flat; the mapping stays valid
			if err != nil {
				b.Fatal(err)
			}
			m.files++
			m.pos = 0
		}
		copy(m.data[m.pos:], m.rec)
		m.pos += sz
	}
	return time.Since(start)
}

func (m *mmapBaseline) close() {
	if m.data != nil {
		unix.Munmap(m.data)
		m.data = nil
	}
}

// BenchmarkPutAsyncFlush: one writer, ASYNC_FLUSH, vs copying the same
// bytes into a mapped file. Target ratio >= 0.5. warm=true enables
// warmMapedFileEnable (background MADV_POPULATE_WRITE).
func BenchmarkPutAsyncFlush(b *testing.B) {
	for _, warm := range []bool{false, true} {
		b.Run("warm="+strconv.FormatBool(warm), func(b *testing.B) {
			cfg := benchConfig(b.TempDir())
			cfg.WarmMapedFileEnable = warm
			benchPutAsync(b, cfg)
		})
	}
}

func benchPutAsync(b *testing.B, cfg Config) {
	s := benchStore(b, cfg)
	sz := recordSize()
	b.SetBytes(int64(sz))
	b.ReportAllocs()
	bl := newMmapBaseline(b, sz, cfg.MappedFileSizeCommitLog)
	defer bl.close()
	done := func(r PutResult) {
		if r.Status != PutOK {
			panic(r.Status.String())
		}
	}
	m := benchMsg(0)
	storeDur, baseDur := interleaved(b, 2000, func() { s.PutMessage(m, done) }, bl.run)
	b.ReportMetric(float64(baseDur)/float64(storeDur), "x-baseline")
}

// interleaved runs op once per b.Loop iteration and, with the timer
// stopped, baseline(b, chunk) after every chunk iterations (and baseline
// for the remainder at the end), so store and baseline see the same disk
// and page-cache conditions. It returns the time spent in each.
func interleaved(b *testing.B, chunk int, op func(), baseline func(*testing.B, int) time.Duration) (opDur, baseDur time.Duration) {
	n := 0
	t0 := time.Now()
	for b.Loop() {
		op()
		n++
		if n%chunk == 0 {
			opDur += time.Since(t0)
			b.StopTimer()
			baseDur += baseline(b, chunk)
			b.StartTimer()
			t0 = time.Now()
		}
	}
	opDur += time.Since(t0)
	b.StopTimer()
	if rest := n % chunk; rest > 0 {
		baseDur += baseline(b, rest)
	}
	return opDur, baseDur
}

// forWriteModes runs bench under SYNC_FLUSH with staged (pwrite) appends
// and with the transient pool (committed into the mapping, msync), as
// sub-benchmarks.
func forWriteModes(b *testing.B, bench func(*testing.B, Config)) {
	for _, pool := range []bool{false, true} {
		b.Run(fmt.Sprintf("transientStorePoolEnable=%v", pool), func(b *testing.B) {
			cfg := benchConfig(b.TempDir())
			cfg.FlushDiskType = SyncFlush
			cfg.TransientStorePoolEnable = pool
			bench(b, cfg)
		})
	}
}

// BenchmarkPutSyncFlush: one writer waiting for each SYNC_FLUSH put vs a
// raw pwrite+fdatasync loop of the same size. Target ratio >= 0.8. Store and
// baseline alternate in chunks so both see the same disk conditions.
func BenchmarkPutSyncFlush(b *testing.B) { forWriteModes(b, benchPutSync) }

func benchPutSync(b *testing.B, cfg Config) {
	s := benchStore(b, cfg)
	sz := recordSize()
	b.SetBytes(int64(sz))
	ch := make(chan PutResult, 1)
	m := benchMsg(0)
	bl := newSyncBaseline(b, sz)
	defer bl.f.Close()
	storeDur, baseDur := interleaved(b, 50, func() {
		if r := putWait(s, m, ch); r.Status != PutOK {
			b.Fatal(r.Status)
		}
	}, bl.run)
	b.ReportMetric(float64(baseDur)/float64(storeDur), "x-baseline")
}

// syncBaseline does pwrite+fdatasync of sz bytes into a pre-sized file.
type syncBaseline struct {
	f   *os.File
	rec []byte
	off int64
}

func newSyncBaseline(b *testing.B, sz int) *syncBaseline {
	f, err := os.Create(filepath.Join(b.TempDir(), "baseline"))
	if err != nil {
		b.Fatal(err)
	}
	f.Truncate(64 << 20)
	return &syncBaseline{f: f, rec: bytes.Repeat([]byte{7}, sz)}
}

func (bl *syncBaseline) run(b *testing.B, n int) time.Duration {
	start := time.Now()
	for i := 0; i < n; i++ {
		if _, err := bl.f.WriteAt(bl.rec, bl.off); err != nil {
			b.Fatal(err)
		}
		if err := fdatasync(bl.f); err != nil {
			b.Fatal(err)
		}
		bl.off = (bl.off + int64(len(bl.rec))) % (64<<20 - int64(len(bl.rec)))
	}
	return time.Since(start)
}

// BenchmarkPutSyncFlush64Writers: 64 concurrent writers under SYNC_FLUSH
// (group commit) vs the 1-writer SYNC_FLUSH throughput, measured in
// alternating phases of the same run. Target ratio >= 20.
func BenchmarkPutSyncFlush64Writers(b *testing.B) { forWriteModes(b, benchSync64) }

func benchSync64(b *testing.B, cfg Config) {
	s := benchStore(b, cfg)
	sz := recordSize()
	b.SetBytes(int64(sz))
	const writers, phases, single = 64, 4, 100
	ch := make(chan PutResult, 1)
	var singleDur, multiDur time.Duration
	var multiMsgs int64
	b.ResetTimer()
	for p := 0; p < phases; p++ {
		b.StopTimer()
		t0 := time.Now()
		for i := 0; i < single; i++ {
			putWait(s, benchMsg(0), ch)
		}
		singleDur += time.Since(t0)
		b.StartTimer()
		total := int64(b.N/phases + 1)
		var issued atomic.Int64
		var wg sync.WaitGroup
		t1 := time.Now()
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ch := make(chan PutResult, 1)
				m := benchMsg(int32(w % 8))
				for issued.Add(1) <= total {
					if r := putWait(s, m, ch); r.Status != PutOK {
						b.Error(r.Status)
						return
					}
				}
			}()
		}
		wg.Wait()
		multiDur += time.Since(t1)
		multiMsgs += total
	}
	b.StopTimer()
	singleRate := float64(phases*single) / singleDur.Seconds()
	rate := float64(multiMsgs) / multiDur.Seconds()
	st := s.Stats()
	b.ReportMetric(rate, "msgs/s")
	b.ReportMetric(singleRate, "1-writer-msgs/s")
	b.ReportMetric(float64(st.PutMessages)/float64(max(st.Flushes, 1)), "msgs/sync")
	b.ReportMetric(rate/singleRate, "x-baseline")
}

// BenchmarkGetFromPageCache: reading a queue back (32 messages per
// GetMessage) vs the ASYNC_FLUSH write throughput of the same run (write
// chunks on another queue alternate with the reads). Target ratio >= 2.
func BenchmarkGetFromPageCache(b *testing.B) {
	s := benchStore(b, benchConfig(b.TempDir()))
	const n = 50000
	m := benchMsg(0)
	for i := 0; i < n; i++ {
		s.PutMessage(m, func(PutResult) {})
	}
	testutil.Eventually(b, 30*time.Second, func() bool { return s.MaxOffsetInQueue("BenchTopic", 0) == n })
	b.SetBytes(int64(recordSize()))
	b.ReportAllocs()
	w := benchMsg(1)
	var readDur, writeDur time.Duration
	var writes int
	off := int64(0)
	msgs, calls := 0, 0
	t0 := time.Now()
	for b.Loop() {
		r := s.GetMessage("g", "BenchTopic", 0, off, 32, 1<<20, nil)
		if r.Status != Found {
			b.Fatal(r.Status)
		}
		msgs += len(r.Messages)
		off = r.NextBeginOffset
		if off >= n {
			off = 0
		}
		if calls++; calls%100 == 0 {
			readDur += time.Since(t0)
			b.StopTimer()
			t1 := time.Now()
			for i := 0; i < 1000; i++ {
				s.PutMessage(w, func(PutResult) {})
			}
			writeDur += time.Since(t1)
			writes += 1000
			b.StartTimer()
			t0 = time.Now()
		}
	}
	readDur += time.Since(t0)
	b.StopTimer()
	if writes == 0 {
		t1 := time.Now()
		for i := 0; i < 1000; i++ {
			s.PutMessage(w, func(PutResult) {})
		}
		writeDur, writes = time.Since(t1), 1000
	}
	readRate := float64(msgs) / readDur.Seconds()
	writeRate := float64(writes) / writeDur.Seconds()
	b.ReportMetric(readRate, "read-msgs/s")
	b.ReportMetric(writeRate, "write-msgs/s")
	b.ReportMetric(readRate/writeRate, "x-baseline")
}

func putWait(s *Store, m *message.Ext, ch chan PutResult) PutResult {
	s.PutMessage(m, func(r PutResult) { ch <- r })
	return <-ch
}
