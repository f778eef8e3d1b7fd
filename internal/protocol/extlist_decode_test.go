package protocol

import (
	"bytes"
	"encoding/binary"
	"testing"
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
	c, err := decodeFrameResp(sendResponseFrame(t, 7, ext), nil, want, nil)
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
		c, err := decodeFrameResp(f, nil, want, nil)
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
		viaMap, merr := DecodeFrame(frame)
		viaList, lerr := decodeFrameResp(frame, nil, all, nil)
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
		for k, v := range viaMap.ExtFields {
			if got := viaList.Ext(k); got != v {
				t.Fatalf("Ext(%q) = %q, want %q", k, got, v)
			}
		}
	})
}
