package protocol

import (
	"bytes"
	"testing"
)

// TestFrameReaderRecyclesReleasedFrames: a listed ROCKETMQ request's frame
// buffer is reused for a later frame once its command is released, and the
// released command's header strings (copies) keep their values while the
// buffer and its ExtList storage are overwritten; unlisted codes, responses and JSON headers are
// never pooled. (sync.Pool may drop an item, under -race on purpose: reuse
// is required at least once in a row of frames, not every time.)
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
	cases := []struct {
		name   string
		code   RequestCode
		flag   int32
		typ    SerializeType
		pooled bool
	}{
		{"listed request", SendMessageV2, 0, SerializeRocketMQ, true},
		{"unlisted code", PullMessage, 0, SerializeRocketMQ, false},
		{"response", SendMessageV2, FlagResponse, SerializeRocketMQ, false},
		{"JSON header", SendMessageV2, 0, SerializeJSON, false},
	}
	const frames = 32
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var in bytes.Buffer
			bodies := make([][]byte, frames)
			for i := range bodies {
				bodies[i] = bytes.Repeat([]byte{byte('a' + i%26)}, 1200+i)
				in.Write(frame(tc.code, tc.flag, tc.typ, string(rune('A'+i%26)), bodies[i]))
			}
			fr := NewFrameReader(&in, 0, 0)
			fr.SetExtListCodes([]RequestCode{SendMessageV2})
			reused := 0
			var prev *Command
			var prevFirst *byte
			var prevGroup, prevTopic string
			for i := range bodies {
				c, err := fr.Next()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(c.Body, bodies[i]) || c.Ext("b") != string(rune('A'+i%26)) {
					t.Fatalf("frame %d: topic %q, body ok %v", i, c.Ext("b"), bytes.Equal(c.Body, bodies[i]))
				}
				if prev != nil {
					if prevTopic != string(rune('A'+(i-1)%26)) || prevGroup != "pg" {
						t.Fatalf("released command %d's header strings changed: %q %q", i-1, prevGroup, prevTopic)
					}
					if sameArray(prevFirst, c) {
						reused++
					}
				}
				if (c.frame != nil) != tc.pooled {
					t.Fatalf("frame %d pooled = %v, want %v", i, c.frame != nil, tc.pooled)
				}
				prev, prevFirst = c, &c.Body[0]
				prevGroup, prevTopic = c.Ext("a"), c.Ext("b")
				c.Release()
				if (c.Body == nil) != tc.pooled || (tc.pooled && c.ExtList != nil) {
					t.Fatalf("after Release Body is nil = %v, ExtList %v; want cleared for pooled frames only", c.Body == nil, c.ExtList)
				}
				c.Release() // a second release is a no-op
			}
			if tc.pooled && reused == 0 {
				t.Fatalf("no buffer reused in %d released frames", frames)
			}
			if !tc.pooled && reused != 0 {
				t.Fatalf("%d buffers reused", reused)
			}
		})
	}
}

// sameArray reports whether c's frame buffer is the array p points into.
func sameArray(p *byte, c *Command) bool {
	if c.frame == nil {
		return false
	}
	buf := c.frame.buf[:cap(c.frame.buf)]
	for i := range buf {
		if &buf[i] == p {
			return true
		}
	}
	return false
}
