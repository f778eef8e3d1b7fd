//go:build windows

package broker

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"

	"golang.org/x/sys/windows"
)

// On Windows the broker's port is bound and listening from reservePort on
// (no bind-without-listen through the standard library): a connection
// that arrives before the broker is ready waits in the backlog instead of
// being refused, and readiness is the "broker ready" log line.
type reservedPort struct {
	ln   net.Listener
	port int
	once sync.Once
}

func reservePort(bindAddr string, port int) (*reservedPort, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(bindAddr, strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("broker: listen: %w", err)
	}
	return &reservedPort{ln: ln, port: ln.Addr().(*net.TCPAddr).Port}, nil
}

func (r *reservedPort) listen(string, string) (net.Listener, error) {
	r.once.Do(func() {})
	return r.ln, nil
}

func (r *reservedPort) close() { r.once.Do(func() { r.ln.Close() }) }

// fdLimit: Windows has no descriptor limit of RLIMIT_NOFILE's kind.
func fdLimit() int { return 0 }

func tooManyFiles(err error) bool { return errors.Is(err, windows.WSAEMFILE) }

func diskFree(dir string) int64 {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return -1
	}
	var avail, total, free uint64
	if windows.GetDiskFreeSpaceEx(p, &avail, &total, &free) != nil {
		return -1
	}
	return int64(avail)
}
