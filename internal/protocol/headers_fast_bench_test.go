package protocol

import (
	"testing"
)

// BenchmarkSendHeaderPath is the protocol work a broker does per send,
// apart from the frame decode: read the SEND_MESSAGE_V2 header into its
// struct, build the response header and encode the response frame. The
// baseline is the generic way (reflect decode, EncodeHeader map, sorted map
// encoding); typed is DecodeSendHeader, AppendSendResponseHeader and an
// ext list. Run with
//
//	go test -run '^$' -bench SendHeaderPath -count 3 ./internal/protocol
func BenchmarkSendHeaderPath(b *testing.B) {
	h := SendMessageRequestHeader{ProducerGroup: "please_rename_unique_group_name", Topic: "TopicTest",
		DefaultTopic: "TBW102", DefaultTopicQueueNums: 4, QueueID: 3, BornTimestamp: 1764400000000,
		Properties: "UNIQ_KEY\x017F0000010001B4AAC2A2D4D0D40000\x02WAIT\x01true\x02", BrokerName: "broker-a"}
	req := NewRequestList(SendMessageV2, AppendHeader(nil, &h, true), make([]byte, 1024))
	req.SerializeType = SerializeRocketMQ
	frame, err := AppendFrame(nil, req)
	if err != nil {
		b.Fatal(err)
	}
	dec, err := DecodeFrame(frame[4:])
	if err != nil {
		b.Fatal(err)
	}
	rh := SendMessageResponseHeader{MsgID: "7F0000010001B4AAC2A2D4D0D40000", QueueID: 3, QueueOffset: 123456,
		MsgRegion: "DefaultRegion", TraceOn: "true"}
	buf := make([]byte, 0, 512)
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var got SendMessageRequestHeader
			if err := decodeHeaderReflect(dec.ExtFields, &got, true); err != nil {
				b.Fatal(err)
			}
			resp := NewResponse(dec, Success, "")
			resp.ExtFields = EncodeHeader(&rh, false)
			if buf, err = AppendFrame(buf[:0], resp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("typed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var got SendMessageRequestHeader
			if err := DecodeSendHeader(dec.ExtFields, &got, true); err != nil {
				b.Fatal(err)
			}
			resp := NewResponse(dec, Success, "")
			resp.ExtList = AppendSendResponseHeader(nil, &rh)
			if buf, err = AppendFrame(buf[:0], resp); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPullHeaderPath is BenchmarkSendHeaderPath for PULL_MESSAGE: read
// the pull header, build and encode the response (without its body).
func BenchmarkPullHeaderPath(b *testing.B) {
	h := PullMessageRequestHeader{ConsumerGroup: "cg", Topic: "TopicTest", QueueID: 1, QueueOffset: 123456,
		MaxMsgNums: 32, SysFlag: PullFlagSubscription | PullFlagSuspend, SuspendTimeoutMillis: 20000,
		Subscription: "*", ExpressionType: "TAG", BrokerName: "broker-a"}
	req := NewRequestList(PullMessage, AppendHeader(nil, &h, false), nil)
	req.SerializeType = SerializeRocketMQ
	frame, err := AppendFrame(nil, req)
	if err != nil {
		b.Fatal(err)
	}
	dec, err := DecodeFrame(frame[4:])
	if err != nil {
		b.Fatal(err)
	}
	rh := PullMessageResponseHeader{NextBeginOffset: 123488, MinOffset: 0, MaxOffset: 200000}
	buf := make([]byte, 0, 512)
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var got PullMessageRequestHeader
			if err := decodeHeaderReflect(dec.ExtFields, &got, false); err != nil {
				b.Fatal(err)
			}
			resp := NewResponse(dec, Success, "FOUND")
			resp.ExtFields = EncodeHeader(&rh, false)
			if buf, err = AppendFrame(buf[:0], resp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("typed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var got PullMessageRequestHeader
			if err := DecodePullHeader(dec.ExtFields, &got); err != nil {
				b.Fatal(err)
			}
			resp := NewResponse(dec, Success, "FOUND")
			resp.ExtList = AppendPullResponseHeader(nil, &rh)
			if buf, err = AppendFrame(buf[:0], resp); err != nil {
				b.Fatal(err)
			}
		}
	})
}
