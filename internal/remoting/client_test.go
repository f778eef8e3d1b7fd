package remoting

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"math/big"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

const codeBlock = protocol.RequestCode(9500)

// blockingServer's codeBlock processor waits until release is closed or
// the server closes; entered counts arrivals.
func blockingServer(t *testing.T, cfg ServerConfig) (s *Server, entered chan struct{}, release chan struct{}) {
	entered = make(chan struct{}, 1000)
	release = make(chan struct{})
	s = startServer(t, cfg, func(s *Server) {
		s.RegisterProcessor(codeBlock, func(ctx context.Context, _ *Conn, req *protocol.Command) (*protocol.Command, error) {
			entered <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return protocol.NewResponse(req, protocol.Success, "released"), nil
		}, PoolConfig{Workers: 64})
	})
	return s, entered, release
}

func TestInvokeSyncTimeout(t *testing.T) {
	s, entered, release := blockingServer(t, ServerConfig{})
	defer close(release)
	c := startClient(t, ClientConfig{})
	connect(t, c, s.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.InvokeSync(ctx, s.Addr().String(), protocol.NewRequest(codeBlock, nil, nil))
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("timeout took %v", d)
	}
	if st := c.Stats(); st.Timeouts != 1 {
		t.Fatalf("stats %+v", st)
	}
	<-entered
	// A cancelled (not timed out) context is reported as such.
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() { <-entered; cancel2() }()
	_, err = c.InvokeSync(ctx2, s.Addr().String(), protocol.NewRequest(codeBlock, nil, nil))
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
		t.Fatalf("got %v", err)
	}
	// The connection still works; late responses are dropped.
	if _, err := c.InvokeSync(ctxFor(t, 5*time.Second), s.Addr().String(), protocol.NewRequest(codeEcho, nil, nil)); err != nil {
		t.Fatal(err)
	}
}

// connect opens c's connection to addr with an echo under a generous
// deadline, so a short deadline that follows times the call, not the dial
// (which a loaded machine can stretch past 100 ms).
func connect(t *testing.T, c *Client, addr string) {
	t.Helper()
	if _, err := c.InvokeSync(ctxFor(t, 10*time.Second), addr, protocol.NewRequest(codeEcho, nil, nil)); err != nil {
		t.Fatalf("connect to %s: %v", addr, err)
	}
}

func TestInvokeAsyncTimeout(t *testing.T) {
	s, _, release := blockingServer(t, ServerConfig{})
	defer close(release)
	c := startClient(t, ClientConfig{})
	connect(t, c, s.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := asyncErr(t, c, ctx, s.Addr().String(), protocol.NewRequest(codeBlock, nil, nil), 5*time.Second); !errors.Is(err, ErrTimeout) {
		t.Fatalf("got %v", err)
	}
	// The permit came back.
	testutil.Eventually(t, 5*time.Second, func() bool { return c.asyncSem.inUse() == 0 })
}

// TestServerDiesMidCall: every caller waiting on a connection gets an error
// at once when it dies; none hangs.
func TestServerDiesMidCall(t *testing.T) {
	s, entered, release := blockingServer(t, ServerConfig{})
	defer close(release)
	c := startClient(t, ClientConfig{})
	addr := s.Addr().String()
	const callers = 40
	errs := make(chan error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := ctxFor(t, 30*time.Second)
			if i%2 == 0 {
				_, err := c.InvokeSync(ctx, addr, protocol.NewRequest(codeBlock, nil, nil))
				errs <- err
				return
			}
			done := make(chan error, 1)
			if err := c.InvokeAsync(ctx, addr, protocol.NewRequest(codeBlock, nil, nil),
				func(_ *protocol.Command, err error) { done <- err }); err != nil {
				errs <- err
				return
			}
			errs <- <-done
		}()
	}
	for range callers {
		<-entered
	}
	start := time.Now()
	go func() { _ = s.Close() }()
	wg.Wait()
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("callers took %v to fail", d)
	}
	close(errs)
	for err := range errs {
		// The server's processors see ctx cancelled and may answer before the
		// connection goes; either way no caller hangs. Most must see the close.
		if err != nil && !errors.Is(err, ErrConnClosed) {
			t.Errorf("unexpected error %v", err)
		}
	}
	// After the server is gone, calls fail fast instead of hanging.
	_, err := c.InvokeSync(ctxFor(t, 5*time.Second), addr, protocol.NewRequest(codeEcho, nil, nil))
	if err == nil {
		t.Fatal("call to a dead server succeeded")
	}
}

