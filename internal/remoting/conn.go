package remoting

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
)

// readBufSize is the bufio size of each server connection's reader, and
// clientReadBufSize of each client connection's: a client has few
// connections, and a frame that fits the buffer is copied out of it
// without first zeroing a buffer of its own (FrameReader), which a pull
// answer of 32 x 1 KiB messages (~38 KiB) otherwise is not.
const (
	readBufSize       = 32 << 10
	clientReadBufSize = 128 << 10
)

// clientRecycledFrameBytes bounds the free frame buffers a Client keeps
// for reuse (protocol.RecycledFrames): pull answers of 32 x 1 KiB
// messages are each a large allocation otherwise, most of what a
// consumer allocates.
const clientRecycledFrameBytes = 4 << 20

// tlsHandshakeTimeout bounds the permissive-mode peek and the TLS handshake
// of an accepted connection.
const tlsHandshakeTimeout = 10 * time.Second

// Conn is one remoting connection, accepted by a Server or dialled by a
// Client. Both sides can send requests on it; responses are matched by
// opaque. It has exactly two goroutines: the read loop (decodes frames,
// completes futures, hands requests to worker pools or runs inline
// processors, and cleans up when the connection ends) and the write loop
// (writes everything queued in one vectored write). On plain TCP a sender
// that finds the write loop idle writes in place with one non-blocking
// write instead (see writeMode). Both goroutines are owned by the endpoint
// that created the Conn and stopped by its Close.
type Conn struct {
	ep     *endpoint
	id     uint64
	raw    net.Conn // the TCP connection; closing it stops both loops
	rw     net.Conn // what frames travel over: raw, or TLS over raw; set before the write loop starts
	remote string
	local  string
	peer   netip.AddrPort // remote as an AddrPort; zero if not IP (in-memory tests)
	logger *slog.Logger

	// active is set by every successful read or write; the idle scanner
	// clears it and records lastActive (unix nanos), so the hot path never
	// reads the clock.
	active     atomic.Bool
	lastActive atomic.Int64

	// opened: OnConnect was delivered, so OnException/OnClose follow. Only
	// the read loop touches it.
	opened bool

	// wake has capacity 1: a non-blocking send tells the write loop there is
	// something to write.
	wake chan struct{}

	wmu     sync.Mutex
	pending writeBatch // frames not yet written; guarded by wmu
	spare   writeBatch // the batch the write loop is writing; owned by the write loop
	wclosed bool       // no more frames accepted; guarded by wmu
	writing bool       // the write loop is writing outside wmu; guarded by wmu
	// holdWrites: the read loop is running its idle function (AtReadIdle)
	// and flushes right after it, so a queued frame does not wake the
	// write loop; held counts those frames. Guarded by wmu.
	holdWrites bool
	held       int

	// In-place writes (plain TCP only; nil otherwise): with the write loop
	// idle, a sender writes the pending frames itself with one non-blocking
	// write under wmu, and leaves what the kernel did not take to the write
	// loop. tryBuf and tryN pass the data to and the count from tryFn;
	// guarded by wmu. Set before the Conn is shared.
	rawc   syscall.RawConn
	tryFn  func(fd uintptr) bool
	tryBuf []byte
	tryN   int
	// writeRaw writes the write loop's batches on plain TCP (nil
	// otherwise: c.rw's Write/writev); only the write loop calls it.
	writeRaw func(bufs [][]byte) error

	// readerQueued: the read loop queued frames without waking the write
	// loop; it flushes them before it blocks on the socket. Owned by the
	// read loop, as are br and fr.
	readerQueued int       // frames queued by the read loop since it last flushed
	asyncDone    []*future // async calls completed, callbacks not yet queued (flushAsync)
	br           *bufio.Reader
	fr           *protocol.FrameReader
	reqStart     time.Time   // the inline request's start (RequestStart); read loop only
	idleFn       func(*Conn) // AtReadIdle's function, not yet run; read loop only
	readFirst    bool        // the next frame is the first of a read (ReadSmall); read loop only
	readSmall    bool        // the frames of the current read are few (ReadSmall); read loop only

	fmu     sync.Mutex
	futures map[int32]*future // in-flight requests sent on this Conn; nil once closed; guarded by fmu
	// taken is the future the read loop took out of futures for the
	// response it is decoding (takeForDecode), completed by
	// completeResponse or, if the decode fails, by cleanup. Read loop only.
	taken *future
	// syncBatch counts the sync calls the read loop completed since it
	// last found no whole frame buffered (read loop only). burst counts
	// the sync callers woken together by one read (several answers in it)
	// whose next sync call on c has not come yet: those calls leave their
	// frames to the write loop, so that a burst's next requests go out in
	// one write rather than the first alone in place and the rest in a
	// second write (which the peer then reads, and answers, in two rounds).
	// The first completion of a burst resets it, so stale counts (callers
	// that did not call again on c) live at most until the next burst.
	syncBatch int
	burst     atomic.Int32

	closeOnce sync.Once
	closing   atomic.Bool   // set just before closed is closed: a check without a channel operation
	closed    chan struct{} // closed when the Conn starts closing
	closeErr  error         // why it closed; written before closed is closed
}

