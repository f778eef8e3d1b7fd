package protocol

import (
	"encoding/json"
	"testing"
)

// benchCommand is a typical send request: a V1 send header with its fields.
func benchCommand(st SerializeType) *Command {
	c := NewRequest(SendMessage, map[string]string{
		"producerGroup": "please_rename_unique_group_name", "topic": "TopicTest", "defaultTopic": "TBW102",
		"defaultTopicQueueNums": "4", "queueId": "3", "sysFlag": "0", "bornTimestamp": "1764400000000",
		"flag": "0", "properties": "UNIQ_KEY\x017F0000010001B4AAC2A2D4D0D40000\x02WAIT\x01true\x02",
		"reconsumeTimes": "0", "unitMode": "false", "batch": "false", "bname": "broker-a",
	}, make([]byte, 1024))
	c.Opaque = 12345
	c.SerializeType = st
	return c
}

func BenchmarkAppendFrameHeader(b *testing.B) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		b.Run(st.String(), func(b *testing.B) {
			c := benchCommand(st)
			benchAppendFrameHeader(b, c)
		})
		b.Run(st.String()+"-ExtList", func(b *testing.B) {
			benchAppendFrameHeader(b, listCommand(st))
		})
	}
}

func benchAppendFrameHeader(b *testing.B, c *Command) {
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendFrameHeader(buf[:0], c); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}

// BenchmarkDecodeResponseHeader: a JSON response header without ext fields
// (the remoting echo benchmarks' frames).
func BenchmarkDecodeResponseHeader(b *testing.B) {
	c := &Command{Code: 0, Opaque: 123456, Flag: FlagResponse, Language: LanguageGo, Version: 475,
		SerializeType: SerializeJSON}
	raw := appendJSONHeader(nil, c)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		var d Command
		if err := decodeJSONHeader(raw, &d); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeFrame(b *testing.B) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		b.Run(st.String(), func(b *testing.B) {
			frame, err := AppendFrame(nil, benchCommand(st))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DecodeFrame(frame[4:]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// stdHeader is the JSON header as encoding/json would see it: the baseline
// the hand-written codec is measured against.
type stdHeader struct {
	Code                    int32             `json:"code"`
	ExtFields               map[string]string `json:"extFields,omitempty"`
	Flag                    int32             `json:"flag"`
	Language                string            `json:"language"`
	Opaque                  int32             `json:"opaque"`
	Remark                  string            `json:"remark,omitempty"`
	SerializeTypeCurrentRPC string            `json:"serializeTypeCurrentRPC"`
	Version                 int32             `json:"version"`
}

func BenchmarkJSONHeaderBaseline(b *testing.B) {
	c := benchCommand(SerializeJSON)
	h := stdHeader{Code: c.Code, ExtFields: c.ExtFields, Language: "GO", Opaque: c.Opaque,
		SerializeTypeCurrentRPC: "JSON", Version: c.Version}
	b.Run("ours/encode", func(b *testing.B) {
		buf := make([]byte, 0, 1024)
		b.ReportAllocs()
		for b.Loop() {
			buf = appendJSONHeader(buf[:0], c)
		}
	})
	b.Run("encoding-json/encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(&h); err != nil {
				b.Fatal(err)
			}
		}
	})
	raw := appendJSONHeader(nil, c)
	b.Run("ours/decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var d Command
			if err := decodeJSONHeader(raw, &d); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json/decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var d stdHeader
			if err := json.Unmarshal(raw, &d); err != nil {
				b.Fatal(err)
			}
		}
	})
}
