package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/apogeemq/apogee/internal/auth"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	pb "github.com/apogeemq/apogee/internal/rmqpb"
	"github.com/apogeemq/apogee/internal/run"
)

// Config configures a Server.
type Config struct {
	// ListenAddr is host:port to listen on; port 0 picks a free port.
	ListenAddr string
	// AdvertiseHost is the host routes give clients for this endpoint
	// (brokerIP1 in local mode); default the listener's host.
	AdvertiseHost string
	// TLSCertPath and TLSKeyPath name a PEM certificate and key
	// (tlsServerCertPath, tlsServerKeyPath). Empty: a self-signed
	// certificate is created at start.
	TLSCertPath, TLSKeyPath string

	// Local mode: the broker this endpoint runs inside (brokerName and its
	// remoting address). Cluster mode leaves them empty and sets Namesrv.
	BrokerName, BrokerAddr string
	// Local, in local mode, is the broker itself, reached in-process for
	// sends (local.go); nil: every call goes over remoting to BrokerAddr.
	Local LocalBroker
	// Namesrv lists the name servers of the cluster (cluster mode).
	Namesrv []string
	// BrokerTLS, when set, makes the remoting connections to brokers and
	// name servers TLS (a cluster with tlsMode=enforcing).
	BrokerTLS *tls.Config

	// MinInvisibleForReceive is the shortest invisible_duration a
	// ReceiveMessage may ask for (minInvisibleTimeMillsForRecv; default
	// 10 s, the RocketMQ proxy's).
	MinInvisibleForReceive time.Duration

	// Guard, when set, authenticates and authorizes every RPC (ACL 2.0,
	// auth.go); nil = no checks.
	Guard *auth.Guard
	// Sign signs the endpoint's own remoting requests to brokers (the
	// broker's innerClientAuthenticationCredentials); nil = unsigned.
	Sign func(*protocol.Command)
	// TLSEnforce refuses plaintext connections (tlsMode=enforcing).
	TLSEnforce bool
	// MaxLiteSubscriptionCount bounds the lite subscriptions of all
	// clients (maxLiteSubscriptionCount; 0 = 100,000, the broker default).
	MaxLiteSubscriptionCount int
	Logger                   *slog.Logger
}

// streamWorkers is the size of grpc-go's stream worker pool. A handler
// holds its worker while it waits for the broker, so the pool must cover
// the RPCs in flight of a few pipelined producers (4 x 64 in
// BenchmarkSendVsRemoting): past it grpc-go starts a goroutine per stream,
// whose stack grows again on every RPC (runtime.newstack was ~6% of the
// CPU with 4 workers). Idle workers only park.
const streamWorkers = 256

// Server is the apache.rocketmq.v2.MessagingService endpoint: a gRPC server
// on a port that accepts TLS and plaintext, translating every RPC into the
// RocketMQ remoting requests brokers already serve. New starts nothing;
// Start listens; Close stops everything and waits.
type Server struct {
	cfg     Config
	logger  *slog.Logger
	rc      *remoting.Client
	backend *backend
	clients *registry
	svc     *service
	// minInvisible is Config.MinInvisibleForReceive with its default.
	minInvisible time.Duration

	mu      sync.Mutex
	started bool
	closed  bool
	ln      *sniffListener
	gs      *grpc.Server
	group   *run.Group // Serve and the expiry loop
}

