package remoting

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

func TestInvokeSyncEchoBothEncodings(t *testing.T) {
	s := startServer(t, ServerConfig{}, nil)
	c := startClient(t, ClientConfig{})
	addr := s.Addr().String()
	for _, st := range []protocol.SerializeType{protocol.SerializeJSON, protocol.SerializeRocketMQ} {
		t.Run(st.String(), func(t *testing.T) {
			req := protocol.NewRequest(codeEcho, map[string]string{"topic": "T"}, []byte("ping"))
			req.SerializeType = st
			resp, err := c.InvokeSync(ctxFor(t, 5*time.Second), addr, req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Code != 0 || string(resp.Body) != "ping" || resp.Ext("topic") != "T" ||
				resp.Opaque != req.Opaque || !resp.IsResponse() {
				t.Fatalf("bad response %+v", resp)
			}
			// A response uses the request's serialization (docs/protocol.md §1.6).
			if resp.SerializeType != st {
				t.Fatalf("response serialized as %v, request as %v", resp.SerializeType, st)
			}
		})
	}
}

// TestUnknownCode: docs/protocol.md §2.7 / §9.1 item 9.
func TestUnknownCode(t *testing.T) {
	s := startServer(t, ServerConfig{}, nil)
	c := startClient(t, ClientConfig{})
	resp, err := c.InvokeSync(ctxFor(t, 5*time.Second), s.Addr().String(), protocol.NewRequest(999, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.ResponseCode() != protocol.RequestCodeNotSupported || resp.Remark != " request type 999 not supported" {
		t.Fatalf("got %d %q", resp.Code, resp.Remark)
	}
	if st := s.Stats(); st.NotSupported != 1 || st.Conns != 1 || st.ConnsOpened != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestDefaultProcessor(t *testing.T) {
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.SetDefaultProcessor(func(_ context.Context, _ *Conn, req *protocol.Command) (*protocol.Command, error) {
			return nil, protocol.Errorf(protocol.TopicNotExist, "no route for %d", req.Code)
		}, PoolConfig{Workers: 1})
	})
	c := startClient(t, ClientConfig{})
	resp, err := c.InvokeSync(ctxFor(t, 5*time.Second), s.Addr().String(), protocol.NewRequest(999, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.ResponseCode() != protocol.TopicNotExist || resp.Remark != "no route for 999" {
		t.Fatalf("got %d %q", resp.Code, resp.Remark)
	}
}

func TestProcessorErrorsAndPanics(t *testing.T) {
	const codeErr, codePanic = protocol.RequestCode(9100), protocol.RequestCode(9101)
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.RegisterProcessorShared([]protocol.RequestCode{codeErr, codePanic},
			func(_ context.Context, _ *Conn, req *protocol.Command) (*protocol.Command, error) {
				if req.RequestCode() == codePanic {
					panic("boom")
				}
				return nil, errors.New("disk on fire")
			}, PoolConfig{Workers: 2})
	})
	c := startClient(t, ClientConfig{})
	tests := []struct {
		code   protocol.RequestCode
		remark string
	}{{codeErr, "disk on fire"}, {codePanic, "processor panic: boom"}}
	for _, tc := range tests {
		resp, err := c.InvokeSync(ctxFor(t, 5*time.Second), s.Addr().String(), protocol.NewRequest(tc.code, nil, nil))
		if err != nil {
			t.Fatal(err)
		}
		if resp.ResponseCode() != protocol.SystemError || resp.Remark != tc.remark {
			t.Fatalf("code %d: got %d %q", tc.code, resp.Code, resp.Remark)
		}
	}
}

type testHook struct {
	after atomic.Int32
	last  atomic.Pointer[protocol.Command]
}

func (h *testHook) Before(_ *Conn, req *protocol.Command) error {
	if req.Ext("deny") == "true" {
		return protocol.Errorf(protocol.NoPermission, "denied")
	}
	return nil
}

func (h *testHook) After(_ *Conn, _ *protocol.Command, resp *protocol.Command) {
	h.after.Add(1)
	h.last.Store(resp)
}

func TestHooks(t *testing.T) {
	h := &testHook{}
	s := startServer(t, ServerConfig{}, func(s *Server) { s.AddHook(h) })
	c := startClient(t, ClientConfig{})
	resp, err := c.InvokeSync(ctxFor(t, 5*time.Second), s.Addr().String(),
		protocol.NewRequest(codeEcho, map[string]string{"deny": "true"}, []byte("x")))
	if err != nil {
		t.Fatal(err)
	}
	if resp.ResponseCode() != protocol.NoPermission || resp.Remark != "denied" || len(resp.Body) != 0 {
		t.Fatalf("Before's error not answered: %+v", resp)
	}
	resp, err = c.InvokeSync(ctxFor(t, 5*time.Second), s.Addr().String(), protocol.NewRequest(codeEcho, nil, []byte("x")))
	if err != nil || resp.Code != 0 {
		t.Fatal(err, resp)
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return h.after.Load() == 2 })
	if last := h.last.Load(); last == nil || string(last.Body) != "x" {
		t.Fatalf("After saw %+v", last)
	}
}

func TestDeferredResponse(t *testing.T) {
	const codeLater = protocol.RequestCode(9200)
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.RegisterProcessor(codeLater, func(_ context.Context, conn *Conn, req *protocol.Command) (*protocol.Command, error) {
			go func() { // e.g. a long-polling pull answered when a message arrives
				resp := protocol.NewResponse(req, protocol.Success, "later")
				_ = conn.WriteResponse(resp)
			}()
			return nil, nil
		}, PoolConfig{Workers: 1})
	})
	c := startClient(t, ClientConfig{})
	resp, err := c.InvokeSync(ctxFor(t, 5*time.Second), s.Addr().String(), protocol.NewRequest(codeLater, nil, nil))
	if err != nil || resp.Remark != "later" {
		t.Fatal(err, resp)
	}
}

