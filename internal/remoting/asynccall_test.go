package remoting

import (
	"fmt"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

// chain makes n async calls one after another with one AsyncCall, each
// started from the previous call's callback, as the SDK's retries are.
type chain struct {
	t    *testing.T
	c    *Client
	addr string
	call AsyncCall
	n    int
	got  []string
	done chan error
}

func (ch *chain) next() error {
	req := protocol.NewRequest(codeEcho, nil, fmt.Appendf(nil, "call %d", len(ch.got)))
	return ch.c.InvokeAsyncCall(ctxFor(ch.t, 10*time.Second), ch.addr, req, &ch.call, ch)
}

func (ch *chain) OnResponse(resp *protocol.Command, err error) {
	if err != nil {
		ch.done <- err
		return
	}
	ch.got = append(ch.got, string(resp.Body))
	if len(ch.got) == ch.n {
		ch.done <- nil
		return
	}
	if err := ch.next(); err != nil {
		ch.done <- err
	}
}

// TestInvokeAsyncCallReused: one AsyncCall carries a chain of calls, each
// started from the previous one's callback; every call gets its own answer,
// in order, and no permit is left held.
func TestInvokeAsyncCallReused(t *testing.T) {
	s := startServer(t, ServerConfig{}, nil)
	c := startClient(t, ClientConfig{})
	ch := &chain{t: t, c: c, addr: s.Addr().String(), n: 50, done: make(chan error, 1)}
	if err := ch.next(); err != nil {
		t.Fatal(err)
	}
	if err := <-ch.done; err != nil {
		t.Fatal(err)
	}
	for i, g := range ch.got {
		if want := fmt.Sprintf("call %d", i); g != want {
			t.Fatalf("answer %d = %q, want %q", i, g, want)
		}
	}
	// The last callback's permit goes back right after it returned.
	testutil.Eventually(t, 5*time.Second, func() bool { return c.asyncSem.inUse() == 0 }, "permits still held")
}