// New returns an unstarted server.
func New(cfg Config) (*Server, error) {
	if cfg.ListenAddr == "" {
		return nil, errors.New("proxy: ListenAddr is required")
	}
	if (cfg.BrokerAddr == "") == (len(cfg.Namesrv) == 0) {
		return nil, errors.New("proxy: set either BrokerAddr (local mode) or Namesrv (cluster mode)")
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("component", "grpc")
	s := &Server{cfg: cfg, logger: logger, clients: newRegistry(time.Now), group: run.NewGroup("grpc")}
	s.minInvisible = cfg.MinInvisibleForReceive
	if s.minInvisible <= 0 {
		s.minInvisible = DefaultMinInvisibleRcv
	}
	s.rc = remoting.NewClient(remoting.ClientConfig{Logger: logger, Sign: cfg.Sign, TLS: cfg.BrokerTLS})
	s.backend = newBackend(s.rc, cfg.BrokerName, cfg.BrokerAddr, cfg.Namesrv)
	s.rc.AddConnListener(brokerWatch{s.backend})
	s.svc = newService(s)
	s.rc.RegisterProcessor(protocol.CheckTransactionState, s.svc.orphans.processCheck)
	s.rc.RegisterProcessor(protocol.NotifyUnsubscribeLite, s.svc.processNotifyUnsubscribeLite) // lite.go
	return s, nil
}

// Start listens and serves. The address is Addr's.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.closed {
		return errors.New("proxy: server already started or closed")
	}
	raw, err := net.Listen("tcp", s.cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("proxy: listen %s: %w", s.cfg.ListenAddr, err)
	}
	host := s.cfg.AdvertiseHost
	if host == "" {
		host, _, _ = net.SplitHostPort(raw.Addr().String())
	}
	tlsCfg, err := serverTLSConfig(s.cfg.TLSCertPath, s.cfg.TLSKeyPath, []string{host})
	if err != nil {
		raw.Close()
		return err
	}
	if err := s.rc.Start(); err != nil {
		raw.Close()
		return fmt.Errorf("proxy: start remoting client: %w", err)
	}
	s.svc.advertise = net.JoinHostPort(host, strconv.Itoa(raw.Addr().(*net.TCPAddr).Port))
	s.ln = newSniffListener(raw, tlsCfg, s.cfg.TLSEnforce, s.logger)
	opts := []grpc.ServerOption{
		// 32 messages of 4 MiB plus their attributes, as the reference.
		grpc.MaxRecvMsgSize(130 << 20),
		grpc.MaxSendMsgSize(math.MaxInt32),
		// Receive windows large enough for many sends in flight per
		// connection: the 64 KiB defaults throttle pipelined producers to
		// a few round trips' worth of bodies.
		grpc.InitialWindowSize(1 << 20),
		grpc.InitialConnWindowSize(8 << 20),
		// A fixed pool of stream workers instead of a goroutine per RPC,
		// and one write buffer shared by a connection's idle streams.
		grpc.NumStreamWorkers(streamWorkers),
		grpc.SharedWriteBuffer(true),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		grpc.ChainUnaryInterceptor(s.recoverUnary),
		grpc.ChainStreamInterceptor(s.recoverStream),
	}
	if s.cfg.Guard != nil { // auth.go
		opts = append(opts, grpc.ChainUnaryInterceptor(s.unaryAuth), grpc.ChainStreamInterceptor(s.streamAuth))
	}
	s.gs = grpc.NewServer(opts...)
	pb.RegisterMessagingServiceServer(s.gs, s.svc)
	s.started = true
	s.group.Go("serve", func(context.Context) {
		if err := s.gs.Serve(s.ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			s.logger.Error("grpc serve stopped", "err", err)
		}
	})
	s.group.Every("client-expiry", 10*time.Second, func(context.Context) { s.expireClients() })
	s.group.Every("auto-renew", renewInterval, s.svc.renewer.run)
	s.group.Every("producer-heartbeat", producerHeartbeatInterval, s.svc.orphans.heartbeat)
	s.logger.Info("grpc endpoint listening", "addr", raw.Addr().String(), "advertise", s.svc.advertise)
	return nil
}

// Addr returns the listening address (nil before Start).
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// Close stops accepting, ends every RPC (streams included), closes the
// broker connections and waits for the server's goroutines. Idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	started := s.started
	s.mu.Unlock()
	s.group.Stop()
	if started {
		// Stop, not GracefulStop: Telemetry streams and long polls would
		// hold a graceful stop for their whole life.
		s.gs.Stop()
		s.ln.Close()
	}
	s.svc.close()
	s.group.Wait()
	return s.rc.Close()
}

// expireClients drops clients whose Telemetry streams are gone and that
// stayed silent for clientExpiry.
func (s *Server) expireClients() {
	for _, id := range s.clients.expire() {
		s.logger.Debug("grpc client expired", "clientId", id)
		s.svc.clientGone(id)
	}
}

// withTimeout bounds a broker call made on behalf of a gRPC request.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}

// recoverUnary turns a panic in a handler into a gRPC INTERNAL error for
// that call: one bad request never takes the process down.
func (s *Server) recoverUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.logger.Error("grpc handler panicked", "method", info.FullMethod, "panic", r, "stack", string(debug.Stack()))
			resp, err = nil, grpcstatus.Errorf(codes.Internal, "internal error")
		}
	}()
	return h(ctx, req)
}

// recoverStream is recoverUnary for streaming RPCs.
func (s *Server) recoverStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.logger.Error("grpc handler panicked", "method", info.FullMethod, "panic", r, "stack", string(debug.Stack()))
			err = grpcstatus.Errorf(codes.Internal, "internal error")
		}
	}()
	return h(srv, ss)
}
