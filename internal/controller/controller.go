package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/run"
)

// ErrClosed is returned by Start after Close.
var ErrClosed = errors.New("controller: closed")

// applyTimeout bounds one raft Apply (a commit needs a majority).
const applyTimeout = 5 * time.Second

// Controller is one node of the replicated controller: a raft member
// holding the broker sets (fsm.go), a remoting server for brokers and
// tools, and, while it is the raft leader, the brokers' liveness
// (heartbeat.go) and the elections. New opens nothing; Start opens the
// stores and ports; Close stops everything and waits.
type Controller struct {
	cfg    Config
	logger *slog.Logger
	now    func() time.Time

	fsm       *fsm
	raft      *raft.Raft
	bolt      *raftboltdb.BoltStore
	transport *raft.NetworkTransport
	server    *remoting.Server
	client    *remoting.Client // forwarding to the leader, notifying brokers
	group     *run.Group

	// leaderReady is true once this node is the raft leader and has applied
	// every earlier entry (Barrier); decisions are only taken then.
	leaderReady atomic.Bool
	// term counts leaderships gained; a decision records it.
	term atomic.Int64

	live liveTable // leader-only broker liveness

	// opMu serialises decide-then-apply on the leader, so two decisions on
	// one broker set never interleave.
	opMu sync.Mutex

	electMu   sync.Mutex
	electWant map[string]struct{} // broker sets to (re)elect; guarded by electMu
	electWake chan struct{}       // capacity 1

	// dyn holds the keys UPDATE_CONTROLLER_CONFIG changes (config_update.go).
	dyn dynamicConfig

	closeOnce sync.Once
	started   atomic.Bool
}

// New validates cfg.
func New(cfg Config, logger *slog.Logger) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Controller{
		cfg:       cfg,
		logger:    logger.With("component", "controller"),
		now:       time.Now,
		fsm:       newFSM(),
		live:      liveTable{m: make(map[liveKey]*liveInfo)},
		electWant: make(map[string]struct{}),
		electWake: make(chan struct{}, 1),
		group:     run.NewGroup("controller"),
	}
	c.dyn.init(&c.cfg)
	return c, nil
}

// Start opens the raft stores under controllerStorePath, joins (or, on a
// first start, bootstraps) the raft group of jRaftInitConf, and listens on
// this node's jRaftControllerRPCAddr.
func (c *Controller) Start() error {
	if !c.started.CompareAndSwap(false, true) {
		return ErrClosed
	}
	if err := c.start(); err != nil {
		c.Close()
		return err
	}
	c.logger.Info("controller started", "raft", c.cfg.JRaftServerID, "rpc", c.Addr(), "group", c.cfg.JRaftGroupID)
	return nil
}

func (c *Controller) start() error {
	dir := c.cfg.ControllerStorePath
	if err := os.MkdirAll(filepath.Join(dir, "snapshots"), 0o755); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	hlog := hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn, Output: slogWriter{c.logger.With("component", "raft")}})
	bolt, err := raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
	if err != nil {
		return fmt.Errorf("controller: raft store: %w", err)
	}
	c.bolt = bolt
	snaps, err := raft.NewFileSnapshotStoreWithLogger(filepath.Join(dir, "snapshots"), 2, hlog)
	if err != nil {
		return fmt.Errorf("controller: snapshot store: %w", err)
	}
	addr, err := net.ResolveTCPAddr("tcp", c.cfg.JRaftServerID)
	if err != nil {
		return fmt.Errorf("controller: jRaftServerId: %w", err)
	}
	tr, err := raft.NewTCPTransportWithLogger(c.cfg.JRaftServerID, addr, 3, 5*time.Second, hlog)
	if err != nil {
		return fmt.Errorf("controller: raft listen %s: %w", c.cfg.JRaftServerID, err)
	}
	c.transport = tr

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(c.cfg.JRaftServerID)
	rc.Logger = hlog
	rc.HeartbeatTimeout = c.cfg.RaftHeartbeatTimeout
	rc.ElectionTimeout = c.cfg.RaftElectionTimeout
	rc.LeaderLeaseTimeout = c.cfg.RaftLeaderLeaseTimeout
	rc.SnapshotInterval = time.Duration(c.cfg.JRaftSnapshotIntervalSecs) * time.Second
	rc.SnapshotThreshold = c.cfg.SnapshotThreshold
	notify := make(chan bool, 16)
	rc.NotifyCh = notify

	has, err := raft.HasExistingState(bolt, bolt, snaps)
	if err != nil {
		return fmt.Errorf("controller: raft state: %w", err)
	}
	r, err := raft.NewRaft(rc, c.fsm, bolt, bolt, snaps, tr)
	if err != nil {
		return fmt.Errorf("controller: raft: %w", err)
	}
	c.raft = r
	if !has {
		var servers []raft.Server
		for _, a := range c.cfg.JRaftInitConf {
			servers = append(servers, raft.Server{ID: raft.ServerID(a), Address: raft.ServerAddress(a)})
		}
		// Every node bootstraps the same configuration; raft accepts that.
		if err := r.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
			return fmt.Errorf("controller: bootstrap: %w", err)
		}
	}

	serverTLS, enforce, err := c.cfg.Settings.Server()
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	clientTLS, err := c.cfg.Settings.Client()
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	c.client = remoting.NewClient(remoting.ClientConfig{Logger: c.logger.With("component", "controller-client"), TLS: clientTLS})
	if err := c.client.Start(); err != nil {
		return fmt.Errorf("controller: client: %w", err)
	}
	c.server = remoting.NewServer(remoting.ServerConfig{ListenAddr: c.cfg.RPCAddr(), Logger: c.logger.With("component", "controller-remoting"),
		TLS: serverTLS, TLSEnforce: enforce})
	c.registerProcessors(c.server)
	c.server.AddConnListener(connListener{c})
	if err := c.server.Start(); err != nil {
		return fmt.Errorf("controller: listen %s: %w", c.cfg.RPCAddr(), err)
	}
	c.group.Go("leadership", func(ctx context.Context) { c.leadershipLoop(ctx, notify) })
	c.group.Go("elect", c.electLoop)
	c.group.Go("scan-inactive", c.scanLoop)
	return nil
}

