package ha

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apogeemq/apogee/internal/run"
)

// CommitLogAppender is what the slave needs from its store.
type CommitLogAppender interface {
	// AppendRawCommitLog appends data at exactly offset (the log's end).
	AppendRawCommitLog(offset int64, data []byte) error
	MaxPhyOffset() int64
}

// errOffsetMismatch: the master streams from an offset that is not the
// slave's end; the connection is closed and the slave reports again.
var errOffsetMismatch = errors.New("ha: master offset differs from slave max offset")

// errHousekeeping: nothing read from the master for haHousekeepingInterval.
var errHousekeeping = errors.New("ha: master silent for haHousekeepingInterval")

// Client is the slave's HA client (DefaultHAClient): it connects to the
// master's HA port, reports its max offset, appends every transferred range
// at exactly its offset, and reconnects after ReconnectInterval when the
// connection fails or the stream does not continue its log. New starts
// nothing; Start runs one goroutine; Close is idempotent and waits for it.
type Client struct {
	cfg    ClientConfig
	log    CommitLogAppender
	logger *slog.Logger

	mu         sync.Mutex
	masterAddr string   // guarded by mu
	conn       net.Conn // current connection; guarded by mu
	closed     bool     // guarded by mu

	addrChanged chan struct{} // capacity 1
	// routines owns the connection loop; ctx (cancelled by Close: aborts a
	// pending dial) and quit are its context and Done channel.
	routines *run.Group
	ctx      context.Context
	quit     <-chan struct{}
	started  atomic.Bool

	// Counters for Stats.
	connects     atomic.Int64
	mismatches   atomic.Int64
	bytes        atomic.Int64
	lastReported atomic.Int64
	connected    atomic.Bool
}

// NewClient validates cfg; it connects nothing.
func NewClient(cfg ClientConfig, log CommitLogAppender, logger *slog.Logger) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	routines := run.NewGroup("ha")
	return &Client{
		routines:    routines,
		ctx:         routines.Context(),
		quit:        routines.Done(),
		cfg:         cfg,
		log:         log,
		logger:      logger.With("component", "ha-client"),
		masterAddr:  cfg.MasterAddress,
		addrChanged: make(chan struct{}, 1),
	}, nil
}

// SetMasterAddress changes the master's HA address (from the name server's
// registration answer); a connection to another address is closed.
func (c *Client) SetMasterAddress(addr string) {
	c.mu.Lock()
	if addr == c.masterAddr {
		c.mu.Unlock()
		return
	}
	c.logger.Info("HA master address changed", "old", c.masterAddr, "new", addr)
	c.masterAddr = addr
	if c.conn != nil {
		c.conn.Close()
	}
	c.mu.Unlock()
	signal(c.addrChanged)
}

// MasterAddress returns the current master HA address.
func (c *Client) MasterAddress() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.masterAddr
}

// Start starts the connection loop.
func (c *Client) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || !c.started.CompareAndSwap(false, true) {
		return ErrClosed
	}
	if !c.routines.Go("ha-client", func(context.Context) { c.run() }) {
		return ErrClosed
	}
	return nil
}

// Close closes the connection and waits for the loop to exit.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	if c.conn != nil {
		c.conn.Close()
	}
	c.mu.Unlock()
	c.routines.Close()
	return nil
}

// ClientStats is a snapshot for metrics and tests.
type ClientStats struct {
	MasterAddr   string
	Connected    bool
	Connects     int64 // successful connects
	Mismatches   int64 // connections closed on an offset mismatch
	Bytes        int64 // commit-log bytes appended from the master
	LastReported int64 // last max offset reported to the master
}

// Stats returns a snapshot.
func (c *Client) Stats() ClientStats {
	return ClientStats{
		MasterAddr:   c.MasterAddress(),
		Connected:    c.connected.Load(),
		Connects:     c.connects.Load(),
		Mismatches:   c.mismatches.Load(),
		Bytes:        c.bytes.Load(),
		LastReported: c.lastReported.Load(),
	}
}

