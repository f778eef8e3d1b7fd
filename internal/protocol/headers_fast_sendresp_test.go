package protocol

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"testing"
)

// sendResponseFrames encodes the same send response three ways: with the
// header as AppendSendResponseHeader's ExtList, as a SendResponseExt with
// the id in the header, and as one with the id in MsgID's bytes.
func sendResponseFrames(t *testing.T, h SendMessageResponseHeader, remark string, opaque int32) (plain, inHeader, inBytes []byte) {
	t.Helper()
	c := Command{Code: int32(Success), Language: LanguageGo, Version: CurrentVersion, Opaque: opaque,
		Flag: FlagResponse, Remark: remark, ExtList: AppendSendResponseHeader(nil, &h), SerializeType: SerializeRocketMQ}
	var err error
	if plain, err = AppendFrame([]byte("prefix"), &c); err != nil {
		t.Fatal(err)
	}
	c.ExtList = nil
	c.ExtEncoder = &SendResponseExt{Header: h}
	if inHeader, err = AppendFrame([]byte("prefix"), &c); err != nil {
		t.Fatal(err)
	}
	byID := h
	byID.MsgID = "ignored"
	c.ExtEncoder = &SendResponseExt{Header: byID, MsgID: []byte(h.MsgID)}
	if h.MsgID == "" {
		c.ExtEncoder = &SendResponseExt{Header: h, MsgID: []byte{}}
	}
	if inBytes, err = AppendFrame([]byte("prefix"), &c); err != nil {
		t.Fatal(err)
	}
	return plain, inHeader, inBytes
}

// TestSendResponseExtMatchesList: the direct encoding of a send response
// header gives the frame bytes of the ExtList one, whichever fields are
// set, and decodes back to the header.
func TestSendResponseExtMatchesList(t *testing.T) {
	headers := []SendMessageResponseHeader{
		{MsgID: "AC11000100002A9F0000000000001234", QueueID: 3, QueueOffset: 123456, MsgRegion: "DefaultRegion", TraceOn: "true"},
		{MsgID: "AC11000100002A9F0000000000001234", QueueID: 0, QueueOffset: 0, TransactionID: "AC1100010000000000000000000000",
			MsgRegion: "DefaultRegion", TraceOn: "false"},
		{MsgID: "A,B,C", QueueID: 1, QueueOffset: 9, BatchUniqID: "U", RecallHandle: "handle"},
		{},
		{QueueID: math.MinInt32, QueueOffset: math.MinInt64},
		{MsgID: "00000000000000000000000000000001000000000000000000000001", QueueID: math.MaxInt32, QueueOffset: math.MaxInt64,
			TransactionID: "t", BatchUniqID: "b", MsgRegion: "r", TraceOn: "x", RecallHandle: string(make([]byte, 70000))},
	}
	for i, h := range headers {
		for _, remark := range []string{"", "some remark"} {
			t.Run(fmt.Sprintf("%d/remark=%q", i, remark), func(t *testing.T) {
				plain, inHeader, inBytes := sendResponseFrames(t, h, remark, int32(i))
				if !bytes.Equal(plain, inHeader) || !bytes.Equal(plain, inBytes) {
					t.Fatalf("frames differ\n    plain %x\nin header %x\n in bytes %x", plain, inHeader, inBytes)
				}
				c, err := DecodeFrame(inBytes[len("prefix")+4:])
				if err != nil {
					t.Fatal(err)
				}
				var got SendMessageResponseHeader
				if err := DecodeHeader(c.ExtFields, &got, false); err != nil {
					t.Fatal(err)
				}
				if got != h {
					t.Fatalf("decoded %+v\nwant    %+v", got, h)
				}
			})
		}
	}
}

// TestSendResponseExtJSON: a JSON response cannot carry the encoder (the
// broker keeps the list for JSON).
func TestSendResponseExtJSON(t *testing.T) {
	c := Command{Code: int32(Success), Flag: FlagResponse, ExtEncoder: &SendResponseExt{}, SerializeType: SerializeJSON}
	if _, err := AppendFrameHeader([]byte("x"), &c); !errors.Is(err, ErrUnencodable) {
		t.Fatalf("err = %v, want ErrUnencodable", err)
	}
}

// FuzzSendResponseExtMatchesList: for any send response header, the
// encoder and the ext list give the same frame bytes.
func FuzzSendResponseExtMatchesList(f *testing.F) {
	f.Add("AC11000100002A9F0000000000001234", int32(3), int64(123456), "", "", "DefaultRegion", "true", "", "")
	f.Add("", int32(-1), int64(-1), "tx", "batch", "", "", "h", "remark")
	f.Fuzz(func(t *testing.T, id string, q int32, off int64, tx, batch, region, trace, recall, remark string) {
		h := SendMessageResponseHeader{MsgID: id, QueueID: q, QueueOffset: off, TransactionID: tx, BatchUniqID: batch,
			MsgRegion: region, TraceOn: trace, RecallHandle: recall}
		plain, inHeader, inBytes := sendResponseFrames(t, h, remark, q)
		if !bytes.Equal(plain, inHeader) || !bytes.Equal(plain, inBytes) {
			t.Fatalf("frames differ for %+v\n    plain %x\nin header %x\n in bytes %x", h, plain, inHeader, inBytes)
		}
	})
}
