package remoting

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
)

// Processor handles one request. Return (resp, nil) to answer now; (nil,
// nil) to answer later through conn.WriteResponse (or never, for oneway);
// (nil, err) for an error response: a *protocol.Error's code and remark,
// otherwise SYSTEM_ERROR with err's text. It runs on the worker pool of its
// request code (or on the connection's read loop, see PoolConfig.Inline);
// ctx is cancelled when the Server or Client closes. The
// response's Opaque and FlagResponse are set by remoting. A panic is
// recovered, logged and answered with SYSTEM_ERROR.
type Processor func(ctx context.Context, conn *Conn, req *protocol.Command) (*protocol.Command, error)

// PoolConfig sizes a processor's worker pool: Workers goroutines take
// requests from a queue of QueueSize. A request arriving at a full queue is
// answered SYSTEM_BUSY "[OVERLOAD]system busy, start flow control for a
// while" at once (oneway requests are dropped). Zero values mean
// DefaultPoolWorkers and DefaultPoolQueue.
//
// Inline runs the processor on the connection's read loop instead, with no
// pool, queue or hand-off: for processors that are cheap and never block
// (no I/O, no waiting on locks held long or on other requests, in
// particular never a call back on the same connection). Requests on one
// connection then wait for each other, and a slow inline processor stalls
// its connection. Workers and QueueSize are ignored; SYSTEM_BUSY does not
// apply.
//
// MaxWait, when set, is RocketMQ's fast failure (BrokerFastFailure): a
// request that waited in the queue for MaxWait() or longer (a value <= 0
// turns the check off; it is read per request, so it may change at run
// time) is answered SYSTEM_BUSY "[TIMEOUT_CLEAN_QUEUE]broker busy, ..."
// when a worker takes it, instead of being processed: its client has
// likely given up, and a broker behind its load catches up faster.
type PoolConfig struct {
	Workers   int
	QueueSize int
	Inline    bool
	MaxWait   func() time.Duration
}

// Pool defaults.
const (
	DefaultPoolWorkers = 8
	DefaultPoolQueue   = 10000
)

// RPCHook observes every request handled by a Server or Client. Before runs
// on the worker before the processor; a non-nil error is answered (as a
// processor error would be) and the processor is skipped. After runs with
// the final response (nil when there is none, e.g. deferred or oneway).
// Hooks run on worker goroutines and must be safe for concurrent use.
type RPCHook interface {
	Before(conn *Conn, req *protocol.Command) error
	After(conn *Conn, req *protocol.Command, resp *protocol.Command)
}

// TimedRPCHook is an RPCHook that also wants the processing time: for it
// AfterTimed runs instead of After, with the time the hooks' Before calls
// began (RocketMQ's rpc latency, request processing without the response
// write: time.Since(start) when it runs). remoting reads the clock for a
// request only when a TimedRPCHook is installed, and then once; the hook
// reads it again only if it records something.
type TimedRPCHook interface {
	RPCHook
	AfterTimed(conn *Conn, req *protocol.Command, resp *protocol.Command, start time.Time)
}

// hookSet is the installed hooks; timed reports whether one of them is a
// TimedRPCHook (only then does a request cost a clock read).
type hookSet struct {
	list  []RPCHook
	timed bool
}

// ConnListener receives connection events. OnConnect, OnException and
// OnClose run on the connection's read loop, OnIdle on the idle scanner;
// none may block. OnException (decode error, oversize frame, I/O error) and
// OnIdle are each followed by OnClose. A connection refused before it opened
// (failed TLS handshake, plain connection under TLSEnforce) produces no
// events.
type ConnListener interface {
	OnConnect(*Conn)
	OnClose(*Conn)
	OnIdle(*Conn)
	OnException(*Conn, error)
}

type task struct {
	conn *Conn
	req  *protocol.Command
	proc Processor
	// enqueued is when dispatch queued the task; zero unless the pool has
	// MaxWait (time.Now costs on every request otherwise).
	enqueued time.Time
	// inline: the processor runs on conn's read loop (Conn.RequestStart).
	inline bool
}

// pool is a set of workers and their queue.
//
// The queue holds at most cap(ready) tasks, as RocketMQ's bounded
// LinkedBlockingQueue, but costs memory only for the tasks it holds: a
// channel of tasks would reserve its whole capacity up front (the broker's
// pools add up to about 800,000 slots of 48 bytes per server, all scanned
// by the GC). ready carries one token per queued task (zero-size
// elements: no buffer); a worker takes a token, then the oldest task.
// Invariant: len(ready) <= queue length <= cap(ready), so the token send
// after a push never blocks.
type pool struct {
	name    string
	workers int
	ready   chan struct{}
	mu      sync.Mutex // guards queue
	queue   taskRing
	maxWait func() time.Duration // nil: no fast failure
	started atomic.Bool
}

