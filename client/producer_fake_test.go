package client

import (
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
	"github.com/apogeemq/apogee/internal/testutil/fakebroker"
)

// newFakeBroker starts the shared fake broker (internal/testutil/fakebroker):
// a loopback name server and broker that records what producers send and
// answers as a test tells it to.
func newFakeBroker(t testing.TB, name string) *fakebroker.Broker { return fakebroker.New(t, name) }

// sendHeader decodes a send request's header (either spelling).
func sendHeader(t *testing.T, req *protocol.Command) protocol.SendMessageRequestHeader {
	t.Helper()
	var h protocol.SendMessageRequestHeader
	v2 := req.Code != int32(protocol.SendMessage)
	if err := protocol.DecodeHeader(req.ExtFields, &h, v2); err != nil {
		t.Fatal(err)
	}
	return h
}

func startProducer(t *testing.T, ns string, opts ...ProducerOpt) *Producer {
	t.Helper()
	all := append([]ProducerOpt{WithNameServers(ns), WithLogger(testutil.Logger(t)), WithSendTimeout(3 * time.Second)}, opts...)
	p, err := NewProducer("pg", all...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}
