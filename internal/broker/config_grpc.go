package broker

import "time"

// GRPCConfig holds the broker.conf keys of the RocketMQ 5 gRPC endpoint the
// broker process serves in-process (internal/proxy, wired by cmd/apogee).
// The broker itself never reads them.
type GRPCConfig struct {
	// GRPCServerPort is the gRPC endpoint's port (default 8081, the
	// RocketMQ proxy's); 0 picks a free port, -1 turns the endpoint off.
	GRPCServerPort int `conf:"grpcServerPort"`
	// The endpoint's certificate is tlsServerCertPath / tlsServerKeyPath
	// (tlsconf.Settings, shared with the remoting ports); without them it
	// creates a self-signed certificate at start.

	// MinInvisibleTimeMillsForRecv is the shortest invisible duration a
	// gRPC ReceiveMessage may ask for (the RocketMQ proxy's key, 10 s).
	MinInvisibleTimeMillsForRecv time.Duration `conf:"minInvisibleTimeMillsForRecv"`
}

// DefaultGRPCConfig returns the RocketMQ proxy's defaults.
func DefaultGRPCConfig() GRPCConfig {
	return GRPCConfig{GRPCServerPort: 8081, MinInvisibleTimeMillsForRecv: 10 * time.Second}
}