// TestFullPoolSystemBusy: a full queue answers SYSTEM_BUSY at once
// (docs/protocol.md §2.7).
func TestFullPoolSystemBusy(t *testing.T) {
	const codeSlow = protocol.RequestCode(9300)
	release := make(chan struct{})
	started := make(chan struct{}, 10)
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.RegisterProcessor(codeSlow, func(ctx context.Context, _ *Conn, req *protocol.Command) (*protocol.Command, error) {
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return protocol.NewResponse(req, protocol.Success, ""), nil
		}, PoolConfig{Workers: 1, QueueSize: 1})
	})
	c := startClient(t, ClientConfig{})
	addr := s.Addr().String()
	type res struct {
		resp *protocol.Command
		err  error
	}
	results := make(chan res, 3)
	cb := func(r *protocol.Command, err error) { results <- res{r, err} }
	ctx := ctxFor(t, 10*time.Second)
	// First occupies the worker, second the queue slot, third is rejected.
	if err := c.InvokeAsync(ctx, addr, protocol.NewRequest(codeSlow, nil, nil), cb); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := c.InvokeAsync(ctx, addr, protocol.NewRequest(codeSlow, nil, nil), cb); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, func() bool {
		// The queued request is in the queue once the read loop handed it over.
		for _, r := range *s.ep.table.Load() {
			if r.pool != nil && r.pool.queued() == 1 {
				return true
			}
		}
		return false
	})
	resp, err := c.InvokeSync(ctx, addr, protocol.NewRequest(codeSlow, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.ResponseCode() != protocol.SystemBusy ||
		resp.Remark != "[OVERLOAD]system busy, start flow control for a while" {
		t.Fatalf("got %d %q", resp.Code, resp.Remark)
	}
	if st := s.Stats(); st.Overloaded != 1 {
		t.Fatalf("stats %+v", st)
	}
	close(release)
	for range 2 {
		r := <-results
		if r.err != nil || r.resp.Code != 0 {
			t.Fatalf("queued request: %v %+v", r.err, r.resp)
		}
	}
}

// rawConn dials the server with a bare TCP connection.
func rawConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return nc
}

