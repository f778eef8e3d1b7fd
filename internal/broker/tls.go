package broker

import (
	"crypto/tls"
	"fmt"
)

// tlsState is the broker's TLS configuration (Broker.tls), loaded once at
// start from tlsMode, tlsServerCertPath, tlsServerKeyPath,
// tlsServerTrustCertPath, tlsEnable: the main, VIP and HA ports serve
// server (permissive: TLS and plaintext on one port; enforcing: TLS only),
// and the broker's own clients (name-server registration, slave sync, the
// slave's HA link) dial with client.
type tlsState struct {
	server  *tls.Config // nil = tlsMode=disabled
	enforce bool        // tlsMode=enforcing
	client  *tls.Config // nil = the broker's clients dial plaintext
}

func (b *Broker) startTLS() error {
	server, enforce, err := b.cfg.Settings.Server()
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	client, err := b.cfg.Settings.Client()
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	b.tls = tlsState{server: server, enforce: enforce, client: client}
	if server != nil || client != nil {
		b.logger.Info("TLS enabled", "tlsMode", b.cfg.TLSMode, "mutualTLS", b.cfg.TLSServerTrustCertPath != "",
			"clientsDialTLS", client != nil)
	}
	return nil
}