// TestConnectionDropFailsPending kills the connection from the server side
// while calls are pending: all fail with ErrConnClosed, and the next call
// redials.
func TestConnectionDropFailsPending(t *testing.T) {
	rec := &recorder{}
	s, entered, release := blockingServer(t, ServerConfig{})
	s.AddConnListener(rec)
	defer close(release)
	c := startClient(t, ClientConfig{})
	addr := s.Addr().String()
	const callers = 10
	errs := make(chan error, callers)
	for range callers {
		go func() {
			_, err := c.InvokeSync(ctxFor(t, 30*time.Second), addr, protocol.NewRequest(codeBlock, nil, nil))
			errs <- err
		}()
	}
	for range callers {
		<-entered
	}
	for _, conn := range s.Conns() {
		_ = conn.Close()
	}
	for range callers {
		if err := <-errs; !errors.Is(err, ErrConnClosed) {
			t.Fatalf("got %v", err)
		}
	}
	resp, err := c.InvokeSync(ctxFor(t, 5*time.Second), addr, protocol.NewRequest(codeEcho, nil, []byte("again")))
	if err != nil || string(resp.Body) != "again" {
		t.Fatalf("redial: %v", err)
	}
	if connects, _, _, _ := rec.counts(); connects != 2 {
		t.Fatalf("%d connects, want 2", connects)
	}
	// CloseConn forces a redial too.
	c.CloseConn(addr)
	if _, err := c.InvokeSync(ctxFor(t, 5*time.Second), addr, protocol.NewRequest(codeEcho, nil, nil)); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, func() bool { connects, _, _, _ := rec.counts(); return connects == 3 })
	// getConn's last connection is dropped once it closes: nothing keeps
	// a closed Conn and its buffers.
	if l := c.last.Load(); l == nil || l.addr != addr {
		t.Fatalf("last connection %+v, want the one to %s", l, addr)
	}
	c.CloseConn(addr)
	testutil.Eventually(t, 5*time.Second, func() bool { return c.last.Load() == nil }, "a closed connection is still kept as the last one")
}

func TestDialFailure(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now
	c := startClient(t, ClientConfig{DialTimeout: time.Second})
	_, err = c.InvokeSync(ctxFor(t, 5*time.Second), addr, protocol.NewRequest(codeEcho, nil, nil))
	if err == nil {
		t.Fatal("dial to closed port succeeded")
	}
	if err := c.InvokeAsync(ctxFor(t, 5*time.Second), addr, protocol.NewRequest(codeEcho, nil, nil),
		func(*protocol.Command, error) { t.Error("callback ran after InvokeAsync failed") }); err == nil {
		t.Fatal("async to closed port succeeded")
	}
	if c.asyncSem.inUse() != 0 {
		t.Fatal("permit leaked")
	}
}