// Addr is the remoting address (valid after Start).
func (c *Controller) Addr() string {
	if c.server == nil || c.server.Addr() == nil {
		return c.cfg.RPCAddr()
	}
	return c.server.Addr().String()
}

// IsLeader reports whether this node is the raft leader and ready to decide.
func (c *Controller) IsLeader() bool { return c.leaderReady.Load() }

// LeaderRPCAddr returns the remoting address of the current raft leader
// ("" when none is known).
func (c *Controller) LeaderRPCAddr() string {
	if c.raft == nil {
		return ""
	}
	addr, _ := c.raft.LeaderWithID()
	return c.cfg.rpcAddrOf(string(addr))
}

// Close stops the remoting server, the loops and raft, and closes the
// stores. Idempotent.
func (c *Controller) Close() error {
	var errs []error
	c.closeOnce.Do(func() {
		c.group.Stop()
		if c.server != nil {
			if err := c.server.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		c.group.Wait()
		if c.client != nil {
			c.client.Close()
		}
		if c.raft != nil {
			if err := c.raft.Shutdown().Error(); err != nil {
				errs = append(errs, err)
			}
		}
		if c.transport != nil {
			c.transport.Close()
		}
		if c.bolt != nil {
			if err := c.bolt.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		c.logger.Info("controller stopped")
	})
	return errors.Join(errs...)
}

// leadershipLoop follows raft's leadership notifications: on gaining it,
// a Barrier makes sure every earlier entry is applied, then the liveness
// table restarts (every known broker gets a full heartbeat timeout from
// now, see heartbeat.go) and decisions are allowed.
func (c *Controller) leadershipLoop(ctx context.Context, notify <-chan bool) {
	for {
		select {
		case <-ctx.Done():
			return
		case leader := <-notify:
			if !leader {
				c.leaderReady.Store(false)
				c.logger.Info("controller lost leadership")
				continue
			}
			if err := c.raft.Barrier(applyTimeout).Error(); err != nil {
				c.logger.Warn("controller barrier after winning leadership failed", "err", err)
				continue
			}
			if c.raft.State() != raft.Leader {
				continue
			}
			c.term.Add(1)
			c.live.reset(c.fsm.snapshotState(), c.now())
			c.leaderReady.Store(true)
			c.logger.Info("controller became leader", "raft", c.cfg.JRaftServerID)
			// Sets without a master may have live members already.
			for _, name := range c.fsm.snapshotState().names() {
				c.requestElect(name)
			}
		}
	}
}

// propose applies o through raft and returns apply's result.
func (c *Controller) propose(o *op) (opResult, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return opResult{}, fmt.Errorf("controller: encode op: %w", err)
	}
	f := c.raft.Apply(b, applyTimeout)
	if err := f.Error(); err != nil {
		return opResult{}, fmt.Errorf("controller: raft apply: %w", err)
	}
	res, ok := f.Response().(opResult)
	if !ok {
		return opResult{}, fmt.Errorf("controller: raft apply: unexpected response %T", f.Response())
	}
	return res, nil
}

// scanLoop runs scanInactive every scanNotActiveBrokerInterval, read
// again after each scan (UPDATE_CONTROLLER_CONFIG may change it).
func (c *Controller) scanLoop(ctx context.Context) {
	t := time.NewTimer(c.dyn.scanInterval())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.scanInactive()
		t.Reset(c.dyn.scanInterval())
	}
}

// ConfigText renders the configuration as controller.conf lines (sorted).
func (c *Controller) ConfigText() string {
	c.dyn.mu.Lock()
	cfg := c.cfg
	c.dyn.mu.Unlock()
	var b bytes.Buffer
	for _, kv := range configLines(&cfg) {
		b.WriteString(kv)
		b.WriteByte('\n')
	}
	return b.String()
}

// slogWriter adapts raft's hclog output to slog (one record per line).
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	switch {
	case strings.Contains(msg, "[ERROR]"):
		w.l.Error(msg)
	case strings.Contains(msg, "[WARN]"):
		w.l.Warn(msg)
	default:
		w.l.Info(msg)
	}
	return len(p), nil
}
