package ha

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/store"
	"github.com/apogeemq/apogee/internal/testutil"
)

// BenchmarkCatchUp measures how fast an empty slave copies a master's last
// commit-log file (64 KiB files are too small to measure: this uses 8 MiB)
// against the baseline of the same bytes over a raw loopback TCP
// connection into a buffer (x-baseline = replication time / raw time).
func BenchmarkCatchUp(b *testing.B) {
	const fileSize = 8 << 20
	mcfg := storeConfig(b.TempDir(), store.RoleAsyncMaster)
	mcfg.MappedFileSizeCommitLog = fileSize
	master, err := store.New(mcfg, testutil.DiscardLogger())
	if err != nil {
		b.Fatal(err)
	}
	if err := master.Start(); err != nil {
		b.Fatal(err)
	}
	defer master.Close()
	for i := 0; master.MaxPhyOffset() < fileSize-(64<<10); i++ {
		if r := put(b, master, newMsg("Bench", i, false)); r.Status != store.PutOK {
			b.Fatal(r.Status)
		}
	}
	total := master.MaxPhyOffset()
	scfg := testServerConfig()
	scfg.CommitLogFileSize = fileSize
	scfg.TransferBatchSize = DefaultServerConfig().TransferBatchSize
	srv, err := NewServer(scfg, master, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	raw := rawCopyTime(b, total)

	b.SetBytes(total)
	b.ReportAllocs()
	var elapsed time.Duration
	for b.Loop() {
		b.StopTimer()
		cfg := storeConfig(b.TempDir(), store.RoleSlave)
		cfg.MappedFileSizeCommitLog = fileSize
		slave, err := store.New(cfg, testutil.DiscardLogger())
		if err != nil {
			b.Fatal(err)
		}
		if err := slave.Start(); err != nil {
			b.Fatal(err)
		}
		c, err := NewClient(testClientConfig(srv.Addr().String()), slave, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if err := c.Start(); err != nil {
			b.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for slave.MaxPhyOffset() < total {
			if time.Now().After(deadline) {
				b.Fatal("slave never caught up")
			}
			time.Sleep(100 * time.Microsecond)
		}
		elapsed += time.Since(start)
		b.StopTimer()
		c.Close()
		slave.Close()
		b.StartTimer()
	}
	if b.N > 0 && raw > 0 {
		b.ReportMetric(float64(elapsed)/float64(b.N)/float64(raw), "x-baseline")
	}
}

// rawCopyTime is the best of 5 times to send n bytes over loopback TCP.
func rawCopyTime(b *testing.B, n int64) time.Duration {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	buf := make([]byte, 32<<10)
	var best time.Duration
	for range 5 {
		done := make(chan error, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				done <- err
				return
			}
			defer c.Close()
			_, err = io.CopyN(io.Discard, c, n)
			done <- err
		}()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for sent := int64(0); sent < n; sent += int64(len(buf)) {
			if _, err := c.Write(buf[:min(int64(len(buf)), n-sent)]); err != nil {
				b.Fatal(err)
			}
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		c.Close()
		if best == 0 || d < best {
			best = d
		}
	}
	return best
}
