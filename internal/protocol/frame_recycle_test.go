package protocol

import (
	"bytes"
	"io"
	"runtime"
	"testing"
	"testing/iotest"
	"time"
	"unsafe"

	"github.com/apogeemq/apogee/internal/testutil"
)

// TestRecycledFramesRange: buffers are served for RecycleMin..eagerAlloc
// bytes only, with length and capacity n.
func TestRecycledFramesRange(t *testing.T) {
	p := NewRecycledFrames(1 << 20)
	for _, n := range []int{0, 1, RecycleMin - 1, eagerAlloc + 1} {
		if b := p.Get(n); b != nil {
			t.Fatalf("Get(%d) = %d bytes, want nil", n, len(b))
		}
	}
	for _, n := range []int{RecycleMin, RecycleMin + 1, RecycleMin + recycleStep, 34 << 10, eagerAlloc} {
		b := p.Get(n)
		if len(b) != n || cap(b) != n {
			t.Fatalf("Get(%d): len %d cap %d", n, len(b), cap(b))
		}
		if c, _ := recycleClass(n); recycleClassSize(c) < n || c >= recycleClasses {
			t.Fatalf("n %d: class %d of size %d", n, c, recycleClassSize(c))
		}
	}
}

// TestRecycledFramesReuseOnlyUnreachable: a buffer comes back from Get
// only after the GC found it unreachable, never while a slice of it is
// still held, and the free list stays within its bound.
func TestRecycledFramesReuseOnlyUnreachable(t *testing.T) {
	const n = 34 << 10
	c, _ := recycleClass(n)
	p := NewRecycledFrames(2 * recycleClassSize(c))
	held := p.Get(n)[100:200] // a "body" aliasing the frame keeps all of it
	heldAt := uintptr(unsafe.Pointer(&held[0])) - 100
	dropped := uintptr(unsafe.Pointer(&p.Get(n)[0]))
	testutil.Eventually(t, 10*time.Second, func() bool {
		runtime.GC()
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.freeBytes > 0
	}, "the dropped buffer was never taken back")
	got := p.Get(n)
	if at := uintptr(unsafe.Pointer(&got[0])); at != dropped {
		t.Fatalf("Get after the GC: %#x, want the dropped buffer %#x (held %#x)", at, dropped, heldAt)
	}
	runtime.KeepAlive(held)

	// Beyond maxBytes, unreachable buffers are left to the GC.
	for range 5 {
		p.Get(n)
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		runtime.GC()
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.freeBytes == p.maxBytes
	}, "free list never filled up to its bound")
	runtime.GC()
	p.mu.Lock()
	free := p.freeBytes
	p.mu.Unlock()
	if free > p.maxBytes {
		t.Fatalf("%d free bytes, bound %d", free, p.maxBytes)
	}
}

// TestFrameReaderRecycledFramesMatchPlain: frames read into recycled
// buffers decode to the same commands as with plain allocation, for
// sizes around RecycleMin and beyond the read buffer, also when the
// buffers are reused (a frame's leftovers never show in a later one).
func TestFrameReaderRecycledFramesMatchPlain(t *testing.T) {
	const bufSize = 64 << 10
	var stream []byte
	sizes := []int{100, RecycleMin - 1, RecycleMin, RecycleMin + 1, 34 << 10, bufSize - 1, bufSize + 1, 200 << 10}
	for round := range 3 {
		for i, l := range sizes {
			c := &Command{Code: 11, Opaque: int32(round*100 + i), SerializeType: SerializeRocketMQ, Flag: FlagResponse,
				ExtFields: map[string]string{"nextBeginOffset": "32"}}
			hdr, err := AppendFrameHeader(nil, c)
			if err != nil {
				t.Fatal(err)
			}
			if body := l - (len(hdr) - 4) - round; body > 0 {
				c.Body = bytes.Repeat([]byte{byte(round*16 + i)}, body)
			}
			if stream, err = AppendFrame(stream, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	read := func(r io.Reader, p *RecycledFrames, each func(i int, c *Command)) {
		fr := NewFrameReader(r, 0, bufSize)
		if p != nil {
			fr.SetRecycledFrames(p)
		}
		for i := 0; ; i++ {
			c, err := fr.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p != nil && len(c.Body) >= RecycleMin && cap(c.Body) != len(c.Body) {
				t.Fatalf("frame %d: body capacity %d past its length %d", i, cap(c.Body), len(c.Body))
			}
			each(i, c)
			if p != nil {
				runtime.GC() // c is dropped: let the pool take its buffer back
			}
		}
	}
	var want []*Command
	read(bytes.NewReader(stream), nil, func(_ int, c *Command) { want = append(want, c) })
	if len(want) != 3*len(sizes) {
		t.Fatalf("%d frames", len(want))
	}
	p := NewRecycledFrames(4 << 20)
	reused := 0
	seen := map[uintptr]bool{}
	for _, r := range []io.Reader{bytes.NewReader(stream), iotest.HalfReader(bytes.NewReader(stream))} {
		n := 0
		read(r, p, func(i int, c *Command) {
			n++
			if !equalCommand(c, want[i]) {
				t.Fatalf("frame %d differs", i)
			}
			if len(c.Body) >= RecycleMin {
				at := uintptr(unsafe.Pointer(&c.Body[0]))
				if seen[at] {
					reused++
				}
				seen[at] = true
			}
		})
		if n != len(want) {
			t.Fatalf("%d frames, want %d", n, len(want))
		}
	}
	if reused == 0 {
		t.Fatal("no frame buffer was ever reused")
	}
}
