//go:build unix

package remoting

import "syscall"

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
func (c *Conn) tryWriteFD(fd uintptr) bool {
	for {
		n, err := syscall.Write(int(fd), c.tryBuf)
		if err == syscall.EINTR {
			continue
		}
		c.tryN = max(n, 0)
		return true
	}
}
