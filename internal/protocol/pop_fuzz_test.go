package protocol

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzReceiptHandle: the receipt-handle and ExtraInfo parsers never panic,
// and whatever they accept re-encodes to a string they parse to the same
// value.
func FuzzReceiptHandle(f *testing.F) {
	for _, s := range []string{
		"0 1700000000000 30000 3 0 broker-a 1 5 4096", "0 1 2 999 2 b 0 5", "0 1 2 3 0 b 4",
		"0 1 2 3 0 b 4 5 6 7 8", "", " ", "-1 -1 -1 -1 1 x -1 -1 -1", "9223372036854775807 0 0 0 0 b 0 0 0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, parse := range []func(string) (ReceiptHandle, error){ParseReceiptHandle, ParseExtraInfo} {
			h, err := parse(s)
			if err != nil {
				continue
			}
			if strings.ContainsRune(h.BrokerName, ' ') {
				t.Fatalf("broker name %q holds a space", h.BrokerName)
			}
			back, err := ParseReceiptHandle(h.String())
			if err != nil || back != h {
				t.Fatalf("%q -> %+v -> %q -> %+v, %v", s, h, h.String(), back, err)
			}
			if h.QueueOffset >= 0 {
				e, err := ParseExtraInfo(h.ExtraInfo())
				if err != nil || e.CkQueueOffset != h.CkQueueOffset || e.QueueOffset != h.QueueOffset || e.CommitLogOffset != -1 {
					t.Fatalf("extra info %q -> %+v, %v", h.ExtraInfo(), e, err)
				}
			}
		}
	})
}

// FuzzPopOffsetInfo: the pop response's offset-info parsers never panic and
// accept what the appenders build from their results.
func FuzzPopOffsetInfo(f *testing.F) {
	for _, s := range []string{"0 0 100;2 0 7", "0 0 100,101,103;2 0 7", "0 1 2;0 qo1%55 3", "", ";", "0 qo%1 2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if m, err := ParseStartOffsetInfo(s); err == nil {
			var b []byte
			for k, v := range m {
				b = AppendStartOffsetInfo(b, k.TopicType, k.QueueID, v)
			}
			if back, err := ParseStartOffsetInfo(string(b)); err != nil || !reflect.DeepEqual(back, m) {
				t.Fatalf("start %q: %v -> %q -> %v %v", s, m, b, back, err)
			}
		}
		if m, err := ParseMsgOffsetInfo(s); err == nil {
			var b []byte
			for k, v := range m {
				b = AppendMsgOffsetInfo(b, k.TopicType, k.QueueID, v)
			}
			if back, err := ParseMsgOffsetInfo(string(b)); err != nil || !reflect.DeepEqual(back, m) {
				t.Fatalf("msg %q: %v -> %q -> %v %v", s, m, b, back, err)
			}
		}
		if m, err := ParseOrderCountInfo(s); err == nil {
			var b []byte
			for k, v := range m {
				b = AppendOrderCountInfo(b, k.TopicType, k.QueueID, k.Offset, v)
			}
			if back, err := ParseOrderCountInfo(string(b)); err != nil || !reflect.DeepEqual(back, m) {
				t.Fatalf("order %q: %v -> %q -> %v %v", s, m, b, back, err)
			}
		}
	})
}

// FuzzRecallHandle: the recall-handle decoder never panics, and a handle
// built from what it accepted decodes to the same value.
func FuzzRecallHandle(f *testing.F) {
	f.Add(EncodeRecallHandle(RecallHandle{"T", "broker-a", 1700000005000, "7F00000100"}))
	f.Add("djEgVCBiIDEgbQ==")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseRecallHandle(s)
		if err != nil {
			return
		}
		if strings.ContainsRune(h.Topic, ' ') || strings.ContainsRune(h.BrokerName, ' ') || strings.ContainsRune(h.MessageID, ' ') {
			return // fields with spaces cannot round-trip; RocketMQ never builds them
		}
		back, err := ParseRecallHandle(EncodeRecallHandle(h))
		if err != nil || back != h {
			t.Fatalf("%q -> %+v -> %+v %v", s, h, back, err)
		}
	})
}

// FuzzBatchAckBody: the BATCH_ACK_MESSAGE body decoder never panics, its
// offsets stay inside the bit-set bound, and re-encoding keeps the value.
func FuzzBatchAckBody(f *testing.F) {
	f.Add([]byte(`{"brokerName":"b","acks":[{"c":"G","t":"T","r":"0","so":100,"q":1,"rq":2,"pt":5,"it":6,"b":"CQQ="}]}`))
	f.Add([]byte(`{"acks":[{"consumerGroup":"G","startOffset":9223372036854775807,"bitSet":"/w=="}]}`))
	f.Add([]byte(`{"acks":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		body, err := DecodeBatchAckBody(b)
		if err != nil {
			return
		}
		for i := range body.Acks {
			offs, err := body.Acks[i].Offsets()
			if err != nil {
				continue
			}
			if len(offs) > maxBatchAckBits {
				t.Fatalf("%d offsets", len(offs))
			}
			for j := 1; j < len(offs); j++ {
				if offs[j] <= offs[j-1] {
					t.Fatalf("offsets not ascending: %v", offs)
				}
			}
		}
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeBatchAckBody(raw)
		if err != nil {
			t.Fatalf("re-decode %s: %v", raw, err)
		}
		if len(back.Acks) != len(body.Acks) || back.BrokerName != body.BrokerName {
			t.Fatalf("%+v != %+v", back, body)
		}
		for i := range back.Acks {
			x, y := back.Acks[i], body.Acks[i]
			if len(x.BitSet) == 0 && len(y.BitSet) == 0 {
				x.BitSet, y.BitSet = nil, nil
			}
			if !reflect.DeepEqual(x, y) {
				t.Fatalf("ack %d: %+v != %+v", i, x, y)
			}
		}
	})
}

// FuzzPopHeaders: the POP header decoders never panic and accept what they
// encode.
func FuzzPopHeaders(f *testing.F) {
	f.Add("G", "T", "-1", "32", "60000", "0 1 2 3 0 b 0 5", "true")
	f.Add("", "", "x", "", "-", "", "")
	f.Fuzz(func(t *testing.T, group, topic, queue, num, it, extra, order string) {
		ext := map[string]string{"consumerGroup": group, "topic": topic, "queueId": queue, "maxMsgNums": num,
			"invisibleTime": it, "pollTime": num, "bornTime": it, "initMode": queue, "extraInfo": extra,
			"offset": num, "order": order, "recallHandle": extra, "pollingNum": num, "hasMsg": order}
		for _, h := range []any{&PopMessageRequestHeader{}, &AckMessageRequestHeader{},
			&ChangeInvisibleTimeRequestHeader{}, &PeekMessageRequestHeader{}, &NotificationRequestHeader{},
			&PollingInfoRequestHeader{}, &RecallMessageRequestHeader{}, &PopMessageResponseHeader{},
			&ChangeInvisibleTimeResponseHeader{}, &NotificationResponseHeader{}, &PollingInfoResponseHeader{}} {
			if err := DecodeHeader(ext, h, false); err != nil {
				continue
			}
			again := reflect.New(reflect.TypeOf(h).Elem()).Interface()
			if err := DecodeHeader(EncodeHeader(h, false), again, false); err != nil || !reflect.DeepEqual(again, h) {
				t.Fatalf("%T: %+v -> %+v, %v", h, h, again, err)
			}
		}
	})
}
