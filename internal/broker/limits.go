package broker

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
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
			if tooManyFiles(err) {
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
	free := diskFree(b.cfg.Store.StorePathRootDir)
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
