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

// templated encodes h as a SendHeaderExt with template t (the client's
// recycled requests keep one from send to send).
func templated(t *SendHeaderTemplate, h *SendMessageRequestHeader, v2, omit bool, code, opaque int32, body []byte) ([]byte, error) {
	c := Command{Code: code, Language: LanguageGo, Version: CurrentVersion, Opaque: opaque, Body: body,
		SerializeType: SerializeRocketMQ, ExtEncoder: &SendHeaderExt{Header: *h, V2: v2, OmitMaxReconsumeTimes: omit, Template: t}}
	return AppendFrame([]byte("prefix"), &c)
}

// TestSendHeaderTemplate: one template used for a sequence of headers
// (each change after the base header, so a shared field the template
// failed to compare would show), gives every frame the bytes of the plain
// encoding.
func TestSendHeaderTemplate(t *testing.T) {
	base := SendMessageRequestHeader{ProducerGroup: "pg", Topic: "T", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
		QueueID: 3, BornTimestamp: 1764400000000, Properties: "UNIQ_KEY\x01AC11\x02", MaxReconsumeTimes: 16, BrokerName: "broker-a"}
	seq := []func(h *SendMessageRequestHeader){
		func(h *SendMessageRequestHeader) {},
		func(h *SendMessageRequestHeader) {
			h.QueueID, h.BornTimestamp, h.Properties = 1, 1764400000001, "TAGS\x01x\x02"
		},
		func(h *SendMessageRequestHeader) { h.BrokerName = "broker-b" },
		func(h *SendMessageRequestHeader) { h.Topic = "U" },
		func(h *SendMessageRequestHeader) { h.SysFlag = 4 },
		func(h *SendMessageRequestHeader) { h.Flag = 9 },
		func(h *SendMessageRequestHeader) { h.ReconsumeTimes = 2 },
		func(h *SendMessageRequestHeader) { h.MaxReconsumeTimes = 3 },
		func(h *SendMessageRequestHeader) { h.UnitMode = true },
		func(h *SendMessageRequestHeader) { h.Batch = true },
		func(h *SendMessageRequestHeader) { h.ProducerGroup = "g2" },
		func(h *SendMessageRequestHeader) { h.DefaultTopic = "" },
		func(h *SendMessageRequestHeader) { h.DefaultTopicQueueNums = 8 },
		func(h *SendMessageRequestHeader) { h.Properties = string(make([]byte, 70000)) },
	}
	var tmpl SendHeaderTemplate
	for _, v2 := range []bool{true, false} {
		for _, omit := range []bool{false, true, false} {
			for i, change := range seq {
				h := base
				for round := range 2 { // the base header, then the one changed from it
					if round == 1 {
						change(&h)
					}
					plain, _, perr, _ := sendHeaderFrames(&h, v2, omit, int32(SendMessageV2), int32(i), []byte("b"))
					got, err := templated(&tmpl, &h, v2, omit, int32(SendMessageV2), int32(i), []byte("b"))
					if perr != nil || err != nil {
						t.Fatalf("v2=%v omit=%v step %d/%d: errors plain %v, templated %v", v2, omit, i, round, perr, err)
					}
					if !bytes.Equal(plain, got) {
						t.Fatalf("v2=%v omit=%v step %d/%d: frames differ\nplain     %x\ntemplated %x", v2, omit, i, round, plain, got)
					}
				}
			}
		}
	}
}

// FuzzSendHeaderTemplate: a template built for one header and reused for
// another (every shared field possibly different) and back gives the
// plain encoding's bytes each time.
func FuzzSendHeaderTemplate(f *testing.F) {
	f.Add("pg", "T", "broker-a", int32(0), int32(0), int32(0), int32(0), false, false, "pg", "T", "broker-a", int32(0), int32(0), false, true, false)
	f.Add("pg", "T", "broker-a", int32(1), int32(2), int32(3), int32(4), true, true, "g", "U", "b", int32(5), int32(6), true, false, true)
	f.Fuzz(func(t *testing.T, group, topic, bname string, sysFlag, flag, reconsume, maxReconsume int32, unit, batch bool,
		group2, topic2, bname2 string, sysFlag2, flag2 int32, unit2, v2, omit bool) {
		h1 := SendMessageRequestHeader{ProducerGroup: group, Topic: topic, DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
			QueueID: 1, SysFlag: sysFlag, BornTimestamp: 5, Flag: flag, Properties: "p", ReconsumeTimes: reconsume,
			UnitMode: unit, MaxReconsumeTimes: maxReconsume, Batch: batch, BrokerName: bname}
		h2 := h1
		h2.ProducerGroup, h2.Topic, h2.BrokerName, h2.SysFlag, h2.Flag, h2.UnitMode = group2, topic2, bname2, sysFlag2, flag2, unit2
		h2.QueueID, h2.BornTimestamp, h2.Properties = 2, 6, "q"
		var tmpl SendHeaderTemplate
		for i, h := range []*SendMessageRequestHeader{&h1, &h2, &h1, &h1} {
			plain, _, perr, _ := sendHeaderFrames(h, v2, omit, int32(SendMessageV2), 7, nil)
			got, err := templated(&tmpl, h, v2, omit, int32(SendMessageV2), 7, nil)
			if (perr == nil) != (err == nil) {
				t.Fatalf("step %d: errors plain %v, templated %v", i, perr, err)
			}
			if !bytes.Equal(plain, got) {
				t.Fatalf("step %d: frames differ\nplain     %x\ntemplated %x", i, plain, got)
			}
		}
	})
}
