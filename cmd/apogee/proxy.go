package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/apogeemq/apogee/internal/proxy"
)

func init() { register(newProxyCmd) }

// proxyFlags configure `apogee proxy` (cluster mode: the gRPC endpoint in
// front of the brokers a name server knows).
type proxyFlags struct {
	namesrv      string
	port         int
	bind         string
	advertise    string
	certPath     string
	keyPath      string
	minInvisible time.Duration
	brokerTLS    bool
}

func newProxyCmd(g *globalFlags) *cobra.Command {
	f := &proxyFlags{}
	cmd := serverCommand(g, "proxy", "Run the RocketMQ 5 gRPC endpoint in front of a cluster (-n name servers)", func(cmd *cobra.Command, logger *slog.Logger) error {
		var ns []string
		for a := range strings.SplitSeq(f.namesrv, ";") {
			if a = strings.TrimSpace(a); a != "" {
				ns = append(ns, a)
			}
		}
		if len(ns) == 0 {
			return fmt.Errorf("proxy: --namesrv is required")
		}
		if f.port < 0 || f.port > 65535 {
			return fmt.Errorf("proxy: --grpc-port %d: want 0 (any free port) or a port number", f.port)
		}
		var brokerTLS *tls.Config
		if f.brokerTLS {
			brokerTLS = &tls.Config{InsecureSkipVerify: true} // like the brokers' own clients without a trust store
		}
		s, err := proxy.New(proxy.Config{
			ListenAddr:             net.JoinHostPort(f.bind, strconv.Itoa(f.port)),
			AdvertiseHost:          f.advertise,
			TLSCertPath:            f.certPath,
			TLSKeyPath:             f.keyPath,
			Namesrv:                ns,
			BrokerTLS:              brokerTLS,
			MinInvisibleForReceive: f.minInvisible,
			Logger:                 logger,
		})
		if err != nil {
			return err
		}
		if err := s.Start(); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "grpc endpoint listening on %s\n", s.Addr())
		return serveUntilDone(cmd.Context(), logger, s.Close)
	})
	fl := cmd.Flags()
	fl.StringVarP(&f.namesrv, "namesrv", "n", "", "name servers, host:port[;host:port] (required)")
	fl.IntVar(&f.port, "grpc-port", 8081, "gRPC port (grpcServerPort; 0 = any free port)")
	fl.StringVar(&f.bind, "bind-address", "127.0.0.1", "address to listen on")
	fl.StringVar(&f.advertise, "advertise-host", "", "host routes give clients for this endpoint (default: the listen host)")
	fl.StringVar(&f.certPath, "tls-cert", "", "PEM certificate for TLS clients (tlsServerCertPath; default: self-signed)")
	fl.StringVar(&f.keyPath, "tls-key", "", "PEM key of --tls-cert (tlsServerKeyPath)")
	fl.DurationVar(&f.minInvisible, "min-invisible", 10*time.Second, "shortest invisible duration a receive may ask for (minInvisibleTimeMillsForRecv)")
	fl.BoolVar(&f.brokerTLS, "broker-tls", false, "speak TLS to name servers and brokers (a cluster with tlsMode=enforcing)")
	return cmd
}
