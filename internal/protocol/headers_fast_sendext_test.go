package protocol

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"testing"
)

// sendHeaderFrames encodes the same send request twice: with the header as
// AppendSendHeader's ExtList (maxReconsumeTimes deleted when omit is set,
// as the producers do) and with it as a SendHeaderExt.
func sendHeaderFrames(h *SendMessageRequestHeader, v2, omit bool, code int32, opaque int32, body []byte) (plain, fast []byte, plainErr, fastErr error) {
	list := AppendSendHeader(nil, h, v2)
	if omit {
		list = DeleteExt(list, SendHeaderMaxReconsumeTimesKey(v2))
	}
	c := Command{Code: code, Language: LanguageGo, Version: CurrentVersion, Opaque: opaque,
		ExtList: list, Body: body, SerializeType: SerializeRocketMQ}
	plain, plainErr = AppendFrame([]byte("prefix"), &c)
	c.ExtList = nil
	c.ExtEncoder = &SendHeaderExt{Header: *h, V2: v2, OmitMaxReconsumeTimes: omit}
	fast, fastErr = AppendFrame([]byte("prefix"), &c)
	return plain, fast, plainErr, fastErr
}

// TestSendHeaderExtMatchesList: the direct encoding of a send header gives
// the frame bytes of the ExtList one, for V1 and V2 keys, with and without
// maxReconsumeTimes, and the broker's decoder reads the header back.
func TestSendHeaderExtMatchesList(t *testing.T) {
	headers := []SendMessageRequestHeader{
		{ProducerGroup: "pg", Topic: "T", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
			QueueID: 3, SysFlag: 0x301, BornTimestamp: 1764400000000, Flag: 7, Properties: "TAGS\x01a\x02UNIQ_KEY\x01AC11\x02",
			ReconsumeTimes: 3, UnitMode: true, MaxReconsumeTimes: 16, Batch: true, BrokerName: "broker-a"},
		{},
		{QueueID: -1, SysFlag: math.MinInt32, BornTimestamp: math.MinInt64, Flag: math.MaxInt32,
			ReconsumeTimes: -7, MaxReconsumeTimes: math.MaxInt32, DefaultTopicQueueNums: math.MinInt32},
		{ProducerGroup: "%RETRY%g", Topic: "ns%T", BornTimestamp: math.MaxInt64, Properties: string(make([]byte, 70000))},
	}
	for i, h := range headers {
		for _, v2 := range []bool{false, true} {
			for _, omit := range []bool{false, true} {
				t.Run(fmt.Sprintf("%d/v2=%v/omit=%v", i, v2, omit), func(t *testing.T) {
					plain, fast, perr, ferr := sendHeaderFrames(&h, v2, omit, int32(SendMessageV2), 42, []byte("body"))
					if perr != nil || ferr != nil {
						t.Fatalf("errors: plain %v, fast %v", perr, ferr)
					}
					if !bytes.Equal(plain, fast) {
						t.Fatalf("frames differ\nplain %x\n fast %x", plain, fast)
					}
					c, err := DecodeFrame(fast[len("prefix")+4:])
					if err != nil {
						t.Fatal(err)
					}
					var got SendMessageRequestHeader
					if err := DecodeSendHeader(c.ExtFields, &got, v2); err != nil {
						t.Fatal(err)
					}
					want := h
					if omit {
						want.MaxReconsumeTimes = 0
					}
					if got != want {
						t.Fatalf("decoded %+v\nwant    %+v", got, want)
					}
				})
			}
		}
	}
}

// TestSendHeaderExtJSON: a JSON command cannot carry encoded ext fields.
func TestSendHeaderExtJSON(t *testing.T) {
	c := Command{Code: int32(SendMessageV2), ExtEncoder: &SendHeaderExt{V2: true}, SerializeType: SerializeJSON}
	if _, err := AppendFrameHeader([]byte("x"), &c); !errors.Is(err, ErrUnencodable) {
		t.Fatalf("err = %v, want ErrUnencodable", err)
	}
}

// FuzzSendHeaderExtMatchesList holds SendHeaderExt to the ExtList encoding
// of AppendSendHeader, byte for byte, errors included.
func FuzzSendHeaderExtMatchesList(f *testing.F) {
	f.Add("pg", "T", "TBW102", int32(4), int32(3), int32(0), int64(1764400000000), int32(0), "UNIQ_KEY\x01AC11\x02",
		int32(0), false, int32(0), false, "broker-a", true, true, int32(310), int32(1), []byte("body"))
	f.Add("", "", "", int32(-1), int32(-1), int32(-1), int64(-1), int32(-1), "", int32(-1), true, int32(-1), true, "",
		false, false, int32(40000), int32(-5), []byte(nil))
	f.Fuzz(func(t *testing.T, group, topic, defTopic string, queueNums, queueID, sysFlag int32, born int64, flag int32,
		props string, reconsume int32, unit bool, maxReconsume int32, batch bool, bname string, v2, omit bool,
		code, opaque int32, body []byte) {
		h := SendMessageRequestHeader{ProducerGroup: group, Topic: topic, DefaultTopic: defTopic,
			DefaultTopicQueueNums: queueNums, QueueID: queueID, SysFlag: sysFlag, BornTimestamp: born, Flag: flag,
			Properties: props, ReconsumeTimes: reconsume, UnitMode: unit, MaxReconsumeTimes: maxReconsume,
			Batch: batch, BrokerName: bname}
		plain, fast, perr, ferr := sendHeaderFrames(&h, v2, omit, code, opaque, body)
		if (perr == nil) != (ferr == nil) {
			t.Fatalf("errors: plain %v, fast %v", perr, ferr)
		}
		if !bytes.Equal(plain, fast) {
			t.Fatalf("frames differ\nplain %x\n fast %x", plain, fast)
		}
	})
}
