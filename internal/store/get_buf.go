package store

import (
	"math/bits"
	"sync"
)

// getBufPool recycles the buffers GetMessage copies records into. A pull
// answers up to maxTransferBytesOnMessageInMemory (256 KiB by default) per
// request; allocating each buffer fresh made the broker's pull path
// allocate (and zero, and collect) as many bytes as it served. Buffers
// come in power-of-two classes from 1<<getBufMinShift to 1<<getBufMaxShift
// bytes; larger ones are allocated and left to the garbage collector.
//
// A buffer is in the pool or owned by exactly one GetResult: Release puts
// it back once, and only callers that know nothing references the
// records any more call it (the pull path, after the response is
// written). A GetResult that is never released is simply collected.
type getBufPool struct {
	classes [getBufMaxShift - getBufMinShift + 1]sync.Pool // of *[]byte
}

const (
	getBufMinShift = 12 // 4 KiB
	getBufMaxShift = 18 // 256 KiB
)

// class is the pool index for a buffer of n bytes, or -1 when n is over
// the largest class.
func getBufClass(n int64) int {
	if n <= 1<<getBufMinShift {
		return 0
	}
	shift := bits.Len64(uint64(n - 1))
	if shift > getBufMaxShift {
		return -1
	}
	return shift - getBufMinShift
}

// get returns an empty buffer of capacity >= n and the class it goes back
// to (-1: not pooled). Its bytes are not zeroed.
func (p *getBufPool) get(n int64) (*[]byte, int) {
	c := getBufClass(n)
	if c < 0 {
		b := make([]byte, 0, n)
		return &b, -1
	}
	if v, ok := p.classes[c].Get().(*[]byte); ok {
		*v = (*v)[:0]
		return v, c
	}
	b := make([]byte, 0, 1<<(c+getBufMinShift))
	return &b, c
}

// put returns b to class c.
func (p *getBufPool) put(b *[]byte, c int) {
	if c >= 0 {
		p.classes[c].Put(b)
	}
}

// Release hands the result's buffer back to the store for reuse by a later
// GetMessage. After it Buffer and Messages must not be used, nor any slice
// taken from them; calling it is optional (an unreleased result is
// collected as usual) and a second call does nothing.
func (r *GetResult) Release() {
	if r.buf == nil {
		return
	}
	r.pool.put(r.buf, r.class)
	r.buf, r.pool = nil, nil
	r.Buffer, r.Messages = nil, nil
}