func TestClientNotStartedAndClosed(t *testing.T) {
	c := NewClient(ClientConfig{Logger: testutil.Logger(t)})
	if _, err := c.InvokeSync(ctxFor(t, time.Second), "127.0.0.1:1", protocol.NewRequest(codeEcho, nil, nil)); err == nil {
		t.Fatal("invoke before Start succeeded")
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, ServerConfig{}, nil)
	if _, err := c.InvokeSync(ctxFor(t, 5*time.Second), s.Addr().String(), protocol.NewRequest(codeEcho, nil, nil)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	_, err := c.InvokeSync(ctxFor(t, time.Second), s.Addr().String(), protocol.NewRequest(codeEcho, nil, nil))
	if err == nil {
		t.Fatal("invoke after Close succeeded")
	}
}

func TestAsyncPermitsBound(t *testing.T) {
	s, entered, release := blockingServer(t, ServerConfig{})
	c := startClient(t, ClientConfig{MaxAsync: 2})
	addr := s.Addr().String()
	results := make(chan error, 2)
	for range 2 {
		if err := c.InvokeAsync(ctxFor(t, 10*time.Second), addr, protocol.NewRequest(codeBlock, nil, nil),
			func(_ *protocol.Command, err error) { results <- err }); err != nil {
			t.Fatal(err)
		}
	}
	<-entered
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := c.InvokeAsync(ctx, addr, protocol.NewRequest(codeEcho, nil, nil), func(*protocol.Command, error) {})
	if !errors.Is(err, ErrTooManyRequests) {
		t.Fatalf("third async call: %v", err)
	}
	close(release)
	for range 2 {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
}

// selfSigned returns a server TLS config with a fresh self-signed cert.
func selfSigned(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "apogee-test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}

// TestTLSPermissive: with TLS configured the server takes both TLS and
// plain clients (docs/protocol.md §1.1).
func TestTLSPermissive(t *testing.T) {
	s := startServer(t, ServerConfig{TLS: selfSigned(t)}, nil)
	addr := s.Addr().String()
	tlsClient := startClient(t, ClientConfig{TLS: &tls.Config{InsecureSkipVerify: true}})
	plain := startClient(t, ClientConfig{})
	for name, c := range map[string]*Client{"tls": tlsClient, "plain": plain} {
		resp, err := c.InvokeSync(ctxFor(t, 10*time.Second), addr, protocol.NewRequest(codeEcho, nil, []byte(name)))
		if err != nil || string(resp.Body) != name {
			t.Fatalf("%s: %v", name, err)
		}
	}
	// The TLS connection really is TLS.
	found := false
	for _, conn := range s.Conns() {
		if _, isTLS := conn.rw.(*tls.Conn); isTLS {
			found = true
		}
	}
	if !found {
		t.Fatal("no server connection uses TLS")
	}
	// Enforcing mode refuses the plain client (listeners hear nothing of a
	// connection that never opened) and still serves TLS.
	rec := &recorder{}
	enforced := startServer(t, ServerConfig{TLS: selfSigned(t), TLSEnforce: true}, func(s *Server) { s.AddConnListener(rec) })
	if _, err := plain.InvokeSync(ctxFor(t, 10*time.Second), enforced.Addr().String(), protocol.NewRequest(codeEcho, nil, nil)); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("plain client against enforced TLS: %v", err)
	}
	if _, err := tlsClient.InvokeSync(ctxFor(t, 10*time.Second), enforced.Addr().String(), protocol.NewRequest(codeEcho, nil, nil)); err != nil {
		t.Fatal(err)
	}
	if connects, closes, _, exceptions := rec.counts(); connects != 1 || closes != 0 || exceptions != 0 {
		t.Fatalf("connects=%d closes=%d exceptions=%d, want only the TLS connection", connects, closes, exceptions)
	}
}

// TestExtListResponses: responses to requests of ExtListResponseCodes
// arrive with their ROCKETMQ ext fields in ExtList, sync and async; other
// codes keep the map.
func TestExtListResponses(t *testing.T) {
	const codeOther = protocol.RequestCode(9003)
	s := startServer(t, ServerConfig{}, func(s *Server) { s.RegisterProcessor(codeOther, echo, PoolConfig{}) })
	c := startClient(t, ClientConfig{ExtListResponseCodes: []protocol.RequestCode{codeEcho}})
	addr := s.Addr().String()
	req := func(code protocol.RequestCode) *protocol.Command {
		r := protocol.NewRequest(code, map[string]string{"msgId": "m", "queueOffset": "17"}, nil)
		r.SerializeType = protocol.SerializeRocketMQ
		return r
	}
	check := func(name string, resp *protocol.Command, list bool) {
		t.Helper()
		if resp.Ext("msgId") != "m" || resp.Ext("queueOffset") != "17" || resp.ExtLen() != 2 {
			t.Fatalf("%s: ext %v %v", name, resp.ExtFields, resp.ExtList)
		}
		if got := resp.ExtFields == nil; got != list {
			t.Fatalf("%s: list decode %v, want %v", name, got, list)
		}
	}
	for _, tc := range []struct {
		code protocol.RequestCode
		list bool
	}{{codeEcho, true}, {codeOther, false}} {
		resp, err := c.InvokeSync(ctxFor(t, 10*time.Second), addr, req(tc.code))
		if err != nil {
			t.Fatal(err)
		}
		check("sync", resp, tc.list)
		done := make(chan *protocol.Command, 1)
		err = c.InvokeAsync(ctxFor(t, 10*time.Second), addr, req(tc.code), func(resp *protocol.Command, err error) {
			if err != nil {
				t.Error(err)
			}
			done <- resp
		})
		if err != nil {
			t.Fatal(err)
		}
		if resp := <-done; resp != nil {
			check("async", resp, tc.list)
		}
	}
}

// TestExtListResponseBadHeader: a response whose header cannot be decoded,
// for a call whose future the read loop took out before the decode
// (takeForDecode), fails that call with ErrConnClosed (the connection
// closes), for a sync and an async call; neither hangs.
func TestExtListResponseBadHeader(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() { // answers every request with a ROCKETMQ header whose ext block is cut short
		for {
			raw, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer raw.Close()
				fr := protocol.NewFrameReader(raw, 0, 0)
				for {
					req, err := fr.Next()
					if err != nil {
						return
					}
					hdr := make([]byte, 21, 25)
					binary.BigEndian.PutUint32(hdr[5:], uint32(req.Opaque))
					binary.BigEndian.PutUint32(hdr[9:], uint32(protocol.FlagResponse))
					binary.BigEndian.PutUint32(hdr[17:], 4) // ext length
					hdr = append(hdr, 0x00, 0x50, 'k', 'e') // a key of 80 bytes, 2 present
					frame := binary.BigEndian.AppendUint32(nil, uint32(4+len(hdr)))
					frame = binary.BigEndian.AppendUint32(frame, uint32(protocol.SerializeRocketMQ)<<24|uint32(len(hdr)))
					if _, err := raw.Write(append(frame, hdr...)); err != nil {
						return
					}
				}
			}()
		}
	}()
	c := startClient(t, ClientConfig{ExtListResponseCodes: []protocol.RequestCode{codeEcho}})
	addr := ln.Addr().String()
	req := func() *protocol.Command {
		r := protocol.NewRequest(codeEcho, map[string]string{"k": "v"}, nil)
		r.SerializeType = protocol.SerializeRocketMQ
		return r
	}
	if _, err := c.InvokeSync(ctxFor(t, 10*time.Second), addr, req()); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("sync: %v, want ErrConnClosed", err)
	}
	if err := asyncErr(t, c, ctxFor(t, 10*time.Second), addr, req(), 10*time.Second); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("async: %v, want ErrConnClosed", err)
	}
}

// asyncErr sends req with InvokeAsync and returns the error its callback
// got; the test fails if InvokeAsync refuses the call or the callback does
// not run within wait.
func asyncErr(t *testing.T, c *Client, ctx context.Context, addr string, req *protocol.Command, wait time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	if err := c.InvokeAsync(ctx, addr, req, func(_ *protocol.Command, err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		return err
	case <-time.After(wait):
		t.Fatal("the async callback never ran")
		return nil
	}
}
