package remoting

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

// memNet is an in-memory network of net.Pipe connections, injected through
// ServerConfig.Listen and ClientConfig.Dial.
type memNet struct {
	mu        sync.Mutex
	listeners map[string]*memListener
}

type memListener struct {
	addr   memAddr
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

type memAddr string

func (a memAddr) Network() string { return "mem" }
func (a memAddr) String() string  { return string(a) }

func (n *memNet) listen(_, addr string) (net.Listener, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.listeners == nil {
		n.listeners = map[string]*memListener{}
	}
	l := &memListener{addr: memAddr(addr), conns: make(chan net.Conn), closed: make(chan struct{})}
	n.listeners[addr] = l
	return l, nil
}

func (n *memNet) dial(ctx context.Context, _, addr string) (net.Conn, error) {
	n.mu.Lock()
	l := n.listeners[addr]
	n.mu.Unlock()
	if l == nil {
		return nil, errors.New("memnet: connection refused")
	}
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		return nil, errors.New("memnet: connection refused")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *memListener) Addr() net.Addr { return l.addr }

// TestInMemoryNetworkIdleDefault runs server and client over net.Pipe under
// testing/synctest: calls work, and the default 120 s idle timeout
// (docs/protocol.md §1.1) closes a quiet connection in virtual time.
func TestInMemoryNetworkIdleDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mem memNet
		rec := &recorder{}
		s := NewServer(ServerConfig{ListenAddr: "broker:10911", Listen: mem.listen, Logger: testutil.Logger(t)})
		s.RegisterProcessor(codeEcho, echo, PoolConfig{Workers: 1})
		s.AddConnListener(rec)
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		c := NewClient(ClientConfig{Dial: mem.dial, Logger: testutil.Logger(t), IdleTimeout: -1})
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := c.InvokeSync(ctx, "broker:10911", protocol.NewRequest(codeEcho, nil, []byte("mem")))
		cancel()
		if err != nil || string(resp.Body) != "mem" {
			t.Fatalf("%v %+v", err, resp)
		}
		time.Sleep(119 * time.Second)
		synctest.Wait()
		if _, closes, _, _ := rec.counts(); closes != 0 {
			t.Fatal("closed before the idle timeout")
		}
		// The scanner ticks every second, so the close comes within a tick
		// after the timeout.
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if _, closes, idles, _ := rec.counts(); closes != 1 || idles != 1 {
			t.Fatalf("closes=%d idles=%d after 122 s idle", closes, idles)
		}
	})
}
