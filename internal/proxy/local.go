package proxy

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"google.golang.org/grpc/peer"

	"github.com/apogeemq/apogee/internal/protocol"
)

// LocalBroker is the broker a local-mode endpoint runs inside, reached
// in-process on the hot path instead of over a loopback remoting
// connection. *broker.Broker implements it; this package sees nothing else
// of the broker. Every other broker call still goes over remoting.
type LocalBroker interface {
	// SendLocal stores a SEND_MESSAGE_V2 as the broker's send path does for
	// a remoting connection and calls done exactly once with the response,
	// possibly on another goroutine; done must not block. done may never
	// run if the broker shuts down meanwhile, so callers bound their wait.
	SendLocal(h *protocol.SendMessageRequestHeader, body []byte, bornHost netip.AddrPort, done func(*protocol.Command))
}

// sendLocal hands one send to the local broker and waits for its answer
// or ctx.
func sendLocal(ctx context.Context, lb LocalBroker, h *protocol.SendMessageRequestHeader, body []byte, bornHost netip.AddrPort) (*protocol.Command, error) {
	ch := make(chan *protocol.Command, 1)
	lb.SendLocal(h, body, bornHost, func(resp *protocol.Command) { ch <- resp })
	select {
	case resp := <-ch:
		return resp, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("proxy: local send to %s: %w", h.Topic, ctx.Err())
	}
}

// peerAddr is the gRPC client's address (the born host of what it sends);
// zero when unknown.
func peerAddr(ctx context.Context) netip.AddrPort {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return netip.AddrPort{}
	}
	if ta, ok := p.Addr.(*net.TCPAddr); ok {
		ap := ta.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	ap, _ := netip.ParseAddrPort(p.Addr.String())
	return ap
}
