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
	big := bytes.Repeat([]byte("B"), inlineBody+1)
	var calls []error
	done := func(err error) { calls = append(calls, err) }
	b.add([]byte("h1"), []byte("small"), done)
	b.add([]byte("h2"), big, nil)
	b.add([]byte("h3"), nil, done)
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
	// A big arena is kept while it is used, and given back once a run of
	// small writes shows the burst is over.
	b.add(make([]byte, maxRetainedArena+1), nil, nil)
	b.finish(nil)
	big1 := cap(b.arena)
	for range underusedLimit - 1 {
		b.add([]byte("small"), nil, nil)
		b.finish(nil)
	}
	if cap(b.arena) != big1 {
		t.Fatalf("arena dropped too early")
	}
	b.add([]byte("small"), nil, nil)
	b.finish(nil)
	if cap(b.arena) != 0 {
		t.Fatalf("arena of %d bytes retained after %d small writes", cap(b.arena), underusedLimit)
	}
}

// TestWriteBatchConsume: an in-place write that the kernel took only part
// of leaves the rest, in order, for the write loop.
func TestWriteBatchConsume(t *testing.T) {
	var b writeBatch
	b.add([]byte("h1"), []byte("body1"), nil)
	b.add([]byte("h2"), nil, nil)
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
	b.add([]byte("h"), nil, func(error) {})
	if b.contiguous() {
		t.Fatal("a frame with a completion callback is left to the write loop")
	}
	b.finish(nil)
	b.add([]byte("h"), bytes.Repeat([]byte("x"), inlineBody+1), nil)
	if b.contiguous() {
		t.Fatal("a referenced large body is not contiguous")
	}
}
