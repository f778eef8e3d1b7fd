package broker

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/apogeemq/apogee/internal/auth"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// authState is the broker's ACL 2.0 state (Broker.auth). The store is
// opened at every start (management requests work with the checks off);
// guard is nil unless authenticationEnabled or authorizationEnabled.
type authState struct {
	store    *auth.Store
	verifier *auth.Verifier
	guard    *auth.Guard  // nil = no checks
	inner    *auth.Signer // innerClientAuthenticationCredentials; nil = unsigned
}

// authDir is where auth.json lives: authConfigPath, or
// <storePathRootDir>/config/acl.
func (b *Broker) authDir() string {
	if b.cfg.AuthConfigPath != "" {
		return b.cfg.AuthConfigPath
	}
	return filepath.Join(b.configDir(), "acl")
}

// startAuth opens the auth store, migrates plain_acl.yml once when asked,
// creates the init and inner users, and builds the guard. It runs before
// the servers listen.
func (b *Broker) startAuth() error {
	if err := b.cfg.AuthConfig.Validate(); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	st, err := auth.Open(b.authDir())
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	b.auth.store = st
	b.auth.verifier = auth.NewVerifier(st)
	if b.cfg.MigrateAuthFromV1Enabled {
		n, err := auth.MigrateV1(filepath.Join(b.configDir(), "plain_acl.yml"), st)
		if err != nil {
			return fmt.Errorf("broker: migrateAuthFromV1Enabled: %w", err)
		}
		if n > 0 {
			b.logger.Info("auth: migrated ACL 1.0 accounts", "count", n)
		}
	}
	if err := auth.Init(b.cfg.AuthConfig, st); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	if b.auth.inner, err = b.cfg.InnerCredentials(); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	if b.cfg.AuthConfig.Enabled() {
		rules := auth.SystemRules{TraceTopic: b.cfg.MsgTraceTopicName, Cluster: b.cfg.BrokerClusterName}
		g, err := auth.NewGuard(b.cfg.AuthConfig, st, rules, AuthExportCode)
		if err != nil {
			return fmt.Errorf("broker: %w", err)
		}
		b.auth.guard = g
		b.logger.Info("auth: enabled", "authenticationEnabled", b.cfg.AuthenticationEnabled,
			"authorizationEnabled", b.cfg.AuthorizationEnabled, "users", len(st.Users("")), "file", st.Path())
	}
	return nil
}

// Auth is the broker's user and ACL store (nil before Start).
func (b *Broker) Auth() *auth.Store { return b.auth.store }

// AuthGuard is the broker's request guard, for the gRPC endpoint in the
// same process: nil unless authenticationEnabled or authorizationEnabled
// (valid after Start).
func (b *Broker) AuthGuard() *auth.Guard { return b.auth.guard }

// SignInner signs a request with innerClientAuthenticationCredentials
// (no-op without them): what in-process components calling the broker
// over the wire sign with.
func (b *Broker) SignInner(req *protocol.Command) { b.signInner(req) }

// signInner signs a request of the broker's own clients with
// innerClientAuthenticationCredentials (remoting.ClientConfig.Sign).
func (b *Broker) signInner(req *protocol.Command) { b.auth.inner.Sign(req) }

// authHook runs the guard before every processor: refusals are answered
// NO_PERMISSION with RocketMQ's remark on the same connection, and the
// processor never runs (nothing is stored).
type authHook struct{ g *auth.Guard }

func (h authHook) Before(conn *remoting.Conn, req *protocol.Command) error {
	if _, err := h.g.CheckRemotingConn(req, conn.RemoteAddrPort().Addr(), conn); err != nil {
		var ae *auth.Error
		if errors.As(err, &ae) {
			return protocol.Errorf(protocol.NoPermission, "%s", ae.Msg)
		}
		return protocol.Errorf(protocol.NoPermission, "%v", err)
	}
	return nil
}

func (h authHook) After(*remoting.Conn, *protocol.Command, *protocol.Command) {}

// authConns drops a closed connection's stateful authentication entry.
type authConns struct{ g *auth.Guard }

func (l authConns) OnConnect(*remoting.Conn)          {}
func (l authConns) OnClose(c *remoting.Conn)          { l.g.ForgetConn(c) }
func (l authConns) OnIdle(*remoting.Conn)             {}
func (l authConns) OnException(*remoting.Conn, error) {}

// applyMasterAuth installs the master's auth state on a slave.
func (b *Broker) applyMasterAuth(body []byte) error {
	changed, err := b.auth.store.Replace(body)
	if err != nil {
		return err
	}
	if changed {
		b.logger.Info("auth: copied users and ACLs from master", "version", b.auth.store.Version())
	}
	return nil
}
