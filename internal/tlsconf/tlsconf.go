// Package tlsconf turns the TLS keys of broker.conf / namesrv.conf into
// crypto/tls configurations, and wraps listeners so one port serves TLS
// and plaintext (tlsMode=permissive) or TLS only (enforcing). Servers of
// every protocol use it: remoting, HA, gRPC, the controller.
//
// A connection is TLS when its first byte is 0x16 (a TLS handshake
// record); the byte is peeked, never consumed, so the plaintext protocol
// sees its stream unchanged.
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
)

// Mode is tlsMode.
type Mode int

const (
	Disabled   Mode = iota // "disabled": plaintext only
	Permissive             // "permissive": TLS and plaintext on one port
	Enforcing              // "enforcing": TLS only; plaintext connections are closed
)

func (m Mode) String() string {
	switch m {
	case Permissive:
		return "permissive"
	case Enforcing:
		return "enforcing"
	}
	return "disabled"
}

// ParseMode reads tlsMode ("" is disabled).
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "disabled":
		return Disabled, nil
	case "permissive":
		return Permissive, nil
	case "enforcing":
		return Enforcing, nil
	}
	return Disabled, fmt.Errorf("tlsconf: tlsMode=%s: want disabled, permissive or enforcing", s)
}

// Settings are the TLS keys (RocketMQ's tls.* settings under broker.conf
// names). Servers embed it.
type Settings struct {
	// TLSMode: disabled | permissive | enforcing (disabled).
	TLSMode string `conf:"tlsMode"`
	// TLSServerCertPath / TLSServerKeyPath: PEM certificate chain and key
	// the server presents (required unless disabled).
	TLSServerCertPath string `conf:"tlsServerCertPath"`
	TLSServerKeyPath  string `conf:"tlsServerKeyPath"`
	// TLSServerTrustCertPath: PEM CA certificates; when set, clients must
	// present a certificate signed by one of them (mutual TLS).
	TLSServerTrustCertPath string `conf:"tlsServerTrustCertPath"`
	// TLSEnable: the server's own clients (broker -> name server
	// registration, slave -> master HA link and metadata sync) dial TLS.
	// Also on when tlsMode=enforcing: a cluster that enforces TLS enforces
	// it on every node. RocketMQ's tls.enable.
	TLSEnable bool `conf:"tlsEnable"`
	// TLSClientTrustCertPath: PEM CA certificates the server's own clients
	// verify their peers with; unset = no verification (as RocketMQ's
	// clients by default).
	TLSClientTrustCertPath string `conf:"tlsClientTrustCertPath"`
}

// Mode parses TLSMode.
func (s *Settings) Mode() (Mode, error) { return ParseMode(s.TLSMode) }

// Validate checks the mode and loads the files once.
func (s *Settings) Validate() error {
	if _, _, err := s.Server(); err != nil {
		return err
	}
	_, err := s.Client()
	return err
}

// Server returns the server configuration (nil when disabled) and whether
// plaintext is refused.
func (s *Settings) Server() (cfg *tls.Config, enforce bool, err error) {
	mode, err := s.Mode()
	if err != nil || mode == Disabled {
		return nil, false, err
	}
	if s.TLSServerCertPath == "" || s.TLSServerKeyPath == "" {
		return nil, false, fmt.Errorf("tlsconf: tlsMode=%s needs tlsServerCertPath and tlsServerKeyPath", mode)
	}
	cert, err := tls.LoadX509KeyPair(s.TLSServerCertPath, s.TLSServerKeyPath)
	if err != nil {
		return nil, false, fmt.Errorf("tlsconf: tlsServerCertPath=%s tlsServerKeyPath=%s: %w", s.TLSServerCertPath, s.TLSServerKeyPath, err)
	}
	cfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if s.TLSServerTrustCertPath != "" {
		pool, err := loadPool("tlsServerTrustCertPath", s.TLSServerTrustCertPath)
		if err != nil {
			return nil, false, err
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, mode == Enforcing, nil
}

// Client returns the configuration of the server's own clients, or nil
// when they dial plaintext. Under mutual TLS they present the server's
// certificate.
func (s *Settings) Client() (*tls.Config, error) {
	mode, err := s.Mode()
	if err != nil {
		return nil, err
	}
	if !s.TLSEnable && mode != Enforcing {
		return nil, nil
	}
	cfg := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}
	if s.TLSClientTrustCertPath != "" {
		pool, err := loadPool("tlsClientTrustCertPath", s.TLSClientTrustCertPath)
		if err != nil {
			return nil, err
		}
		cfg.InsecureSkipVerify, cfg.RootCAs = false, pool
	}
	if s.TLSServerTrustCertPath != "" && s.TLSServerCertPath != "" {
		cert, err := tls.LoadX509KeyPair(s.TLSServerCertPath, s.TLSServerKeyPath)
		if err != nil {
			return nil, fmt.Errorf("tlsconf: client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

func loadPool(key, path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: %s: %w", key, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("tlsconf: %s=%s: no PEM certificate", key, path)
	}
	return pool, nil
}