// offer queues t, or reports false when the queue is full.
func (p *pool) offer(t task) bool {
	p.mu.Lock()
	if p.queue.n >= cap(p.ready) {
		p.mu.Unlock()
		return false
	}
	p.queue.push(t)
	p.mu.Unlock()
	p.ready <- struct{}{}
	return true
}

// take returns the oldest task. REQUIRES: a token received from ready.
func (p *pool) take() task {
	p.mu.Lock()
	t := p.queue.pop()
	p.mu.Unlock()
	return t
}

// queued is the number of tasks waiting (for remarks and logs).
func (p *pool) queued() int { return len(p.ready) }

// taskRing is a FIFO ring that grows by doubling and lets go of a large
// buffer once it drains, so memory follows the backlog.
type taskRing struct {
	buf     []task
	head, n int
}

func (r *taskRing) push(t task) {
	if r.n == len(r.buf) {
		grown := make([]task, max(16, 2*len(r.buf)))
		for i := range r.n {
			grown[i] = r.buf[(r.head+i)%len(r.buf)]
		}
		r.buf, r.head = grown, 0
	}
	r.buf[(r.head+r.n)%len(r.buf)] = t
	r.n++
}

func (r *taskRing) pop() task {
	t := r.buf[r.head]
	r.buf[r.head] = task{} // drop the references
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	if r.n == 0 && len(r.buf) > 1024 {
		r.buf, r.head = nil, 0
	}
	return t
}

// route is where requests with one code go: a pool, or the read loop when
// pool is nil.
type route struct {
	proc Processor
	pool *pool
}

// newRoute returns the route for p with cfg; name names its pool.
func newRoute(name string, p Processor, cfg PoolConfig) route {
	if cfg.Inline {
		return route{proc: p}
	}
	return route{p, newPool(name, cfg)}
}

func newPool(name string, cfg PoolConfig) *pool {
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultPoolWorkers
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultPoolQueue
	}
	return &pool{name: name, workers: cfg.Workers, ready: make(chan struct{}, cfg.QueueSize), maxWait: cfg.MaxWait}
}

// dispatcher routes requests to pools. The table is copy-on-write, so the
// read loops look codes up without a lock.
type dispatcher struct {
	ep      *endpoint
	mu      sync.Mutex // serializes registrations
	table   atomic.Pointer[map[int32]route]
	def     atomic.Pointer[route]
	hooks   atomic.Pointer[hookSet]
	started atomic.Bool
}

func (d *dispatcher) init(ep *endpoint) {
	d.ep = ep
	empty := map[int32]route{}
	d.table.Store(&empty)
}

func (d *dispatcher) register(codes []protocol.RequestCode, r route) {
	d.mu.Lock()
	defer d.mu.Unlock()
	next := make(map[int32]route, len(*d.table.Load())+len(codes))
	for k, v := range *d.table.Load() {
		next[k] = v
	}
	for _, code := range codes {
		next[int32(code)] = r
	}
	d.table.Store(&next)
	if d.started.Load() {
		d.startPool(r.pool)
	}
}

func (d *dispatcher) setDefault(r route) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.def.Store(&r)
	if d.started.Load() {
		d.startPool(r.pool)
	}
}

func (d *dispatcher) addHook(h RPCHook) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var next hookSet
	if cur := d.hooks.Load(); cur != nil {
		next.list = append(next.list, cur.list...)
	}
	next.list = append(next.list, h)
	for _, h := range next.list {
		if _, ok := h.(TimedRPCHook); ok {
			next.timed = true
		}
	}
	d.hooks.Store(&next)
}

func (d *dispatcher) startPools() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.started.Store(true)
	for _, r := range *d.table.Load() {
		d.startPool(r.pool)
	}
	if r := d.def.Load(); r != nil {
		d.startPool(r.pool)
	}
}

// startPool starts p's workers once. REQUIRES: d.mu held.
func (d *dispatcher) startPool(p *pool) {
	if p == nil || p.started.Swap(true) {
		return
	}
	for range p.workers {
		d.ep.goFunc("remoting-worker-"+p.name, func() { d.work(p) })
	}
}

func (d *dispatcher) work(p *pool) {
	for {
		select {
		case <-p.ready:
			t := p.take()
			if p.maxWait != nil && d.expired(p, t) {
				continue
			}
			d.process(t, writeQueued)
		case <-d.ep.quit:
			return
		}
	}
}

// Shutdown answers (docs/protocol.md §2.7).
const (
	rejectRemark = "[REJECTREQUEST]system busy, start flow control for a while"
	goAwayRemark = "please go away"
	// goAwayVersion: Java answers GO_AWAY only to requesters above V5_3_1.
	goAwayVersion = 475
)

