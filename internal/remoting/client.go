package remoting

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
)

// ClientConfig configures a Client. Zero values take the defaults.
type ClientConfig struct {
	DialTimeout  time.Duration // default 3 s
	MaxFrameSize int           // largest frame including its length word; default 16 MiB
	MaxAsync     int           // async calls in flight; default 65535
	MaxOneway    int           // oneway calls in flight (until written); default 65535
	IdleTimeout  time.Duration // close connections without reads or writes for this long; default 120 s, <0 never
	TLS          *tls.Config   // dial TLS when set (ServerName defaults to the address's host)
	Logger       *slog.Logger
	// CallbackWorkers run InvokeAsync callbacks; default 4.
	CallbackWorkers int
	// RequestPool runs processors for requests the server sends us; default
	// 4 workers, queue 1024.
	RequestPool PoolConfig
	// Dial opens connections; default a net.Dialer with DialTimeout. Tests
	// inject in-memory connections through it.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Sign, when set, is called on every request before it is sent
	// (InvokeSync, InvokeAsync, InvokeOneway): ACL request signing. It may
	// set ext fields; it runs on the caller's goroutine.
	Sign func(*protocol.Command)
	// ExtListResponseCodes are request codes whose callers read their
	// responses' ext fields through Command.Ext only: ROCKETMQ-serialized
	// responses to them are decoded into Command.ExtList instead of the
	// ExtFields map (protocol.FrameReader.SetExtListResponses).
	ExtListResponseCodes []protocol.RequestCode
}

// Client keeps one connection per server address (dialled on demand,
// redialled after it closes) and matches responses to requests by opaque.
// New starts nothing; Start must be called before invoking; Close stops
// everything and waits.
type Client struct {
	cfg       ClientConfig
	ep        *endpoint
	asyncSem  *permits
	onewaySem *permits
	callbacks *callbackExecutor
	reqPool   *pool
	kick      chan struct{} // capacity 1: wakes timeoutLoop

	// last is the connection getConn returned last, for its next call to
	// the same address: a check of the address and of the Conn's closing
	// flag instead of the read lock, the map look-up and two channel
	// operations (~6 % of the SDK's CPU in a pipelined-publish profile).
	// A closing Conn is never returned from it (Close closes every Conn
	// first); forget drops it once closed, so its buffers are not kept.
	last atomic.Pointer[lastConn]

	mu      sync.RWMutex
	conns   map[string]*clientConn // by address; guarded by mu
	started bool                   // guarded by mu
}

// clientConn is a connection being dialled or established. ready is closed
// once conn or err is set.
type clientConn struct {
	ready chan struct{}
	conn  *Conn
	err   error
}

// NewClient returns an unstarted client.
func NewClient(cfg ClientConfig) *Client {
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 3 * time.Second
	}
	if cfg.MaxAsync <= 0 {
		cfg.MaxAsync = DefaultPermits
	}
	if cfg.MaxOneway <= 0 {
		cfg.MaxOneway = DefaultPermits
	}
	if cfg.CallbackWorkers <= 0 {
		cfg.CallbackWorkers = 4
	}
	if cfg.RequestPool.Workers <= 0 {
		cfg.RequestPool.Workers = 4
	}
	if cfg.RequestPool.QueueSize <= 0 {
		cfg.RequestPool.QueueSize = 1024
	}
	ep := newEndpoint(cfg.Logger, cfg.MaxFrameSize, cfg.IdleTimeout)
	ep.logger = ep.logger.With("component", "remoting-client")
	ep.readBuf = clientReadBufSize
	ep.respListCodes = cfg.ExtListResponseCodes
	ep.recycled = protocol.NewRecycledFrames(clientRecycledFrameBytes)
	c := &Client{
		cfg:       cfg,
		ep:        ep,
		asyncSem:  newPermits(cfg.MaxAsync),
		onewaySem: newPermits(cfg.MaxOneway),
		callbacks: newCallbackExecutor(ep),
		conns:     make(map[string]*clientConn),
		kick:      make(chan struct{}, 1),
	}
	c.reqPool = newPool("client-requests", cfg.RequestPool)
	ep.onClosed = c.forget
	return c
}

