//go:build unix

package remoting

import (
	"io"
	"os"
	"syscall"
	"unsafe"
)

// initTryWrite enables writing in place on plain TCP connections: the
// frames go out with one non-blocking write(2) on the socket.
func (c *Conn) initTryWrite() {
	sc, ok := c.raw.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	c.rawc = rc
	c.tryFn = c.tryWriteFD // bound once: no closure per write
}

// tryWriteFD writes c.tryBuf once without blocking (Go's sockets are
// non-blocking) and records how much the kernel took. REQUIRES: c.wmu held.
//
// The write is a raw system call (no entersyscall): on a non-blocking
// socket it returns at once, and what it writes is bounded (one contiguous
// chunk, at most one 64 KiB body plus headers; larger batches go through
// the write loop). Entering it through the scheduler (syscall.Write) wakes
// the runtime's sysmon thread when it sleeps because every P was idle, and
// sysmon then polls every 20 us until it has found nothing to do for 1 ms;
// a request-response exchange that idles between messages (a consumer's
// pulls) pays that wake-up and polling on almost every message.
func (c *Conn) tryWriteFD(fd uintptr) bool {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(c.tryBuf))), uintptr(len(c.tryBuf)))
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			n = 0
		}
		c.tryN = int(n)
		return true
	}
}

// rawReader reads a plain TCP socket with raw, non-blocking read(2) calls
// (for the reason tryWriteFD gives; a read copies at most the bufio
// buffer), waiting in the poller when there is nothing to read, with the
// connection's deadlines. Owned by the read loop.
type rawReader struct {
	rc  syscall.RawConn
	fn  func(fd uintptr) bool // readFD, bound once
	p   []byte
	n   int
	err error
}

// reader returns what the read loop reads frames from: a rawReader on
// plain TCP (c.rawc set), else c.rw.
func (c *Conn) reader() io.Reader {
	if c.rawc == nil {
		return c.rw
	}
	r := &rawReader{rc: c.rawc}
	r.fn = r.readFD
	return r
}

func (r *rawReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.p, r.n, r.err = p, 0, nil
	err := r.rc.Read(r.fn)
	r.p = nil
	switch {
	case err != nil:
		return 0, err
	case r.err != nil:
		return 0, r.err
	case r.n == 0:
		return 0, io.EOF
	}
	return r.n, nil
}

func (r *rawReader) readFD(fd uintptr) bool {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(r.p))), uintptr(len(r.p)))
		switch e {
		case 0:
			r.n = int(n)
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false // wait until readable
		default:
			r.err = os.NewSyscallError("read", e)
			return true
		}
	}
}
