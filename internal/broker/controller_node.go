package broker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/run"
)

// Node runs a broker in controller mode: one Broker at a time, replaced in
// process when the controller changes its role (a Broker's role is fixed
// for its lifetime, see controller_mode.go). The replacement reuses the
// first instance's listen port, so clients and peers reconnect to the same
// address. In classic mode a Node just runs its one Broker.
type Node struct {
	cfg      Config
	logger   *slog.Logger
	confFile string
	group    *run.Group

	mu       sync.Mutex
	client   *remoting.Client // controller connections shared by the instances
	cur      *Broker          // guarded by mu
	pending  *Broker          // starting replacement; guarded by mu
	restarts int              // guarded by mu
	// OnRestart, when set before Start, is called after each replacement
	// Broker started (tests and tools follow the new instance).
	OnRestart func(*Broker)
}

// NewNode validates cfg; it starts nothing.
func NewNode(cfg Config, logger *slog.Logger) (*Node, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	probe := cfg
	if err := probe.Validate(); err != nil {
		return nil, err
	}
	if err := probe.validateHA(); err != nil {
		return nil, err
	}
	return &Node{cfg: cfg, logger: logger, group: run.NewGroup("broker-node")}, nil
}

// SetConfigFile is Broker.SetConfigFile for every instance.
func (n *Node) SetConfigFile(path string) { n.confFile = path }

// Start starts the first Broker and the supervisor.
func (n *Node) Start() error {
	if n.cfg.EnableControllerMode {
		n.client = remoting.NewClient(remoting.ClientConfig{Logger: n.logger.With("component", "broker-ctlclient")})
		if err := n.client.Start(); err != nil {
			return err
		}
	}
	b, err := n.startOne()
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.cur = b
	n.mu.Unlock()
	// Later instances bind the port the first one got (listenPort=0 picks
	// a free port once).
	n.cfg.ListenPort = b.Config().ListenPort
	if n.cfg.EnableControllerMode {
		n.group.Go("supervise", n.supervise)
	}
	return nil
}

func (n *Node) startOne() (*Broker, error) {
	b, err := New(n.cfg, n.logger)
	if err != nil {
		return nil, err
	}
	if n.confFile != "" {
		b.SetConfigFile(n.confFile)
	}
	b.ctl.client = n.client // nil in classic mode
	n.mu.Lock()
	if n.group.Closing() {
		n.mu.Unlock()
		return nil, ErrClosed
	}
	n.pending = b
	n.mu.Unlock()
	err = b.Start()
	n.mu.Lock()
	n.pending = nil
	n.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return b, nil
}

// Broker returns the current instance.
func (n *Node) Broker() *Broker {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cur
}

// Restarts counts the in-process replacements so far.
func (n *Node) Restarts() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.restarts
}

// supervise replaces the Broker whenever it asks for a restart.
func (n *Node) supervise(ctx context.Context) {
	for {
		b := n.Broker()
		select {
		case <-ctx.Done():
			return
		case <-b.RestartRequested():
		}
		start := time.Now()
		if err := b.Close(); err != nil {
			n.logger.Warn("controller mode: closing the old broker instance", "err", err)
		}
		var nb *Broker
		for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 2*time.Second) {
			var err error
			if nb, err = n.startOne(); err == nil {
				break
			}
			n.logger.Warn("controller mode: restarting the broker failed; retrying", "err", err, "in", backoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
		}
		n.mu.Lock()
		n.cur = nb
		n.restarts++
		n.mu.Unlock()
		n.logger.Info("controller mode: broker restarted in its new role", "master", nb.IsMaster(),
			"brokerId", nb.ControllerBrokerID(), "took", time.Since(start))
		if n.OnRestart != nil {
			n.OnRestart(nb)
		}
	}
}

// Close stops the supervisor and the current Broker.
func (n *Node) Close() error {
	n.mu.Lock()
	n.group.Stop()
	if n.pending != nil {
		n.pending.routines.Stop() // cancels baseCtx: a Start waiting for its role gives up
	}
	n.mu.Unlock()
	n.group.Wait()
	n.mu.Lock()
	b := n.cur
	n.mu.Unlock()
	var err error
	if b != nil {
		err = b.Close()
	}
	if n.client != nil {
		n.client.Close()
	}
	return errors.Join(err)
}