func (c *Client) run() {
	for {
		select {
		case <-c.quit:
			return
		default:
		}
		if addr := c.MasterAddress(); addr != "" {
			if err := c.session(addr); err != nil {
				select {
				case <-c.quit:
					return
				default:
				}
				if errors.Is(err, errOffsetMismatch) {
					c.logger.Error("HA stream does not continue the local commit log; reconnecting", "addr", addr, "err", err)
				} else {
					c.logger.Warn("HA connection to master ended", "addr", addr, "err", err)
				}
			}
		}
		t := time.NewTimer(c.cfg.ReconnectInterval)
		select {
		case <-c.quit:
			t.Stop()
			return
		case <-c.addrChanged:
		case <-t.C:
		}
		t.Stop()
	}
}

// session runs one connection until it fails.
func (c *Client) session(addr string) error {
	dial := c.cfg.Dial
	if dial == nil {
		d := &net.Dialer{Timeout: c.cfg.DialTimeout}
		dial = d.DialContext
	}
	dctx, cancel := context.WithTimeout(c.ctx, c.cfg.DialTimeout) // Close cancels c.ctx
	nc, err := dial(dctx, "tcp", addr)
	cancel()
	if err != nil {
		return fmt.Errorf("ha: connect %s: %w", addr, err)
	}
	c.mu.Lock()
	if c.closed || c.masterAddr != addr {
		c.mu.Unlock()
		nc.Close()
		return nil
	}
	c.conn = nc
	c.mu.Unlock()
	c.connects.Add(1)
	c.connected.Store(true)
	c.logger.Info("connected to HA master", "addr", addr, "offset", c.log.MaxPhyOffset())
	defer func() {
		c.connected.Store(false)
		c.mu.Lock()
		c.conn = nil
		c.mu.Unlock()
		nc.Close()
	}()
	return c.transfer(nc)
}

// transfer reports, reads frames and appends them; it returns when the
// connection fails, the master is silent too long, or a frame does not
// continue the local log.
func (c *Client) transfer(nc net.Conn) error {
	var report [reportSize]byte
	sendReport := func(off int64) error {
		if err := nc.SetWriteDeadline(time.Now().Add(c.cfg.HousekeepingInterval)); err != nil {
			return err
		}
		if _, err := nc.Write(appendReport(report[:0], off)); err != nil {
			return fmt.Errorf("ha: report: %w", err)
		}
		c.lastReported.Store(off)
		return nil
	}
	if c.cfg.BrokerID > 0 {
		var hs [2 * reportSize]byte
		if err := nc.SetWriteDeadline(time.Now().Add(c.cfg.HousekeepingInterval)); err != nil {
			return err
		}
		if _, err := nc.Write(appendHandshake(hs[:0], c.cfg.BrokerID)); err != nil {
			return fmt.Errorf("ha: handshake: %w", err)
		}
	}
	reported := c.log.MaxPhyOffset()
	if err := sendReport(reported); err != nil {
		return err
	}
	lastReport, lastRead := time.Now(), time.Now()
	dec := newTransferDecoder(MaxFrameBody)
	// Short read deadlines let the loop report and do housekeeping while
	// the master is idle.
	tick := min(c.cfg.HeartbeatInterval, time.Second)
	for {
		if err := nc.SetReadDeadline(time.Now().Add(tick)); err != nil {
			return err
		}
		n, err := dec.readFrom(nc)
		if err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				return fmt.Errorf("ha: read: %w", err)
			}
		}
		now := time.Now()
		if n > 0 {
			lastRead = now
		}
		for {
			off, body, ok, err := dec.next()
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			if local := c.log.MaxPhyOffset(); local != 0 && local != off {
				c.mismatches.Add(1)
				return fmt.Errorf("%w: master %d, slave %d", errOffsetMismatch, off, local)
			}
			if len(body) == 0 {
				continue // heartbeat
			}
			if err := c.log.AppendRawCommitLog(off, body); err != nil {
				return fmt.Errorf("ha: append at %d: %w", off, err)
			}
			c.bytes.Add(int64(len(body)))
		}
		cur := c.log.MaxPhyOffset()
		if cur > reported || now.Sub(lastReport) >= c.cfg.HeartbeatInterval {
			if err := sendReport(cur); err != nil {
				return err
			}
			reported, lastReport = cur, now
		}
		if now.Sub(lastRead) >= c.cfg.HousekeepingInterval {
			return errHousekeeping
		}
	}
}
