package protocol

import (
	"encoding/json"
	"reflect"
	"testing"
)

// slowBatchAck is DecodeBatchAckBody without the fast path.
func slowBatchAck(b []byte) (*BatchAckMessageRequestBody, error) {
	var body BatchAckMessageRequestBody
	err := json.Unmarshal(b, &body)
	return &body, err
}

var batchAckFastCases = []struct {
	in   string
	fast bool // the fast path takes it
}{
	{`{"brokerName":"b","acks":[{"c":"G","t":"T","r":"0","so":100,"q":1,"rq":2,"pt":5,"it":6,"b":"CQQ="}]}`, true},
	{` { "acks" : [ { "consumerGroup":"G", "startOffset":9223372036854775807, "bitSet":"/w==" } , {"q":-3} ] } `, true},
	{`{"acks":[{"consumerGroup":"L","c":"S","popTime":1,"pt":2}]}`, true}, // short names win either way
	{`{"acks":[{"c":"S","consumerGroup":"L"}]}`, true},
	{`{"acks":[]}`, true},
	{`{}`, true},
	{`{"acks":null}`, false},
	{`{"acks":[{"C":"G"}]}`, false},                  // case-folded name: encoding/json's rules
	{`{"acks":[{"c":"G\u0041"}]}`, false},            // escapes
	{`{"acks":[{"so":1.0}]}`, false},                 // not an integer
	{`{"acks":[{"so":"1"}]}`, false},                 // quoted number
	{`{"acks":[{"q":4294967296}]}`, false},           // out of int32
	{`{"acks":[{"so":9223372036854775808}]}`, false}, // out of int64
	{`{"acks":[{"c":"a","c":"b"}]}`, false},          // duplicate key
	{`{"acks":[{"b":"CQ"}]}`, false},                 // bad base64
	{`{"x":1}`, false},
	{`{"brokerName":"b"} x`, false},
}

func TestBatchAckFastMatchesJSON(t *testing.T) {
	for _, tc := range batchAckFastCases {
		fast, ok := decodeBatchAckFast([]byte(tc.in))
		if ok != tc.fast {
			t.Errorf("%s: fast path took it %v, want %v", tc.in, ok, tc.fast)
			continue
		}
		slow, err := slowBatchAck([]byte(tc.in))
		if ok && (err != nil || !reflect.DeepEqual(fast, slow)) {
			t.Errorf("%s: fast %+v, json %+v %v", tc.in, fast, slow, err)
		}
		if via, err2 := DecodeBatchAckBody([]byte(tc.in)); (err == nil) != (err2 == nil) || err == nil && !reflect.DeepEqual(via, slow) {
			t.Errorf("%s: DecodeBatchAckBody %+v %v, json %+v %v", tc.in, via, err2, slow, err)
		}
	}
}

// FuzzBatchAckFast: whatever the fast decoder accepts, encoding/json
// decodes to the same value.
func FuzzBatchAckFast(f *testing.F) {
	for _, tc := range batchAckFastCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, ok := decodeBatchAckFast(b)
		if !ok {
			return
		}
		slow, err := slowBatchAck(b)
		if err != nil || !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: fast %+v, json %+v %v", b, fast, slow, err)
		}
	})
}

func BenchmarkDecodeBatchAckBody(b *testing.B) {
	in := []byte(batchAckFastCases[0].in)
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			if _, err := DecodeBatchAckBody(in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		for b.Loop() {
			if _, err := slowBatchAck(in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestAppendBatchAckBody: the hand-written encoder's output decodes (both
// ways) to what encoding/json's does, for plain and escaped names.
func TestAppendBatchAckBody(t *testing.T) {
	for _, body := range []BatchAckMessageRequestBody{
		{BrokerName: "b", Acks: []BatchAck{{ConsumerGroup: "G", Topic: "T", Retry: "0", StartOffset: 9, QueueID: -1,
			ReviveQueueID: 3, PopTime: 1 << 40, InvisibleTime: 60000, BitSet: []byte{9, 4}}, {Topic: "%RETRY%G+T"}}},
		{BrokerName: "quote\"d", Acks: []BatchAck{{ConsumerGroup: "ü\n", BitSet: []byte{}}}},
		{},
		{Acks: []BatchAck{}},
	} {
		got, err := AppendBatchAckBody(nil, &body)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(&body)
		a, err1 := DecodeBatchAckBody(got)
		b, err2 := slowBatchAck(want)
		if err1 != nil || err2 != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("%s -> %+v %v\n%s -> %+v %v", got, a, err1, want, b, err2)
		}
		if c, err := slowBatchAck(got); err != nil || !reflect.DeepEqual(c, b) {
			t.Fatalf("encoding/json reads %s as %+v %v", got, c, err)
		}
	}
}

func BenchmarkAppendBatchAckBody(b *testing.B) {
	body := BatchAckMessageRequestBody{BrokerName: "broker-a", Acks: []BatchAck{{ConsumerGroup: "GID", Topic: "TopicTest",
		Retry: "0", StartOffset: 1000, QueueID: 1, ReviveQueueID: 2, PopTime: 1700000000000, InvisibleTime: 60000, BitSet: []byte{255, 255, 255, 255}}}}
	var buf []byte
	for b.Loop() {
		buf, _ = AppendBatchAckBody(buf[:0], &body)
	}
}
