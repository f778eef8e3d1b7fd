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
	w := &rawWriter{rc: rc}
	w.fn = w.writeFD
	c.writeRaw = w.write
}

// maxWritevIov and maxWritevBytes bound one raw writev(2): IOV_MAX
// segments, and bytes copied by one call that no scheduler hand-off can
// interrupt (the kernel takes at most the socket buffer's free space
// anyway).
const (
	maxWritevIov   = 1024
	maxWritevBytes = 1 << 20
)

// rawWriter writes the write loop's batches on plain TCP with raw,
// non-blocking writev(2) calls, for the reason tryWriteFD gives (the write
// loop of a connection that idles between bursts otherwise wakes sysmon on
// every burst), waiting in the poller while the socket buffer is full, so
// the connection's write deadline still applies. Owned by the write loop.
type rawWriter struct {
	rc   syscall.RawConn
	fn   func(fd uintptr) bool // writeFD, bound once
	bufs [][]byte              // what is left to write
	iov  []syscall.Iovec
	used int // the most iovecs one call of this write filled
	err  error
}

// write writes every byte of bufs, or returns the error that stopped it.
// It may reslice bufs' elements (as net.Buffers does).
func (w *rawWriter) write(bufs [][]byte) error {
	w.bufs, w.err = bufs, nil
	err := w.rc.Write(w.fn)
	w.bufs = nil
	clear(w.iov[:w.used]) // drop the references to the written bodies
	w.iov, w.used = w.iov[:0], 0
	if err != nil {
		return err
	}
	return w.err
}

func (w *rawWriter) writeFD(fd uintptr) bool {
	for len(w.bufs) > 0 {
		w.iov = w.iov[:0]
		total := 0
		for _, b := range w.bufs {
			if len(w.iov) == maxWritevIov || total == maxWritevBytes {
				break
			}
			if len(b) == 0 {
				continue
			}
			n := min(len(b), maxWritevBytes-total)
			w.iov = append(w.iov, syscall.Iovec{Base: unsafe.SliceData(b)})
			w.iov[len(w.iov)-1].SetLen(n)
			total += n
		}
		if total == 0 {
			w.bufs = nil
			break
		}
		w.used = max(w.used, len(w.iov))
		raceReleaseIO()
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(unsafe.SliceData(w.iov))), uintptr(len(w.iov)))
		switch e {
		case 0:
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false // wait until writable (or the deadline)
		default:
			w.err = os.NewSyscallError("writev", e)
			return true
		}
		if n == 0 {
			w.err = io.ErrShortWrite
			return true
		}
		w.consume(int(n))
	}
	return true
}

// consume drops the first n written bytes from w.bufs.
func (w *rawWriter) consume(n int) {
	for n > 0 {
		if l := len(w.bufs[0]); n >= l {
			w.bufs[0] = nil
			w.bufs = w.bufs[1:]
			n -= l
			continue
		}
		w.bufs[0] = w.bufs[0][n:]
		n = 0
	}
	for len(w.bufs) > 0 && len(w.bufs[0]) == 0 {
		w.bufs = w.bufs[1:]
	}
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
	raceReleaseIO()
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
			if n > 0 {
				raceAcquireIO()
			}
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
