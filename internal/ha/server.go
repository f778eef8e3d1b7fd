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
	"github.com/apogeemq/apogee/internal/store"
)

// CommitLogReader is what the master needs from its store.
type CommitLogReader interface {
	// ReadCommitLog copies up to max readable bytes from offset, within one
	// file; (nil, nil) when nothing is readable yet.
	ReadCommitLog(offset int64, max int) ([]byte, error)
	MaxPhyOffset() int64
}

// ErrClosed is returned by Start after Close.
var ErrClosed = errors.New("ha: closed")

const (
	stateNew int32 = iota
	stateRunning
	stateClosing
	stateClosed
)

// Server is the master's HA service (DefaultHAService + AcceptSocketService):
// it accepts slave connections, streams the commit log to each, and feeds
// their reports to a GroupTransfer. New starts nothing; Start listens;
// Close is idempotent and returns after every goroutine exited.
type Server struct {
	cfg      ServerConfig
	log      CommitLogReader
	logger   *slog.Logger
	transfer *GroupTransfer
	flow     flowLimiter

	ln     net.Listener
	nextID atomic.Uint64
	// push2SlaveMaxOffset is the highest ack offset any slave reported.
	push2SlaveMaxOffset atomic.Int64

	state atomic.Int32
	// routines owns the accept loop, the group-transfer loop and each
	// connection's read and write loops; quit is its Done channel.
	routines *run.Group
	quit     <-chan struct{}
	closeMu  sync.Mutex // serialises Start/Close

	mu    sync.Mutex
	conns map[*slaveConn]struct{} // guarded by mu
}

// NewServer validates cfg; it opens nothing.
func NewServer(cfg ServerConfig, log CommitLogReader, logger *slog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg:      cfg,
		log:      log,
		logger:   logger.With("component", "ha-server"),
		routines: run.NewGroup("ha"),
		conns:    make(map[*slaveConn]struct{}),
	}
	s.quit = s.routines.Done()
	s.flow.limit = cfg.MaxTransferBytesPerSecond
	s.flow.enabled = cfg.FlowControlEnable
	s.transfer = NewGroupTransfer(cfg.InSyncReplicas, cfg.SlaveTimeout, s.Notify)
	s.transfer.allAck = cfg.AllAck
	return s, nil
}

// Start listens on cfg.ListenAddr and starts accepting slaves.
func (s *Server) Start() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.state.Load() != stateNew {
		return ErrClosed
	}
	listen := s.cfg.Listen
	if listen == nil {
		listen = net.Listen
	}
	ln, err := listen("tcp", s.cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("ha: listen %s: %w", s.cfg.ListenAddr, err)
	}
	s.ln = ln
	s.state.Store(stateRunning)
	s.goFunc("ha-accept", s.acceptLoop)
	s.goFunc("ha-group-transfer", s.transfer.run)
	s.logger.Info("HA server listening", "addr", ln.Addr().String())
	return nil
}

// Addr is the listening address (nil before Start).
func (s *Server) Addr() net.Addr {
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Replicator is the synchronous-replication stage to install in the store
// (SYNC_MASTER): store.SetReplicator(s.Replicator()).
func (s *Server) Replicator() store.Replicator { return s.transfer }

// Transfer exposes the ack bookkeeping.
func (s *Server) Transfer() *GroupTransfer { return s.transfer }

// Notify wakes every connection's writer: new commit-log data is readable.
// Non-blocking; safe from any goroutine.
func (s *Server) Notify() {
	s.mu.Lock()
	for c := range s.conns {
		signal(c.wake)
	}
	s.mu.Unlock()
}

// Close stops accepting, closes every slave connection, answers pending
// sync waiters with FLUSH_SLAVE_TIMEOUT and waits for every goroutine.
func (s *Server) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	switch s.state.Load() {
	case stateClosed:
		return nil
	case stateNew:
		s.state.Store(stateClosed)
		s.routines.Stop()
		s.transfer.stop()
		return nil
	}
	s.state.Store(stateClosing)
	s.routines.Stop()
	err := s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.close()
	}
	s.mu.Unlock()
	s.transfer.stop()
	s.routines.Wait()
	s.state.Store(stateClosed)
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// goFunc starts a goroutine of s.routines; it refuses once closing. It
// reports whether the goroutine started.
func (s *Server) goFunc(name string, f func()) bool {
	return s.routines.Go(name, func(context.Context) { f() })
}