// RegisterProcessor handles requests the server sends us with code (e.g.
// CHECK_TRANSACTION_STATE). All client processors share one pool. Unknown
// codes are answered REQUEST_CODE_NOT_SUPPORTED.
func (c *Client) RegisterProcessor(code protocol.RequestCode, p Processor) {
	c.ep.register([]protocol.RequestCode{code}, route{p, c.reqPool})
}

// AddHook adds an RPC hook for requests the server sends us.
func (c *Client) AddHook(h RPCHook) { c.ep.addHook(h) }

// AddConnListener adds a connection listener.
func (c *Client) AddConnListener(l ConnListener) { c.ep.addListener(l) }

// Start starts the idle scanner, the request pool and the callback workers.
func (c *Client) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return errors.New("remoting: client already started")
	}
	if c.ep.isClosing() {
		return ErrClosed
	}
	c.started = true
	c.ep.start()
	c.ep.goFunc("remoting-async-timeouts", c.timeoutLoop)
	c.callbacks.start(c.cfg.CallbackWorkers)
	return nil
}

// Close closes every connection (failing in-flight calls with
// ErrConnClosed), runs the remaining callbacks and waits for all goroutines.
// Idempotent.
func (c *Client) Close() error {
	c.ep.shutdown()
	c.callbacks.stop()
	return nil
}

// CloseConn closes the connection to addr, if any; the next call redials.
func (c *Client) CloseConn(addr string) {
	c.mu.Lock()
	cc := c.conns[addr]
	delete(c.conns, addr)
	c.mu.Unlock()
	if cc == nil {
		return
	}
	select {
	case <-cc.ready:
		if cc.conn != nil {
			_ = cc.conn.Close()
		}
	default: // still dialling: getConn closes it when the dial finishes and finds it gone
	}
}

// forget drops a closed connection from the address table (read loop),
// and from last, so that a closed Conn and its buffers are not kept.
func (c *Client) forget(conn *Conn) {
	if l := c.last.Load(); l != nil && l.conn == conn {
		c.last.CompareAndSwap(l, nil)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for addr, cc := range c.conns {
		if cc.conn == conn {
			delete(c.conns, addr)
		}
	}
}

// lastConn is an address and its open connection (Client.last).
type lastConn struct {
	addr string
	conn *Conn
}

// getConn returns the open connection to addr, dialling if needed. Callers
// for the same address share one dial.
func (c *Client) getConn(ctx context.Context, addr string) (*Conn, error) {
	if l := c.last.Load(); l != nil && l.addr == addr && !l.conn.closing.Load() {
		return l.conn, nil
	}
	conn, err := c.lookupConn(ctx, addr)
	if err == nil {
		c.last.Store(&lastConn{addr, conn})
	}
	return conn, err
}

// lookupConn is getConn through the connection table.
func (c *Client) lookupConn(ctx context.Context, addr string) (*Conn, error) {
	for attempt := 0; ; attempt++ {
		c.mu.RLock()
		cc := c.conns[addr]
		started := c.started
		c.mu.RUnlock()
		if !started {
			return nil, errors.New("remoting: client not started")
		}
		if cc == nil {
			c.mu.Lock()
			if cc = c.conns[addr]; cc == nil {
				cc = &clientConn{ready: make(chan struct{})}
				c.conns[addr] = cc
				c.mu.Unlock()
				c.dial(ctx, addr, cc)
			} else {
				c.mu.Unlock()
			}
		}
		select {
		case <-cc.ready:
		case <-ctx.Done():
			return nil, ctxError(ctx, "connect "+addr)
		}
		if cc.err != nil {
			return nil, cc.err
		}
		select {
		case <-cc.conn.closed:
			// Closed but not yet forgotten by its read loop: drop and redial.
			c.mu.Lock()
			if c.conns[addr] == cc {
				delete(c.conns, addr)
			}
			c.mu.Unlock()
			if attempt >= 2 {
				return nil, cc.conn.closedError()
			}
			continue
		default:
			return cc.conn, nil
		}
	}
}

// dial connects cc to addr and publishes the result.
func (c *Client) dial(ctx context.Context, addr string, cc *clientConn) {
	defer close(cc.ready)
	conn, err := c.connect(ctx, addr)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		cc.err = err
		if c.conns[addr] == cc {
			delete(c.conns, addr)
		}
		return
	}
	cc.conn = conn
	if c.conns[addr] != cc { // CloseConn raced with the dial
		_ = conn.Close()
	}
}

