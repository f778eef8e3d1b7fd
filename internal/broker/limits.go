package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Readiness and resource limits.
//
// The broker's port opens late: Start binds the socket first (the store
// needs the real port for STOREHOST, and a configured port is then held),
// but listens only once the store is recovered and the services run, then
// registers with the name servers and logs "broker ready". A connection
// attempt before that is refused by the kernel, so a TCP probe on
// listenPort (what RocketMQ deployments use) reports readiness.
//
// Descriptors: the broker holds none per queue or file, so open files grow
// with connections. guardListener keeps a headroom of descriptors free
// (for the store's brief opens and, in a standalone process, the name
// server): a connection accepted beyond it is closed at once and logged,
// and at EMFILE a spare descriptor is given up to accept and close the
// pending connection, so clients see a refusal instead of a hang.

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
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("broker: socket: %w", err)
	}
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

// openFDs counts this process's descriptors (-1 if unknown).
func openFDs() int {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return -1
	}
	defer d.Close()
	n := 0
	for {
		names, err := d.Readdirnames(4096)
		n += len(names)
		if err != nil {
			break
		}
	}
	return n - 1 // the directory itself
}

// fdHeadroom is how many descriptors guardListener keeps free.
func fdHeadroom(limit int) int { return max(32, limit/16) }

// guardListener refuses connections that would eat into the descriptor
// headroom (see the comment at the top of the file).
type guardListener struct {
	net.Listener
	logger *slog.Logger
	limit  int
	// estimate is the last count plus the connections accepted since; the
	// directory is only counted again when the estimate reaches the
	// threshold.
	estimate atomic.Int64
	spareMu  sync.Mutex
	spare    *os.File // guarded by spareMu
	refused  atomic.Int64
	lastLog  atomic.Int64 // unix ms of the last refusal log line
}

func newGuardListener(ln net.Listener, logger *slog.Logger) net.Listener {
	limit := fdLimit()
	if limit <= 0 {
		return ln
	}
	g := &guardListener{Listener: ln, logger: logger, limit: limit}
	g.spare, _ = os.Open(os.DevNull)
	g.estimate.Store(int64(openFDs()))
	return g
}

func (g *guardListener) Accept() (net.Conn, error) {
	for {
		c, err := g.Listener.Accept()
		if err != nil {
			if errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE) {
				g.refuseAtLimit()
			}
			return nil, err
		}
		threshold := int64(g.limit - fdHeadroom(g.limit))
		if g.estimate.Add(1) < threshold {
			return c, nil
		}
		n := int64(openFDs())
		g.estimate.Store(n)
		if n < threshold {
			return c, nil
		}
		c.Close()
		g.estimate.Add(-1)
		g.logRefusal(fmt.Sprintf("%d of %d open files in use, %d kept free", n, g.limit, fdHeadroom(g.limit)))
	}
}

// refuseAtLimit accepts and closes one pending connection with the spare
// descriptor, so the client is refused instead of waiting in the backlog.
func (g *guardListener) refuseAtLimit() {
	g.spareMu.Lock()
	defer g.spareMu.Unlock()
	if g.spare != nil {
		g.spare.Close()
		g.spare = nil
	}
	if tl, ok := g.Listener.(*net.TCPListener); ok {
		_ = tl.SetDeadline(time.Now().Add(10 * time.Millisecond))
		if c, err := tl.Accept(); err == nil {
			c.Close()
		}
		_ = tl.SetDeadline(time.Time{})
	}
	g.spare, _ = os.Open(os.DevNull)
	g.logRefusal("accept: too many open files")
}

func (g *guardListener) logRefusal(why string) {
	n := g.refused.Add(1)
	now := time.Now().UnixMilli()
	if last := g.lastLog.Load(); now-last >= 1000 && g.lastLog.CompareAndSwap(last, now) {
		g.logger.Warn("refusing client connection: open files limit (raise ulimit -n / LimitNOFILE)",
			"why", why, "limit", g.limit, "refusedSoFar", n)
	}
}

func (g *guardListener) Close() error {
	g.spareMu.Lock()
	if g.spare != nil {
		g.spare.Close()
		g.spare = nil
	}
	g.spareMu.Unlock()
	return g.Listener.Close()
}

// logResourceLimits says at start what the broker may run short of: open
// files, memory maps, disk.
func (b *Broker) logResourceLimits() {
	limit := fdLimit()
	maps := -1
	if raw, err := os.ReadFile("/proc/sys/vm/max_map_count"); err == nil {
		maps, _ = strconv.Atoi(strings.TrimSpace(string(raw)))
	}
	var st unix.Statfs_t
	free := int64(-1)
	if unix.Statfs(b.cfg.Store.StorePathRootDir, &st) == nil {
		free = int64(st.Bavail) * int64(st.Bsize)
	}
	b.logger.Info("resource limits", "openFilesLimit", limit, "openFiles", openFDs(),
		"maxMapCount", maps, "diskFreeBytes", free, "topics", b.Topics.Len())
	if limit > 0 && limit < 4096 {
		b.logger.Warn("open files limit is low: client connections beyond it are refused; raise ulimit -n / LimitNOFILE",
			"openFilesLimit", limit, "keptFree", fdHeadroom(limit))
	}
	if maps > 0 && maps < 16384 {
		b.logger.Warn("vm.max_map_count is low: consume-queue files are unmapped more often", "maxMapCount", maps)
	}
}