// RequestStart is, for an inline processor (PoolConfig.Inline) and only
// there, when remoting began processing the request it runs: the time a
// TimedRPCHook gets, so a processor that times the request too needs no
// clock read of its own. It is zero when no TimedRPCHook is installed
// (remoting then reads no clock). Other goroutines must not call it.
func (c *Conn) RequestStart() time.Time { return c.reqStart }

// AtReadIdle asks the read loop to run fn once, after the requests already
// read and before it next waits for the peer (or, if the connection fails,
// before it closes). It lets an inline processor (PoolConfig.Inline) finish
// the work of all the requests of a read at once, on the read loop, with no
// other goroutine woken: the broker commits the staged bytes of a small
// read's sends there (ReadSmall). Frames queued on c while fn runs (its
// answers) do not wake the write loop: fn sends them with FlushAnswers,
// and the read loop's own flush after fn sends the rest. Only an inline
// processor may call it, and every call on a connection must pass the same
// function (a call before the run replaces the earlier one).
func (c *Conn) AtReadIdle(fn func(*Conn)) { c.idleFn = fn }

// smallRead is the most frames a read may hold for ReadSmall.
const smallRead = 8

// ReadSmall reports, for an inline processor (PoolConfig.Inline) and only
// there, whether the request it runs came in a small read: at most
// smallRead whole frames were buffered when the read loop took the read's
// first. Synchronous callers send such reads (one frame per caller); a
// pipelined sender's reads fill the buffer. Work left to AtReadIdle waits
// for the whole read, so only a small read's is worth doing there: a
// pipelined read's goes on in parallel on other goroutines while the read
// loop reads on. Other goroutines must not call it.
func (c *Conn) ReadSmall() bool { return c.readSmall }

// FlushAnswers, called by an AtReadIdle function and only there, writes the
// frames queued on c so far in place when the write loop is idle (one
// non-blocking write; what the kernel does not take, and everything when
// the write loop is busy, is left to the write loop).
func (c *Conn) FlushAnswers() {
	c.wmu.Lock()
	c.held = 0
	c.readerQueued = 0
	wake := c.flushLocked()
	c.wmu.Unlock()
	if wake {
		c.wakeWriter()
	}
}

// runIdle runs the AtReadIdle function with the write loop held, and hands
// the frames queued meanwhile and not flushed by it to the read loop's
// flush.
func (c *Conn) runIdle() {
	fn := c.idleFn
	c.idleFn = nil
	c.wmu.Lock()
	c.holdWrites = true
	c.wmu.Unlock()
	fn(c)
	c.wmu.Lock()
	c.holdWrites = false
	c.readerQueued += c.held
	c.held = 0
	c.wmu.Unlock()
}

