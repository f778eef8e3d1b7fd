package ha

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apogeemq/apogee/internal/store"
)

// slaveConn is one slave's connection on the master (DefaultHAConnection):
// a read loop (reports) and a write loop (transfers), each on its own
// goroutine, started and awaited by the Server.
type slaveConn struct {
	s    *Server
	nc   net.Conn
	id   uint64
	addr string

	// ackOffset is the slave's last reported max offset (slaveAckOffset);
	// -1 until the first report.
	ackOffset atomic.Int64
	// requestOffset is the first report (slaveRequestOffset); valid once
	// reported is closed.
	requestOffset atomic.Int64
	reported      chan struct{} // closed by the read loop at the first report

	// brokerID is the controller id from the handshake (0: classic slave);
	// set by the read loop before reported is closed.
	brokerID atomic.Int64
	// lastCaughtUp is when the slave last acknowledged everything the
	// master had at its previous report (unix nanos; haMaxTimeSlaveNotCatchup).
	lastCaughtUp atomic.Int64
	// prevMax is the master's max offset at the previous report; read loop only.
	prevMax int64

	unread    int64 // first report read while probing for the handshake
	hasUnread bool

	wake      chan struct{} // capacity 1: new data may be readable
	done      chan struct{} // closed by close
	closeOnce sync.Once
}

