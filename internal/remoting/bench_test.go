package remoting

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

// The benchmarks measure their baseline in the same run, interleaved in
// chunks with the measured work, so that load from other processes (this
// machine is shared) hits both alike and the ratio stays meaningful. ns/op
// therefore includes the baseline's share; the metrics say what is what:
//
//	rpc-ns/op   mean wall time of the measured operation
//	raw-ns/op   mean wall time of the baseline operation
//	x-baseline  rpc-ns/op / raw-ns/op           (InvokeSync; target <= 1.5)
//	x-sync      sync-ns/op / rpc-ns/op          (pipelined; target >= 5)
//	cpu-ns/op   process CPU time per measured operation (load-independent)
//	raw-cpu-ns/op  process CPU time per baseline operation (InvokeSync)

const (
	benchBody  = 1024
	benchChunk = 256
)

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// codeEchoInline is echo run inline on the read loop (PoolConfig.Inline).
const codeEchoInline = protocol.RequestCode(9002)

func benchPair(b *testing.B) (*Client, string, context.Context) {
	b.Helper()
	s := startServer(b, ServerConfig{Logger: testutil.DiscardLogger()}, func(s *Server) {
		s.RegisterProcessor(codeEchoInline, echo, PoolConfig{Inline: true})
	})
	c := startClient(b, ClientConfig{Logger: testutil.DiscardLogger()})
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	b.Cleanup(cancel)
	addr := s.Addr().String()
	if _, err := c.InvokeSync(ctx, addr, protocol.NewRequest(codeEcho, nil, make([]byte, benchBody))); err != nil {
		b.Fatal(err)
	}
	return c, addr, ctx
}

// rawEcho is a bare loopback TCP connection to a goroutine that echoes
// length-prefixed frames: the floor for any RPC layer.
type rawEcho struct {
	ln      net.Listener
	nc      net.Conn
	wg      sync.WaitGroup
	out, in []byte
}

func newRawEcho(b *testing.B) *rawEcho {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	r := &rawEcho{ln: ln, out: make([]byte, 4+benchBody), in: make([]byte, 4+benchBody)}
	binary.BigEndian.PutUint32(r.out, benchBody)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		buf := make([]byte, 4+benchBody)
		for {
			if _, err := io.ReadFull(nc, buf[:4]); err != nil {
				return
			}
			l := binary.BigEndian.Uint32(buf)
			if _, err := io.ReadFull(nc, buf[4:4+l]); err != nil {
				return
			}
			if _, err := nc.Write(buf[:4+l]); err != nil {
				return
			}
		}
	}()
	if r.nc, err = net.Dial("tcp", ln.Addr().String()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(r.close)
	return r
}

func (r *rawEcho) roundTrip(b *testing.B) {
	if _, err := r.nc.Write(r.out); err != nil {
		b.Fatal(err)
	}
	if _, err := io.ReadFull(r.nc, r.in); err != nil {
		b.Fatal(err)
	}
}

func (r *rawEcho) close() {
	_ = r.nc.Close()
	_ = r.ln.Close()
	r.wg.Wait()
}

// BenchmarkInvokeSync: one caller, 1 KiB echo on loopback, against a raw
// TCP ping-pong of the same size; the echo processor on a worker pool
// (pool) and inline on the read loop (inline).
func BenchmarkInvokeSync(b *testing.B) {
	b.Run("pool", func(b *testing.B) { benchInvokeSync(b, codeEcho) })
	b.Run("inline", func(b *testing.B) { benchInvokeSync(b, codeEchoInline) })
}

