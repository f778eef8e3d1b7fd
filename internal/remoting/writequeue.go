package remoting

import (
	"net"
)

// inlineBody is the largest body copied into the write arena; larger bodies
// are written from the caller's slice (no copy) as their own iovec.
const inlineBody = 64 << 10

// maxPendingWrite bounds the bytes queued on one connection. A peer that
// stops reading while we keep answering gets its connection closed instead
// of growing our memory without bound. A single frame may exceed it.
const maxPendingWrite = 64 << 20

// writeBatch is the frames queued on a connection since the last write.
// Frame headers and small bodies are copied into arena; bufs lists the
// segments to write in order. Segments taken from arena stay valid when
// arena grows later: append never changes bytes below the old length.
type writeBatch struct {
	arena      []byte
	bufs       [][]byte
	chunkStart int // arena[chunkStart:] is not yet in bufs
	bytes      int // total bytes queued
	underused  int // consecutive writes that used under a quarter of an oversized arena
	dones      []func(error)
}

// add queues one frame: its encoded header (length word included) and body.
func (b *writeBatch) add(header, body []byte, done func(error)) {
	b.arena = append(b.arena, header...)
	if len(body) <= inlineBody {
		b.arena = append(b.arena, body...)
	} else {
		b.bufs = append(b.bufs, b.arena[b.chunkStart:len(b.arena):len(b.arena)], body)
		b.chunkStart = len(b.arena)
	}
	b.bytes += len(header) + len(body)
	if done != nil {
		b.dones = append(b.dones, done)
	}
}

func (b *writeBatch) empty() bool { return b.bytes == 0 && len(b.dones) == 0 }

// writeTo writes everything queued with as few syscalls as the kernel allows
// (one writev for plain TCP).
func (b *writeBatch) writeTo(conn net.Conn) error {
	if b.chunkStart < len(b.arena) {
		b.bufs = append(b.bufs, b.arena[b.chunkStart:len(b.arena):len(b.arena)])
	}
	var err error
	switch len(b.bufs) {
	case 0:
	case 1:
		_, err = conn.Write(b.bufs[0])
	default:
		nb := net.Buffers(b.bufs)
		_, err = nb.WriteTo(conn)
	}
	return err
}

// An arena larger than maxRetainedArena is dropped after underusedLimit
// consecutive writes that used less than a quarter of it, and one larger
// than maxArena after any write: a connection that keeps pipelining keeps
// its arena (dropping it on every write cost ~3-8 KB of garbage per call in
// BenchmarkInvokeAsyncPipelined), one whose burst is over gives it back.
const (
	maxRetainedArena = 256 << 10
	maxArena         = 1 << 20
	underusedLimit   = 64
)

// finish runs the completion callbacks and resets b for reuse, dropping
// references to written bodies, keeping the arena unless it is oversized
// and no longer needed.
func (b *writeBatch) finish(err error) {
	for _, d := range b.dones {
		d(err)
	}
	clear(b.dones)
	b.dones = b.dones[:0]
	clear(b.bufs)
	b.bufs = b.bufs[:0]
	if cap(b.arena) > maxRetainedArena {
		if len(b.arena) < cap(b.arena)/4 {
			b.underused++
		} else {
			b.underused = 0
		}
		if b.underused >= underusedLimit || cap(b.arena) > maxArena {
			b.arena, b.underused = nil, 0
		}
	}
	b.arena = b.arena[:0]
	b.chunkStart = 0
	b.bytes = 0
}

// contiguous reports whether everything queued sits in the arena in order
// (no separate large bodies, no completion callbacks), so that one plain
// write can send it and a partial write can be resumed by the write loop.
func (b *writeBatch) contiguous() bool {
	return len(b.bufs) == 0 && b.chunkStart == 0 && len(b.dones) == 0
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
