package proxy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"time"
)

// serverTLSConfig loads certPath/keyPath, or creates a self-signed
// certificate for hosts when both are empty. ALPN offers only h2: grpc-go
// clients refuse TLS servers that do not negotiate it.
func serverTLSConfig(certPath, keyPath string, hosts []string) (*tls.Config, error) {
	var cert tls.Certificate
	var err error
	switch {
	case certPath != "" && keyPath != "":
		cert, err = tls.LoadX509KeyPair(certPath, keyPath)
		if err != nil {
			return nil, fmt.Errorf("proxy: load TLS certificate %s: %w", certPath, err)
		}
	case certPath != "" || keyPath != "":
		return nil, fmt.Errorf("proxy: tlsServerCertPath and tlsServerKeyPath must be set together")
	default:
		cert, err = selfSignedCertificate(hosts, time.Now())
		if err != nil {
			return nil, err
		}
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{"h2"},
		MinVersion:   tls.VersionTLS12,
	}, nil
}

// selfSignedCertificate returns an ECDSA P-256 certificate valid for ten
// years from now for the given host names and IPs, plus localhost and
// 127.0.0.1. The official Go client does not verify server certificates, so
// this is enough for it; clients that verify need a real certificate.
func selfSignedCertificate(hosts []string, now time.Time) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("proxy: generate TLS key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("proxy: certificate serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "apogee", Organization: []string{"Apogee"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	seen := map[string]bool{}
	for _, h := range append([]string{"localhost", "127.0.0.1"}, hosts...) {
		if h == "" || seen[h] {
			continue
		}
		seen[h] = true
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("proxy: self-sign certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
