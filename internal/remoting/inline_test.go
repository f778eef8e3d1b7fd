package remoting

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
)

const (
	codeInlineEcho  = protocol.RequestCode(9101)
	codeInlinePanic = protocol.RequestCode(9102)
)

func startInlineServer(t *testing.T) *Server {
	t.Helper()
	return startServer(t, ServerConfig{}, func(s *Server) {
		s.RegisterProcessor(codeInlineEcho, echo, PoolConfig{Inline: true})
		s.RegisterProcessor(codeInlinePanic, func(context.Context, *Conn, *protocol.Command) (*protocol.Command, error) {
			panic("boom")
		}, PoolConfig{Inline: true})
	})
}

// TestInlineProcessorBurst: requests written in one burst to an inline
// processor are all answered, in order, although the read loop queues the
// answers without waking the write loop until its input runs dry.
func TestInlineProcessorBurst(t *testing.T) {
	s := startInlineServer(t)
	nc := rawConn(t, s.Addr().String())
	const n = 200
	var burst []byte
	for i := range n {
		req := protocol.NewRequest(codeInlineEcho, nil, []byte(fmt.Sprintf("req-%d-%s", i, strings.Repeat("y", i*37))))
		req.Opaque = int32(i + 1)
		b, err := protocol.AppendFrame(nil, req)
		if err != nil {
			t.Fatal(err)
		}
		burst = append(burst, b...)
	}
	if _, err := nc.Write(burst); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	fr := protocol.NewFrameReader(nc, 0, 0)
	for i := range n {
		resp, err := fr.Next()
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		want := fmt.Sprintf("req-%d-%s", i, strings.Repeat("y", i*37))
		if !resp.IsResponse() || resp.Opaque != int32(i+1) || string(resp.Body) != want {
			t.Fatalf("response %d: opaque %d, %d body bytes", i, resp.Opaque, len(resp.Body))
		}
	}
	if st := s.Stats(); st.Requests != n {
		t.Fatalf("Requests = %d, want %d", st.Requests, n)
	}
}