func benchInvokeSync(b *testing.B, code protocol.RequestCode) {
	c, addr, ctx := benchPair(b)
	raw := newRawEcho(b)
	body := make([]byte, benchBody)
	b.SetBytes(benchBody)
	b.ReportAllocs()
	var rpcTime, rawTime, rpcCPU, rawCPU time.Duration
	var n, rawN int
	// Chunks alternate: benchChunk raw round trips, then benchChunk calls;
	// only chunk boundaries read the clocks.
	var chunkStart time.Time
	var chunkCPU time.Duration
	for b.Loop() {
		if n%benchChunk == 0 {
			if n > 0 {
				rpcTime += time.Since(chunkStart)
				rpcCPU += cpuTime() - chunkCPU
			}
			start, startCPU := time.Now(), cpuTime()
			for range benchChunk {
				raw.roundTrip(b)
			}
			rawTime += time.Since(start)
			rawCPU += cpuTime() - startCPU
			rawN += benchChunk
			chunkStart, chunkCPU = time.Now(), cpuTime()
		}
		if _, err := c.InvokeSync(ctx, addr, protocol.NewRequest(code, nil, body)); err != nil {
			b.Fatal(err)
		}
		n++
	}
	rpcTime += time.Since(chunkStart)
	rpcCPU += cpuTime() - chunkCPU
	rpc := float64(rpcTime.Nanoseconds()) / float64(n)
	rawNs := float64(rawTime.Nanoseconds()) / float64(rawN)
	b.ReportMetric(rpc, "rpc-ns/op")
	b.ReportMetric(rawNs, "raw-ns/op")
	b.ReportMetric(rpc/rawNs, "x-baseline")
	b.ReportMetric(float64(rpcCPU.Nanoseconds())/float64(n), "cpu-ns/op")
	b.ReportMetric(float64(rawCPU.Nanoseconds())/float64(rawN), "raw-cpu-ns/op")
}

// BenchmarkInvokeAsyncPipelined: 256 async calls in flight on one
// connection, against sync calls on the same client in the same run.
func BenchmarkInvokeAsyncPipelined(b *testing.B) {
	b.Run("pool", func(b *testing.B) { benchPipelined(b, codeEcho) })
	b.Run("inline", func(b *testing.B) { benchPipelined(b, codeEchoInline) })
}

func benchPipelined(b *testing.B, code protocol.RequestCode) {
	c, addr, ctx := benchPair(b)
	const window = 256
	body := make([]byte, benchBody)
	sem := make(chan struct{}, window)
	var wg sync.WaitGroup
	var failed atomic.Int64
	cb := func(_ *protocol.Command, err error) {
		if err != nil {
			failed.Add(1)
		}
		<-sem
		wg.Done()
	}
	b.SetBytes(benchBody)
	b.ReportAllocs()
	var asyncTime, syncTime, asyncCPU time.Duration
	var n, syncN int
	chunkStart, chunkCPU := time.Now(), cpuTime()
	for b.Loop() {
		sem <- struct{}{}
		wg.Add(1)
		if err := c.InvokeAsync(ctx, addr, protocol.NewRequest(code, nil, body), cb); err != nil {
			b.Fatal(err)
		}
		n++
		if n%(8*benchChunk) == 0 {
			wg.Wait() // close the async chunk, then a chunk of sync calls
			asyncTime += time.Since(chunkStart)
			asyncCPU += cpuTime() - chunkCPU
			start := time.Now()
			for range benchChunk / 8 {
				if _, err := c.InvokeSync(ctx, addr, protocol.NewRequest(code, nil, body)); err != nil {
					b.Fatal(err)
				}
			}
			syncTime += time.Since(start)
			syncN += benchChunk / 8
			chunkStart, chunkCPU = time.Now(), cpuTime()
		}
	}
	wg.Wait()
	asyncTime += time.Since(chunkStart)
	asyncCPU += cpuTime() - chunkCPU
	if failed.Load() > 0 {
		b.Fatalf("%d calls failed", failed.Load())
	}
	if syncN == 0 { // too short a run for a chunk: measure some sync calls now
		start := time.Now()
		for range benchChunk / 8 {
			if _, err := c.InvokeSync(ctx, addr, protocol.NewRequest(code, nil, body)); err != nil {
				b.Fatal(err)
			}
		}
		syncTime, syncN = time.Since(start), benchChunk/8
	}
	rpc := float64(asyncTime.Nanoseconds()) / float64(n)
	syncNs := float64(syncTime.Nanoseconds()) / float64(syncN)
	b.ReportMetric(rpc, "rpc-ns/op")
	b.ReportMetric(syncNs, "sync-ns/op")
	b.ReportMetric(syncNs/rpc, "x-sync")
	b.ReportMetric(float64(asyncCPU.Nanoseconds())/float64(n), "cpu-ns/op")
}
