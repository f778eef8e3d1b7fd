package remoting

import (
	"net"
)

// Bodies of at most copyBody bytes are copied into the write arena; larger
// ones are written from the caller's slice (no copy) as their own iovec,
// except that the first frame of an empty batch copies a body of up to
// inlineBody bytes, so that a lone frame stays one contiguous buffer that
// can be written in place (Conn.flushLocked). 2 KiB: in
// BenchmarkWriteBatchTCP (bursts of 64 frames to loopback) a 1 KiB body
// costs about the same copied or as an iovec, 4 and 16 KiB bodies cost
// ~20-30 % less CPU per frame as iovecs.
const (
	copyBody   = 2 << 10
	inlineBody = 64 << 10
)

// maxPendingWrite bounds the bytes queued on one connection. A peer that
// stops reading while we keep answering gets its connection closed instead
// of growing our memory without bound. A single frame may exceed it.
const maxPendingWrite = 64 << 20

// The arena is a list of chunks that are never re-copied when the batch
// grows: a full chunk stays where it is (its bytes are already in bufs) and
// the next frames go to a new one, each twice the size of the last, from
// minChunk up to maxChunk (or the one frame that needs more). Chunks come
// back on finish; at most maxFreeChunks stay cached (a pipelining
// connection reuses them and allocates nothing), and they are dropped after
// underusedLimit batches in a row that fit in one chunk (the burst is
// over). The current chunk is dropped when it is larger than maxChunk.
const (
	minChunk       = 4 << 10
	maxChunk       = 64 << 10
	maxFreeChunks  = 16
	underusedLimit = 64
)

// writeBatch is the frames queued on a connection since the last write.
// Frame headers and small bodies are copied into the arena's chunks; bufs
// lists the segments to write in order.
type writeBatch struct {
	arena      []byte   // the chunk being filled
	full       [][]byte // chunks filled earlier in this batch (their bytes are in bufs)
	free       [][]byte // empty chunks for the next ones
	bufs       [][]byte
	chunkStart int // arena[chunkStart:] is not yet in bufs
	bytes      int // total bytes queued
	underused  int // consecutive batches that fit in one chunk
	dones      []func(error)
	// bodyDones are the BodyDone hooks of bodies written from the
	// caller's slice: they run in finish, after the write. A copied body's
	// hook runs in add (it does not make the batch non-contiguous).
	bodyDones []func()
}

// add queues one frame: its encoded header (length word included) and body.
// bodyDone, if not nil, runs once body is no longer referenced.
func (b *writeBatch) add(header, body []byte, done func(error), bodyDone func()) {
	copied := len(body) <= copyBody || (b.empty() && len(body) <= inlineBody)
	need := len(header)
	if copied {
		need += len(body)
	}
	if len(b.arena)+need > cap(b.arena) {
		b.newChunk(need)
	}
	b.arena = append(b.arena, header...)
	if copied {
		b.arena = append(b.arena, body...)
		if bodyDone != nil {
			bodyDone()
		}
	} else {
		b.bufs = append(b.bufs, b.arena[b.chunkStart:len(b.arena):len(b.arena)], body)
		b.chunkStart = len(b.arena)
		if bodyDone != nil {
			b.bodyDones = append(b.bodyDones, bodyDone)
		}
	}
	b.bytes += len(header) + len(body)
	if done != nil {
		b.dones = append(b.dones, done)
	}
}

// newChunk makes room for need more bytes in a fresh chunk, leaving the
// current one's bytes where they are.
func (b *writeBatch) newChunk(need int) {
	size := max(minChunk, min(2*cap(b.arena), maxChunk))
	if len(b.arena) > 0 {
		if b.chunkStart < len(b.arena) {
			b.bufs = append(b.bufs, b.arena[b.chunkStart:len(b.arena):len(b.arena)])
		}
		b.full = append(b.full, b.arena)
	}
	b.chunkStart = 0
	if n := len(b.free); n > 0 && cap(b.free[n-1]) >= need {
		b.arena = b.free[n-1][:0]
		b.free[n-1] = nil
		b.free = b.free[:n-1]
		return
	}
	b.arena = make([]byte, 0, max(size, need))
}

func (b *writeBatch) empty() bool { return b.bytes == 0 && len(b.dones) == 0 }

// segments returns everything queued as the segments to write, in order.
// The batch must not grow while they are written.
func (b *writeBatch) segments() [][]byte {
	if b.chunkStart < len(b.arena) {
		b.bufs = append(b.bufs, b.arena[b.chunkStart:len(b.arena):len(b.arena)])
		b.chunkStart = len(b.arena)
	}
	return b.bufs
}

// writeTo writes everything queued with as few syscalls as the kernel allows
// (one writev for plain TCP).
func (b *writeBatch) writeTo(conn net.Conn) error {
	var err error
	switch len(b.segments()) {
	case 0:
	case 1:
		_, err = conn.Write(b.bufs[0])
	default:
		nb := net.Buffers(b.bufs)
		_, err = nb.WriteTo(conn)
	}
	return err
}

// finish runs the completion callbacks and resets b for reuse, dropping
// references to written bodies and keeping a few chunks for the next
// batch: a connection that keeps pipelining allocates no arena (dropping
// it on every write cost ~3-8 KB of garbage per call in
// BenchmarkInvokeAsyncPipelined), one whose burst is over keeps one chunk.
func (b *writeBatch) finish(err error) {
	for _, d := range b.dones {
		d(err)
	}
	clear(b.dones)
	b.dones = b.dones[:0]
	clear(b.bufs)
	b.bufs = b.bufs[:0]
	for _, d := range b.bodyDones {
		d()
	}
	clear(b.bodyDones)
	b.bodyDones = b.bodyDones[:0]
	if len(b.full) == 0 {
		if b.underused++; b.underused >= underusedLimit && b.free != nil {
			clear(b.free)
			b.free = nil
		}
	} else {
		b.underused = 0
	}
	for i, c := range b.full {
		if cap(c) > cap(b.arena) && cap(c) <= maxChunk {
			c, b.arena = b.arena, c // the next batch starts in the largest chunk
		}
		// Only full-size chunks are cached: the smaller ones of a first
		// burst would otherwise split every later batch into more pieces.
		if len(b.free) < maxFreeChunks && cap(c) == maxChunk {
			b.free = append(b.free, c[:0])
		}
		b.full[i] = nil
	}
	b.full = b.full[:0]
	if cap(b.arena) > maxChunk {
		b.arena = nil
	}
	b.arena = b.arena[:0]
	b.chunkStart = 0
	b.bytes = 0
}

// contiguous reports whether everything queued sits in one chunk in order
// (no separate large bodies, no completion callbacks), so that one plain
// write can send it and a partial write can be resumed by the write loop.
func (b *writeBatch) contiguous() bool {
	return len(b.bufs) == 0 && len(b.full) == 0 && b.chunkStart == 0 && len(b.dones) == 0
}

// consume drops the first n bytes of a contiguous batch (they were written).
func (b *writeBatch) consume(n int) {
	if n >= len(b.arena) {
		b.finish(nil)
		return
	}
	m := copy(b.arena, b.arena[n:])
	b.arena = b.arena[:m]
	b.bytes -= n
}
