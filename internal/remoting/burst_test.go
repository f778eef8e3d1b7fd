package remoting

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/apogeemq/apogee/internal/protocol"
)

// TestSyncBurstHint drives the read loop's burst bookkeeping (noteSyncDone,
// the reset when no whole frame is buffered) and the callers' takeBurst
// through scripted reads: "rN" is one read carrying N sync answers, "t1" /
// "t0" a caller's next sync call, which must (t1) or must not (t0) find
// itself part of a burst.
func TestSyncBurstHint(t *testing.T) {
	tests := []struct {
		name   string
		script string
	}{
		{"lone answers never form a burst", "r1 t0 r1 t0 r1 t0"},
		{"four answers in one read: four burst calls", "r4 t1 t1 t1 t1 t0"},
		{"a burst of two, then a lone answer", "r2 r1 t1 t1 t0"},
		{"the next burst drops stale counts", "r3 t1 r2 t1 t1 t0"},
		{"a lone answer leaves a burst's counts to its callers", "r3 t1 r1 t1 t1 t0"},
		{"nothing read", "t0 t0"},
	}
	frame, err := protocol.AppendFrame(nil, protocol.NewResponse(protocol.NewRequest(1, nil, nil), protocol.Success, ""))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Conn{}
			for i, step := range strings.Fields(tt.script) {
				n, err := strconv.Atoi(step[1:])
				if err != nil {
					t.Fatalf("step %d %q: %v", i, step, err)
				}
				switch step[0] {
				case 'r':
					readAnswers(t, c, frame, n)
				case 't':
					if got, want := c.takeBurst(), n == 1; got != want {
						t.Fatalf("step %d (%s): takeBurst = %v, want %v (burst %d)", i, tt.script, got, want, c.burst.Load())
					}
				default:
					t.Fatalf("step %d: bad op %q", i, step)
				}
			}
		})
	}
}

// readAnswers plays the read loop over one read holding n whole frames:
// each frame is consumed, then counted as a sync completion, and the loop
// finds nothing buffered at the end.
func readAnswers(t *testing.T, c *Conn, frame []byte, n int) {
	t.Helper()
	c.br = bufio.NewReader(bytes.NewReader(bytes.Repeat(frame, n)))
	if _, err := c.br.Peek(n * len(frame)); err != nil {
		t.Fatalf("fill: %v", err)
	}
	for range n {
		if _, err := c.br.Discard(len(frame)); err != nil {
			t.Fatal(err)
		}
		c.noteSyncDone()
	}
	if frameBuffered(c.br) {
		t.Fatal("frames left after the read")
	}
	c.syncBatch = 0 // readLoop: no whole frame buffered
}