// framesAtMost reports whether br holds at most n whole frames (a partial
// frame at the end counts as one), looking at its buffer without reading.
func framesAtMost(br *bufio.Reader, n int) bool {
	b, _ := br.Peek(br.Buffered())
	for i := 0; len(b) >= 4; i++ {
		if i == n {
			return false
		}
		size := int64(binary.BigEndian.Uint32(b)) + 4
		if size > int64(len(b)) {
			return true
		}
		b = b[size:]
	}
	return true
}

func newConn(ep *endpoint, raw, rw net.Conn) *Conn {
	c := &Conn{
		ep:      ep,
		id:      ep.nextConnID.Add(1),
		raw:     raw,
		rw:      rw,
		remote:  raw.RemoteAddr().String(),
		local:   raw.LocalAddr().String(),
		wake:    make(chan struct{}, 1),
		futures: make(map[int32]*future),
		closed:  make(chan struct{}),
	}
	if ta, ok := raw.RemoteAddr().(*net.TCPAddr); ok {
		c.peer = ta.AddrPort()
	}
	c.logger = ep.logger.With("addr", c.remote, "conn", c.id)
	c.lastActive.Store(time.Now().UnixNano())
	return c
}

// RemoteAddr is the peer's "ip:port".
func (c *Conn) RemoteAddr() string { return c.remote }

// RemoteAddrPort is the peer's address, parsed once (the broker stores it
// as the born host of every message). Zero for non-IP connections.
func (c *Conn) RemoteAddrPort() netip.AddrPort { return c.peer }

// LocalAddr is our side's "ip:port".
func (c *Conn) LocalAddr() string { return c.local }

// ID is unique among the Conns of one Server or Client.
func (c *Conn) ID() uint64 { return c.id }

// Closed is closed once the connection starts closing.
func (c *Conn) Closed() <-chan struct{} { return c.closed }

// Close closes the connection; in-flight calls on it fail with
// ErrConnClosed. It does not wait for the connection's goroutines (the owning
// Server or Client does). Idempotent.
func (c *Conn) Close() error {
	c.closeWith(fmt.Errorf("remoting: closed locally: %w", ErrConnClosed))
	return nil
}

func (c *Conn) String() string { return fmt.Sprintf("conn#%d(%s)", c.id, c.remote) }

// closeWith starts closing with reason err. Only the first call counts.
func (c *Conn) closeWith(err error) {
	c.closeOnce.Do(func() {
		c.closeErr = err
		c.wmu.Lock()
		c.wclosed = true
		c.wmu.Unlock()
		c.closing.Store(true)
		close(c.closed)
		_ = c.raw.Close()
	})
}

func (c *Conn) touch() {
	if !c.active.Load() {
		c.active.Store(true)
	}
}

// WriteResponse queues resp (FlagResponse is set on it) to be written by the
// connection's write loop. It never blocks on the socket. resp must not be
// modified afterwards; a Body over 2 KiB is referenced, not copied, until
// written. Returns ErrConnClosed if the connection is closed.
func (c *Conn) WriteResponse(resp *protocol.Command) error {
	return c.writeResponse(resp, writeQueued)
}

func (c *Conn) writeResponse(resp *protocol.Command, mode writeMode) error {
	resp.Flag |= protocol.FlagResponse
	return c.send(resp, nil, mode)
}

// writeMode says who writes a frame.
type writeMode uint8

const (
	// writeQueued: the write loop writes it (async and oneway requests,
	// concurrent sync requests, responses): frames produced in a burst go
	// out together in one writev.
	writeQueued writeMode = iota
	// writeNow: the sender writes it in place if the write loop is idle (a
	// sync request alone on its connection: its sender waits for the answer
	// anyway). The write never blocks: what the kernel does not take is
	// left to the write loop.
	writeNow
	// writeLater: queue without waking anyone; only the read loop uses it, and it flushes before it next blocks on the socket, so the
	// answers to all the requests of one read go out in one write.
	writeLater
)

