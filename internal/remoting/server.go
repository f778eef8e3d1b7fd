package remoting

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
)

// Defaults shared by Server and Client.
const (
	// DefaultMaxFrameSize is Java's frame limit including the length word.
	DefaultMaxFrameSize = protocol.DefaultMaxFrameSize
	// DefaultIdleTimeout is Java's serverChannelMaxIdleTimeSeconds (120 s).
	DefaultIdleTimeout = 120 * time.Second
	// DefaultTimeout applies to calls whose context has no deadline.
	DefaultTimeout = 3 * time.Second
	// DefaultPermits is Java's default for in-flight async and oneway calls.
	DefaultPermits = 65535
)

var errIdle = fmt.Errorf("remoting: idle timeout: %w", ErrConnClosed)

// ServerConfig configures a Server. Zero values take the defaults.
type ServerConfig struct {
	ListenAddr   string        // e.g. ":10911"; "127.0.0.1:0" in tests
	MaxFrameSize int           // largest frame including its length word; default 16 MiB
	IdleTimeout  time.Duration // close connections without reads or writes for this long; default 120 s, <0 never
	TLS          *tls.Config   // when set, TLS in permissive mode: a first byte 0x16 means TLS, else plain
	// TLSEnforce (with TLS set) closes connections that do not start a TLS
	// handshake: Java's "enforcing" mode instead of "permissive".
	TLSEnforce bool
	Logger     *slog.Logger
	// MaxOneway bounds server->client oneway calls in flight; default 65535.
	MaxOneway int
	// Listen opens the listener; default net.Listen. Tests inject in-memory
	// listeners through it.
	Listen func(network, addr string) (net.Listener, error)
	// ExtListCodes are request codes whose processors read their ext
	// fields through Command.Ext / protocol.DecodeSendHeaderOf: their
	// ROCKETMQ headers are decoded into Command.ExtList, without a map
	// (protocol.FrameReader.SetExtListCodes). Processors of these codes
	// must not read ExtFields directly.
	ExtListCodes []protocol.RequestCode
}

// Server accepts remoting connections and runs processors for their
// requests on per-code worker pools. New starts nothing; Start listens;
// Close stops everything and waits. Register processors, hooks and
// listeners before Start (registering later is safe too).
type Server struct {
	cfg    ServerConfig
	ep     *endpoint
	oneway *permits

	mu      sync.Mutex
	ln      net.Listener // guarded by mu
	started bool         // guarded by mu
}

// NewServer returns an unstarted server.
func NewServer(cfg ServerConfig) *Server {
	if cfg.MaxOneway <= 0 {
		cfg.MaxOneway = DefaultPermits
	}
	ep := newEndpoint(cfg.Logger, cfg.MaxFrameSize, cfg.IdleTimeout)
	ep.logger = ep.logger.With("component", "remoting-server")
	ep.serverTLS = cfg.TLS
	ep.tlsEnforce = cfg.TLSEnforce
	ep.extListCodes = cfg.ExtListCodes
	return &Server{cfg: cfg, ep: ep, oneway: newPermits(cfg.MaxOneway)}
}

// RegisterProcessor routes code to p on a pool of its own.
func (s *Server) RegisterProcessor(code protocol.RequestCode, p Processor, pool PoolConfig) {
	s.ep.register([]protocol.RequestCode{code}, newRoute(code.String(), p, pool))
}

// RegisterProcessorShared routes several codes to p on one shared pool.
func (s *Server) RegisterProcessorShared(codes []protocol.RequestCode, p Processor, pool PoolConfig) {
	name := "shared"
	if len(codes) > 0 {
		name = codes[0].String() + "+"
	}
	s.ep.register(codes, newRoute(name, p, pool))
}

// SetDefaultProcessor handles codes without a processor. Without it they
// are answered REQUEST_CODE_NOT_SUPPORTED " request type <code> not
// supported".
func (s *Server) SetDefaultProcessor(p Processor, pool PoolConfig) {
	s.ep.setDefault(newRoute("default", p, pool))
}

// AddHook adds an RPC hook; hooks run in the order added.
func (s *Server) AddHook(h RPCHook) { s.ep.addHook(h) }

// AddConnListener adds a connection listener.
func (s *Server) AddConnListener(l ConnListener) { s.ep.addListener(l) }

// Start listens on ListenAddr and starts accepting. Addr is valid after.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("remoting: server already started")
	}
	if s.ep.isClosing() {
		return ErrClosed
	}
	listen := s.cfg.Listen
	if listen == nil {
		listen = net.Listen
	}
	ln, err := listen("tcp", s.cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("remoting: listen %s: %w", s.cfg.ListenAddr, err)
	}
	s.ln = ln
	s.started = true
	s.ep.start()
	if !s.ep.goFunc("remoting-accept", s.acceptLoop) {
		_ = ln.Close()
		return ErrClosed
	}
	s.ep.logger.Info("remoting: listening", "addr", ln.Addr().String(), "tls", s.cfg.TLS != nil)
	return nil
}

// Addr is the listening address (nil before Start).
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

func (s *Server) acceptLoop() {
	backoff := 5 * time.Millisecond
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			if s.ep.isClosing() || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: wait and retry.
			s.ep.logger.Warn("remoting: accept failed", "err", err, "retryIn", backoff)
			select {
			case <-time.After(backoff):
			case <-s.ep.quit:
				return
			}
			backoff = min(backoff*2, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		s.ep.startConn(nc, nc, s.cfg.TLS)
	}
}

// Shutdown stops gracefully: it stops accepting connections, answers new
// requests SYSTEM_BUSY "[REJECTREQUEST]system busy, start flow control for
// a while" (GO_AWAY "please go away" to requesters newer than V5_3_1, as
// Java does, docs/protocol.md §2.7), waits until the requests already queued or
// running have been processed or ctx ends, then closes like Close.
func (s *Server) Shutdown(ctx context.Context) error {
	s.ep.draining.Store(true)
	s.mu.Lock()
	ln := s.ln
	s.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	var err error
wait:
	for s.ep.inFlight.Load() > 0 {
		select {
		case <-t.C:
		case <-ctx.Done():
			err = fmt.Errorf("remoting: shutdown with %d requests in flight: %w", s.ep.inFlight.Load(), ctx.Err())
			break wait
		}
	}
	_ = s.Close()
	return err
}

// Close stops accepting, closes every connection, stops the pools (their
// processors' context is cancelled) and waits for all goroutines.
// Idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	ln := s.ln
	s.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	s.ep.shutdown()
	return nil
}

// Conns returns the open connections.
func (s *Server) Conns() []*Conn { return s.ep.snapshot() }

// InvokeSync sends a request to the client at the other end of conn and
// waits for the answer until ctx ends (DefaultTimeout without a deadline).
// It sets req.Opaque. The response is returned whatever its code.
func (s *Server) InvokeSync(ctx context.Context, conn *Conn, req *protocol.Command) (*protocol.Command, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	return conn.invokeSync(ctx, req, s.ep.opaque.Add(1))
}

// InvokeOneway queues a oneway request (flag bit 1) to conn. It waits only
// for a free oneway permit (until ctx ends); the write happens later.
func (s *Server) InvokeOneway(ctx context.Context, conn *Conn, req *protocol.Command) error {
	if err := s.oneway.acquire(ctx, s.ep.quit); err != nil {
		return fmt.Errorf("remoting: oneway to %s: %w", conn.remote, err)
	}
	err := conn.invokeOneway(req, s.ep.opaque.Add(1), func(error) { s.oneway.release() })
	if err != nil {
		s.oneway.release()
	}
	return err
}