func (s *Server) acceptLoop() {
	var backoff time.Duration
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			if s.state.Load() >= stateClosing || errors.Is(err, net.ErrClosed) {
				return
			}
			// Temporary failure (e.g. EMFILE): back off, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.logger.Warn("HA accept failed", "err", err)
			select {
			case <-s.quit:
				return
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		s.serve(nc)
	}
}

// serve registers a connection and starts its read and write loops.
func (s *Server) serve(nc net.Conn) {
	c := newSlaveConn(s, nc, s.nextID.Add(1))
	s.mu.Lock()
	if s.state.Load() >= stateClosing {
		s.mu.Unlock()
		nc.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	s.logger.Info("slave connected", "addr", c.addr)
	var exited atomic.Int32
	finish := func() {
		c.close()
		if exited.Add(1) == 2 {
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			s.transfer.Remove(c.ackKey())
			s.logger.Info("slave disconnected", "addr", c.addr, "ackOffset", c.ackOffset.Load())
		}
	}
	if !s.goFunc("ha-read", func() { defer finish(); c.readLoop() }) {
		finish()
	}
	if !s.goFunc("ha-write", func() { defer finish(); c.writeLoop() }) {
		finish()
	}
}

// SlaveStats describes one connected slave.
type SlaveStats struct {
	Addr string
	// AckOffset is the slave's last reported max offset (-1 before its
	// first report).
	AckOffset int64
	// InSync: the slave is within haMaxGapNotInSync of the master.
	InSync bool
}

// Stats is a snapshot for metrics and admin tools.
type Stats struct {
	Slaves              []SlaveStats
	Push2SlaveMaxOffset int64
	Waiting             int // puts waiting for slave acks
}

// Stats returns a snapshot.
func (s *Server) Stats() Stats {
	maxOff := s.log.MaxPhyOffset()
	st := Stats{Push2SlaveMaxOffset: s.push2SlaveMaxOffset.Load(), Waiting: s.transfer.Waiting()}
	s.mu.Lock()
	for c := range s.conns {
		ack := c.ackOffset.Load()
		st.Slaves = append(st.Slaves, SlaveStats{Addr: c.addr, AckOffset: ack,
			InSync: ack >= 0 && maxOff-ack <= s.cfg.MaxGapNotInSync})
	}
	s.mu.Unlock()
	return st
}

// SlaveProgress is one identified (controller-mode) slave's replication
// progress, for SyncStateSet maintenance.
type SlaveProgress struct {
	BrokerID     int64
	Addr         string
	AckOffset    int64
	LastCaughtUp time.Time // zero: never caught up on this connection
}

// Progress returns the identified slaves (handshake sent), one entry per
// broker id (the most advanced connection).
func (s *Server) Progress() map[int64]SlaveProgress {
	out := make(map[int64]SlaveProgress)
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		id := c.brokerID.Load()
		if id <= 0 {
			continue
		}
		p := SlaveProgress{BrokerID: id, Addr: c.addr, AckOffset: c.ackOffset.Load()}
		if ns := c.lastCaughtUp.Load(); ns > 0 {
			p.LastCaughtUp = time.Unix(0, ns)
		}
		if old, ok := out[id]; !ok || p.AckOffset > old.AckOffset {
			out[id] = p
		}
	}
	return out
}

// InSyncSlaves counts connected slaves within haMaxGapNotInSync.
func (s *Server) InSyncSlaves() int {
	n := 0
	for _, sl := range s.Stats().Slaves {
		if sl.InSync {
			n++
		}
	}
	return n
}

// flowLimiter is haFlowControlEnable: at most limit bytes per wall-clock
// second over all slaves.
type flowLimiter struct {
	enabled bool
	limit   int64
	mu      sync.Mutex
	second  int64 // unix second of the window; guarded by mu
	used    int64 // bytes sent in the window; guarded by mu
}

// allow returns how many of want bytes may be sent now (0: wait for the
// next second).
func (f *flowLimiter) allow(want int, now time.Time) int {
	if !f.enabled {
		return want
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if sec := now.Unix(); sec != f.second {
		f.second, f.used = sec, 0
	}
	n := int(min(int64(want), f.limit-f.used))
	if n <= 0 {
		return 0
	}
	f.used += int64(n)
	return n
}