// send encodes cmd and queues or writes it (see writeMode). done, if not
// nil, runs on the write loop once the frame was written (nil error) or
// dropped; frames with done are always left to the write loop.
func (c *Conn) send(cmd *protocol.Command, done func(error), mode writeMode) error {
	bp := c.ep.headerBufs.Get().(*[]byte)
	hdr, err := protocol.AppendFrameHeader((*bp)[:0], cmd)
	if err != nil {
		c.ep.headerBufs.Put(bp)
		return fmt.Errorf("remoting: encode code %d: %w", cmd.Code, err)
	}
	total := len(hdr) + len(cmd.Body)
	if total > c.ep.maxFrame {
		c.ep.headerBufs.Put(bp)
		return fmt.Errorf("remoting: code %d: frame of %d bytes over the %d limit: %w", cmd.Code, total,
			c.ep.maxFrame, protocol.ErrFrameTooLarge)
	}
	c.wmu.Lock()
	if c.wclosed {
		c.wmu.Unlock()
		c.ep.headerBufs.Put(bp)
		return c.closedError()
	}
	if c.pending.bytes > 0 && c.pending.bytes+total > maxPendingWrite {
		c.wmu.Unlock()
		c.ep.headerBufs.Put(bp)
		c.logger.Warn("remoting: peer is not reading; closing", "pendingBytes", c.pending.bytes)
		c.closeWith(fmt.Errorf("remoting: write queue over %d bytes: %w", maxPendingWrite, ErrConnClosed))
		return c.closedError()
	}
	c.pending.add(hdr, cmd.Body, done, cmd.BodyDone)
	wake := true
	switch mode {
	case writeNow:
		wake = c.flushLocked()
	case writeLater:
		wake = false
		c.readerQueued++
	default:
		if c.holdWrites { // the read loop flushes after its idle function
			wake = false
			c.held++
		}
	}
	c.wmu.Unlock()
	*bp = hdr
	c.ep.headerBufs.Put(bp)
	if wake {
		c.wakeWriter()
	}
	return nil
}

// flushLocked writes the pending frames in place when the write loop is
// idle and they can go in one plain non-blocking write, and reports
// whether the write loop must be woken for what is left. REQUIRES: wmu.
func (c *Conn) flushLocked() (wake bool) {
	if c.pending.empty() {
		return false
	}
	if c.writing || c.rawc == nil || !c.pending.contiguous() {
		return true
	}
	c.tryBuf, c.tryN = c.pending.arena, 0
	err := c.rawc.Write(c.tryFn)
	c.tryBuf = nil
	if err == nil && c.tryN > 0 {
		c.pending.consume(c.tryN)
		c.touch()
	}
	// Nothing written (socket buffer full, an error): the write loop
	// writes it, blocking, and handles the error.
	return !c.pending.empty()
}

// flushReader sends what the read loop queued with writeLater, just before
// it waits for the peer. A single answer is written in place (one
// non-blocking write, the rest left to the write loop) if the write loop is
// idle. The answers to a burst of pipelined requests go to the write loop,
// which writes them while the read loop goes on reading (measured cheaper
// per call than the read loop writing them itself).
func (c *Conn) flushReader() {
	one := c.readerQueued == 1
	c.readerQueued = 0
	wake := true
	if one {
		c.wmu.Lock()
		wake = c.flushLocked()
		c.wmu.Unlock()
	}
	if wake {
		c.wakeWriter()
	}
}

func (c *Conn) wakeWriter() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func newHeaderBuf() any { b := make([]byte, 0, 512); return &b }

func (c *Conn) closedError() error {
	return fmt.Errorf("remoting: %s: %w", c.remote, ErrConnClosed)
}

