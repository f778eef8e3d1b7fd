package metrics

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Source is something that exports metric families: a broker or name
// server collector.
type Source interface {
	prometheus.Collector
	families() []family
}

// Server serves GET /metrics for the sources it was built with, and
// net/http/pprof under /debug/pprof/ when Pprof is set. New starts
// nothing; Start listens; Close stops serving and waits for the serving
// goroutine.
type Server struct {
	addr   string
	pprof  bool
	logger *slog.Logger

	reg  *prometheus.Registry
	want []family

	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

// Config says where a Server listens.
type Config struct {
	// Addr is host:port; port 0 picks a free port.
	Addr string
	// Pprof also serves /debug/pprof/.
	Pprof bool
	// GoCollector adds the Go runtime and process families (go_*,
	// process_*) beside RocketMQ's.
	GoCollector bool
}

// NewServer builds a server exporting srcs.
func NewServer(cfg Config, logger *slog.Logger, srcs ...Source) (*Server, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	reg := prometheus.NewPedanticRegistry()
	s := &Server{addr: cfg.Addr, pprof: cfg.Pprof, logger: logger.With("component", "metrics"), reg: reg}
	for _, src := range srcs {
		if err := reg.Register(src); err != nil {
			return nil, fmt.Errorf("metrics: register: %w", err)
		}
		s.want = append(s.want, src.families()...)
	}
	if cfg.GoCollector {
		if err := reg.Register(collectors.NewGoCollector()); err != nil {
			return nil, fmt.Errorf("metrics: register: %w", err)
		}
		if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
			return nil, fmt.Errorf("metrics: register: %w", err)
		}
	}
	return s, nil
}

// Handler is the /metrics handler (for embedding in another mux).
func (s *Server) Handler() http.Handler { return handler{reg: s.reg, want: s.want} }

// Start listens and serves in one goroutine.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("metrics: listen %s: %w", s.addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", s.Handler())
	if s.pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	s.ln = ln
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.done = make(chan struct{})
	go func() { // owned by s; Close stops it and waits on done
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logger.Error("metrics server stopped", "err", err)
		}
	}()
	s.logger.Info("metrics listening", "addr", ln.Addr().String(), "pprof", s.pprof)
	return nil
}

// Addr is the listening address; valid after Start.
func (s *Server) Addr() string {
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Close stops the server and waits for its goroutine; idempotent.
func (s *Server) Close() error {
	if s.srv == nil {
		return nil
	}
	err := s.srv.Close()
	<-s.done
	s.srv = nil
	return err
}
