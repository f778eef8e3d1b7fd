package remoting

import (
	"errors"
	"os"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
)

// The reading role. Whoever holds it owns the connection's buffered reader
// (br, fr), readerQueued and asyncDone: the read loop, or a sync caller alone on its
// connection that reads its own response (a "leader"). A netpoll wake-up
// of the goroutine parked on the socket is what a raw ping-pong costs; a
// leader gets exactly that, where a read loop completing a future pays a
// channel hand-off (ready + an idle-M wake-up) on the critical path.
//
//	       release (read loop: a response emptied the futures table, nothing buffered)
//	loop ───────────────────────────────────> free
//	 ^  ^                                       │  ^
//	 │  └── reclaim (a tick with no new lead, ──┘  │ done (nothing in flight, nothing buffered)
//	 │       or a call that does not lead)         │
//	 │                                             v
//	 └────── hand back (others in flight, ────── caller (lead: a sync call finding "free")
//	          buffered bytes, error, big frame,
//	          interrupted by the tick)
//
// The role moves only under fmu, together with the futures table, so a
// call added while nobody reads always either leads or wakes the read
// loop. While the read loop does not hold the role it parks on readerWake
// with a tick (readerTick) instead of on the socket; the tick bounds how
// long bytes can sit unread while nobody reads (requests from the peer, a
// close) and how long a leader can hold the role: one that has led for a
// whole tick is interrupted (read deadline in the past) and then waits on
// its future like any other call, where its ctx is honoured.
type readerRole uint8

const (
	readerLoop   readerRole = iota // the read loop reads (or is about to)
	readerFree                     // nobody reads; the next lone sync call may lead
	readerCaller                   // a lone sync call reads its own response
)

// readerTick: see readerRole. It bounds the extra latency of a request from
// the peer arriving between two sync calls, and the extra delay a leader's
// ctx may see (up to two ticks).
const readerTick = time.Millisecond

// errFrameOverBuffer: the next frame does not fit in the read buffer; a
// leader leaves it to the read loop (which reads it in pieces).
var errFrameOverBuffer = errors.New("remoting: frame larger than the read buffer")

// releaseReader gives up the role after the read loop completed a
// response, if nothing is in flight. REQUIRES: the caller is the read loop
// holding the role. Returns the number of leads so far (see awaitReader).
func (c *Conn) releaseReader() (leads uint64, ok bool) {
	c.fmu.Lock()
	defer c.fmu.Unlock()
	if c.futures == nil || len(c.futures) > 0 {
		return 0, false
	}
	c.reader = readerFree
	return c.leads, true
}

// awaitReader parks the read loop until it holds the reading role again:
// handed back by a leader, reclaimed after a tick with no new lead, or
// taken back for a call that does not lead. False: the connection closed.
// seen is the number of leads when the role was released.
func (c *Conn) awaitReader(seen uint64) bool {
	if c.readerTimer == nil {
		c.readerTimer = time.NewTimer(c.ep.readerTick)
	} else {
		c.readerTimer.Reset(c.ep.readerTick)
	}
	// A wake-up left over from before the release (the role came back by
	// the tick while it was in flight) means nothing now; the state is
	// checked below anyway.
	select {
	case <-c.readerWake:
	default:
	}
	ticked := false
	for {
		c.fmu.Lock()
		if c.reader == readerLoop { // handed back
			c.fmu.Unlock()
			c.readerTimer.Stop()
			c.clearInterrupt()
			return true
		}
		if ticked {
			switch {
			case c.reader == readerFree && c.leads == seen:
				// A whole tick without a lead: read again.
				c.reader = readerLoop
				c.fmu.Unlock()
				c.clearInterrupt()
				return true
			case c.reader == readerCaller && c.leads == seen:
				// The same leader for a whole tick: take the role back.
				c.interrupted = true
				_ = c.raw.SetReadDeadline(time.Unix(1, 0))
			}
			seen = c.leads
			c.readerTimer.Reset(c.ep.readerTick)
		}
		c.fmu.Unlock()
		ticked = false
		select {
		case <-c.readerWake:
		case <-c.readerTimer.C:
			ticked = true
		case <-c.closed:
			c.readerTimer.Stop()
			return false
		}
	}
}

// clearInterrupt removes the read deadline set to interrupt a leader.
// Read loop only.
func (c *Conn) clearInterrupt() {
	if c.interrupted {
		c.interrupted = false
		_ = c.raw.SetReadDeadline(time.Time{})
	}
}

// handBack returns the role to the read loop. REQUIRES: the caller holds it.
func (c *Conn) handBack() {
	c.fmu.Lock()
	c.reader = readerLoop
	c.fmu.Unlock()
	c.wakeReader()
}

func (c *Conn) wakeReader() {
	select {
	case c.readerWake <- struct{}{}:
	default:
	}
}

// leadRead reads frames as the connection's reader until the response to
// opaque arrives, completing other futures and dispatching requests from
// the peer on the way, as the read loop would. It returns the response
// with its future already taken (ok), or ok=false after giving the role
// back (a slow response, a frame over the buffer, an error, the
// connection closing): the caller then waits on its future as usual.
// REQUIRES: the caller leads (addFuture said so) and its request was sent.
func (c *Conn) leadRead(opaque int32) (*protocol.Command, bool) {
	for {
		if !frameBuffered(c.br) {
			c.flushAsync()
			if c.readerQueued > 0 {
				c.flushReader()
			}
			if err := c.peekFrame(); err != nil {
				if !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, errFrameOverBuffer) {
					c.closeWith(err)
				}
				c.handBack()
				return nil, false
			}
		}
		cmd, err := c.fr.Next() // a whole frame is buffered: no I/O
		if err != nil {
			c.flushAsync()
			c.closeWith(err)
			c.handBack()
			return nil, false
		}
		c.touch()
		switch {
		case !cmd.IsResponse():
			c.ep.dispatch(c, cmd)
		case cmd.Opaque != opaque:
			c.completeResponse(cmd)
		default:
			return cmd, c.finishLead(opaque)
		}
	}
}

// finishLead takes the leader's own future and passes the role on: to
// nobody if nothing else is in flight or buffered, else to the read loop.
// False: the connection's cleanup took the future (and completes it).
func (c *Conn) finishLead(opaque int32) bool {
	c.flushAsync()
	if c.readerQueued > 0 {
		c.flushReader()
	}
	c.fmu.Lock()
	f := c.futures[opaque]
	if f != nil {
		delete(c.futures, opaque)
	}
	wake := c.futures == nil || len(c.futures) > 0 || c.br.Buffered() > 0
	if wake {
		c.reader = readerLoop
	} else {
		c.reader = readerFree
	}
	c.fmu.Unlock()
	if wake {
		c.wakeReader()
	}
	return f != nil
}

// peekFrame waits until a whole frame sits in the read buffer, consuming
// nothing: a read deadline (the interrupt) or an error leaves the stream
// intact for the read loop.
func (c *Conn) peekFrame() error {
	p, err := c.br.Peek(4)
	if err != nil {
		return err
	}
	n := int64(uint32(p[0])<<24|uint32(p[1])<<16|uint32(p[2])<<8|uint32(p[3])) + 4
	if n > int64(c.br.Size()) {
		return errFrameOverBuffer
	}
	_, err = c.br.Peek(int(n))
	return err
}