// writeLoop writes queued frames until the connection closes. Frames queued
// while a write is in progress go out together in the next write.
func (c *Conn) writeLoop() {
	for {
		select {
		case <-c.wake:
		case <-c.closed:
			c.drainWrites()
			return
		}
		// Let goroutines that are about to queue a frame do so, so that one
		// write carries them all. With nothing else runnable this returns at
		// once, so it costs a lone caller nothing measurable.
		runtime.Gosched()
		for {
			c.wmu.Lock()
			if c.pending.empty() {
				c.wmu.Unlock()
				break
			}
			c.pending, c.spare = c.spare, c.pending
			c.writing = true
			c.wmu.Unlock()
			var err error
			if c.writeRaw != nil {
				err = c.writeRaw(c.spare.segments())
			} else {
				err = c.spare.writeTo(c.rw)
			}
			c.wmu.Lock()
			c.writing = false
			c.wmu.Unlock()
			if err == nil {
				c.touch()
				c.spare.finish(nil)
				continue
			}
			c.spare.finish(fmt.Errorf("remoting: write to %s: %w", c.remote, err))
			c.closeWith(fmt.Errorf("remoting: write: %w", err))
			c.drainWrites()
			return
		}
	}
}

// drainWrites fails whatever is still queued after close.
func (c *Conn) drainWrites() {
	c.wmu.Lock()
	b := c.pending
	c.pending = writeBatch{}
	c.wclosed = true
	c.wmu.Unlock()
	b.finish(c.closedError())
}

// readLoop owns the connection: it sets up TLS (server permissive mode),
// starts the write loop, then reads frames until an error, and finally
// fails the pending futures and reports the close.
func (c *Conn) readLoop(serverTLS *tls.Config) {
	r, err := c.setup(serverTLS)
	if err == nil && !c.ep.goFunc("remoting-write", c.writeLoop) {
		err = ErrClosed
	}
	if err != nil {
		c.closeWith(err)
		c.cleanup(err)
		return
	}
	c.opened = true
	c.ep.connOpened(c)
	// NewFrameReader keeps br (a bufio.Reader of the right size) as is, so
	// br.Buffered() tells whether the next frame is already here.
	c.br = bufio.NewReaderSize(r, c.ep.readBuf)
	c.fr = protocol.NewFrameReader(c.br, c.ep.maxFrame, c.ep.readBuf)
	c.fr.SetExtListCodes(c.ep.extListCodes)
	if c.ep.recycled != nil {
		c.fr.SetRecycledFrames(c.ep.recycled)
	}
	if len(c.ep.respListCodes) > 0 {
		c.fr.SetExtListResponses(c.takeForDecode)
	}
	for {
		if !frameBuffered(c.br) {
			c.syncBatch = 0
			c.readFirst = true
			c.flushAsync()
			if c.idleFn != nil {
				c.runIdle()
			}
			if c.readerQueued > 0 {
				c.flushReader() // about to wait for the peer: answer first
			}
		}
		cmd, err := c.fr.Next()
		if err != nil {
			c.flushAsync()
			if c.idleFn != nil {
				c.runIdle() // other connections' answers may depend on it
			}
			c.closeWith(err)
			break
		}
		c.touch()
		if c.readFirst {
			c.readFirst = false
			c.readSmall = framesAtMost(c.br, smallRead-1) // the others of this read
		}
		if cmd.IsResponse() {
			c.completeResponse(cmd)
		} else {
			c.ep.dispatch(c, cmd)
		}
	}
	c.cleanup(c.closeErr)
}

// frameBuffered reports whether br holds a whole frame, so that reading it
// will not block.
func frameBuffered(br *bufio.Reader) bool {
	n := br.Buffered()
	if n < 4 {
		return false
	}
	p, _ := br.Peek(4)
	return int64(binary.BigEndian.Uint32(p))+4 <= int64(n)
}

// setup returns the reader frames come from. With serverTLS set it peeks at
// the first byte: 0x16 (a TLS handshake record) means TLS, anything else
// plain (Java's permissive mode, docs/protocol.md §1.1).
func (c *Conn) setup(serverTLS *tls.Config) (io.Reader, error) {
	if serverTLS == nil {
		return c.reader(), nil
	}
	br := bufio.NewReaderSize(c.raw, readBufSize)
	_ = c.raw.SetReadDeadline(time.Now().Add(tlsHandshakeTimeout))
	defer func() { _ = c.raw.SetReadDeadline(time.Time{}) }()
	first, err := br.Peek(1)
	if err != nil {
		return nil, fmt.Errorf("remoting: peek first byte: %w", err)
	}
	if first[0] != 0x16 {
		if c.ep.tlsEnforce {
			return nil, fmt.Errorf("remoting: plain connection refused (TLS enforced): %w", ErrConnClosed)
		}
		return br, nil
	}
	tc := tls.Server(&peekedConn{Conn: c.raw, r: br}, serverTLS)
	ctx, cancel := context.WithTimeout(c.ep.ctx, tlsHandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, fmt.Errorf("remoting: TLS handshake: %w", err)
	}
	c.rw = tc
	return tc, nil
}

