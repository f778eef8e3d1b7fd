package main

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"

	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/proxy"
)

// startLocalGRPC opens the broker's in-process gRPC endpoint (local mode)
// on grpcServerPort unless it is -1, and prints its address. The returned
// closer is a no-op when the endpoint is off.
func startLocalGRPC(cfg broker.Config, b *broker.Broker, logger *slog.Logger, out io.Writer) (func() error, error) {
	if cfg.GRPCServerPort < 0 {
		return func() error { return nil }, nil
	}
	// The endpoint reaches its broker like any client of the broker does.
	brokerTLS, err := cfg.Settings.Client()
	if err != nil {
		return nil, err
	}
	s, err := proxy.New(proxy.Config{
		ListenAddr:               net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.GRPCServerPort)),
		AdvertiseHost:            cfg.BrokerIP1,
		TLSCertPath:              cfg.TLSServerCertPath,
		TLSKeyPath:               cfg.TLSServerKeyPath,
		BrokerName:               cfg.BrokerName,
		BrokerAddr:               b.Addr(),
		Local:                    b, // sends in-process, the rest over loopback remoting
		BrokerTLS:                brokerTLS,
		MinInvisibleForReceive:   cfg.MinInvisibleTimeMillsForRecv,
		Logger:                   logger,
		Guard:                    b.AuthGuard(), // ACL 2.0 on gRPC (internal/proxy/auth.go)
		Sign:                     b.SignInner,   // its broker calls pass the broker's checks
		TLSEnforce:               tlsEnforcing(cfg.TLSMode),
		MaxLiteSubscriptionCount: cfg.MaxLiteSubscriptionCount,
	})
	if err != nil {
		return nil, err
	}
	if err := s.Start(); err != nil {
		return nil, fmt.Errorf("grpc endpoint: %w", err)
	}
	fmt.Fprintf(out, "grpc endpoint listening on %s\n", s.Addr())
	return s.Close, nil
}
