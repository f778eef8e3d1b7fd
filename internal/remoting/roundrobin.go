package remoting

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
)

// RoundRobin spreads requests over a fixed list of equivalent peers (the
// name servers) and fails over between them. It is the one name-server
// invocation path of the SDK's client instance and of client/admin. The
// zero value is ready to use and safe for concurrent use.
type RoundRobin struct {
	next atomic.Uint32 // start index of the next request, mod len(addrs)
}

// errNoAddress: InvokeSync was given no address.
var errNoAddress = errors.New("remoting: no address to send to")

// InvokeSync sends req through c to one of addrs: the first attempt goes
// to the address after the one the previous request started with, and
// each failed attempt (a network error or timeout, never an answer with a
// non-SUCCESS code) moves on to the next address, until every address was
// tried once or ctx ends. Each attempt is bounded by attemptTimeout (when
// positive) and sends its own copy of req, so each gets its own opaque.
//
// It returns the answer and the address that gave it; on failure, the
// last attempt's error and the address it went to. The caller checks the
// answer's code.
func (r *RoundRobin) InvokeSync(ctx context.Context, c *Client, addrs []string, attemptTimeout time.Duration, req *protocol.Command) (*protocol.Command, string, error) {
	if len(addrs) == 0 {
		return nil, "", errNoAddress
	}
	start := int(r.next.Add(1))
	var (
		lastErr  error
		lastAddr string
	)
	for i := range addrs {
		addr := addrs[(start+i)%len(addrs)]
		actx, cancel := ctx, context.CancelFunc(func() {})
		if attemptTimeout > 0 {
			actx, cancel = context.WithTimeout(ctx, attemptTimeout)
		}
		attempt := *req
		resp, err := c.InvokeSync(actx, addr, &attempt)
		cancel()
		if err == nil {
			return resp, addr, nil
		}
		lastErr, lastAddr = err, addr
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastAddr, lastErr
}