func writeFrame(t *testing.T, w io.Writer, c *protocol.Command) {
	t.Helper()
	b, err := protocol.AppendFrame(nil, c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
}

// TestOneway: flag bit 1 means no response (docs/protocol.md §2.5), even when
// the processor returns one.
func TestOneway(t *testing.T) {
	got := make(chan *protocol.Command, 1)
	const codeOneway = protocol.RequestCode(9400)
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.RegisterProcessor(codeOneway, func(_ context.Context, _ *Conn, req *protocol.Command) (*protocol.Command, error) {
			got <- req
			return protocol.NewResponse(req, protocol.Success, "must not be sent"), nil
		}, PoolConfig{Workers: 1})
	})
	// Through the client API.
	c := startClient(t, ClientConfig{})
	if err := c.InvokeOneway(ctxFor(t, 5*time.Second), s.Addr().String(), protocol.NewRequest(codeOneway, nil, nil)); err != nil {
		t.Fatal(err)
	}
	if req := <-got; !req.IsOneway() {
		t.Fatal("oneway flag lost")
	}
	// On the wire: a oneway request followed by a normal one; the first
	// frame back must answer the second. Unknown oneway codes get nothing
	// either.
	nc := rawConn(t, s.Addr().String())
	ow := protocol.NewRequest(codeOneway, nil, nil)
	ow.Flag = protocol.FlagOneway
	ow.Opaque = 1
	writeFrame(t, nc, ow)
	<-got
	unknown := protocol.NewRequest(777, nil, nil)
	unknown.Flag = protocol.FlagOneway
	unknown.Opaque = 2
	writeFrame(t, nc, unknown)
	writeFrame(t, nc, &protocol.Command{Code: int32(codeEcho), Opaque: 3})
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := protocol.NewFrameReader(nc, 0, 0).Next()
	if err != nil {
		t.Fatal(err)
	}
	if resp.Opaque != 3 {
		t.Fatalf("first response has opaque %d, want 3", resp.Opaque)
	}
}

// TestBadInputClosesOnlyThatConnection: docs/protocol.md §1.1 "Codec errors".
func TestBadInputClosesOnlyThatConnection(t *testing.T) {
	rec := &recorder{}
	s := startServer(t, ServerConfig{MaxFrameSize: 1 << 20}, func(s *Server) { s.AddConnListener(rec) })
	addr := s.Addr().String()
	c := startClient(t, ClientConfig{})
	if _, err := c.InvokeSync(ctxFor(t, 5*time.Second), addr, protocol.NewRequest(codeEcho, nil, nil)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		bytes []byte
		half  bool // close our write side after sending (truncated frame)
	}{
		{"garbage", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), false},
		{"claims 2 GiB", []byte{0x80, 0, 0, 0, 0, 0, 0, 0}, false},
		{"over the configured limit", binary.BigEndian.AppendUint32(nil, 1<<20), false},
		{"unknown serialize type", []byte{0, 0, 0, 6, 5, 0, 0, 2, '{', '}'}, false},
		{"bad JSON header", []byte{0, 0, 0, 6, 0, 0, 0, 2, '{', '{'}, false},
		{"header longer than frame", []byte{0, 0, 0, 6, 0, 0, 0, 9, '{', '}'}, false},
		{"truncated frame", []byte{0, 0, 0, 100, 0, 0, 0, 2, '{', '}'}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, exBefore := rec.counts()
			nc := rawConn(t, addr)
			if _, err := nc.Write(tc.bytes); err != nil {
				t.Fatal(err)
			}
			if tc.half {
				_ = nc.(*net.TCPConn).CloseWrite()
			}
			_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			n, err := io.Copy(io.Discard, nc)
			if err != nil || n != 0 {
				t.Fatalf("server did not just close: read %d bytes, err %v", n, err)
			}
			if !tc.half {
				testutil.Eventually(t, 5*time.Second, func() bool {
					_, _, _, ex := rec.counts()
					return ex > exBefore
				})
			}
			// The established client connection is unaffected, and a new one works.
			if resp, err := c.InvokeSync(ctxFor(t, 5*time.Second), addr, protocol.NewRequest(codeEcho, nil, []byte("ok"))); err != nil || string(resp.Body) != "ok" {
				t.Fatalf("existing connection broken: %v", err)
			}
			fresh := startClient(t, ClientConfig{})
			if _, err := fresh.InvokeSync(ctxFor(t, 5*time.Second), addr, protocol.NewRequest(codeEcho, nil, nil)); err != nil {
				t.Fatalf("new connection: %v", err)
			}
		})
	}
	if st := s.Stats(); st.CodecErrors != 6 {
		t.Errorf("CodecErrors = %d, want 6 (the truncated frame is an I/O error)", st.CodecErrors)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, err := range rec.exceptions {
		if !errors.Is(err, protocol.ErrBadFrame) && !errors.Is(err, protocol.ErrFrameTooLarge) &&
			!errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("exception not a codec error: %v", err)
		}
	}
}