// peekedConn reads through the bufio.Reader that peeked at the first byte.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (p *peekedConn) Read(b []byte) (int, error) { return p.r.Read(b) }

// expireAsync fails the async futures whose deadline passed or whose
// context ended (the client's timeout scanner).
func (c *Conn) expireAsync(now int64) {
	var expired []*future
	c.fmu.Lock()
	for op, f := range c.futures {
		if f.cb != nil && (f.deadline <= now || f.ctx.Err() != nil) {
			delete(c.futures, op)
			expired = append(expired, f)
		}
	}
	c.fmu.Unlock()
	for _, f := range expired {
		err := f.ctx.Err()
		if err == nil {
			err = context.DeadlineExceeded
		}
		what := fmt.Sprintf("%s opaque %d", c.remote, f.opaque)
		if errors.Is(err, context.DeadlineExceeded) {
			c.ep.timeouts.Add(1)
			f.complete(nil, fmt.Errorf("remoting: %s: %w: %w", what, ErrTimeout, err))
		} else {
			f.complete(nil, fmt.Errorf("remoting: %s: %w", what, err))
		}
	}
}

// cleanup runs once on the read loop after the connection ended.
func (c *Conn) cleanup(reason error) {
	c.fmu.Lock()
	fs := c.futures
	c.futures = nil
	c.fmu.Unlock()
	taken := c.taken // its response failed to decode
	c.taken = nil
	if len(fs) > 0 || taken != nil {
		failed := fmt.Errorf("remoting: %s: %w", c.remote, ErrConnClosed)
		if taken != nil {
			taken.complete(nil, failed)
		}
		for _, f := range fs {
			f.complete(nil, failed)
		}
	}
	c.ep.connClosed(c, reason)
}

// normalClose reports whether err is an ordinary end of a connection (peer
// closed, we closed) rather than an exception worth reporting.
func normalClose(err error) bool {
	return err == nil || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, ErrConnClosed) || errors.Is(err, ErrClosed)
}

// completeResponse hands a response to the future waiting for its opaque
// and reports whether that was a sync call. Async calls are collected in
// asyncDone, whose callbacks the reader queues together (flushAsync).
// REQUIRES: the caller holds the reading role.
func (c *Conn) completeResponse(resp *protocol.Command) (sync bool) {
	f := c.taken
	if f != nil && f.opaque == resp.Opaque {
		c.taken = nil
	} else {
		f = c.takeFuture(resp.Opaque)
	}
	if f == nil {
		c.logger.Debug("remoting: response matches no request", "opaque", resp.Opaque, "code", resp.Code)
		return false
	}
	if f.cb == nil {
		c.noteSyncDone()
		f.complete(resp, nil)
		return true
	}
	f.res = result{resp, nil}
	if c.asyncDone == nil {
		c.asyncDone = make([]*future, 0, callbackBatch)
	}
	c.asyncDone = append(c.asyncDone, f)
	if len(c.asyncDone) == callbackBatch {
		c.flushAsync()
	}
	return false
}

// noteSyncDone counts a sync completion into the current burst (see
// Conn.burst) before its caller is woken. REQUIRES: the reading role.
func (c *Conn) noteSyncDone() {
	switch {
	case c.syncBatch > 0: // an earlier answer of this read was counted
		c.burst.Add(1)
	case frameBuffered(c.br): // more answers follow in this read
		c.burst.Store(1)
	}
	c.syncBatch++
}

