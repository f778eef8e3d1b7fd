package proxy

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
)

// FuzzParseHandle: any string either parses into a handle whose string form
// parses back to the same handle, or is refused with a business status;
// never a panic.
func FuzzParseHandle(f *testing.F) {
	f.Add("0 1700000000000 60000 0 0 broker-a 1 5 1234")
	f.Add("12 1700000000000 30000 999 2 broker-b 0 12 -1")
	f.Add("1 2 3")
	f.Add("")
	f.Add("0 1 2 3 9 b 1 1 1")
	now := time.UnixMilli(1600000000000)
	f.Fuzz(func(t *testing.T, s string) {
		h, err := parseHandle(s, now)
		if err != nil {
			if toStatus(err).Code == 0 {
				t.Fatalf("%q: error without a status: %v", s, err)
			}
			return
		}
		again, err := protocol.ParseReceiptHandle(h.String())
		if err != nil || again != h {
			t.Fatalf("%q: round trip %+v -> %q -> %+v, %v", s, h, h.String(), again, err)
		}
	})
}

// FuzzDeliveredMessage: whatever stored records a broker returns, their
// delivered form encodes (valid UTF-8 everywhere) and carries the body and
// an uppercase MD5 digest; never a panic.
func FuzzDeliveredMessage(f *testing.F) {
	ext := &message.Ext{Message: message.Message{Topic: "T", Body: []byte("hello"),
		Properties: map[string]string{"TAGS": "a", "KEYS": "k1 k2", "UNIQ_KEY": "ID", "user": "v", "__SHARDINGKEY": "g"}},
		BornTimestamp: 1700000000000, StoreTimestamp: 1700000000001, ReconsumeTimes: 2}
	rec, err := message.AppendStored(nil, ext)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(rec, "0 1 2 3 0 b 1 1 1")
	ext.Properties["bad"] = "\xff\xfe"
	rec2, _ := message.AppendStored(nil, ext)
	f.Add(rec2, "")
	f.Fuzz(func(t *testing.T, data []byte, handle string) {
		msgs, err := message.DecodeStoredAll(data, message.DecodeOptions{Decompress: true, MaxDecompressedSize: 1 << 20})
		if err != nil {
			return
		}
		for _, m := range msgs {
			pm := deliveredMessage(m, handle)
			if _, err := proto.Marshal(pm); err != nil {
				t.Fatalf("delivered form does not encode: %v", err)
			}
			if string(pm.Body) != string(m.Body) || pm.SystemProperties.BodyDigest.Checksum != md5Upper(m.Body) {
				t.Fatal("body or digest differs")
			}
			if pm.SystemProperties.GetDeliveryAttempt() != m.ReconsumeTimes+1 {
				t.Fatal("delivery attempt is not reconsume times + 1")
			}
		}
	})
}
