package remoting

import (
	"fmt"
	"io"
	"net"
	"testing"
)

// BenchmarkWriteBatch: queueing a burst of frames (header + 1 KiB body) and
// resetting the batch, as the write loop does after each writev; the
// per-frame cost of the write queue without the syscall.
func BenchmarkWriteBatch(b *testing.B) {
	hdr := make([]byte, 40)
	for _, size := range []int{128, 1024, 16 << 10} {
		body := make([]byte, size)
		for _, burst := range []int{1, 32, 256, 2048} {
			b.Run(fmt.Sprintf("body=%d/burst=%d", size, burst), func(b *testing.B) {
				var wb writeBatch
				b.SetBytes(int64(burst * (len(hdr) + size)))
				b.ReportAllocs()
				for b.Loop() {
					for range burst {
						wb.add(hdr, body, nil, nil)
					}
					wb.finish(nil)
				}
			})
		}
	}
}

// BenchmarkWriteBatchTCP: bursts of 64 frames written with writeTo to a
// loopback TCP connection drained by another goroutine; cpu-ns/frame is
// the process CPU per frame, syscalls included (copying a body into the
// arena versus giving the kernel one more iovec).
func BenchmarkWriteBatchTCP(b *testing.B) {
	hdr := make([]byte, 40)
	for _, size := range []int{1024, 4 << 10, 16 << 10} {
		b.Run(fmt.Sprintf("body=%d", size), func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			done := make(chan struct{})
			go func() {
				defer close(done)
				nc, err := ln.Accept()
				if err != nil {
					return
				}
				defer nc.Close()
				_, _ = io.Copy(io.Discard, nc)
			}()
			nc, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			body := make([]byte, size)
			const burst = 64
			var wb writeBatch
			b.SetBytes(int64(burst * (len(hdr) + size)))
			start := cpuTime()
			for b.Loop() {
				for range burst {
					wb.add(hdr, body, nil, nil)
				}
				if err := wb.writeTo(nc); err != nil {
					b.Fatal(err)
				}
				wb.finish(nil)
			}
			b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N*burst), "cpu-ns/frame")
			nc.Close()
			<-done
		})
	}
}
