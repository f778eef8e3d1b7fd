package timer

import (
	"testing"
)

// FuzzDecodeRecord: arbitrary bytes never panic the record decoder, and
// an accepted record re-encodes to the same bytes.
func FuzzDecodeRecord(f *testing.F) {
	var b [recordSize]byte
	(&record{magic: recordMagic, prevPos: -1, writeMs: 1, slotMs: 1000, phyOffset: 7, msgSize: 9}).encode(b[:])
	f.Add(b[:])
	(&record{magic: recordMagic | magicDelete, prevPos: 52, writeMs: 5, slotMs: 4}).encode(b[:])
	f.Add(b[:])
	f.Add(make([]byte, recordSize))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, ok := decodeRecord(in)
		if !ok {
			return
		}
		var out [recordSize]byte
		r.encode(out[:])
		if string(out[:]) != string(in[:recordSize]) {
			t.Fatalf("re-encoded %x, want %x", out, in[:recordSize])
		}
	})
}

// FuzzDecodeCheckpoint: arbitrary bytes never panic the checkpoint
// decoder; an accepted checkpoint re-encodes to the same bytes.
func FuzzDecodeCheckpoint(f *testing.F) {
	f.Add(checkpoint{doneMs: 1000, flushPos: 52, queueOffset: 3}.encode())
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := decodeCheckpoint(in)
		if err != nil {
			return
		}
		if string(c.encode()) != string(in) {
			t.Fatalf("re-encoded differs")
		}
	})
}
