package protocol

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"unsafe"
)

// sendFrame is a SEND_MESSAGE_V2 frame as the SDK encodes it (ROCKETMQ
// header, ext list), without its length word.
func sendFrame(t testing.TB, ext []string) []byte {
	t.Helper()
	c := NewRequestList(SendMessageV2, ext, []byte("body"))
	c.SerializeType = SerializeRocketMQ
	b, err := AppendFrame(nil, c)
	if err != nil {
		t.Fatal(err)
	}
	return b[4:]
}

// TestExtListDecode: with SetExtListCodes, a listed request's ROCKETMQ ext
// fields arrive in ExtList (no map) and read the same through Ext and
// DecodeSendHeaderOf as the map decode; other codes, responses and headers
// that repeat a key keep the map.
func TestExtListDecode(t *testing.T) {
	h := SendMessageRequestHeader{ProducerGroup: "pg", Topic: "T", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
		QueueID: 2, BornTimestamp: 1700000000000, Properties: "UNIQ_KEY\x01X\x02"}
	frame := sendFrame(t, AppendSendHeader(nil, &h, true))
	codes := []int32{int32(SendMessageV2)}

	viaMap, err := DecodeFrame(frame)
	if err != nil {
		t.Fatal(err)
	}
	viaList, err := decodeFrame(frame, codes, nil)
	if err != nil {
		t.Fatal(err)
	}
	if viaList.ExtFields != nil || len(viaList.ExtList) == 0 || viaList.ExtLen() != viaMap.ExtLen() {
		t.Fatalf("list decode: map %v, list %v", viaList.ExtFields, viaList.ExtList)
	}
	for k, v := range viaMap.ExtFields {
		if got := viaList.Ext(k); got != v {
			t.Fatalf("Ext(%q) = %q, want %q", k, got, v)
		}
	}
	var fromMap, fromList SendMessageRequestHeader
	if err := DecodeSendHeader(viaMap.ExtFields, &fromMap, true); err != nil {
		t.Fatal(err)
	}
	if err := DecodeSendHeaderOf(viaList, &fromList, true); err != nil {
		t.Fatal(err)
	}
	if fromMap != fromList || fromList.Topic != "T" || fromList.QueueID != 2 {
		t.Fatalf("headers differ: %+v vs %+v", fromMap, fromList)
	}
	// A missing required field is the same error either way.
	short := sendFrame(t, []string{"a", "pg"})
	c, err := decodeFrame(short, codes, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := DecodeSendHeaderOf(c, &fromList, true); err == nil {
		t.Fatal("missing topic accepted")
	}

	for name, f := range map[string][]byte{
		"unlisted code": func() []byte {
			c := NewRequestList(PullMessage, []string{"topic", "T"}, nil)
			c.SerializeType = SerializeRocketMQ
			b, _ := AppendFrame(nil, c)
			return b[4:]
		}(),
		"repeated key": sendFrame(t, []string{"a", "pg", "b", "T", "a", "pg2"}),
		"response": func() []byte {
			c := NewRequestList(SendMessageV2, []string{"a", "pg"}, nil)
			c.Flag = FlagResponse
			c.SerializeType = SerializeRocketMQ
			b, _ := AppendFrame(nil, c)
			return b[4:]
		}(),
	} {
		c, err := decodeFrame(f, codes, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c.ExtList != nil || c.ExtFields == nil {
			t.Fatalf("%s: decoded into a list", name)
		}
	}
	if c, _ := decodeFrame(sendFrame(t, []string{"a", "pg", "b", "T", "a", "pg2"}), codes, nil); c.Ext("a") != "pg2" {
		t.Fatalf("repeated key: last value wins as in the map decode, got %q", c.Ext("a"))
	}
}

// FuzzExtListDecode: for any frame, the list decode accepts exactly what
// the map decode accepts, and every field reads the same.
func FuzzExtListDecode(f *testing.F) {
	for _, s := range seedFrames(f) {
		if s[0] == 1 { // ROCKETMQ headers: make them listed requests
			s = bytes.Clone(s)
			binary.BigEndian.PutUint16(s[4:], uint16(SendMessageV2))
			f.Add(s)
		}
	}
	f.Add(sendFrame(f, AppendSendHeader(nil, &SendMessageRequestHeader{ProducerGroup: "g", Topic: "t"}, true)))
	codes := []int32{int32(SendMessageV2)}
	f.Fuzz(func(t *testing.T, frame []byte) {
		viaMap, merr := DecodeFrame(frame)
		viaList, lerr := decodeFrame(frame, codes, nil)
		if (merr == nil) != (lerr == nil) {
			t.Fatalf("map decode error %v, list decode error %v", merr, lerr)
		}
		if merr != nil {
			return
		}
		if viaList.ExtLen() != viaMap.ExtLen() || viaList.Code != viaMap.Code || viaList.Remark != viaMap.Remark ||
			!bytes.Equal(viaList.Body, viaMap.Body) {
			t.Fatalf("list decode %+v, map decode %+v", viaList, viaMap)
		}
		for k, v := range viaMap.ExtFields {
			if got := viaList.Ext(k); got != v {
				t.Fatalf("Ext(%q) = %q, want %q", k, got, v)
			}
		}
		var a, b SendMessageRequestHeader
		aerr, berr := DecodeSendHeader(viaMap.ExtFields, &a, true), DecodeSendHeaderOf(viaList, &b, true)
		if (aerr == nil) != (berr == nil) || a != b {
			t.Fatalf("send headers %+v (%v) vs %+v (%v)", a, aerr, b, berr)
		}
	})
}

// BenchmarkDecodeSendFrameList decodes the SDK's SEND_MESSAGE_V2 frame
// with its ext fields into ExtList (the broker's send path).
func BenchmarkDecodeSendFrameList(b *testing.B) {
	h := SendMessageRequestHeader{ProducerGroup: "pg", Topic: "BenchCPU", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
		QueueID: 2, BornTimestamp: 1700000000000,
		Properties: "TAGS\x01t\x02UNIQ_KEY\x01AC1100010000000000000000000000\x02WAIT\x01true\x02"}
	frame := sendFrame(b, AppendSendHeader(nil, &h, true))
	codes := []int32{int32(SendMessageV2)}
	b.ReportAllocs()
	for b.Loop() {
		c, err := decodeFrame(frame, codes, nil)
		if err != nil || len(c.ExtList) == 0 {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeSendHeaderOfList reads the send header out of the SDK's
// decoded frame (ExtList), as the broker's send processor does.
func BenchmarkDecodeSendHeaderOfList(b *testing.B) {
	h := SendMessageRequestHeader{ProducerGroup: "pg", Topic: "BenchCPU", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
		QueueID: 2, BornTimestamp: 1700000000000,
		Properties: "TAGS\x01t\x02UNIQ_KEY\x01AC1100010000000000000000000000\x02WAIT\x01true\x02"}
	c, err := decodeFrame(sendFrame(b, AppendSendHeader(nil, &h, true)), []int32{int32(SendMessageV2)}, nil)
	if err != nil || len(c.ExtList) == 0 {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		var got SendMessageRequestHeader
		if err := DecodeSendHeaderOf(c, &got, true); err != nil || got != h {
			b.Fatalf("%v %+v", err, got)
		}
	}
}

// sendResponseFrame is a SEND_MESSAGE response as the broker encodes it
// (ROCKETMQ header, ext map), without its length word.
func sendResponseFrame(t testing.TB, opaque int32, ext map[string]string) []byte {
	t.Helper()
	c := &Command{Code: int32(Success), Opaque: opaque, Flag: FlagResponse, ExtFields: ext, SerializeType: SerializeRocketMQ}
	b, err := AppendFrame(nil, c)
	if err != nil {
		t.Fatal(err)
	}
	return b[4:]
}

// TestExtListResponseDecode: a response whose opaque the listResp
// predicate accepts gets its ext fields in ExtList and reads the same
// through Ext; other opaques, requests and repeated keys keep the map.
func TestExtListResponseDecode(t *testing.T) {
	ext := map[string]string{"msgId": "0A00000100002A9F0000000000000064", "queueId": "2", "queueOffset": "17",
		"MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}
	want := func(op int32) bool { return op == 7 }
	c, err := decodeFrameResp(sendResponseFrame(t, 7, ext), nil, want, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.ExtFields != nil || c.ExtLen() != len(ext) || c.Opaque != 7 || !c.IsResponse() {
		t.Fatalf("list decode: %+v", c)
	}
	for k, v := range ext {
		if got := c.Ext(k); got != v {
			t.Fatalf("Ext(%q) = %q, want %q", k, got, v)
		}
	}
	for name, f := range map[string][]byte{
		"other opaque": sendResponseFrame(t, 8, ext),
		"request": func() []byte {
			r := NewRequest(SendMessageV2, map[string]string{"a": "b"}, nil)
			r.Opaque, r.SerializeType = 7, SerializeRocketMQ
			b, _ := AppendFrame(nil, r)
			return b[4:]
		}(),
	} {
		c, err := decodeFrameResp(f, nil, want, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c.ExtList != nil || c.ExtFields == nil {
			t.Fatalf("%s: decoded into a list", name)
		}
	}
}

// FuzzExtListResponseDecode: for any frame, decoding responses into
// ExtList accepts exactly what the map decode accepts, and every field
// reads the same.
func FuzzExtListResponseDecode(f *testing.F) {
	for _, s := range seedFrames(f) {
		if s[0] == 1 { // ROCKETMQ headers: make them responses
			s = bytes.Clone(s)
			binary.BigEndian.PutUint32(s[4+9:], binary.BigEndian.Uint32(s[4+9:])|uint32(FlagResponse))
			f.Add(s)
		}
	}
	f.Add(sendResponseFrame(f, 3, map[string]string{"msgId": "X", "queueId": "1", "queueOffset": "9", "TRACE_ON": "false"}))
	all := func(int32) bool { return true }
	f.Fuzz(func(t *testing.T, frame []byte) {
		frame = bytes.Clone(frame) // overwritten below
		viaMap, merr := DecodeFrame(frame)
		viaList, lerr := decodeFrameResp(frame, nil, all, nil, nil)
		if (merr == nil) != (lerr == nil) {
			t.Fatalf("map decode error %v, list decode error %v", merr, lerr)
		}
		if merr != nil {
			return
		}
		if viaList.ExtLen() != viaMap.ExtLen() || viaList.Code != viaMap.Code || viaList.Opaque != viaMap.Opaque ||
			viaList.Flag != viaMap.Flag || viaList.Remark != viaMap.Remark || !bytes.Equal(viaList.Body, viaMap.Body) {
			t.Fatalf("list decode %+v, map decode %+v", viaList, viaMap)
		}
		// The header's strings are copies: overwriting the frame (a
		// reader's buffer, reused for the next frame) changes none.
		for i := range frame {
			frame[i] ^= 0xa5
		}
		for k, v := range viaMap.ExtFields {
			if got := viaList.Ext(k); got != v {
				t.Fatalf("Ext(%q) = %q, want %q", k, got, v)
			}
		}
	})
}

// TestExtListResponseDecodeSizes: ext blocks shorter and longer than the
// room a listed response keeps for them decode the same, and their
// strings survive the frame's buffer being overwritten.
func TestExtListResponseDecodeSizes(t *testing.T) {
	fields := func(region string) map[string]string {
		return map[string]string{"msgId": "0A00000100002A9F0000000000000064", "queueId": "2", "queueOffset": "17",
			"MSG_REGION": region, "TRACE_ON": "true"}
	}
	base := 0 // the ext block's length with an empty region
	for k, v := range fields("") {
		base += 6 + len(k) + len(v)
	}
	for _, n := range []int{1, listedResponseStr - base - 1, listedResponseStr - base, listedResponseStr - base + 1, 400} {
		ext := fields(strings.Repeat("r", n)) // a block of base + n bytes
		frame := sendResponseFrame(t, 7, ext)
		c, err := decodeFrameResp(frame, nil, func(int32) bool { return true }, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range frame {
			frame[i] = 0
		}
		if c.ExtFields != nil || c.ExtLen() != len(ext) {
			t.Fatalf("n=%d: not a list decode: %+v", n, c)
		}
		for k, v := range ext {
			if got := c.Ext(k); got != v {
				t.Fatalf("n=%d: Ext(%q) = %q, want %q", n, k, got, v)
			}
		}
	}
}

// TestListedResponseSizeClass: a listed response, its list and its ext
// block's bytes stay one 640-byte allocation (on 64-bit platforms; with
// the 8-byte malloc header of objects over 512 bytes with pointers).
func TestListedResponseSizeClass(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("64-bit layout")
	}
	if n := unsafe.Sizeof(listedResponse{}) + 8; n > 640 {
		t.Fatalf("listedResponse takes %d bytes with its header, over its 640-byte size class", n)
	}
}

// TestListedResponseRecycled: a FrameReader hands out listed responses
// that Release gives back and a later Next decodes into again, each
// decode as good as a fresh one; responses never released and other
// frames are not recycled; Release twice is harmless.
func TestListedResponseRecycled(t *testing.T) {
	exts := []map[string]string{
		{"msgId": "0A00000100002A9F0000000000000064", "queueId": "2", "queueOffset": "17", "MSG_REGION": "R1", "TRACE_ON": "true"},
		{"msgId": "B", "queueId": "3"},
		{"msgId": strings.Repeat("x", 300), "queueOffset": "1"}, // longer than the response's own storage
		{"transactionId": "T", "queueId": "4", "queueOffset": "99", "batchUniqId": "U"},
	}
	var stream []byte
	for i := range 40 {
		stream = append(stream, sendResponseFrameWhole(t, int32(i), exts[i%len(exts)])...)
	}
	// A request among them: never a listed response.
	req := NewRequest(SendMessageV2, map[string]string{"a": "b"}, nil)
	req.SerializeType = SerializeRocketMQ
	stream, _ = AppendFrame(stream, req)
	fr := NewFrameReader(bytes.NewReader(stream), 0, 0)
	fr.SetExtListResponses(func(op int32) bool { return op%5 != 4 })
	seen := map[*Command]bool{}
	reused := 0
	for i := range 40 {
		c, err := fr.Next()
		if err != nil {
			t.Fatal(err)
		}
		if seen[c] {
			reused++
		}
		seen[c] = true
		want := exts[i%len(exts)]
		if c.Opaque != int32(i) || c.ExtLen() != len(want) || !c.IsResponse() {
			t.Fatalf("frame %d: %+v", i, c)
		}
		for k, v := range want {
			if got := c.Ext(k); got != v {
				t.Fatalf("frame %d: Ext(%q) = %q, want %q", i, k, got, v)
			}
		}
		listed := i%5 != 4
		if listed != (c.ExtFields == nil) {
			t.Fatalf("frame %d: listed %v, ExtFields %v", i, listed, c.ExtFields)
		}
		if i%3 != 2 { // the others are dropped, not released
			c.Release()
			if listed && (c.ExtList != nil || c.Opaque != 0) {
				t.Fatalf("frame %d: released response not cleared: %+v", i, c)
			}
			c.Release()
		}
	}
	if c, err := fr.Next(); err != nil || c.IsResponse() || c.ExtFields["a"] != "b" {
		t.Fatalf("request after the responses: %+v, %v", c, err)
	}
	if reused == 0 {
		t.Fatalf("no listed response was recycled")
	}
}

// sendResponseFrameWhole is sendResponseFrame with its length word.
func sendResponseFrameWhole(t testing.TB, opaque int32, ext map[string]string) []byte {
	t.Helper()
	c := &Command{Code: int32(Success), Opaque: opaque, Flag: FlagResponse, ExtFields: ext, SerializeType: SerializeRocketMQ}
	b, err := AppendFrame(nil, c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
