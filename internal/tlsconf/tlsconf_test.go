package tlsconf

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/testutil"
)

// echoServer accepts on a wrapped listener and echoes every connection.
func echoServer(t *testing.T, s Settings) string {
	t.Helper()
	cfg, enforce, err := s.Server()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen(nil, cfg, enforce)("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

// roundTrip writes "ping" and reads it back over c.
func roundTrip(c net.Conn) error {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("ping")); err != nil {
		return err
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != "ping" {
		return errors.New("echo mismatch")
	}
	return nil
}

func dialPlain(t *testing.T, addr string) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return roundTrip(c)
}

func dialTLS(addr string, cfg *tls.Config) error {
	c, err := Dial(nil, cfg)(context.Background(), "tcp", addr)
	if err != nil {
		return err
	}
	return roundTrip(c)
}

func TestModes(t *testing.T) {
	f := testutil.WriteTLSFiles(t)
	insecure := &tls.Config{InsecureSkipVerify: true}
	base := Settings{TLSServerCertPath: f.ServerCert, TLSServerKeyPath: f.ServerKey}

	disabled := echoServer(t, base)
	if err := dialPlain(t, disabled); err != nil {
		t.Fatalf("disabled, plain: %v", err)
	}

	perm := base
	perm.TLSMode = "permissive"
	addr := echoServer(t, perm)
	if err := dialPlain(t, addr); err != nil {
		t.Fatalf("permissive, plain: %v", err)
	}
	if err := dialTLS(addr, insecure); err != nil {
		t.Fatalf("permissive, TLS: %v", err)
	}

	enf := base
	enf.TLSMode = "enforcing"
	addr = echoServer(t, enf)
	if err := dialPlain(t, addr); err == nil {
		t.Fatal("enforcing accepted plaintext")
	}
	pool := &tls.Config{ServerName: "127.0.0.1"}
	client, err := (&Settings{TLSMode: "enforcing", TLSClientTrustCertPath: f.CA}).Client()
	if err != nil {
		t.Fatal(err)
	}
	if err := dialTLS(addr, client); err != nil {
		t.Fatalf("enforcing, verified TLS: %v", err)
	}
	if err := dialTLS(addr, pool); err == nil {
		t.Fatal("a client that does not trust the CA connected")
	}

	// Mutual TLS: a client without a certificate is refused.
	m := enf
	m.TLSServerTrustCertPath = f.CA
	addr = echoServer(t, m)
	if err := dialTLS(addr, insecure); err == nil {
		t.Fatal("mTLS accepted a client without a certificate")
	}
	cert, err := tls.LoadX509KeyPair(f.ClientCert, f.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := dialTLS(addr, &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{cert}}); err != nil {
		t.Fatalf("mTLS with a client certificate: %v", err)
	}
}

func TestBadSettings(t *testing.T) {
	for _, s := range []Settings{
		{TLSMode: "sometimes"},
		{TLSMode: "enforcing"},
		{TLSMode: "permissive", TLSServerCertPath: "/nonexistent", TLSServerKeyPath: "/nonexistent"},
	} {
		if err := s.Validate(); err == nil {
			t.Errorf("%+v: accepted", s)
		}
	}
}