func TestIdleClose(t *testing.T) {
	rec := &recorder{}
	s := startServer(t, ServerConfig{IdleTimeout: 200 * time.Millisecond}, func(s *Server) { s.AddConnListener(rec) })
	nc := rawConn(t, s.Addr().String())
	start := time.Now()
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := io.Copy(io.Discard, nc); err != nil || n != 0 {
		t.Fatalf("read %d, %v", n, err)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("closed after %v, before the idle timeout", d)
	}
	testutil.Eventually(t, 5*time.Second, func() bool {
		connects, closes, idles, _ := rec.counts()
		return connects == 1 && closes == 1 && idles == 1
	})
	if st := s.Stats(); st.IdleClosed != 1 {
		t.Fatalf("stats %+v", st)
	}
	// An active connection is not closed: keep calling for longer than the timeout.
	c := startClient(t, ClientConfig{})
	for range 8 {
		if _, err := c.InvokeSync(ctxFor(t, 5*time.Second), s.Addr().String(), protocol.NewRequest(codeEcho, nil, nil)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // pacing the traffic, not waiting for a condition
	}
	if _, closes, _, _ := rec.counts(); closes != 1 {
		t.Fatalf("active connection was closed (%d closes)", closes)
	}
}

// TestServerToClientInvoke: the broker calls back into clients on their own
// connection (docs/protocol.md §2.8), sync and oneway.
func TestServerToClientInvoke(t *testing.T) {
	conns := make(chan *Conn, 1)
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.RegisterProcessor(protocol.HeartBeat, func(_ context.Context, conn *Conn, req *protocol.Command) (*protocol.Command, error) {
			conns <- conn
			return protocol.NewResponse(req, protocol.Success, ""), nil
		}, PoolConfig{Workers: 1})
	})
	c := startClient(t, ClientConfig{})
	notified := make(chan string, 1)
	c.RegisterProcessor(protocol.GetConsumerRunningInfo, func(_ context.Context, _ *Conn, req *protocol.Command) (*protocol.Command, error) {
		resp := protocol.NewResponse(req, protocol.Success, "")
		resp.Body = []byte(`{"clientId":"` + req.Ext("clientId") + `"}`)
		return resp, nil
	})
	c.RegisterProcessor(protocol.NotifyConsumerIDsChanged, func(_ context.Context, _ *Conn, req *protocol.Command) (*protocol.Command, error) {
		notified <- req.Ext("consumerGroup")
		return nil, nil
	})
	if _, err := c.InvokeSync(ctxFor(t, 5*time.Second), s.Addr().String(), protocol.NewRequest(protocol.HeartBeat, nil, nil)); err != nil {
		t.Fatal(err)
	}
	conn := <-conns
	if ap := conn.RemoteAddrPort(); !ap.Addr().IsLoopback() || ap.String() != conn.RemoteAddr() {
		t.Fatalf("RemoteAddrPort %v, RemoteAddr %s", ap, conn.RemoteAddr())
	}
	resp, err := s.InvokeSync(ctxFor(t, 5*time.Second), conn,
		protocol.NewRequest(protocol.GetConsumerRunningInfo, map[string]string{"clientId": "c1"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != 0 || string(resp.Body) != `{"clientId":"c1"}` {
		t.Fatalf("%+v", resp)
	}
	if err := s.InvokeOneway(ctxFor(t, 5*time.Second), conn,
		protocol.NewRequest(protocol.NotifyConsumerIDsChanged, map[string]string{"consumerGroup": "g"}, nil)); err != nil {
		t.Fatal(err)
	}
	if g := <-notified; g != "g" {
		t.Fatal(g)
	}
	// A code the client does not handle: REQUEST_CODE_NOT_SUPPORTED, as the Java client does.
	resp, err = s.InvokeSync(ctxFor(t, 5*time.Second), conn, protocol.NewRequest(protocol.CheckTransactionState, nil, nil))
	if err != nil || resp.ResponseCode() != protocol.RequestCodeNotSupported {
		t.Fatal(err, resp)
	}
}

func TestServerCloseIdempotentAndStartTwice(t *testing.T) {
	s := NewServer(ServerConfig{ListenAddr: "127.0.0.1:0", Logger: testutil.Logger(t)})
	if s.Addr() != nil {
		t.Fatal("Addr before Start")
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err == nil {
		t.Fatal("second Start succeeded")
	}
	for range 3 {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Start(); err == nil {
		t.Fatal("Start after Close succeeded")
	}
	// Closing a never-started server returns too.
	if err := NewServer(ServerConfig{}).Close(); err != nil {
		t.Fatal(err)
	}
}

// TestManyGoroutines: sync and async calls from many goroutines, both
// encodings, bodies of many sizes, all matched to the right caller.
func TestManyGoroutines(t *testing.T) {
	s := startServer(t, ServerConfig{}, nil)
	c := startClient(t, ClientConfig{})
	addr := s.Addr().String()
	const goroutines, calls = 32, 100
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range calls {
				body := []byte(fmt.Sprintf("g%d-i%d-%s", g, i, strings.Repeat("x", (g*i)%3000)))
				req := protocol.NewRequest(codeEcho, nil, body)
				if g%2 == 1 {
					req.SerializeType = protocol.SerializeRocketMQ
				}
				if i%3 == 0 {
					done := make(chan error, 1)
					err := c.InvokeAsync(context.Background(), addr, req, func(resp *protocol.Command, err error) {
						if err == nil && !bytes.Equal(resp.Body, body) {
							err = fmt.Errorf("async body mismatch")
						}
						done <- err
					})
					if err == nil {
						err = <-done
					}
					if err != nil {
						errs <- err
						return
					}
					continue
				}
				resp, err := c.InvokeSync(context.Background(), addr, req)
				if err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(resp.Body, body) {
					errs <- fmt.Errorf("g%d i%d: body mismatch", g, i)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestLargeBodies(t *testing.T) {
	s := startServer(t, ServerConfig{}, nil)
	c := startClient(t, ClientConfig{})
	for _, n := range []int{0, 1, 64 << 10, 64<<10 + 1, 3 << 20} {
		body := bytes.Repeat([]byte{byte(n)}, n)
		resp, err := c.InvokeSync(ctxFor(t, 10*time.Second), s.Addr().String(), protocol.NewRequest(codeEcho, nil, body))
		if err != nil || !bytes.Equal(resp.Body, body) {
			t.Fatalf("n=%d: %v", n, err)
		}
	}
	// Over the frame limit: refused locally, connection still fine.
	small := startClient(t, ClientConfig{MaxFrameSize: 1 << 16})
	_, err := small.InvokeSync(ctxFor(t, 5*time.Second), s.Addr().String(), protocol.NewRequest(codeEcho, nil, make([]byte, 1<<16)))
	if !errors.Is(err, protocol.ErrFrameTooLarge) {
		t.Fatalf("got %v", err)
	}
	if _, err := small.InvokeSync(ctxFor(t, 5*time.Second), s.Addr().String(), protocol.NewRequest(codeEcho, nil, nil)); err != nil {
		t.Fatal(err)
	}
}
