// Package server runs an Apogee name server and broker inside the calling
// process, as Go developers run nats-server in their tests: Start picks
// free loopback ports and a temporary data directory unless told
// otherwise, and returns the addresses RocketMQ clients connect to.
//
// A Server owns its name server, its broker and, when it made it, its data
// directory. Close stops the broker first (it unregisters from the name
// server), then the name server, waits for every goroutine they started,
// and removes a temporary data directory. Package apogeetest wraps Start
// for tests, with cleanup registered on the test.
package server

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"

	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/namesrv"
)

// Options configures Start. The zero value is a usable test server: free
// loopback ports, a temporary data directory, no log output.
type Options struct {
	// DataDir holds the broker store and the name server's KV config. ""
	// makes a temporary directory that Close removes.
	DataDir string
	// Host is the address the servers listen on and advertise; default
	// 127.0.0.1.
	Host string
	// NamesrvPort and BrokerPort are the listen ports; 0 picks free ones.
	NamesrvPort int
	BrokerPort  int
	// ClusterName and BrokerName default to RocketMQ's DefaultCluster and
	// broker-a.
	ClusterName string
	BrokerName  string
	// Config sets any broker.conf key (for example flushDiskType=SYNC_FLUSH
	// or autoCreateTopicEnable=false); a key Apogee does not know is an
	// error.
	Config map[string]string
	// Logger receives both servers' logs; default discards them.
	Logger *slog.Logger
}

// Server is a running name server and broker. Its methods are safe for
// concurrent use.
type Server struct {
	ns      *namesrv.Server
	b       *broker.Broker
	nsAddr  string
	dataDir string
	tempDir bool

	closeOnce sync.Once
	closeErr  error
}

// Start starts a name server and a broker registered with it, and returns
// once the broker serves requests.
func Start(opts Options) (*Server, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	host := opts.Host
	if host == "" {
		host = "127.0.0.1"
	}
	s := &Server{dataDir: opts.DataDir}
	if s.dataDir == "" {
		dir, err := os.MkdirTemp("", "apogee-server-")
		if err != nil {
			return nil, fmt.Errorf("server: data dir: %w", err)
		}
		s.dataDir, s.tempDir = dir, true
	}
	fail := func(err error) (*Server, error) {
		s.Close()
		return nil, err
	}

	nsCfg := namesrv.DefaultConfig()
	nsCfg.ListenPort = opts.NamesrvPort
	nsCfg.BindAddress = host
	nsCfg.KVConfigPath = filepath.Join(s.dataDir, "namesrv", "kvConfig.json")
	s.ns = namesrv.New(nsCfg, logger.With("server", "namesrv"))
	if err := s.ns.Start(); err != nil {
		s.ns = nil
		return fail(fmt.Errorf("server: name server: %w", err))
	}
	s.nsAddr = net.JoinHostPort(host, fmt.Sprint(s.ns.Addr().(*net.TCPAddr).Port))

	cfg := broker.DefaultConfig()
	cfg.BrokerName = "broker-a"
	for k, v := range opts.Config {
		known, err := cfg.SetKey(k, v)
		if err != nil {
			return fail(fmt.Errorf("server: broker.conf %s=%s: %w", k, v, err))
		}
		if !known {
			return fail(fmt.Errorf("server: unknown broker.conf key %s", k))
		}
	}
	if opts.ClusterName != "" {
		cfg.BrokerClusterName = opts.ClusterName
	}
	if opts.BrokerName != "" {
		cfg.BrokerName = opts.BrokerName
	}
	cfg.NamesrvAddr = []string{s.nsAddr}
	cfg.BrokerIP1 = host
	cfg.BindAddress = host
	cfg.ListenPort = opts.BrokerPort
	cfg.Store.StorePathRootDir = filepath.Join(s.dataDir, "broker")
	if err := cfg.Validate(); err != nil {
		return fail(fmt.Errorf("server: broker config: %w", err))
	}
	b, err := broker.New(cfg, logger.With("server", "broker"))
	if err != nil {
		return fail(fmt.Errorf("server: broker: %w", err))
	}
	if err := b.Start(); err != nil {
		return fail(fmt.Errorf("server: broker: %w", err))
	}
	s.b = b
	return s, nil
}

// NamesrvAddr is the name server's host:port: what RocketMQ clients take as
// their name server address (NAMESRV_ADDR).
func (s *Server) NamesrvAddr() string { return s.nsAddr }

// BrokerAddr is the broker's host:port.
func (s *Server) BrokerAddr() string { return s.b.Addr() }

// DataDir is the directory holding the store and the KV config.
func (s *Server) DataDir() string { return s.dataDir }

// Close stops the broker, then the name server, and removes a temporary
// data directory. It returns the first error and is idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		if s.b != nil {
			errs = append(errs, s.b.Close())
		}
		if s.ns != nil {
			errs = append(errs, s.ns.Close())
		}
		if s.tempDir {
			errs = append(errs, os.RemoveAll(s.dataDir))
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}
