package remoting

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

const codeEcho = protocol.RequestCode(9001)

// echo answers with the request's body and ext fields.
func echo(_ context.Context, _ *Conn, req *protocol.Command) (*protocol.Command, error) {
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = req.Body
	resp.ExtFields = req.ExtFields
	return resp, nil
}

func startServer(t testing.TB, cfg ServerConfig, setup func(*Server)) *Server {
	t.Helper()
	if cfg.ListenAddr == "" {
		cfg.ListenAddr = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = testutil.Logger(t)
	}
	s := NewServer(cfg)
	s.RegisterProcessor(codeEcho, echo, PoolConfig{})
	if setup != nil {
		setup(s)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func startClient(t testing.TB, cfg ClientConfig) *Client {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testutil.Logger(t)
	}
	c := NewClient(cfg)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// recorder is a ConnListener that counts events.
type recorder struct {
	mu         sync.Mutex
	connects   int
	closes     int
	idles      int
	exceptions []error
	conns      []*Conn
}

func (r *recorder) OnConnect(c *Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.connects++
	r.conns = append(r.conns, c)
}
func (r *recorder) OnClose(*Conn) { r.mu.Lock(); r.closes++; r.mu.Unlock() }
func (r *recorder) OnIdle(*Conn)  { r.mu.Lock(); r.idles++; r.mu.Unlock() }
func (r *recorder) OnException(_ *Conn, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exceptions = append(r.exceptions, err)
}

func (r *recorder) counts() (connects, closes, idles, exceptions int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.connects, r.closes, r.idles, len(r.exceptions)
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
