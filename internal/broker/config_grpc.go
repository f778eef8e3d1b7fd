package broker

// GRPCConfig holds the broker.conf keys of the RocketMQ 5 gRPC endpoint the
// broker process serves in-process (internal/proxy, wired by cmd/apogee).
// The broker itself never reads them.
type GRPCConfig struct {
	// GRPCServerPort is the gRPC endpoint's port (default 8081, the
	// RocketMQ proxy's); 0 picks a free port, -1 turns the endpoint off.
	GRPCServerPort int `conf:"grpcServerPort"`
	// TLSServerCertPath and TLSServerKeyPath name the PEM certificate and
	// key the endpoint offers on TLS connections; without them it creates a
	// self-signed certificate at start.
	TLSServerCertPath string `conf:"tlsServerCertPath"`
	TLSServerKeyPath  string `conf:"tlsServerKeyPath"`
}

// DefaultGRPCConfig returns the RocketMQ proxy's defaults.
func DefaultGRPCConfig() GRPCConfig { return GRPCConfig{GRPCServerPort: 8081} }