func newSlaveConn(s *Server, nc net.Conn, id uint64) *slaveConn {
	c := &slaveConn{
		s: s, nc: nc, id: id, addr: nc.RemoteAddr().String(),
		reported: make(chan struct{}),
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	c.ackOffset.Store(-1)
	return c
}

// ackKey is the GroupTransfer key: the controller broker id when the slave
// sent the handshake, else the connection id above the id space.
func (c *slaveConn) ackKey() uint64 {
	if id := c.brokerID.Load(); id > 0 {
		return uint64(id)
	}
	return classicKeyBase + c.id
}

// classicKeyBase separates connection ids from controller broker ids.
const classicKeyBase = 1 << 62

// close closes the socket once; both loops then exit.
func (c *slaveConn) close() {
	c.closeOnce.Do(func() {
		close(c.done)
		c.nc.Close()
	})
}

// readLoop is ReadSocketService: every 8-byte report sets the ack offset
// (the first also the request offset) and wakes sync waiters. A slave
// silent for haHousekeepingInterval is dropped.
func (c *slaveConn) readLoop() {
	r := bufio.NewReaderSize(c.nc, 4096)
	var buf [reportSize]byte
	first := true
	c.prevMax = c.s.log.MaxPhyOffset()
	for {
		if err := c.nc.SetReadDeadline(time.Now().Add(c.s.cfg.HousekeepingInterval)); err != nil {
			return
		}
		if first {
			w, err := readWord(r, &buf)
			if err != nil {
				c.logEnd("read", err)
				return
			}
			if w == handshakeMagic {
				id, err := readWord(r, &buf)
				if err != nil || id <= 0 {
					c.logEnd("handshake", fmt.Errorf("ha: bad handshake broker id %d: %v", id, err))
					return
				}
				c.brokerID.Store(id)
				c.s.logger.Info("slave identified", "addr", c.addr, "brokerId", id)
			} else if w < 0 {
				c.logEnd("read", fmt.Errorf("ha: negative report offset %d: %w", w, errBadFrame))
				return
			} else {
				c.unread = w
				c.hasUnread = true
			}
		}
		var off int64
		var err error
		if c.hasUnread {
			off, c.hasUnread = c.unread, false
		} else if off, err = readReport(r, &buf); err != nil {
			c.logEnd("read", err)
			return
		}
		// Several reports may be buffered: only the newest matters.
		for r.Buffered() >= reportSize {
			if off, err = readReport(r, &buf); err != nil {
				c.logEnd("read", err)
				return
			}
		}
		c.ackOffset.Store(off)
		now := time.Now()
		if off >= c.prevMax {
			c.lastCaughtUp.Store(now.UnixNano())
		}
		c.prevMax = c.s.log.MaxPhyOffset()
		if first {
			first = false
			c.requestOffset.Store(off)
			close(c.reported)
		}
		for {
			cur := c.s.push2SlaveMaxOffset.Load()
			if off <= cur || c.s.push2SlaveMaxOffset.CompareAndSwap(cur, off) {
				break
			}
		}
		c.s.transfer.Ack(c.ackKey(), off)
	}
}

func (c *slaveConn) logEnd(side string, err error) {
	select {
	case <-c.done:
		return // closed by us
	default:
	}
	if errors.Is(err, io.EOF) {
		c.s.logger.Info("slave closed the HA connection", "addr", c.addr)
		return
	}
	c.s.logger.Warn("HA connection failed", "addr", c.addr, "side", side, "err", err)
}

// startOffset is where streaming begins: an empty slave (report 0) gets
// the beginning of the master's last commit-log file, no history; any other
// slave continues at its reported offset.
func startOffset(reported, masterMax, fileSize int64) int64 {
	if reported == 0 {
		return masterMax - masterMax%fileSize
	}
	return reported
}

// startOffsetFor applies SyncFromMinOffset: an empty slave gets the whole
// history from the master's first offset.
func (c *slaveConn) startOffsetFor(reported int64) int64 {
	if reported == 0 && c.s.cfg.SyncFromMinOffset {
		if m, ok := c.s.log.(interface{ MinPhyOffset() int64 }); ok {
			return m.MinPhyOffset()
		}
	}
	return startOffset(reported, c.s.log.MaxPhyOffset(), c.s.cfg.CommitLogFileSize)
}

// writeLoop is WriteSocketService. It waits for the first report, then
// sends header + up to haTransferBatchSize bytes while data is readable,
// waits up to IdleWait (100 ms) or a Notify when there is none, and sends
// a header-only heartbeat after haSendHeartbeatInterval of silence.
func (c *slaveConn) writeLoop() {
	select {
	case <-c.reported:
	case <-c.done:
		return
	}
	cfg := &c.s.cfg
	next := c.startOffsetFor(c.requestOffset.Load())
	c.s.logger.Info("slave transfer starts", "addr", c.addr, "offset", next, "reported", c.requestOffset.Load())
	var header [transferHeaderSize]byte
	lastWrite := time.Now()
	idle := time.NewTimer(cfg.IdleWait)
	defer idle.Stop()
	var warnedAt time.Time
	for {
		select {
		case <-c.done:
			return
		default:
		}
		want := c.s.flow.allow(cfg.TransferBatchSize, time.Now())
		var data []byte
		var err error
		if want > 0 {
			data, err = c.s.log.ReadCommitLog(next, want)
		}
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			c.s.logger.Warn("HA read commit log", "addr", c.addr, "offset", next, "err", err)
			c.close()
			return
		}
		if err != nil && next < c.s.log.MaxPhyOffset() && time.Since(warnedAt) > time.Minute {
			// The slave asks for data this master no longer (or never) had.
			warnedAt = time.Now()
			c.s.logger.Warn("slave offset not readable on master", "addr", c.addr, "offset", next)
		}
		if len(data) > 0 {
			putTransferHeader(header[:], next, int32(len(data)))
			if !c.write(header[:], data) {
				return
			}
			next += int64(len(data))
			lastWrite = time.Now()
			continue
		}
		if time.Since(lastWrite) >= cfg.HeartbeatInterval {
			putTransferHeader(header[:], next, 0)
			if !c.write(header[:], nil) {
				return
			}
			lastWrite = time.Now()
		}
		if !idle.Stop() {
			select {
			case <-idle.C:
			default:
			}
		}
		idle.Reset(cfg.IdleWait)
		select {
		case <-c.done:
			return
		case <-c.wake:
		case <-idle.C:
		}
	}
}

// write sends one frame; false means the connection is finished.
func (c *slaveConn) write(header, body []byte) bool {
	if err := c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.HousekeepingInterval)); err != nil {
		return false
	}
	bufs := net.Buffers{header}
	if len(body) > 0 {
		bufs = append(bufs, body)
	}
	if _, err := bufs.WriteTo(c.nc); err != nil {
		c.logEnd("write", err)
		c.close()
		return false
	}
	return true
}
