package tlsconf

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// HandshakeTimeout bounds the first-byte peek and the TLS handshake of an
// accepted connection.
const HandshakeTimeout = 10 * time.Second

// ErrPlaintextRefused is what a plaintext connection to an enforcing
// listener gets from its first Read or Write (it is then closed).
var ErrPlaintextRefused = errors.New("tlsconf: plaintext connection refused (tlsMode=enforcing)")

// Listen wraps a listen function: with cfg nil it is returned unchanged;
// otherwise every accepted connection is TLS when its first byte is 0x16
// and plaintext otherwise (refused when enforce is set). The sniff and the
// handshake happen on the connection's first Read or Write, on the
// caller's goroutine, so Accept never blocks on a slow client.
func Listen(listen func(network, addr string) (net.Listener, error), cfg *tls.Config, enforce bool) func(network, addr string) (net.Listener, error) {
	if listen == nil {
		listen = net.Listen
	}
	if cfg == nil {
		return listen
	}
	return func(network, addr string) (net.Listener, error) {
		ln, err := listen(network, addr)
		if err != nil {
			return nil, err
		}
		return &listener{Listener: ln, cfg: cfg, enforce: enforce}, nil
	}
}

type listener struct {
	net.Listener
	cfg     *tls.Config
	enforce bool
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &sniffConn{Conn: c, cfg: l.cfg, enforce: l.enforce}, nil
}

// sniffConn decides on first use whether it is TLS.
type sniffConn struct {
	net.Conn // the raw connection
	cfg      *tls.Config
	enforce  bool

	once sync.Once
	rw   net.Conn // what Read and Write use once decided
	err  error    // sticky setup failure
}

func (c *sniffConn) setup() {
	_ = c.Conn.SetReadDeadline(time.Now().Add(HandshakeTimeout))
	br := bufio.NewReaderSize(c.Conn, 4096)
	first, err := br.Peek(1)
	if err != nil {
		c.err = fmt.Errorf("tlsconf: first byte: %w", err)
		return
	}
	pc := &peekedConn{Conn: c.Conn, r: br}
	if first[0] != 0x16 {
		if c.enforce {
			c.err = ErrPlaintextRefused
			_ = c.Conn.Close()
			return
		}
		_ = c.Conn.SetReadDeadline(time.Time{})
		c.rw = pc
		return
	}
	tc := tls.Server(pc, c.cfg)
	ctx, cancel := context.WithTimeout(context.Background(), HandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		c.err = fmt.Errorf("tlsconf: TLS handshake: %w", err)
		_ = c.Conn.Close()
		return
	}
	_ = c.Conn.SetReadDeadline(time.Time{})
	c.rw = tc
}

func (c *sniffConn) Read(p []byte) (int, error) {
	c.once.Do(c.setup)
	if c.err != nil {
		return 0, c.err
	}
	return c.rw.Read(p)
}

func (c *sniffConn) Write(p []byte) (int, error) {
	c.once.Do(c.setup)
	if c.err != nil {
		return 0, c.err
	}
	return c.rw.Write(p)
}

// IsTLS reports whether the connection turned out to be TLS (false before
// its first Read or Write).
func IsTLS(c net.Conn) bool {
	sc, ok := c.(*sniffConn)
	if !ok {
		_, ok = c.(*tls.Conn)
		return ok
	}
	_, ok = sc.rw.(*tls.Conn)
	return ok
}

// peekedConn reads through the bufio.Reader that holds the peeked byte.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (p *peekedConn) Read(b []byte) (int, error) { return p.r.Read(b) }

// Dial wraps a dial function: with cfg nil it is returned unchanged;
// otherwise every connection does a TLS handshake first (ServerName from
// the address unless cfg sets one or skips verification).
func Dial(dial func(ctx context.Context, network, addr string) (net.Conn, error), cfg *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	if cfg == nil {
		return dial
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		raw, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c := cfg
		if c.ServerName == "" && !c.InsecureSkipVerify {
			c = c.Clone()
			if host, _, err := net.SplitHostPort(addr); err == nil {
				c.ServerName = host
			}
		}
		tc := tls.Client(raw, c)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = raw.Close()
			return nil, fmt.Errorf("tlsconf: TLS handshake with %s: %w", addr, err)
		}
		return tc, nil
	}
}