// dispatch runs on a read loop: it hands req to its pool without blocking.
func (d *dispatcher) dispatch(c *Conn, req *protocol.Command) {
	if d.ep.draining.Load() {
		if !req.IsOneway() {
			resp := protocol.NewResponse(req, protocol.SystemBusy, rejectRemark)
			if req.Version > goAwayVersion {
				resp = protocol.NewResponse(req, protocol.GoAway, goAwayRemark)
			}
			_ = c.writeResponse(resp, writeLater)
		}
		return
	}
	r, ok := (*d.table.Load())[req.Code]
	if !ok {
		if def := d.def.Load(); def != nil {
			r, ok = *def, true
		}
	}
	if !ok {
		d.ep.notSupported.Add(1)
		if !req.IsOneway() {
			_ = c.writeResponse(protocol.NewResponse(req, protocol.RequestCodeNotSupported, notSupportedRemark(req.Code)), writeLater)
		}
		c.logger.Debug("remoting: request code not supported", "code", req.Code)
		return
	}
	d.ep.inFlight.Add(1)
	if r.pool == nil { // inline: answered before the read loop next blocks
		d.ep.requests.Add(1)
		d.process(task{conn: c, req: req, proc: r.proc, inline: true}, writeLater)
		return
	}
	t := task{conn: c, req: req, proc: r.proc}
	if r.pool.maxWait != nil {
		t.enqueued = time.Now()
	}
	if r.pool.offer(t) {
		d.ep.requests.Add(1)
	} else {
		d.ep.inFlight.Add(-1)
		d.ep.overloaded.Add(1)
		c.logger.Debug("remoting: pool full", "pool", r.pool.name, "code", req.Code)
		if !req.IsOneway() {
			_ = c.writeResponse(protocol.NewResponse(req, protocol.SystemBusy, overloadRemark), writeLater)
		}
	}
}

// expired answers t SYSTEM_BUSY [TIMEOUT_CLEAN_QUEUE] and reports true when
// it waited in p's queue for p.maxWait() or longer.
func (d *dispatcher) expired(p *pool, t task) bool {
	limit := p.maxWait()
	if limit <= 0 {
		return false
	}
	behind := time.Since(t.enqueued)
	if behind < limit {
		return false
	}
	defer d.ep.inFlight.Add(-1)
	if n := d.ep.queueTimeouts.Add(1); n == 1 || n%1000 == 0 {
		t.conn.logger.Warn("remoting: request timed out in queue", "pool", p.name, "code", t.req.Code,
			"waitedMs", behind.Milliseconds(), "queueSize", p.queued(), "timeouts", n)
	}
	if !t.req.IsOneway() {
		resp := protocol.NewResponse(t.req, protocol.SystemBusy, fmt.Sprintf(
			"[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: %dms, size of queue: %d",
			behind.Milliseconds(), p.queued()))
		if err := t.conn.writeResponse(resp, writeQueued); err != nil {
			t.conn.logger.Debug("remoting: response not sent", "code", t.req.Code, "opaque", t.req.Opaque, "err", err)
		}
	}
	return true
}

// process runs hooks and the processor for one request, then answers.
func (d *dispatcher) process(t task, mode writeMode) {
	defer d.ep.inFlight.Add(-1)
	resp := d.call(t)
	if resp == nil || t.req.IsOneway() {
		return
	}
	resp.Opaque = t.req.Opaque
	if mode == writeQueued && d.ep.inFlight.Load() == 1 {
		// The only request in progress on this endpoint: nothing to
		// coalesce with, so write it in place if the write loop is idle
		// (saves waking the write loop; benchmarks/nats/RESULTS.md, Remoting). Under load
		// inFlight is rarely 1, and responses keep coalescing.
		mode = writeNow
	}
	if err := t.conn.writeResponse(resp, mode); err != nil {
		t.conn.logger.Debug("remoting: response not sent", "code", t.req.Code, "opaque", t.req.Opaque, "err", err)
	}
}

func (d *dispatcher) call(t task) (resp *protocol.Command) {
	var hooks []RPCHook
	var start time.Time
	if h := d.hooks.Load(); h != nil {
		hooks = h.list
		if h.timed {
			start = time.Now()
		}
	}
	if t.inline {
		t.conn.reqStart = start // read loop only: Conn.RequestStart
	}
	defer func() {
		if r := recover(); r != nil {
			d.ep.processorPanic.Add(1)
			t.conn.logger.Error("remoting: processor panicked", "code", t.req.Code, "panic", r,
				"stack", string(debug.Stack()))
			resp = protocol.NewResponse(t.req, protocol.SystemError, fmt.Sprintf("processor panic: %v", r))
		}
	}()
	var err error
	for _, h := range hooks {
		if err = h.Before(t.conn, t.req); err != nil {
			break
		}
	}
	if err == nil {
		resp, err = t.proc(d.ep.ctx, t.conn, t.req)
	}
	if err != nil {
		resp = errorResponse(t.req, err)
	}
	for _, h := range hooks {
		if th, ok := h.(TimedRPCHook); ok {
			th.AfterTimed(t.conn, t.req, resp, start)
			continue
		}
		h.After(t.conn, t.req, resp)
	}
	return resp
}
