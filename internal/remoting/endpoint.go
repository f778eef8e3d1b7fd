package remoting

import (
	"errors"
	"slices"

	"context"
	"crypto/tls"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/run"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// endpoint is what a Server and a Client share: the connections they own,
// the goroutines they start, the processor table for requests arriving on
// those connections, connection listeners and the idle scanner.
type endpoint struct {
	logger     *slog.Logger
	maxFrame   int           // largest frame including its length word
	readBuf    int           // bufio size of each connection's reader
	idle       time.Duration // close connections without reads or writes for this long; 0 = never
	serverTLS  *tls.Config   // accepted connections: permissive TLS when set
	tlsEnforce bool          // with serverTLS: plain connections are refused
	// extListCodes: requests decoded with ExtList (ServerConfig.ExtListCodes)
	extListCodes []protocol.RequestCode
	// respListCodes: requests whose ROCKETMQ responses are decoded with
	// ExtList (ClientConfig.ExtListResponseCodes)
	respListCodes []protocol.RequestCode
	// recycled: the buffers of large frames, reused once unreachable
	// (clients: pull answers); nil on servers.
	recycled *protocol.RecycledFrames

	dispatcher
	listeners atomic.Pointer[[]ConnListener] // copy-on-write

	counters
	draining atomic.Bool  // Server.Shutdown: refuse new requests
	inFlight atomic.Int64 // requests queued or running on a pool
	// Per-endpoint pools (never package-level: no state shared between
	// Servers and Clients, and nothing escapes a synctest bubble).
	headerBufs  sync.Pool // *[]byte scratch for encoding frame headers outside the write lock
	syncFutures sync.Pool // *future for sync calls

	opaque     atomic.Int32  // last opaque used for requests we send
	nextConnID atomic.Uint64 // last Conn id handed out

	// routines owns every goroutine of the endpoint (read and write loops,
	// workers, accept loop, scanners). ctx is its context (processors and
	// handshakes run under it) and quit its Done channel (stops workers
	// and the scanner); shutdown stops the group.
	routines *run.Group
	ctx      context.Context
	quit     <-chan struct{}

	mu    sync.Mutex
	conns map[*Conn]struct{} // open connections; guarded by mu
	// closing: no connection may be registered; guarded by mu. Set under
	// mu before routines stops, so a startConn holding mu with closing
	// false always gets its read loop started.
	closing bool

	shutdownOnce sync.Once

	// onClosed, if set, runs on the read loop after a Conn closed (the
	// Client drops it from its address table).
	onClosed func(*Conn)
}

func newEndpoint(logger *slog.Logger, maxFrame int, idle time.Duration) *endpoint {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrameSize
	}
	switch {
	case idle == 0:
		idle = DefaultIdleTimeout
	case idle < 0:
		idle = 0
	}
	routines := run.NewGroup("remoting")
	ep := &endpoint{
		logger:   logger,
		maxFrame: maxFrame,
		readBuf:  readBufSize,
		idle:     idle,
		routines: routines,
		ctx:      routines.Context(),
		quit:     routines.Done(),
		conns:    make(map[*Conn]struct{}),
	}
	ep.headerBufs.New = newHeaderBuf
	ep.syncFutures.New = newSyncFuture
	ep.dispatcher.init(ep)
	return ep
}

// goFunc starts fn on a goroutine of ep.routines. It refuses (false) once
// shutdown has begun.
func (ep *endpoint) goFunc(name string, fn func()) bool {
	return ep.routines.Go(name, func(context.Context) { fn() })
}

// startConn registers a new connection and starts its read loop (which
// starts its write loop). It closes raw and returns false once shutdown
// has begun.
func (ep *endpoint) startConn(raw, rw net.Conn, serverTLS *tls.Config) (*Conn, bool) {
	c := newConn(ep, raw, rw)
	if serverTLS == nil && raw == rw {
		c.initTryWrite() // plain TCP: frames may be written in place
	}
	ep.mu.Lock()
	if ep.closing {
		ep.mu.Unlock()
		_ = raw.Close()
		return nil, false
	}
	ep.conns[c] = struct{}{}
	ep.connsOpened.Add(1)
	// closing is false under mu, so the group is not stopped: Go succeeds.
	ep.routines.Go("read", func(context.Context) { c.readLoop(serverTLS) })
	ep.mu.Unlock()
	return c, true
}

