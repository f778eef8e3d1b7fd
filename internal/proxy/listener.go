package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/run"
)

// handshakeTimeout bounds the first-byte peek and the TLS handshake of one
// accepted connection; a client that sends nothing for this long is dropped.
const handshakeTimeout = 10 * time.Second

// tlsRecordHandshake is the first byte of a TLS ClientHello record. Any other
// first byte is taken as plaintext HTTP/2 (the "PRI * HTTP/2.0" preface).
const tlsRecordHandshake = 0x16

// sniffListener serves TLS and plaintext on one port: every accepted
// connection is classified by its first byte, TLS connections complete their
// handshake (ALPN h2), and Accept hands out the ready connection. The
// classification runs on a goroutine per pending connection so that one slow
// client never holds up Accept for the others.
//
// Goroutines: acceptLoop (one) and one classify per connection still in its
// first handshakeTimeout; Close stops acceptLoop, closes pending connections
// and waits for all of them.
type sniffListener struct {
	inner   net.Listener
	tls     *tls.Config
	enforce bool // tlsMode=enforcing: plaintext connections are closed
	logger  *slog.Logger
	ready   chan net.Conn // classified connections; Accept reads it
	quit    <-chan struct{}
	group   *run.Group
	once    sync.Once
}

func newSniffListener(inner net.Listener, cfg *tls.Config, enforce bool, logger *slog.Logger) *sniffListener {
	g := run.NewGroup("grpc-listener")
	l := &sniffListener{inner: inner, tls: cfg, enforce: enforce, logger: logger, ready: make(chan net.Conn), quit: g.Done(), group: g}
	g.Go("accept", func(context.Context) { l.acceptLoop() })
	return l
}

func (l *sniffListener) acceptLoop() {
	var delay time.Duration
	for {
		c, err := l.inner.Accept()
		if err != nil {
			select {
			case <-l.quit:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				select {
				case <-time.After(delay):
				case <-l.quit:
					return
				}
				continue
			}
			l.logger.Error("grpc accept failed; endpoint stops accepting", "err", err)
			return
		}
		delay = 0
		if !l.group.Go("classify", func(context.Context) { l.classify(c) }) {
			c.Close()
			return
		}
	}
}

// classify peeks at the first byte and hands the connection to Accept, as
// TLS after a completed handshake or as plaintext with the byte kept.
func (l *sniffListener) classify(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	br := bufio.NewReaderSize(c, 1024)
	first, err := br.Peek(1)
	if err != nil {
		c.Close()
		return
	}
	var out net.Conn = &peekedConn{Conn: c, r: br}
	if first[0] == tlsRecordHandshake {
		tc := tls.Server(out, l.tls)
		if err := tc.Handshake(); err != nil {
			l.logger.Debug("grpc TLS handshake failed", "addr", c.RemoteAddr().String(), "err", err)
			c.Close()
			return
		}
		out = tc
	} else if l.enforce {
		l.logger.Debug("grpc plaintext connection refused (tlsMode=enforcing)", "addr", c.RemoteAddr().String())
		c.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	select {
	case l.ready <- out:
	case <-l.quit:
		out.Close()
	}
}

func (l *sniffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case <-l.quit:
		return nil, net.ErrClosed
	}
}

// Close stops accepting, drops connections still being classified and waits
// for the listener's goroutines. Connections already handed out belong to
// their acceptor. Idempotent.
func (l *sniffListener) Close() error {
	var err error
	l.once.Do(func() {
		l.group.Stop()
		err = l.inner.Close()
		l.group.Wait()
	})
	return err
}

func (l *sniffListener) Addr() net.Addr { return l.inner.Addr() }

// peekedConn reads through the buffered reader that holds the peeked byte.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
