package remoting

import (
	"bytes"
	"net"
	"testing"
)

// TestWriteBatch checks the arena/iovec layout: small bodies are copied,
// large ones referenced, order is kept, and finish resets everything.
func TestWriteBatch(t *testing.T) {
	var b writeBatch
	big := bytes.Repeat([]byte("B"), copyBody+1)
	var calls []error
	done := func(err error) { calls = append(calls, err) }
	b.add([]byte("h1"), []byte("small"), done, nil)
	b.add([]byte("h2"), big, nil, nil)
	b.add([]byte("h3"), nil, done, nil)
	if b.empty() || b.bytes != 2+5+2+len(big)+2 {
		t.Fatalf("bytes %d", b.bytes)
	}
	// Before the write: the arena chunk so far, then the large body itself.
	if len(b.bufs) != 2 || &b.bufs[1][0] != &big[0] {
		t.Fatalf("large body not referenced from the caller's slice (%d segments)", len(b.bufs))
	}
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	got := make(chan []byte, 1)
	go func() {
		buf := make([]byte, b.bytes)
		n := 0
		for n < len(buf) {
			m, err := server.Read(buf[n:])
			if err != nil {
				break
			}
			n += m
		}
		got <- buf[:n]
	}()
	if err := b.writeTo(client); err != nil {
		t.Fatal(err)
	}
	want := append(append([]byte("h1small"), append([]byte("h2"), big...)...), "h3"...)
	if g := <-got; !bytes.Equal(g, want) {
		t.Fatalf("wrote %d bytes, want %d in order", len(g), len(want))
	}
	b.finish(nil)
	if len(calls) != 2 || calls[0] != nil || !b.empty() || len(b.arena) != 0 || len(b.bufs) != 0 {
		t.Fatalf("finish: calls=%v batch=%+v", calls, b)
	}
	// A batch bigger than a chunk spreads over several, none re-copied
	// and none over maxChunk; once they came back, the same batch again
	// allocates nothing.
	body := make([]byte, 1000)
	fill := func() {
		for range 300 {
			b.add([]byte("hdr"), body, nil, nil)
		}
	}
	fill()
	if len(b.full) < 3 {
		t.Fatalf("300 KB in %d full chunks", len(b.full))
	}
	for _, c := range append(b.full, b.arena) {
		if cap(c) > maxChunk {
			t.Fatalf("chunk of %d bytes", cap(c))
		}
	}
	b.finish(nil)
	if allocs := testing.AllocsPerRun(10, func() { fill(); b.finish(nil) }); allocs > 0 {
		t.Fatalf("a repeated batch allocated %v times", allocs)
	}
	// Once batches fit in one chunk again, the spare chunks go.
	for range underusedLimit {
		b.add([]byte("small"), nil, nil, nil)
		b.finish(nil)
	}
	if b.free != nil {
		t.Fatalf("%d spare chunks kept after %d small batches", len(b.free), underusedLimit)
	}
	// An oversized chunk (one big frame) is not kept.
	b.add(make([]byte, 2*maxChunk), nil, nil, nil)
	b.finish(nil)
	if cap(b.arena) > maxChunk {
		t.Fatalf("chunk of %d bytes retained", cap(b.arena))
	}
}

// TestWriteBatchConsume: an in-place write that the kernel took only part
// of leaves the rest, in order, for the write loop.
func TestWriteBatchConsume(t *testing.T) {
	var b writeBatch
	b.add([]byte("h1"), []byte("body1"), nil, nil)
	b.add([]byte("h2"), nil, nil, nil)
	if !b.contiguous() {
		t.Fatal("small frames without callbacks are contiguous")
	}
	b.consume(3)
	if string(b.arena) != "ody1h2" || b.bytes != 6 || b.empty() {
		t.Fatalf("after partial consume: %q, %d bytes", b.arena, b.bytes)
	}
	b.consume(6)
	if !b.empty() || len(b.arena) != 0 {
		t.Fatalf("after full consume: %q, %d bytes", b.arena, b.bytes)
	}
	b.add([]byte("h"), nil, func(error) {}, nil)
	if b.contiguous() {
		t.Fatal("a frame with a completion callback is left to the write loop")
	}
	b.finish(nil)
	b.add([]byte("h"), bytes.Repeat([]byte("x"), inlineBody+1), nil, nil)
	if b.contiguous() {
		t.Fatal("a referenced large body is not contiguous")
	}
	b.finish(nil)
	// A lone frame's body up to inlineBody is copied (it can then be
	// written in place); behind another frame it is referenced.
	mid := bytes.Repeat([]byte("m"), copyBody+1)
	b.add([]byte("h"), mid, nil, nil)
	if !b.contiguous() {
		t.Fatal("the first frame of a batch is not contiguous")
	}
	b.add([]byte("h"), mid, nil, nil)
	if b.contiguous() || len(b.bufs) != 2 || &b.bufs[1][0] != &mid[0] {
		t.Fatalf("second body not referenced (%d segments)", len(b.bufs))
	}
}

// TestWriteBatchBodyDone: a copied body's hook runs when it is copied (the
// batch stays contiguous, so it can still be written in place); a
// referenced body's hook runs only when the batch is finished, written or
// failed.
func TestWriteBatchBodyDone(t *testing.T) {
	for _, err := range []error{nil, net.ErrClosed} {
		var b writeBatch
		var small, big int
		b.add([]byte("h1"), bytes.Repeat([]byte("s"), 100), nil, func() { small++ })
		if small != 1 || !b.contiguous() {
			t.Fatalf("copied body: hook ran %d times, contiguous %v", small, b.contiguous())
		}
		b.add([]byte("h2"), bytes.Repeat([]byte("B"), copyBody+1), nil, func() { big++ })
		if big != 0 {
			t.Fatal("a referenced body's hook ran before the write")
		}
		b.finish(err)
		if small != 1 || big != 1 {
			t.Fatalf("after finish(%v): hooks ran %d and %d times, want once each", err, small, big)
		}
		b.finish(nil)
		if big != 1 {
			t.Fatal("a hook ran again in the next batch")
		}
	}
}
