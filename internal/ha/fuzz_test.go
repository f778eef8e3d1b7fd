package ha

import (
	"bytes"
	"testing"
	"testing/iotest"
)

// FuzzTransferDecoder feeds arbitrary master streams, split in two halves
// and one byte at a time: no panic, no body beyond the limit, and frames
// re-encode to the consumed prefix.
func FuzzTransferDecoder(f *testing.F) {
	frame := func(off int64, body string) []byte {
		b := make([]byte, transferHeaderSize, transferHeaderSize+len(body))
		putTransferHeader(b, off, int32(len(body)))
		return append(b, body...)
	}
	f.Add(frame(0, "hello"))
	f.Add(append(frame(1<<30, ""), frame(1<<30, "abc")...))
	f.Add(frame(-1, "x"))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 1, 0x7f, 0xff, 0xff, 0xff})
	f.Add(frame(5, "partial")[:15])
	const maxBody = 1 << 10
	f.Fuzz(func(t *testing.T, data []byte) {
		decodeAll := func(feed func(d *transferDecoder) bool) []byte {
			d := newTransferDecoder(maxBody)
			var out []byte
			for more := true; more; {
				more = feed(d)
				for {
					off, body, ok, err := d.next()
					if err != nil || !ok {
						if err != nil {
							return out
						}
						break
					}
					if len(body) > maxBody || off < 0 {
						t.Fatalf("frame off %d body %d", off, len(body))
					}
					out = append(out, frame(off, string(body))...)
				}
			}
			return out
		}
		half := len(data) / 2
		parts := [][]byte{data[:half], data[half:]}
		a := decodeAll(func(d *transferDecoder) bool {
			d.write(parts[0])
			parts = parts[1:]
			return len(parts) > 0
		})
		r := iotest.OneByteReader(bytes.NewReader(data))
		b := decodeAll(func(d *transferDecoder) bool {
			n, _ := d.readFrom(r)
			return n > 0
		})
		if !bytes.Equal(a, b) {
			t.Fatalf("split and byte-wise decodes differ")
		}
		if !bytes.HasPrefix(data, a) {
			t.Fatalf("decoded frames are not a prefix of the input")
		}
	})
}
