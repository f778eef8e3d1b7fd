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

// TestFrameReaderBodylessFramesOwnTheirFields: a frame without a body is
// decoded straight from the read buffer (no copy of the frame), so what
// the command holds must survive the buffer being refilled with other
// bytes: JSON and ROCKETMQ headers, requests and responses, and a request
// of an ext-list code.
func TestFrameReaderBodylessFramesOwnTheirFields(t *testing.T) {
	mk := func(i int, typ SerializeType, flag int32) *Command {
		return &Command{Code: int32(SendMessageV2), Opaque: int32(i), Flag: flag, SerializeType: typ,
			Remark: strings.Repeat("r", i%7), ExtFields: map[string]string{"msgId": strings.Repeat("m", 10+i%5), "queueId": "3"}}
	}
	var stream []byte
	var want []*Command
	for i := range 200 {
		typ := SerializeRocketMQ
		if i%3 == 0 {
			typ = SerializeJSON
		}
		c := mk(i, typ, int32(i%2)*FlagResponse)
		var err error
		if stream, err = AppendFrame(stream, c); err != nil {
			t.Fatal(err)
		}
		want = append(want, mk(i, typ, int32(i%2)*FlagResponse))
	}
	fr := NewFrameReader(iotest.HalfReader(bytes.NewReader(stream)), 0, 256)
	fr.SetExtListCodes([]RequestCode{SendMessageV2})
	var got []*Command
	for range want {
		c, err := fr.Next()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, c)
	}
	for i, c := range got { // after the buffer was overwritten many times
		if c.Opaque != want[i].Opaque || c.Remark != want[i].Remark || c.Ext("msgId") != want[i].ExtFields["msgId"] ||
			c.Ext("queueId") != "3" || len(c.Body) != 0 {
			t.Fatalf("frame %d: got %+v want %+v", i, c, want[i])
		}
	}
}