func (ep *endpoint) connOpened(c *Conn) {
	c.logger.Debug("remoting: connection open", "local", c.local)
	for _, l := range ep.listenerList() {
		l.OnConnect(c)
	}
}

// connClosed runs on c's read loop once c has ended.
func (ep *endpoint) connClosed(c *Conn, reason error) {
	ep.mu.Lock()
	delete(ep.conns, c)
	ep.mu.Unlock()
	if ep.onClosed != nil {
		ep.onClosed(c)
	}
	var ls []ConnListener
	if c.opened { // a connection refused during setup was never announced
		ls = ep.listenerList()
	}
	if errors.Is(reason, protocol.ErrBadFrame) || errors.Is(reason, protocol.ErrFrameTooLarge) {
		ep.codecErrors.Add(1)
	}
	if !normalClose(reason) {
		c.logger.Warn("remoting: closing connection", "reason", reason)
		for _, l := range ls {
			l.OnException(c, reason)
		}
	} else {
		c.logger.Debug("remoting: connection closed", "reason", reason)
	}
	for _, l := range ls {
		l.OnClose(c)
	}
}

func (ep *endpoint) addListener(l ConnListener) {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	var next []ConnListener
	if cur := ep.listeners.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, l)
	ep.listeners.Store(&next)
}

func (ep *endpoint) listenerList() []ConnListener {
	if p := ep.listeners.Load(); p != nil {
		return *p
	}
	return nil
}

// idleLoop closes connections that neither read nor wrote for ep.idle.
func (ep *endpoint) idleLoop() {
	tick := min(ep.idle/4, time.Second)
	run.Every(ep.ctx, tick, func(context.Context) {
		now := time.Now()
		limit := now.Add(-ep.idle).UnixNano()
		for _, c := range ep.snapshot() {
			if c.active.Swap(false) {
				c.lastActive.Store(now.UnixNano())
				continue
			}
			if c.lastActive.Load() >= limit {
				continue
			}
			c.logger.Info("remoting: closing idle connection", "idle", ep.idle)
			for _, l := range ep.listenerList() {
				l.OnIdle(c)
			}
			ep.idleClosed.Add(1)
			c.closeWith(errIdle)
		}
	})
}

func (ep *endpoint) snapshot() []*Conn {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	out := make([]*Conn, 0, len(ep.conns))
	for c := range ep.conns {
		out = append(out, c)
	}
	return out
}

// start launches the idle scanner and the worker pools.
func (ep *endpoint) start() {
	if ep.idle > 0 {
		ep.goFunc("remoting-idle", ep.idleLoop)
	}
	ep.dispatcher.startPools()
}

// shutdown stops everything: no new goroutines or connections, processors'
// context cancelled, connections closed, workers and scanner stopped; then
// it waits for every goroutine. Safe to call more than once; every call
// waits.
func (ep *endpoint) shutdown() {
	ep.shutdownOnce.Do(func() {
		ep.mu.Lock()
		ep.closing = true
		conns := make([]*Conn, 0, len(ep.conns))
		for c := range ep.conns {
			conns = append(conns, c)
		}
		ep.mu.Unlock()
		ep.routines.Stop()
		for _, c := range conns {
			c.closeWith(ErrClosed)
		}
	})
	ep.routines.Wait()
}

func (ep *endpoint) isClosing() bool {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	return ep.closing
}

// listsResponse reports whether the response to a request with code is
// decoded with ExtList (respListCodes).
func (ep *endpoint) listsResponse(code int32) bool {
	return len(ep.respListCodes) > 0 && slices.Contains(ep.respListCodes, protocol.RequestCode(code))
}
