package remoting

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

const codeDeferred = protocol.RequestCode(9121)

// deferrer is an inline processor that answers its requests from the
// connection's AtReadIdle function: half of them through FlushAnswers,
// the rest through the read loop's flush after it. Each answer's remark
// says whether its request came in a small read.
type deferrer struct {
	mu      sync.Mutex
	pending map[*Conn][]*protocol.Command // read loop only, per connection; mu for the map
	small   map[*protocol.Command]bool
	runs    int
	idle    func(*Conn)
}

func newDeferrer() *deferrer {
	d := &deferrer{pending: map[*Conn][]*protocol.Command{}, small: map[*protocol.Command]bool{}}
	d.idle = d.answer
	return d
}

func (d *deferrer) process(_ context.Context, c *Conn, req *protocol.Command) (*protocol.Command, error) {
	d.mu.Lock()
	d.pending[c] = append(d.pending[c], req)
	d.small[req] = c.ReadSmall()
	d.mu.Unlock()
	c.AtReadIdle(d.idle)
	return nil, nil
}

func (d *deferrer) answer(c *Conn) {
	d.mu.Lock()
	reqs := d.pending[c]
	delete(d.pending, c)
	d.runs++
	d.mu.Unlock()
	for i, req := range reqs {
		d.mu.Lock()
		remark := "big"
		if d.small[req] {
			remark = "small"
		}
		delete(d.small, req)
		d.mu.Unlock()
		resp := protocol.NewResponse(req, protocol.Success, remark)
		resp.Body = req.Body
		_ = c.WriteResponse(resp)
		if i == len(reqs)/2 {
			c.FlushAnswers()
		}
	}
}

func (d *deferrer) idleRuns() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.runs
}

func startDeferServer(t *testing.T) (*Server, *deferrer) {
	t.Helper()
	d := newDeferrer()
	s := startServer(t, ServerConfig{}, func(s *Server) {
		s.RegisterProcessor(codeDeferred, d.process, PoolConfig{Inline: true})
	})
	return s, d
}

// TestReadIdleAnswers: requests answered from the AtReadIdle function are
// all answered, in order, whether they come alone (a small read) or in a
// burst of 40 frames written at once (not a small read).
func TestReadIdleAnswers(t *testing.T) {
	s, d := startDeferServer(t)
	c := startClient(t, ClientConfig{})
	for i := range 5 {
		body := []byte(fmt.Sprintf("lone-%d", i))
		resp, err := c.InvokeSync(ctxFor(t, 5*time.Second), s.Addr().String(), protocol.NewRequest(codeDeferred, nil, body))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(resp.Body, body) || resp.Remark != "small" {
			t.Fatalf("lone request %d: body %q remark %q, want %q small", i, resp.Body, resp.Remark, body)
		}
	}
	if got := d.idleRuns(); got != 5 {
		t.Fatalf("idle function ran %d times for 5 lone requests", got)
	}

	nc := rawConn(t, s.Addr().String())
	const n = 40
	var burst []byte
	for i := range n {
		req := protocol.NewRequest(codeDeferred, nil, []byte(fmt.Sprintf("burst-%d", i)))
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
		if !resp.IsResponse() || resp.Opaque != int32(i+1) || string(resp.Body) != fmt.Sprintf("burst-%d", i) {
			t.Fatalf("response %d: opaque %d body %q", i, resp.Opaque, resp.Body)
		}
		// One write on loopback arrives in one read: its first request
		// saw all 40 frames.
		if i == 0 && resp.Remark != "big" {
			t.Fatalf("first request of a 40-frame burst: remark %q, want big", resp.Remark)
		}
	}
}

// TestReadIdleRunsOnFailedRead: a read loop that fails on a frame still
// runs the idle function the requests before it left (other connections'
// work may depend on it) before it closes.
func TestReadIdleRunsOnFailedRead(t *testing.T) {
	s, d := startDeferServer(t)
	nc := rawConn(t, s.Addr().String())
	good, err := protocol.AppendFrame(nil, protocol.NewRequest(codeDeferred, nil, []byte("x")))
	if err != nil {
		t.Fatal(err)
	}
	// A whole frame whose header length runs past the frame: a decode
	// error right after the good request, with no wait between them.
	bad := binary.BigEndian.AppendUint32(nil, 8)
	bad = binary.BigEndian.AppendUint32(bad, 1000)
	bad = append(bad, 0, 0, 0, 0)
	if _, err := nc.Write(append(good, bad...)); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return d.idleRuns() == 1 },
		"idle function ran %d times, want 1", d.idleRuns())
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var buf [512]byte
	for {
		if _, err := nc.Read(buf[:]); err != nil {
			break // closed by the server (the answer may or may not come first)
		}
	}
}

// TestFramesAtMost counts whole frames in a reader's buffer.
func TestFramesAtMost(t *testing.T) {
	frame := func(n int) []byte { return append(binary.BigEndian.AppendUint32(nil, uint32(n)), make([]byte, n)...) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for _, tc := range []struct {
		name string
		data []byte
		n    int
		want bool
	}{
		{"empty", nil, 0, true},
		{"one frame, at most 0", frame(10), 0, false},
		{"one frame, at most 1", frame(10), 1, true},
		{"three frames, at most 2", cat(frame(1), frame(2), frame(3)), 2, false},
		{"three frames, at most 3", cat(frame(1), frame(2), frame(3)), 3, true},
		{"two frames and a partial, at most 2", cat(frame(1), frame(2), frame(30)[:9]), 2, false},
		{"two frames and a partial, at most 3", cat(frame(1), frame(2), frame(30)[:9]), 3, true},
		{"a partial length word", cat(frame(5), []byte{0, 0}), 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := bufio.NewReaderSize(bytes.NewReader(tc.data), 4096)
			_, _ = br.Peek(len(tc.data)) // fill the buffer
			if got := framesAtMost(br, tc.n); got != tc.want {
				t.Fatalf("framesAtMost(%d) = %v, want %v", tc.n, got, tc.want)
			}
		})
	}
}
