package namesrv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/run"
)

// ErrClosed is returned by Start after Close.
var ErrClosed = errors.New("namesrv: closed")

// Server is a running name server: the registry, the KV config, the
// remoting server and the expiry scan. New starts nothing; Start listens
// and starts the scan; Close stops both and waits. Safe for concurrent use.
type Server struct {
	logger   *slog.Logger
	routes   *RouteInfoManager
	kv       *KVConfigManager
	remoting *remoting.Server

	// cfgMu guards cfg, which UPDATE_NAMESRV_CONFIG changes at run time.
	cfgMu sync.RWMutex
	cfg   Config

	// lifeMu guards the lifecycle flags and startTime.
	lifeMu    sync.Mutex
	started   bool
	closed    bool
	startTime time.Time

	routines *run.Group // the expiry scan; Close stops and waits for it
	tlsErr   error      // a bad tlsMode setting, returned by Start
}

// New returns an unstarted name server. logger may be nil.
func New(cfg Config, logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	base := logger
	logger = logger.With("component", "namesrv")
	idle := time.Duration(cfg.ServerChannelMaxIdleTimeSeconds) * time.Second
	if cfg.ServerChannelMaxIdleTimeSeconds == 0 {
		idle = -1 // 0 disables, as in Netty's IdleStateHandler
	}
	// tlsMode: a bad setting is reported by Start.
	tlsCfg, tlsEnforce, tlsErr := cfg.Settings.Server()
	s := &Server{
		tlsErr: tlsErr,
		logger: logger,
		routes: NewRouteInfoManager(cfg.routeOptions(), nil, logger),
		kv:     NewKVConfigManager(cfg.KVConfigPath),
		remoting: remoting.NewServer(remoting.ServerConfig{
			ListenAddr:  cfg.ListenAddr(),
			IdleTimeout: idle,
			Logger:      base,
			TLS:         tlsCfg,
			TLSEnforce:  tlsEnforce,
		}),
		cfg:      cfg,
		routines: run.NewGroup("namesrv"),
	}
	s.registerProcessors()
	s.remoting.AddConnListener(connListener{s})
	return s
}

// Start validates the configuration, loads the KV config, listens and
// starts the expiry scan (first run one interval after start).
func (s *Server) Start() error {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.started {
		return errors.New("namesrv: already started")
	}
	cfg := s.config()
	if err := cfg.Validate(); err != nil {
		return err
	}
	if s.tlsErr != nil {
		return fmt.Errorf("namesrv: %w", s.tlsErr)
	}
	if err := s.kv.Load(); err != nil {
		return err
	}
	if err := s.startAuth(cfg); err != nil { // auth.go
		return err
	}
	if err := s.remoting.Start(); err != nil {
		return fmt.Errorf("namesrv: %w", err)
	}
	s.started = true
	s.startTime = time.Now()
	s.routines.Every("namesrv-scan", cfg.ScanNotActiveBrokerInterval, func(context.Context) { s.scanNotActive() })
	s.logger.Info("namesrv: started", "addr", s.remoting.Addr().String(), "kvConfigPath", cfg.KVConfigPath,
		"scanNotActiveBrokerInterval", cfg.ScanNotActiveBrokerInterval, "brokerChannelExpiredTime", cfg.BrokerChannelExpiredTime)
	return nil
}

// Addr is the listening address (nil before Start).
func (s *Server) Addr() net.Addr { return s.remoting.Addr() }

// Close stops accepting, closes every connection, stops the scan and waits
// for all goroutines. Idempotent.
func (s *Server) Close() error {
	s.lifeMu.Lock()
	if s.closed {
		s.lifeMu.Unlock()
		return nil
	}
	s.closed = true
	s.routines.Stop()
	s.lifeMu.Unlock()

	err := s.remoting.Close()
	s.routines.Wait()
	s.logger.Info("namesrv: closed")
	if err != nil {
		return fmt.Errorf("namesrv: close: %w", err)
	}
	return nil
}

// Routes is the route registry (for embedding and tests).
func (s *Server) Routes() *RouteInfoManager { return s.routes }

// KVConfig is the KV config manager.
func (s *Server) KVConfig() *KVConfigManager { return s.kv }

// Config returns a copy of the current configuration.
func (s *Server) Config() Config { return s.config() }

func (s *Server) config() Config {
	s.cfgMu.RLock()
	defer s.cfgMu.RUnlock()
	return s.cfg
}

// scanNotActive removes expired brokers and closes their connections,
// outside the registry lock; Start runs it every
// scanNotActiveBrokerInterval.
func (s *Server) scanNotActive() {
	for _, e := range s.routes.ScanNotActiveBroker() {
		s.logger.Warn("namesrv: broker expired, removed", "clusterName", e.ClusterName, "brokerAddr", e.BrokerAddr,
			"lastUpdate", e.LastUpdate)
		if e.Channel != nil {
			_ = e.Channel.Close()
		}
	}
}

// connListener removes brokers whose connection ends. remoting follows
// OnIdle and OnException with OnClose, so OnClose does the work.
type connListener struct{ s *Server }

func (l connListener) OnConnect(*remoting.Conn) {}

func (l connListener) OnClose(c *remoting.Conn) {
	for _, b := range l.s.routes.OnChannelDestroy(c.ID()) {
		l.s.logger.Info("namesrv: broker connection closed, removed", "clusterName", b.ClusterName,
			"brokerAddr", b.BrokerAddr, "addr", c.RemoteAddr())
	}
}

func (l connListener) OnIdle(c *remoting.Conn) {
	l.s.logger.Debug("namesrv: idle connection closed", "addr", c.RemoteAddr())
}

func (l connListener) OnException(c *remoting.Conn, err error) {
	l.s.logger.Debug("namesrv: connection error", "addr", c.RemoteAddr(), "err", err)
}

// Stats returns the registry's table sizes (for metrics).
func (s *Server) Stats() Stats { return s.routes.Stats() }