func (c *Client) connect(ctx context.Context, addr string) (*Conn, error) {
	dial := c.cfg.Dial
	if dial == nil {
		d := &net.Dialer{Timeout: c.cfg.DialTimeout}
		dial = d.DialContext
	}
	dctx, cancel := context.WithTimeout(ctx, c.cfg.DialTimeout)
	raw, err := dial(dctx, "tcp", addr)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("remoting: dial %s: %w", addr, err)
	}
	rw := raw
	if c.cfg.TLS != nil {
		cfg := c.cfg.TLS
		if cfg.ServerName == "" && !cfg.InsecureSkipVerify {
			cfg = cfg.Clone()
			if host, _, err := net.SplitHostPort(addr); err == nil {
				cfg.ServerName = host
			}
		}
		tc := tls.Client(raw, cfg)
		hctx, cancel := context.WithTimeout(ctx, c.cfg.DialTimeout)
		err := tc.HandshakeContext(hctx)
		cancel()
		if err != nil {
			_ = raw.Close()
			return nil, fmt.Errorf("remoting: TLS handshake with %s: %w", addr, err)
		}
		rw = tc
	}
	conn, ok := c.ep.startConn(raw, rw, nil)
	if !ok {
		return nil, ErrClosed
	}
	return conn, nil
}

// withTimeout applies DefaultTimeout to a context without a deadline.
func withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, DefaultTimeout)
}

// InvokeSync sends req to addr and waits for its response until ctx ends
// (DefaultTimeout without a deadline): ErrTimeout on deadline,
// ErrConnClosed if the connection dies first. It sets req.Opaque. The
// response is returned whatever its code; check resp.Code.
func (c *Client) InvokeSync(ctx context.Context, addr string, req *protocol.Command) (*protocol.Command, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	conn, err := c.getConn(ctx, addr)
	if err != nil {
		return nil, err
	}
	if c.cfg.Sign != nil {
		c.cfg.Sign(req)
	}
	return conn.invokeSync(ctx, req, c.ep.opaque.Add(1))
}

// InvokeAsync sends req to addr and returns once it is queued; cb runs
// later, exactly once, on one of the client's callback goroutines (never on
// a read loop), with the response or an error (ErrTimeout when ctx's
// deadline passes, DefaultTimeout without one; ErrConnClosed). It first
// waits for one of MaxAsync permits until ctx ends. If InvokeAsync returns
// an error, cb is not called. req.Body must not be modified before cb runs:
// a body over 2 KiB is written from the caller's slice, not copied.
func (c *Client) InvokeAsync(ctx context.Context, addr string, req *protocol.Command, cb func(*protocol.Command, error)) error {
	return c.invokeAsync(ctx, addr, req, new(future), AsyncFunc(cb))
}

// AsyncHandler receives the outcome of an InvokeAsyncCall.
type AsyncHandler interface {
	OnResponse(resp *protocol.Command, err error)
}

// AsyncFunc is a function as an AsyncHandler.
type AsyncFunc func(resp *protocol.Command, err error)

// OnResponse calls f.
func (f AsyncFunc) OnResponse(resp *protocol.Command, err error) { f(resp, err) }

