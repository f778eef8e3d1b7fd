//go:build unix

package remoting

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (*net.TCPConn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

func newRawWriter(t *testing.T, c *net.TCPConn) *rawWriter {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	w := &rawWriter{rc: rc}
	w.fn = w.writeFD
	return w
}

// The raw writev path writes every byte in order: more segments than
// IOV_MAX, more bytes than one call's bound and than the socket buffer
// (so it waits in the poller for a slow reader), empty segments, and a
// segment that straddles a call's byte bound.
func TestRawWriterWritesEverything(t *testing.T) {
	c, s := tcpPair(t)
	_ = c.SetWriteBuffer(64 << 10)
	w := newRawWriter(t, c)
	var want []byte
	var bufs [][]byte
	for i := range 3000 {
		n := (i * 37) % 700
		if i%500 == 0 {
			n = 3 << 20 / 2 // 1.5 MiB: straddles maxWritevBytes
		}
		b := bytes.Repeat([]byte{byte(i)}, n)
		bufs = append(bufs, b)
		want = append(want, b...)
	}
	got := make(chan []byte, 1)
	go func() {
		var out []byte
		buf := make([]byte, 4096)
		for len(out) < len(want) {
			time.Sleep(time.Microsecond) // a slow reader: the writer meets a full socket buffer
			n, err := s.Read(buf)
			out = append(out, buf[:n]...)
			if err != nil {
				break
			}
		}
		got <- out
	}()
	if err := w.write(bufs); err != nil {
		t.Fatal(err)
	}
	if out := <-got; !bytes.Equal(out, want) {
		t.Fatalf("read %d bytes, want %d (or bytes differ)", len(out), len(want))
	}
	for _, v := range w.iov[:cap(w.iov)] {
		if v.Base != nil {
			t.Fatal("iovec still references a written segment")
		}
	}
}

// A write deadline still ends a raw write to a peer that does not read,
// and a closed socket reports an error instead of hanging.
func TestRawWriterDeadlineAndClose(t *testing.T) {
	c, _ := tcpPair(t)
	w := newRawWriter(t, c)
	big := [][]byte{make([]byte, 64<<20)}
	_ = c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
	err := w.write(big)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write past the deadline: %v, want ErrDeadlineExceeded", err)
	}
	_ = c.SetWriteDeadline(time.Time{})
	c.Close()
	if err := w.write(big); err == nil {
		t.Fatal("write on a closed socket succeeded")
	}
}

// A peer that resets the connection makes the raw write fail with the
// system call's error.
func TestRawWriterPeerReset(t *testing.T) {
	c, s := tcpPair(t)
	w := newRawWriter(t, c)
	_ = s.SetLinger(0)
	s.Close()
	var err error
	for range 100 { // the reset arrives after the first write
		if err = w.write([][]byte{make([]byte, 1<<20)}); err != nil {
			break
		}
	}
	if !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.ErrShortWrite) {
		t.Fatalf("write to a reset peer: %v", err)
	}
}
