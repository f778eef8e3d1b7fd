package remoting

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

// clientConn returns the client's open connection to addr.
func clientConnTo(t *testing.T, c *Client, addr string) *Conn {
	t.Helper()
	c.mu.RLock()
	defer c.mu.RUnlock()
	cc := c.conns[addr]
	if cc == nil || cc.conn == nil {
		t.Fatalf("no connection to %s", addr)
	}
	return cc.conn
}

func leadsOf(conn *Conn) uint64 {
	conn.fmu.Lock()
	defer conn.fmu.Unlock()
	return conn.leads
}

// warmUp makes calls until nobody reads the connection right after one
// (the read loop gives the role away after completing a sync response
// with nothing else in flight, and takes it back after a quiet tick), so
// that the next sync call leads. Tests that rely on it lengthen the tick.
func warmUp(t *testing.T, c *Client, addr string) *Conn {
	t.Helper()
	for range 100 {
		if _, err := c.InvokeSync(ctxFor(t, 5*time.Second), addr, protocol.NewRequest(codeEcho, nil, nil)); err != nil {
			t.Fatal(err)
		}
		conn := clientConnTo(t, c, addr)
		conn.fmu.Lock()
		free := conn.reader == readerFree
		conn.fmu.Unlock()
		if free {
			return conn
		}
	}
	t.Fatal("the reading role never became free")
	return nil
}

// slowTickClient is a client whose read loop ticks every 200 ms, so that
// a test's next call surely finds the role free after warmUp.
func slowTickClient(t *testing.T) *Client {
	t.Helper()
	c := NewClient(ClientConfig{Logger: testutil.Logger(t)})
	c.ep.readerTick = 200 * time.Millisecond
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestLeaderReadsOwnResponse: back-to-back sync calls read their own
// responses (small and large bodies alike), and frames over the read
// buffer are left to the read loop without losing a byte.
func TestLeaderReadsOwnResponse(t *testing.T) {
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.RegisterProcessor(codeEchoInline, echo, PoolConfig{Inline: true})
	})
	c := startClient(t, ClientConfig{})
	addr := s.Addr().String()
	conn := warmUp(t, c, addr)
	sizes := []int{0, 1, 1024, readBufSize - 64, readBufSize + 1, 1 << 20, 7}
	for i := range 200 {
		n := sizes[i%len(sizes)]
		body := bytes.Repeat([]byte{byte(i)}, n)
		code := codeEcho
		if i%2 == 1 {
			code = codeEchoInline
		}
		resp, err := c.InvokeSync(ctxFor(t, 10*time.Second), addr, protocol.NewRequest(code, map[string]string{"i": string(rune('a' + i%26))}, body))
		if err != nil {
			t.Fatalf("call %d (%d bytes): %v", i, n, err)
		}
		if !bytes.Equal(resp.Body, body) || resp.Ext("i") != string(rune('a'+i%26)) {
			t.Fatalf("call %d (%d bytes): wrong response", i, n)
		}
	}
	// Most calls led (the read loop takes the role back after a large
	// frame or a quiet tick, so not all).
	if l := leadsOf(conn); l < 50 {
		t.Fatalf("only %d of 200 calls read their own response", l)
	}
}

// TestLeaderSlowResponseHonoursCtx: a leader whose response does not come
// hands the role back after a tick and then fails on its ctx, timed out or
// cancelled; the connection keeps working.
func TestLeaderSlowResponseHonoursCtx(t *testing.T) {
	s, entered, release := blockingServer(t, ServerConfig{})
	defer close(release)
	c := slowTickClient(t)
	addr := s.Addr().String()
	conn := warmUp(t, c, addr)
	before := leadsOf(conn)

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.InvokeSync(ctx, addr, protocol.NewRequest(codeBlock, nil, nil))
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("timeout took %v", d)
	}
	if leadsOf(conn) != before+1 {
		t.Fatal("the blocked call did not lead")
	}
	<-entered

	// Lead again, then cancel.
	warmUp(t, c, addr)
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() { <-entered; cancel2() }()
	_, err = c.InvokeSync(ctx2, addr, protocol.NewRequest(codeBlock, nil, nil))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	for range 3 {
		resp, err := c.InvokeSync(ctxFor(t, 5*time.Second), addr, protocol.NewRequest(codeEcho, nil, []byte("ok")))
		if err != nil || string(resp.Body) != "ok" {
			t.Fatalf("after a slow leader: %v", err)
		}
	}
}