// AsyncCall is the storage of one async call (its future), for
// InvokeAsyncCall.
type AsyncCall struct{ f future }

// InvokeAsyncCall is InvokeAsync calling h.OnResponse and keeping the
// call's state in call: a caller that makes one call at a time per object
// embeds an AsyncCall in it and is the handler, so neither a closure nor a
// future is allocated per call. call must not be in use by
// another call; it is free again once h.OnResponse runs (which may start
// the next call with it) or InvokeAsyncCall returned an error.
func (c *Client) InvokeAsyncCall(ctx context.Context, addr string, req *protocol.Command, call *AsyncCall, h AsyncHandler) error {
	return c.invokeAsync(ctx, addr, req, &call.f, h)
}

// invokeAsync is InvokeAsync with the future's storage f and handler h.
func (c *Client) invokeAsync(ctx context.Context, addr string, req *protocol.Command, f *future, h AsyncHandler) error {
	if err := c.asyncSem.acquire(ctx, c.ep.quit); err != nil {
		return fmt.Errorf("remoting: async to %s: %w", addr, err)
	}
	*f = future{cb: h, ctx: ctx, sem: c.asyncSem, exec: c.callbacks, extList: c.ep.listsResponse(req.Code)}
	if d, ok := ctx.Deadline(); ok {
		f.deadline = d.UnixNano()
	} else {
		f.deadline = time.Now().Add(DefaultTimeout).UnixNano()
	}
	conn, err := c.getConn(ctx, addr)
	if err != nil {
		f.release()
		return err
	}
	f.opaque = c.ep.opaque.Add(1)
	if c.cfg.Sign != nil {
		c.cfg.Sign(req)
	}
	prepareRequest(req, f.opaque, false)
	if _, err := conn.addFuture(f); err != nil {
		f.release()
		return err
	}
	select { // make sure the timeout scanner is running
	case c.kick <- struct{}{}:
	default:
	}
	if err := conn.send(req, nil, writeQueued); err != nil {
		if conn.takeFuture(f.opaque) != nil {
			f.release()
			return err
		}
		// Already completed (connection closed): the callback reports it.
	}
	return nil
}

// asyncTimeoutScanInterval is how often in-flight async calls are checked
// against their deadlines (only while there are some).
const asyncTimeoutScanInterval = 10 * time.Millisecond

// timeoutLoop fails async calls whose context ended. It sleeps on kick
// while no async call is in flight.
func (c *Client) timeoutLoop() {
	t := time.NewTimer(asyncTimeoutScanInterval)
	defer t.Stop()
	for {
		if c.asyncSem.inUse() == 0 {
			select {
			case <-c.kick:
			case <-c.ep.quit:
				return
			}
		}
		t.Reset(asyncTimeoutScanInterval)
		select {
		case <-t.C:
		case <-c.ep.quit:
			return
		}
		now := time.Now().UnixNano()
		for _, conn := range c.ep.snapshot() {
			conn.expireAsync(now)
		}
	}
}

// InvokeOneway sends req to addr with the oneway flag and returns once it is
// queued. It waits for one of MaxOneway permits (held until the frame is
// written) until ctx ends. req.Body must not be modified afterwards: a body
// over 2 KiB is written from the caller's slice, not copied.
func (c *Client) InvokeOneway(ctx context.Context, addr string, req *protocol.Command) error {
	if err := c.onewaySem.acquire(ctx, c.ep.quit); err != nil {
		return fmt.Errorf("remoting: oneway to %s: %w", addr, err)
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	conn, err := c.getConn(ctx, addr)
	if err != nil {
		c.onewaySem.release()
		return err
	}
	if c.cfg.Sign != nil {
		c.cfg.Sign(req)
	}
	if err := conn.invokeOneway(req, c.ep.opaque.Add(1), func(error) { c.onewaySem.release() }); err != nil {
		c.onewaySem.release()
		return err
	}
	return nil
}
