package protocol

import (
	"bytes"
	"testing"
)

// TestFrameReaderRecyclesReleasedFrames: a listed ROCKETMQ request's frame
// buffer is reused for a later frame once its command is released, and the
// released command's header strings (copies) keep their values while the
// buffer is overwritten; unlisted codes, responses and JSON headers, and
// frames never released, are never reused.
func TestFrameReaderRecyclesReleasedFrames(t *testing.T) {
	frame := func(code RequestCode, flag int32, typ SerializeType, topic string, body []byte) []byte {
		c := NewRequestList(code, []string{"a", "pg", "b", topic}, body)
		c.Flag, c.SerializeType = flag, typ
		b, err := AppendFrame(nil, c)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	bodyA, bodyB := bytes.Repeat([]byte{'a'}, 1500), bytes.Repeat([]byte{'b'}, 1400)
	cases := []struct {
		name   string
		first  []byte
		reused bool
	}{
		{"listed request", frame(SendMessageV2, 0, SerializeRocketMQ, "TopicA", bodyA), true},
		{"unlisted code", frame(PullMessage, 0, SerializeRocketMQ, "TopicA", bodyA), false},
		{"response", frame(SendMessageV2, FlagResponse, SerializeRocketMQ, "TopicA", bodyA), false},
		{"JSON header", frame(SendMessageV2, 0, SerializeJSON, "TopicA", bodyA), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var in bytes.Buffer
			in.Write(tc.first)
			in.Write(frame(SendMessageV2, 0, SerializeRocketMQ, "TopicB", bodyB))
			fr := NewFrameReader(&in, 0, 0)
			fr.SetExtListCodes([]RequestCode{SendMessageV2})
			a, err := fr.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.Body, bodyA) {
				t.Fatal("first body wrong")
			}
			first := &a.Body[0]
			a.Release()
			if (a.Body == nil) != tc.reused {
				t.Fatalf("after Release Body is nil = %v, want %v (pooled frames only)", a.Body == nil, tc.reused)
			}
			a.Release() // a second release is a no-op
			b, err := fr.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b.Body, bodyB) || b.Ext("b") != "TopicB" {
				t.Fatalf("second frame: topic %q, body ok %v", b.Ext("b"), bytes.Equal(b.Body, bodyB))
			}
			if a.Ext("b") != "TopicA" || a.Ext("a") != "pg" {
				t.Fatalf("released command's header changed: %q %q", a.Ext("a"), a.Ext("b"))
			}
			// Body offsets differ with the header, so compare buffers by
			// their backing arrays' first header byte instead.
			reused := sameArray(first, b)
			if reused != tc.reused {
				t.Fatalf("buffer reused = %v, want %v", reused, tc.reused)
			}
		})
	}
}

// sameArray reports whether b's frame buffer is the array p points into.
func sameArray(p *byte, b *Command) bool {
	if b.frame == nil {
		return false
	}
	buf := b.frame.buf[:cap(b.frame.buf)]
	for i := range buf {
		if &buf[i] == p {
			return true
		}
	}
	return false
}
