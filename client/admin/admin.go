package admin

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// ErrNotFound: the topic, group or message does not exist.
var ErrNotFound = errors.New("admin: not found")

type config struct {
	nameServers []string
	timeout     time.Duration
	logger      *slog.Logger
	sign        func(*protocol.Command) // WithCredentials (auth.go); nil = unsigned
	tls         *tls.Config             // WithTLS (auth.go); nil = plain TCP
}

// Option configures an Admin.
type Option func(*config)

// WithNameServers sets the name server addresses (required); one string
// may hold several separated by ';'.
func WithNameServers(addrs ...string) Option {
	return func(c *config) {
		for _, a := range addrs {
			for _, p := range strings.FieldsFunc(a, func(r rune) bool { return r == ';' || r == ',' }) {
				if p = strings.TrimSpace(p); p != "" {
					c.nameServers = append(c.nameServers, p)
				}
			}
		}
	}
}

// WithTimeout sets the per-request timeout used when ctx has no earlier
// deadline. Default 5 s.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithLogger sets the logger; default discards.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}

// Admin administers one cluster (the brokers its name servers know).
type Admin struct {
	cfg    config
	remote *remoting.Client
	ns     remoting.RoundRobin // spreads name-server requests over cfg.nameServers
	state  atomic.Int32        // 0 new, 1 started, 2 closed
}

// New returns an unstarted Admin.
func New(opts ...Option) (*Admin, error) {
	cfg := config{timeout: 5 * time.Second, logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(&cfg)
	}
	if len(cfg.nameServers) == 0 {
		return nil, fmt.Errorf("admin: no name server address: use WithNameServers")
	}
	if cfg.timeout <= 0 {
		return nil, fmt.Errorf("admin: timeout must be positive")
	}
	cfg.logger = cfg.logger.With("component", "admin")
	return &Admin{cfg: cfg, remote: remoting.NewClient(remoting.ClientConfig{Logger: cfg.logger, Sign: cfg.sign, TLS: cfg.tls})}, nil
}

// Start starts the remoting client.
func (a *Admin) Start() error {
	if !a.state.CompareAndSwap(0, 1) {
		if a.state.Load() == 2 {
			return client.ErrClosed
		}
		return nil
	}
	if err := a.remote.Start(); err != nil {
		return fmt.Errorf("admin: start: %w", err)
	}
	return nil
}

// Close closes every connection and waits. Idempotent.
func (a *Admin) Close() error {
	if a.state.Swap(2) != 1 {
		return nil
	}
	return a.remote.Close()
}

func (a *Admin) running() error {
	switch a.state.Load() {
	case 1:
		return nil
	case 0:
		return client.ErrNotStarted
	}
	return client.ErrClosed
}

// invoke sends req to addr with the per-request timeout.
func (a *Admin) invoke(ctx context.Context, addr string, req *protocol.Command) (*protocol.Command, error) {
	if err := a.running(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.timeout)
	defer cancel()
	resp, err := a.remote.InvokeSync(ctx, addr, req)
	if err != nil {
		return nil, fmt.Errorf("admin: %s to %s: %w", protocol.RequestCode(req.Code), addr, err)
	}
	return resp, nil
}

// invokeOK is invoke that turns a non-SUCCESS answer into a BrokerError.
func (a *Admin) invokeOK(ctx context.Context, addr, topic string, req *protocol.Command) (*protocol.Command, error) {
	resp, err := a.invoke(ctx, addr, req)
	if err != nil {
		return nil, err
	}
	if resp.Code != int32(protocol.Success) {
		return nil, &client.BrokerError{Addr: addr, Topic: topic, Code: resp.Code, Remark: resp.Remark}
	}
	return resp, nil
}

// invokeNameServer tries the name servers in round-robin order, moving on
// after network errors.
func (a *Admin) invokeNameServer(ctx context.Context, req *protocol.Command) (*protocol.Command, string, error) {
	if err := a.running(); err != nil {
		return nil, "", err
	}
	resp, addr, err := a.ns.InvokeSync(ctx, a.remote, a.cfg.nameServers, a.cfg.timeout, req)
	if err != nil {
		return nil, "", fmt.Errorf("admin: %s to %s: %w", protocol.RequestCode(req.Code), addr, err)
	}
	return resp, addr, nil
}

// nameServerOK is invokeNameServer that turns a non-SUCCESS answer into a
// BrokerError.
func (a *Admin) nameServerOK(ctx context.Context, topic string, req *protocol.Command) (*protocol.Command, error) {
	resp, addr, err := a.invokeNameServer(ctx, req)
	if err != nil {
		return nil, err
	}
	if resp.Code != int32(protocol.Success) {
		return nil, &client.BrokerError{Addr: addr, Topic: topic, Code: resp.Code, Remark: resp.Remark}
	}
	return resp, nil
}

// Target selects the brokers a create or delete applies to: every master of
// Cluster, or the one broker at BrokerAddr. Exactly one must be set.
type Target struct {
	Cluster    string
	BrokerAddr string
}

// masters resolves a target to broker master addresses with their names.
func (a *Admin) masters(ctx context.Context, t Target) (map[string]string, error) {
	switch {
	case t.BrokerAddr != "" && t.Cluster != "":
		return nil, fmt.Errorf("admin: give a cluster or a broker address, not both")
	case t.BrokerAddr != "":
		return map[string]string{t.BrokerAddr: ""}, nil
	case t.Cluster == "":
		return nil, fmt.Errorf("admin: no cluster or broker address given")
	}
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	names, ok := ci.Clusters[t.Cluster]
	if !ok {
		return nil, fmt.Errorf("admin: cluster %s: %w", t.Cluster, ErrNotFound)
	}
	out := map[string]string{}
	for _, n := range names {
		if b, ok := ci.Brokers[n]; ok && b.Addrs[0] != "" {
			out[b.Addrs[0]] = n
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("admin: cluster %s has no live master", t.Cluster)
	}
	return out, nil
}