// TestInlineProcessorPanic: a panic on the read loop is answered
// SYSTEM_ERROR and the connection keeps working.
func TestInlineProcessorPanic(t *testing.T) {
	s := startInlineServer(t)
	c := startClient(t, ClientConfig{})
	addr := s.Addr().String()
	resp, err := c.InvokeSync(ctxFor(t, 5*time.Second), addr, protocol.NewRequest(codeInlinePanic, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.ResponseCode() != protocol.SystemError || !strings.Contains(resp.Remark, "boom") {
		t.Fatalf("got %d %q", resp.Code, resp.Remark)
	}
	resp, err = c.InvokeSync(ctxFor(t, 5*time.Second), addr, protocol.NewRequest(codeInlineEcho, nil, []byte("after")))
	if err != nil || string(resp.Body) != "after" {
		t.Fatalf("connection broken after panic: %v", err)
	}
	if st := s.Stats(); st.ProcessorPanic != 1 {
		t.Fatalf("ProcessorPanic = %d", st.ProcessorPanic)
	}
}

// TestInPlaceAndQueuedWritesMix: lone and concurrent sync calls (written in
// place or by the write loop), async calls, inline and pooled processors,
// bodies below and above the 64 KiB arena limit and above the socket
// buffer (partial in-place writes): every answer matches its request.
func TestInPlaceAndQueuedWritesMix(t *testing.T) {
	s := startInlineServer(t)
	c := startClient(t, ClientConfig{})
	addr := s.Addr().String()
	sizes := []int{0, 100, 1024, 64 << 10, 64<<10 + 1, 700 << 10}
	check := func(g, i int) error {
		code := codeEcho
		if (g+i)%2 == 0 {
			code = codeInlineEcho
		}
		size := sizes[(g*7+i)%len(sizes)]
		body := bytes.Repeat([]byte{byte(g), byte(i)}, size/2)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if i%4 == 3 {
			done := make(chan error, 1)
			err := c.InvokeAsync(ctx, addr, protocol.NewRequest(code, nil, body), func(resp *protocol.Command, err error) {
				if err == nil && !bytes.Equal(resp.Body, body) {
					err = errors.New("async body mismatch")
				}
				done <- err
			})
			if err == nil {
				err = <-done
			}
			return err
		}
		resp, err := c.InvokeSync(ctx, addr, protocol.NewRequest(code, nil, body))
		if err == nil && !bytes.Equal(resp.Body, body) {
			err = fmt.Errorf("code %d size %d: body mismatch", code, size)
		}
		return err
	}
	// Alone first (in-place writes on both sides), then concurrently.
	for i := range 12 {
		if err := check(0, i); err != nil {
			t.Fatalf("lone call %d: %v", i, err)
		}
	}
	const goroutines, calls = 8, 30
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				if err := check(g+1, i); err != nil {
					errs <- fmt.Errorf("g%d call %d: %w", g, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// startHook is a TimedRPCHook that records the start each request got.
type startHook struct {
	mu     sync.Mutex
	starts []time.Time
}

func (h *startHook) Before(*Conn, *protocol.Command) error             { return nil }
func (h *startHook) After(*Conn, *protocol.Command, *protocol.Command) {}
func (h *startHook) AfterTimed(_ *Conn, _, _ *protocol.Command, start time.Time) {
	h.mu.Lock()
	h.starts = append(h.starts, start)
	h.mu.Unlock()
}

// TestInlineRequestStart: an inline processor sees, as Conn.RequestStart,
// the start its TimedRPCHook gets (one clock read for both), and a zero
// time when no timed hook is installed (remoting reads no clock).
func TestInlineRequestStart(t *testing.T) {
	const code = protocol.RequestCode(9103)
	for _, timed := range []bool{false, true} {
		t.Run(fmt.Sprint("timed=", timed), func(t *testing.T) {
			var seen []time.Time // written by the read loop, read after the calls returned
			var mu sync.Mutex
			hook := &startHook{}
			s := startServer(t, ServerConfig{}, func(s *Server) {
				if timed {
					s.AddHook(hook)
				}
				s.RegisterProcessor(code, func(_ context.Context, c *Conn, req *protocol.Command) (*protocol.Command, error) {
					mu.Lock()
					seen = append(seen, c.RequestStart())
					mu.Unlock()
					return protocol.NewResponse(req, protocol.Success, ""), nil
				}, PoolConfig{Inline: true})
			})
			c := startClient(t, ClientConfig{})
			before := time.Now()
			for range 3 {
				if _, err := c.InvokeSync(ctxFor(t, 5*time.Second), s.Addr().String(), protocol.NewRequest(code, nil, nil)); err != nil {
					t.Fatal(err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			hook.mu.Lock()
			defer hook.mu.Unlock()
			if len(seen) != 3 {
				t.Fatalf("processor ran %d times, want 3", len(seen))
			}
			for i, st := range seen {
				if !timed {
					if !st.IsZero() {
						t.Fatalf("request %d: RequestStart %v without a timed hook, want zero", i, st)
					}
					continue
				}
				if st.Before(before) || st.After(time.Now()) {
					t.Fatalf("request %d: RequestStart %v outside the calls (from %v)", i, st, before)
				}
				if i > 0 && st.Before(seen[i-1]) {
					t.Fatalf("request %d: RequestStart %v before the previous one's %v", i, st, seen[i-1])
				}
			}
			if timed {
				if len(hook.starts) != 3 {
					t.Fatalf("hook timed %d requests, want 3", len(hook.starts))
				}
				for i := range seen {
					if !hook.starts[i].Equal(seen[i]) {
						t.Fatalf("request %d: hook start %v, processor saw %v", i, hook.starts[i], seen[i])
					}
				}
			}
		})
	}
}
