package remoting

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

var long = flag.Bool("long", false, "run soak variants for longer")

const codeChaos = protocol.RequestCode(9900)

// chaosProcessor echoes, but sometimes sleeps past the caller's deadline,
// fails, panics, answers later from another goroutine, or never answers.
func chaosProcessor(wg *sync.WaitGroup) Processor {
	return func(ctx context.Context, conn *Conn, req *protocol.Command) (*protocol.Command, error) {
		resp := protocol.NewResponse(req, protocol.Success, "")
		resp.Body = req.Body
		switch rand.IntN(20) {
		case 0:
			select {
			case <-time.After(time.Duration(rand.IntN(150)) * time.Millisecond):
			case <-ctx.Done():
			}
		case 1:
			return nil, protocol.Errorf(protocol.SystemError, "chaos")
		case 2:
			panic("chaos")
		case 3:
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = conn.WriteResponse(resp)
			}()
			return nil, nil
		case 4:
			return nil, nil // never answered: the caller times out
		}
		return resp, nil
	}
}

// TestChaos: many callers, mixed call kinds, a flaky processor, a small
// pool (SYSTEM_BUSY happens) and connections killed at random. Every call
// must end (success with the right body, or an error) within its deadline
// plus slack; nothing may hang or leak (goleak checks at the end).
func TestChaos(t *testing.T) {
	duration := 2 * time.Second
	if *long {
		duration = 60 * time.Second
	}
	var deferred sync.WaitGroup
	defer deferred.Wait()
	s := startServer(t, ServerConfig{Logger: testutil.DiscardLogger()}, func(s *Server) {
		s.RegisterProcessor(codeChaos, chaosProcessor(&deferred), PoolConfig{Workers: 2, QueueSize: 4})
	})
	addr := s.Addr().String()
	const clients, goroutines = 3, 8
	var ok, failed, busy atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, clients*goroutines)
	for range clients {
		c := startClient(t, ClientConfig{Logger: testutil.DiscardLogger()})
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if err := chaosCall(c, addr, g, i, &ok, &failed, &busy); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	// Kill random server-side connections now and then.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(50+rand.IntN(200)) * time.Millisecond):
			}
			if conns := s.Conns(); len(conns) > 0 {
				_ = conns[rand.IntN(len(conns))].Close()
			}
		}
	}()
	time.Sleep(duration) // the test's running time, not a wait for a condition
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("ok=%d failed=%d busy=%d", ok.Load(), failed.Load(), busy.Load())
	if ok.Load() == 0 || failed.Load() == 0 {
		t.Fatalf("chaos did not exercise both outcomes: ok=%d failed=%d", ok.Load(), failed.Load())
	}
}

// chaosCall makes one call and checks it ended in time and correctly.
func chaosCall(c *Client, addr string, g, i int, ok, failed, busy *atomic.Int64) error {
	body := []byte(fmt.Sprintf("g%d-%d-%s", g, i, bytes.Repeat([]byte("z"), rand.IntN(2000))))
	timeout := time.Duration(20+rand.IntN(200)) * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req := protocol.NewRequest(codeChaos, nil, body)
	if rand.IntN(2) == 0 {
		req.SerializeType = protocol.SerializeRocketMQ
	}
	start := time.Now()
	var resp *protocol.Command
	var err error
	switch rand.IntN(4) {
	case 0, 1:
		resp, err = c.InvokeSync(ctx, addr, req)
	case 2:
		done := make(chan result, 1)
		err = c.InvokeAsync(ctx, addr, req, func(r *protocol.Command, e error) { done <- result{r, e} })
		if err == nil {
			select {
			case r := <-done:
				resp, err = r.resp, r.err
			case <-time.After(timeout + 5*time.Second):
				return fmt.Errorf("async callback never ran (opaque %d)", req.Opaque)
			}
		}
	case 3:
		if err = c.InvokeOneway(ctx, addr, req); err == nil {
			ok.Add(1)
			return nil
		}
	}
	if took := time.Since(start); took > timeout+5*time.Second {
		return fmt.Errorf("call took %v with a %v deadline", took, timeout)
	}
	switch {
	case err != nil:
		if !errors.Is(err, ErrTimeout) && !errors.Is(err, ErrConnClosed) && !errors.Is(err, ErrTooManyRequests) &&
			!errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("unexpected error: %w", err)
		}
		failed.Add(1)
	case resp.ResponseCode() == protocol.SystemBusy:
		busy.Add(1)
	case resp.ResponseCode() == protocol.SystemError:
		failed.Add(1)
	case resp.Code != 0 || !bytes.Equal(resp.Body, body):
		return fmt.Errorf("wrong response: code %d, body %.20q want %.20q", resp.Code, resp.Body, body)
	default:
		ok.Add(1)
	}
	return nil
}
