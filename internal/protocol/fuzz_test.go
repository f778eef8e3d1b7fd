package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"unicode/utf8"
)

// seedFrames returns valid frames (without the length word) to seed fuzzing.
func seedFrames(t testing.TB) [][]byte {
	var out [][]byte
	for _, c := range roundTripCases() {
		for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
			c := *c
			c.SerializeType = st
			if len(c.Body) > 1000 {
				c.Body = c.Body[:1000]
			}
			b, err := AppendFrame(nil, &c)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b[4:])
		}
	}
	java := `{"code":0,"extFields":{"groupSysFlag":"0","maxOffset":"100"},"flag":1,"language":"JAVA","opaque":42,"remark":"FOUND","serializeTypeCurrentRPC":"JSON","version":479}`
	out = append(out, append(binary.BigEndian.AppendUint32(nil, uint32(len(java))), java...))
	// Exactly what rocketmq-client-go v2 sends (docs/protocol.md §1.4).
	goClient := `{"code":105,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"TopicTest"}}`
	out = append(out, append(binary.BigEndian.AppendUint32(nil, uint32(len(goClient))), goClient...))
	return out
}

// jsonRepresentable reports whether every string of c survives JSON (valid
// UTF-8) and the language is one JSON carries as given.
func jsonRepresentable(c *Command) bool {
	if !utf8.ValidString(c.Remark) {
		return false
	}
	for k, v := range c.ExtFields {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return false
		}
	}
	return true
}

// splitReader returns its data in two reads: the first half, then the rest.
type splitReader struct {
	parts [][]byte
}

func (r *splitReader) Read(p []byte) (int, error) {
	for len(r.parts) > 0 && len(r.parts[0]) == 0 {
		r.parts = r.parts[1:]
	}
	if len(r.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.parts[0])
	r.parts[0] = r.parts[0][n:]
	return n, nil
}

func FuzzDecodeFrame(f *testing.F) {
	for _, s := range seedFrames(f) {
		f.Add(s)
	}
	f.Add([]byte{1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, frame []byte) {
		c, err := DecodeFrame(frame)
		// The same bytes through the stream reader, split in halves, must give
		// the same result.
		stream := append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...)
		half := len(stream) / 2
		fr := NewFrameReader(&splitReader{parts: [][]byte{stream[:half], stream[half:]}}, 1<<20, 16)
		c2, err2 := fr.Next()
		if len(frame) >= 4 && len(frame)+4 <= 1<<20 && (err == nil) != (err2 == nil) {
			t.Fatalf("DecodeFrame err %v, FrameReader err %v", err, err2)
		}
		if err != nil {
			if !errors.Is(err, ErrBadFrame) {
				t.Fatalf("error does not wrap ErrBadFrame: %v", err)
			}
			return
		}
		if !equalCommand(c, c2) {
			t.Fatalf("stream decode differs: %+v vs %+v", c, c2)
		}
		checkRoundTrip(t, c)
	})
}

// checkRoundTrip re-encodes c in its own serialize type and checks
// decode(encode(c)) == c, when c is representable.
func checkRoundTrip(t *testing.T, c *Command) {
	t.Helper()
	if c.SerializeType == SerializeJSON && !jsonRepresentable(c) {
		return
	}
	enc, err := AppendFrame(nil, c)
	if err != nil {
		t.Fatalf("re-encode %+v: %v", c, err)
	}
	back, err := DecodeFrame(enc[4:])
	if err != nil {
		t.Fatalf("decode re-encoded: %v\n%q", err, enc)
	}
	if !equalCommand(back, c) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", back, c)
	}
}

func FuzzJSONHeader(f *testing.F) {
	for _, s := range seedFrames(f) {
		if s[0] == 0 {
			h := int(binary.BigEndian.Uint32(s) & 0xFFFFFF)
			f.Add(s[4 : 4+h])
		}
	}
	f.Add([]byte(`{"remark":"\ud83d\ude00\u00e9\"","x":[{"y":null}],"language":3}`))
	f.Fuzz(func(t *testing.T, header []byte) {
		c := &Command{}
		if err := decodeJSONHeader(header, c); err != nil {
			return
		}
		checkRoundTrip(t, c)
	})
}

func FuzzRocketMQHeader(f *testing.F) {
	for _, s := range seedFrames(f) {
		if s[0] == 1 {
			h := int(binary.BigEndian.Uint32(s) & 0xFFFFFF)
			f.Add(s[4 : 4+h])
		}
	}
	f.Fuzz(func(t *testing.T, header []byte) {
		c := &Command{SerializeType: SerializeRocketMQ}
		if err := decodeRocketMQHeader(header, c); err != nil {
			return
		}
		checkRoundTrip(t, c)
		// Canonical input (as our encoder writes it) must also come back
		// byte for byte.
		enc, _ := appendRocketMQHeader(nil, c)
		c2 := &Command{SerializeType: SerializeRocketMQ}
		if err := decodeRocketMQHeader(enc, c2); err != nil {
			t.Fatal(err)
		}
		enc2, _ := appendRocketMQHeader(nil, c2)
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("canonical encoding not stable")
		}
	})
}

func FuzzDecodeSyncStateSet(f *testing.F) {
	f.Add(SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 3}.Encode())
	f.Add([]byte(`{"syncStateSet":[1],"syncStateSetEpoch":1}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := DecodeSyncStateSet(body)
		if err != nil {
			return
		}
		again, err := DecodeSyncStateSet(s.Encode())
		if err != nil || again.SyncStateSetEpoch != s.SyncStateSetEpoch || len(again.SyncStateSet) != len(s.SyncStateSet) {
			t.Fatalf("re-decoding %+v: %+v %v", s, again, err)
		}
	})
}