// TestLeaderConnectionDrop: a leader waiting on a connection that dies
// fails at once with ErrConnClosed, and the next call redials.
func TestLeaderConnectionDrop(t *testing.T) {
	s, entered, release := blockingServer(t, ServerConfig{})
	defer close(release)
	c := slowTickClient(t)
	addr := s.Addr().String()
	conn := warmUp(t, c, addr)
	before := leadsOf(conn)
	errc := make(chan error, 1)
	go func() {
		_, err := c.InvokeSync(ctxFor(t, 30*time.Second), addr, protocol.NewRequest(codeBlock, nil, nil))
		errc <- err
	}()
	<-entered
	for _, sc := range s.Conns() {
		_ = sc.Close()
	}
	select {
	case err := <-errc:
		if !errors.Is(err, ErrConnClosed) {
			t.Fatalf("got %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("leader hung on a dead connection")
	}
	if leadsOf(conn) != before+1 {
		t.Fatal("the blocked call did not lead")
	}
	if _, err := c.InvokeSync(ctxFor(t, 5*time.Second), addr, protocol.NewRequest(codeEcho, nil, nil)); err != nil {
		t.Fatal(err)
	}
}

// TestLeaderServesPeerRequests: requests the server sends are served
// whether they arrive while nobody reads (the read loop takes the role
// back) or in front of a leader's response (the leader dispatches them).
func TestLeaderServesPeerRequests(t *testing.T) {
	const codeNotifyFirst = protocol.RequestCode(9601)
	s := startServer(t, ServerConfig{}, func(s *Server) {
		// Sends a oneway request to the client before answering, so that
		// it reaches the client in front of the response.
		s.RegisterProcessor(codeNotifyFirst, func(ctx context.Context, conn *Conn, req *protocol.Command) (*protocol.Command, error) {
			if err := s.InvokeOneway(ctx, conn, protocol.NewRequest(protocol.NotifyConsumerIDsChanged, nil, req.Body)); err != nil {
				return nil, err
			}
			return protocol.NewResponse(req, protocol.Success, ""), nil
		}, PoolConfig{Inline: true})
	})
	c := slowTickClient(t)
	notified := make(chan string, 100)
	c.RegisterProcessor(protocol.NotifyConsumerIDsChanged, func(_ context.Context, _ *Conn, req *protocol.Command) (*protocol.Command, error) {
		notified <- string(req.Body)
		return nil, nil
	})
	c.RegisterProcessor(protocol.GetConsumerRunningInfo, func(_ context.Context, _ *Conn, req *protocol.Command) (*protocol.Command, error) {
		resp := protocol.NewResponse(req, protocol.Success, "")
		resp.Body = req.Body
		return resp, nil
	})
	addr := s.Addr().String()
	conn := warmUp(t, c, addr)
	before := leadsOf(conn)
	for i := range 20 {
		want := string(rune('A' + i))
		if _, err := c.InvokeSync(ctxFor(t, 5*time.Second), addr, protocol.NewRequest(codeNotifyFirst, nil, []byte(want))); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-notified:
			if got != want {
				t.Fatalf("notified %q, want %q", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("server request never served")
		}
	}
	if leadsOf(conn) == before {
		t.Fatal("no call led")
	}
	// Right after a call (nobody reads until the read loop's tick): a sync
	// request from the server.
	sconns := s.Conns()
	if len(sconns) != 1 {
		t.Fatalf("%d server conns", len(sconns))
	}
	for i := range 2 {
		if _, err := c.InvokeSync(ctxFor(t, 5*time.Second), addr, protocol.NewRequest(codeEcho, nil, nil)); err != nil {
			t.Fatal(err)
		}
		body := []byte{byte(i)}
		start := time.Now()
		resp, err := s.InvokeSync(ctxFor(t, 5*time.Second), sconns[0], protocol.NewRequest(protocol.GetConsumerRunningInfo, nil, body))
		if err != nil || !bytes.Equal(resp.Body, body) {
			t.Fatalf("server to client: %v", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("server request took %v", d)
		}
	}
}

// TestLeaderMixedLoad: sync and async calls from many goroutines on one
// connection, leaders coming and going, every call answered correctly.
func TestLeaderMixedLoad(t *testing.T) {
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.RegisterProcessor(codeEchoInline, echo, PoolConfig{Inline: true})
	})
	c := startClient(t, ClientConfig{})
	addr := s.Addr().String()
	warmUp(t, c, addr)
	ctx := ctxFor(t, 30*time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				body := []byte{byte(g), byte(i), byte(i >> 8)}
				code := codeEcho
				if i%3 == 0 {
					code = codeEchoInline
				}
				if g%3 == 2 { // async
					done := make(chan error, 1)
					err := c.InvokeAsync(ctx, addr, protocol.NewRequest(code, nil, body), func(resp *protocol.Command, err error) {
						if err == nil && !bytes.Equal(resp.Body, body) {
							err = errors.New("async: wrong body")
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
				resp, err := c.InvokeSync(ctx, addr, protocol.NewRequest(code, nil, body))
				if err == nil && !bytes.Equal(resp.Body, body) {
					err = errors.New("sync: wrong body")
				}
				if err != nil {
					errs <- err
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
	testutil.Eventually(t, 5*time.Second, func() bool { return c.Stats().Conns == 1 })
}

// TestLeaderClientClose: closing the client while a leader waits on the
// socket fails the call at once and Close returns (goleak checks that
// nothing is left running).
func TestLeaderClientClose(t *testing.T) {
	s, entered, release := blockingServer(t, ServerConfig{})
	defer close(release)
	c := slowTickClient(t)
	addr := s.Addr().String()
	conn := warmUp(t, c, addr)
	before := leadsOf(conn)
	errc := make(chan error, 1)
	go func() {
		_, err := c.InvokeSync(ctxFor(t, 30*time.Second), addr, protocol.NewRequest(codeBlock, nil, nil))
		errc <- err
	}()
	<-entered
	if leadsOf(conn) != before+1 {
		t.Fatal("the blocked call did not lead")
	}
	closed := make(chan struct{})
	go func() { _ = c.Close(); close(closed) }()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrConnClosed) && !errors.Is(err, ErrClosed) {
			t.Fatalf("got %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("leader hung after Close")
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung")
	}
}