// takeBurst consumes one count of Conn.burst and reports whether there
// was one: the calling sync call's caller was (probably) woken in a burst.
func (c *Conn) takeBurst() bool {
	for b := c.burst.Load(); b > 0; b = c.burst.Load() {
		if c.burst.CompareAndSwap(b, b-1) {
			return true
		}
	}
	return false
}

// callbackBatch is the most async completions handed to the callback
// executor at once.
const callbackBatch = 32

// flushAsync queues the callbacks of the async calls completed since the
// last flush. The reader calls it before it blocks on the socket or gives
// the reading role away. REQUIRES: the caller holds the reading role.
func (c *Conn) flushAsync() {
	if len(c.asyncDone) == 0 {
		return
	}
	fs := c.asyncDone
	c.asyncDone = nil
	fs[0].exec.runBatch(fs)
}

// addFuture registers f under its opaque and returns how many requests
// are now in flight on c.
func (c *Conn) addFuture(f *future) (inFlight int, err error) {
	c.fmu.Lock()
	defer c.fmu.Unlock()
	if c.futures == nil {
		return 0, c.closedError()
	}
	c.futures[f.opaque] = f
	return len(c.futures), nil
}

// takeForDecode takes the future waiting for opaque, whose response the
// read loop is about to decode, into c.taken and reports whether it wants
// the response decoded with ExtList (future.extList): one look-up of the
// futures table per response instead of one before the decode and one
// after. REQUIRES: the caller holds the reading role.
func (c *Conn) takeForDecode(opaque int32) bool {
	f := c.takeFuture(opaque)
	if f == nil {
		return false
	}
	c.taken = f
	return f.extList
}

// takeFuture removes and returns the future for opaque, or nil. Whoever
// takes a future is the only one who completes it.
func (c *Conn) takeFuture(opaque int32) *future {
	c.fmu.Lock()
	f := c.futures[opaque]
	if f != nil {
		delete(c.futures, opaque)
	}
	c.fmu.Unlock()
	return f
}

// prepareRequest stamps req as a request of ours with the given opaque.
func prepareRequest(req *protocol.Command, opaque int32, oneway bool) {
	req.Opaque = opaque
	req.Flag &^= protocol.FlagResponse
	if oneway {
		req.Flag |= protocol.FlagOneway
	} else {
		req.Flag &^= protocol.FlagOneway
	}
}

// invokeSync sends req and waits for its response or ctx. It sets
// req.Opaque and clears the response and oneway flags.
func (c *Conn) invokeSync(ctx context.Context, req *protocol.Command, opaque int32) (*protocol.Command, error) {
	prepareRequest(req, opaque, false)
	f := c.ep.syncFutures.Get().(*future)
	f.opaque, f.extList = opaque, c.ep.listsResponse(req.Code)
	inFlight, err := c.addFuture(f)
	if err != nil {
		c.ep.syncFutures.Put(f)
		return nil, err
	}
	// A lone call writes its own frame; concurrent calls, and the calls
	// of callers woken together by one read, leave theirs to the write
	// loop, which sends them together.
	mode := writeQueued
	if !c.takeBurst() && inFlight == 1 {
		mode = writeNow
	}
	if err := c.send(req, nil, mode); err != nil {
		if c.takeFuture(opaque) == nil {
			<-f.ch // completed concurrently (connection closed): consume it
		}
		c.ep.syncFutures.Put(f)
		return nil, err
	}
	var r result
	select {
	case r = <-f.ch:
	case <-ctx.Done():
		if c.takeFuture(opaque) != nil {
			c.ep.syncFutures.Put(f)
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				c.ep.timeouts.Add(1)
			}
			return nil, ctxError(ctx, fmt.Sprintf("%s code %d opaque %d", c.remote, req.Code, opaque))
		}
		r = <-f.ch // the response won the race
	}
	c.ep.syncFutures.Put(f)
	return r.resp, r.err
}

// invokeOneway queues req with the oneway flag; done runs when written.
func (c *Conn) invokeOneway(req *protocol.Command, opaque int32, done func(error)) error {
	prepareRequest(req, opaque, true)
	return c.send(req, done, writeQueued)
}
