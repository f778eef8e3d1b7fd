//go:build unix

package broker

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// reservedPort is a TCP socket bound to the broker's address but not yet
// listening.
type reservedPort struct {
	fd   int
	port int
	once sync.Once
}

// reservePort binds bindAddr:port (0 = any free port) without listening.
func reservePort(bindAddr string, port int) (*reservedPort, error) {
	ip := net.ParseIP(bindAddr)
	if bindAddr == "" {
		ip = net.IPv4zero
	}
	if ip == nil {
		addrs, err := net.LookupIP(bindAddr)
		if err != nil || len(addrs) == 0 {
			return nil, fmt.Errorf("broker: bind address %q: %v", bindAddr, err)
		}
		ip = addrs[0]
	}
	family := unix.AF_INET6
	var sa unix.Sockaddr
	if ip4 := ip.To4(); ip4 != nil {
		family = unix.AF_INET
		a := &unix.SockaddrInet4{Port: port}
		copy(a.Addr[:], ip4)
		sa = a
	} else {
		a := &unix.SockaddrInet6{Port: port}
		copy(a.Addr[:], ip.To16())
		sa = a
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM, 0)
	if err != nil {
		return nil, fmt.Errorf("broker: socket: %w", err)
	}
	unix.CloseOnExec(fd) // SOCK_CLOEXEC is Linux-only
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("broker: socket option: %w", err)
	}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("broker: bind %s: %w", net.JoinHostPort(bindAddr, strconv.Itoa(port)), err)
	}
	got, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("broker: getsockname: %w", err)
	}
	rp := &reservedPort{fd: fd}
	switch a := got.(type) {
	case *unix.SockaddrInet4:
		rp.port = a.Port
	case *unix.SockaddrInet6:
		rp.port = a.Port
	}
	return rp, nil
}

// listen turns the socket into a listener (remoting.ServerConfig.Listen;
// the address arguments are those of the bound socket).
func (r *reservedPort) listen(string, string) (net.Listener, error) {
	if err := unix.Listen(r.fd, unix.SOMAXCONN); err != nil {
		return nil, fmt.Errorf("broker: listen: %w", err)
	}
	f := os.NewFile(uintptr(r.fd), "broker-listener")
	ln, err := net.FileListener(f) // dups the descriptor
	f.Close()
	r.once.Do(func() {})
	if err != nil {
		return nil, fmt.Errorf("broker: listen: %w", err)
	}
	return ln, nil
}

// close releases a socket that never listened.
func (r *reservedPort) close() {
	r.once.Do(func() { unix.Close(r.fd) })
}

// fdLimit is RLIMIT_NOFILE's soft limit (0 if unknown).
func fdLimit() int {
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) != nil || rl.Cur > 1<<30 {
		return 0
	}
	return int(rl.Cur)
}

// tooManyFiles reports descriptor exhaustion (EMFILE, ENFILE).
func tooManyFiles(err error) bool { return errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE) }

// diskFree is the space available to the broker under dir (-1 if unknown).
func diskFree(dir string) int64 {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return -1
	}
	return int64(st.Bavail) * int64(st.Bsize)
}
