package protocol

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestFrameReaderBufferBoundary reads frames just under, at and over the
// read buffer's size (whole frames are copied out of the buffer, larger
// ones read straight into their own slice), from whole and dribbled input.
func TestFrameReaderBufferBoundary(t *testing.T) {
	const bufSize = 256
	var stream []byte
	var want []*Command
	for _, l := range []int{bufSize - 40, bufSize - 1, bufSize, bufSize + 1, 3 * bufSize, 0, 1} {
		// header of the request below is 8 + ~30 bytes; the body fills the rest.
		c := &Command{Code: 7, Opaque: int32(l), SerializeType: SerializeRocketMQ}
		hdr, err := AppendFrameHeader(nil, c)
		if err != nil {
			t.Fatal(err)
		}
		if body := l - (len(hdr) - 4); body > 0 {
			c.Body = bytes.Repeat([]byte{byte(l)}, body)
		}
		if stream, err = AppendFrame(stream, c); err != nil {
			t.Fatal(err)
		}
		want = append(want, c)
	}
	for _, mode := range []string{"whole", "one byte", "half"} {
		t.Run(mode, func(t *testing.T) {
			var r io.Reader = bytes.NewReader(stream)
			switch mode {
			case "one byte":
				r = iotest.OneByteReader(r)
			case "half":
				r = iotest.HalfReader(r)
			}
			fr := NewFrameReader(r, 0, bufSize)
			for i, w := range want {
				got, err := fr.Next()
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				if !equalCommand(got, w) {
					t.Fatalf("frame %d: got %+v want %+v", i, got, w)
				}
			}
			if _, err := fr.Next(); err != io.EOF {
				t.Fatalf("end: %v", err)
			}
		})
	}
	// A frame cut inside the buffered part is truncated, not a clean EOF.
	_, err := NewFrameReader(bytes.NewReader(stream[:100]), 0, bufSize).Next()
	if err != io.ErrUnexpectedEOF {
		t.Fatalf("truncated: %v", err)
	}
}

// TestDecodedStringsOwnTheirBytes: decoded ext keys, values and remarks
// share one copy of the header, never the frame itself, which the caller
// may reuse.
func TestDecodedStringsOwnTheirBytes(t *testing.T) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		t.Run(st.String(), func(t *testing.T) {
			c := NewRequest(SendMessage, map[string]string{"topic": "TopicTest", "k\"q": "v\nw", "queueId": "3"}, []byte("body"))
			c.Remark = "remark"
			c.SerializeType = st
			frame, err := AppendFrame(nil, c)
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeFrame(frame[4:])
			if err != nil {
				t.Fatal(err)
			}
			for i := range frame[:len(frame)-len("body")] {
				frame[i] = 'X'
			}
			got.Body = c.Body
			if !equalCommand(got, c) {
				t.Fatalf("after overwriting the frame: got %+v want %+v", got, c)
			}
			if strings.Contains(got.Remark+got.ExtFields["topic"], "X") {
				t.Fatal("strings alias the frame")
			}
		})
	}
}
