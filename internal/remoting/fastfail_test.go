package remoting

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
)

// TestPoolMaxWait: a pool with MaxWait answers a request that waited at
// least that long [TIMEOUT_CLEAN_QUEUE] without running the processor;
// MaxWait is read per request, and 0 turns the check off.
func TestPoolMaxWait(t *testing.T) {
	const code = protocol.RequestCode(9301)
	var limit atomic.Int64 // ns
	var ran atomic.Int32
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.RegisterProcessor(code, func(_ context.Context, _ *Conn, req *protocol.Command) (*protocol.Command, error) {
			ran.Add(1)
			return protocol.NewResponse(req, protocol.Success, ""), nil
		}, PoolConfig{Workers: 1, MaxWait: func() time.Duration { return time.Duration(limit.Load()) }})
	})
	c := startClient(t, ClientConfig{})
	call := func() *protocol.Command {
		t.Helper()
		resp, err := c.InvokeSync(ctxFor(t, 5*time.Second), s.Addr().String(), protocol.NewRequest(code, nil, nil))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	tests := []struct {
		name  string
		limit time.Duration
		want  protocol.ResponseCode
	}{
		{"off", 0, protocol.Success},
		{"every wait is too long", time.Nanosecond, protocol.SystemBusy},
		{"generous", time.Hour, protocol.Success},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			limit.Store(int64(tc.limit))
			before := ran.Load()
			resp := call()
			if resp.ResponseCode() != tc.want {
				t.Fatalf("code %d %q, want %s", resp.Code, resp.Remark, tc.want)
			}
			if tc.want == protocol.SystemBusy {
				if !strings.HasPrefix(resp.Remark, "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: ") ||
					!strings.HasSuffix(resp.Remark, "ms, size of queue: 0") {
					t.Fatalf("remark %q", resp.Remark)
				}
				if ran.Load() != before {
					t.Fatal("the processor ran for an expired request")
				}
			}
		})
	}
	if st := s.Stats(); st.QueueTimeouts != 1 {
		t.Fatalf("QueueTimeouts = %d, want 1", st.QueueTimeouts)
	}
}
