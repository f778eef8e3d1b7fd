package remoting

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
)

// TestShutdownDrains: queued and running requests finish; new ones are
// refused with SYSTEM_BUSY, or GO_AWAY for requesters newer than V5_3_1
// (docs/protocol.md §2.7).
func TestShutdownDrains(t *testing.T) {
	s, entered, release := blockingServer(t, ServerConfig{})
	c := startClient(t, ClientConfig{})
	addr := s.Addr().String()
	results := make(chan error, 2)
	for range 2 {
		go func() {
			resp, err := c.InvokeSync(ctxFor(t, 10*time.Second), addr, protocol.NewRequest(codeBlock, nil, nil))
			if err == nil && resp.Remark != "released" {
				err = errors.New("unexpected response " + resp.Remark)
			}
			results <- err
		}()
	}
	<-entered
	<-entered
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(ctxFor(t, 10*time.Second)) }()
	for _, tc := range []struct {
		version int32
		code    protocol.ResponseCode
		remark  string
	}{
		{317, protocol.SystemBusy, "[REJECTREQUEST]system busy, start flow control for a while"},
		{479, protocol.GoAway, "please go away"},
	} {
		var resp *protocol.Command
		// Shutdown flips to draining asynchronously; retry until refused.
		for i := 0; i < 500; i++ {
			req := protocol.NewRequest(codeEcho, nil, nil)
			req.Version = tc.version
			var err error
			if resp, err = c.InvokeSync(ctxFor(t, 5*time.Second), addr, req); err != nil {
				t.Fatal(err)
			}
			if resp.Code != 0 {
				break
			}
			time.Sleep(2 * time.Millisecond) // pacing the retries
		}
		if resp.ResponseCode() != tc.code || resp.Remark != tc.remark {
			t.Fatalf("version %d: got %d %q", tc.version, resp.Code, resp.Remark)
		}
	}
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v with requests in flight", err)
	default:
	}
	close(release)
	for range 2 {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestShutdownDeadline(t *testing.T) {
	s, entered, release := blockingServer(t, ServerConfig{})
	defer close(release)
	c := startClient(t, ClientConfig{})
	go func() {
		_, _ = c.InvokeSync(ctxFor(t, 10*time.Second), s.Addr().String(), protocol.NewRequest(codeBlock, nil, nil))
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	// Close already ran: the processor's ctx was cancelled and it returned.
	if st := s.Stats(); st.Conns != 0 {
		t.Fatalf("stats after shutdown %+v", st)
	}
}
