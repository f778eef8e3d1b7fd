package remoting

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
)

// codeBusy answers SYSTEM_BUSY (a code, not a network error).
const codeBusy = protocol.RequestCode(9010)

func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now
	return addr
}

func TestRoundRobinInvokeSync(t *testing.T) {
	live := startServer(t, ServerConfig{}, func(s *Server) {
		s.RegisterProcessor(codeBusy, func(_ context.Context, _ *Conn, req *protocol.Command) (*protocol.Command, error) {
			return protocol.NewResponse(req, protocol.SystemBusy, "busy"), nil
		}, PoolConfig{})
	}).Addr().String()
	dead := deadAddr(t)
	c := startClient(t, ClientConfig{DialTimeout: time.Second})

	tests := []struct {
		name     string
		addrs    []string
		code     protocol.RequestCode
		wantAddr string
		wantCode protocol.ResponseCode
		wantErr  bool
	}{
		{"one live address", []string{live}, codeEcho, live, protocol.Success, false},
		{"fails over from a dead address", []string{dead, live}, codeEcho, live, protocol.Success, false},
		{"fails over in either order", []string{live, dead}, codeEcho, live, protocol.Success, false},
		{"an error answer is not failed over", []string{live, live}, codeBusy, live, protocol.SystemBusy, false},
		{"every address dead", []string{dead, dead}, codeEcho, dead, 0, true},
		{"no address", nil, codeEcho, "", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var rr RoundRobin
			for range 4 { // every start index
				req := protocol.NewRequest(tc.code, nil, nil)
				resp, addr, err := rr.InvokeSync(ctxFor(t, 10*time.Second), c, tc.addrs, 5*time.Second, req)
				if (err != nil) != tc.wantErr {
					t.Fatalf("err = %v, want error %v", err, tc.wantErr)
				}
				if addr != tc.wantAddr {
					t.Fatalf("addr = %q, want %q", addr, tc.wantAddr)
				}
				if err == nil && protocol.ResponseCode(resp.Code) != tc.wantCode {
					t.Fatalf("code = %d, want %d", resp.Code, tc.wantCode)
				}
			}
		})
	}
}

// TestRoundRobinSpreads: successive requests start at successive
// addresses.
func TestRoundRobinSpreads(t *testing.T) {
	a := startServer(t, ServerConfig{}, nil).Addr().String()
	b := startServer(t, ServerConfig{}, nil).Addr().String()
	c := startClient(t, ClientConfig{})
	var rr RoundRobin
	seen := map[string]int{}
	for range 6 {
		_, addr, err := rr.InvokeSync(ctxFor(t, 10*time.Second), c, []string{a, b}, 5*time.Second, protocol.NewRequest(codeEcho, nil, nil))
		if err != nil {
			t.Fatal(err)
		}
		seen[addr]++
	}
	if seen[a] != 3 || seen[b] != 3 {
		t.Fatalf("requests per address = %v, want 3 each", seen)
	}
}
