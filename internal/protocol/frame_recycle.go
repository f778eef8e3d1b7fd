package protocol

import (
	"runtime"
	"sync"
	"unsafe"
)

// RecycledFrames hands out buffers for large frames and takes each back
// once the garbage collector found it unreachable: a finalizer on the
// buffer puts it on a free list instead of letting it be freed. Nothing
// has to release a frame, so the bytes of a frame may be aliased by
// whatever is decoded from it (the message bodies of a pull answer) and
// kept for as long as their holder likes; a buffer returns only after
// the last reference to any byte of it is gone. A client reading 32 KiB
// pull answers at thousands per second then allocates (and the GC
// counts) almost none of them.
//
// Buffers come in size classes of recycleStep bytes from RecycleMin to
// eagerAlloc; at most maxBytes of free buffers are kept (the rest are
// left to the GC). A RecycledFrames is safe for concurrent use.
type RecycledFrames struct {
	maxBytes int

	mu sync.Mutex
	// free holds the free buffers of each class, full length; guarded
	// by mu, as is freeBytes, their total size.
	free      [recycleClasses][][]byte
	freeBytes int
	// finalizers holds each class's finalizer, made on first use;
	// guarded by mu.
	finalizers [recycleClasses]func(*byte)
}

// RecycleMin is the smallest frame RecycledFrames serves: smaller frames
// are cheap small-object allocations.
const RecycleMin = 16 << 10

const (
	recycleStep    = 4 << 10
	recycleClasses = (eagerAlloc-RecycleMin)/recycleStep + 1
)

// NewRecycledFrames returns a pool that keeps at most maxBytes of free
// buffers.
func NewRecycledFrames(maxBytes int) *RecycledFrames {
	return &RecycledFrames{maxBytes: maxBytes}
}

// recycleClass is the class of an n-byte frame; ok is false outside
// [RecycleMin, eagerAlloc].
func recycleClass(n int) (int, bool) {
	if n < RecycleMin || n > eagerAlloc {
		return 0, false
	}
	return (n - RecycleMin) / recycleStep, true
}

// recycleClassSize is the buffer size of class c: its frames are at most
// that long.
func recycleClassSize(c int) int { return RecycleMin + (c+1)*recycleStep }

// Get returns a buffer of length and capacity n (its bytes are not
// zeroed) that the pool takes back once it is unreachable, or nil when n
// is outside the pool's range.
func (p *RecycledFrames) Get(n int) []byte {
	c, ok := recycleClass(n)
	if !ok {
		return nil
	}
	var b []byte
	p.mu.Lock()
	if l := p.free[c]; len(l) > 0 {
		b = l[len(l)-1]
		l[len(l)-1] = nil
		p.free[c] = l[:len(l)-1]
		p.freeBytes -= len(b)
	}
	fin := p.finalizers[c]
	if fin == nil {
		size := recycleClassSize(c)
		fin = func(b *byte) { p.put(c, unsafe.Slice(b, size)) }
		p.finalizers[c] = fin
	}
	p.mu.Unlock()
	if b == nil {
		b = make([]byte, recycleClassSize(c))
	}
	// &b[0] is the start of b's allocation, which SetFinalizer needs.
	runtime.SetFinalizer(&b[0], fin)
	return b[:n:n]
}

// put takes back a buffer of class c that became unreachable (on the
// finalizer goroutine).
func (p *RecycledFrames) put(c int, b []byte) {
	p.mu.Lock()
	if p.freeBytes+len(b) <= p.maxBytes {
		p.free[c] = append(p.free[c], b)
		p.freeBytes += len(b)
	}
	p.mu.Unlock()
}
