package message_test

import (
	"bytes"
	"flag"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/apogeemq/apogee/internal/message"
)

// These tests check our encodings against the official Go client's
// decoders and encoders (docs/protocol.md §6): what a Go consumer sees in a pull
// body, and what a Go producer sends in a batch.

func TestOfficialGoClientDecodesOurStoredRecords(t *testing.T) {
	compressed, err := message.Compress(bytes.Repeat([]byte("compressible "), 400), 5)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		mutate    func(m *message.Ext)
		wantBody  []byte
		bornHost  string
		storeHost string
	}{
		{"plain ipv4", func(*message.Ext) {}, []byte("hello world"), "10.1.2.3:50000", "127.0.0.1:10911"},
		{"zlib body as the go producer flags it", func(m *message.Ext) {
			m.Body, m.SysFlag = compressed, message.SysFlagCompressed
		}, bytes.Repeat([]byte("compressible "), 400), "10.1.2.3:50000", "127.0.0.1:10911"},
		{"ipv6 hosts", func(m *message.Ext) {
			m.BornHost = netip.MustParseAddrPort("[2001:db8::1]:50000")
			m.StoreHost = netip.MustParseAddrPort("[2001:db8::2]:10911")
		}, []byte("hello world"), "2001:db8::1:50000", "2001:db8::2:10911"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var body []byte
			var want []*message.Ext
			for i := range 3 {
				m := &message.Ext{
					Message: message.Message{Topic: "TopicTest", Flag: 3, Body: []byte("hello world"),
						Properties: map[string]string{"TAGS": "TagA", "KEYS": "k1 k2", "custom": "v"}},
					QueueID: 2, QueueOffset: int64(100 + i), CommitLogOffset: int64(4096 * i),
					BornTimestamp: 1700000000000, StoreTimestamp: 1700000000500 + int64(i),
					BornHost:  netip.MustParseAddrPort("10.1.2.3:50000"),
					StoreHost: netip.MustParseAddrPort("127.0.0.1:10911"), ReconsumeTimes: 2,
				}
				if i == 1 {
					m.SetUniqKey("C0A8010A12340BADF00D0A8588C00001")
				}
				tc.mutate(m)
				if body, err = message.AppendStored(body, m); err != nil {
					t.Fatal(err)
				}
				want = append(want, m)
			}
			got := primitive.DecodeMessage(body)
			if len(got) != len(want) {
				t.Fatalf("official client decoded %d messages, want %d", len(got), len(want))
			}
			for i, g := range got {
				w := want[i]
				if g.Topic != w.Topic || g.Flag != w.Flag || g.QueueOffset != w.QueueOffset ||
					g.CommitLogOffset != w.CommitLogOffset || g.StoreTimestamp != w.StoreTimestamp ||
					g.BornTimestamp != w.BornTimestamp || g.ReconsumeTimes != w.ReconsumeTimes || g.Queue.QueueId != 2 {
					t.Errorf("message %d scalars: %+v", i, g)
				}
				if !bytes.Equal(g.Body, tc.wantBody) {
					t.Errorf("message %d body: %d bytes, want %d", i, len(g.Body), len(tc.wantBody))
				}
				if g.BornHost != tc.bornHost || g.StoreHost != tc.storeHost {
					t.Errorf("message %d hosts %s %s, want %s %s", i, g.BornHost, g.StoreHost, tc.bornHost, tc.storeHost)
				}
				if g.OffsetMsgId != w.OffsetMsgID() || g.MsgId != w.MsgID() {
					t.Errorf("message %d ids %s %s, want %s %s", i, g.OffsetMsgId, g.MsgId, w.OffsetMsgID(), w.MsgID())
				}
				if uint32(g.BodyCRC) != message.BodyCRC(w.Body) {
					t.Errorf("message %d body crc %#x", i, g.BodyCRC)
				}
				if !maps.Equal(g.GetProperties(), w.Properties) {
					t.Errorf("message %d properties %q, want %q", i, g.GetProperties(), w.Properties)
				}
			}
		})
	}
}

func TestOfficialGoClientBatchDecodes(t *testing.T) {
	var official []*primitive.Message
	for i := range 5 {
		m := primitive.NewMessage("TopicTest", []byte(strings.Repeat("b", i*3)))
		m.WithTag("TagB")
		m.WithKeys([]string{"key", "other"})
		m.Flag = int32(i)
		official = append(official, m)
	}
	body := producer.MarshalMessageBatch(official...)
	msgs, err := message.DecodeBatch(body)
	if err != nil || len(msgs) != len(official) {
		t.Fatalf("DecodeBatch: %d, %v", len(msgs), err)
	}
	var ours []message.Message
	for i, m := range msgs {
		o := official[i]
		if m.Flag != o.Flag || !bytes.Equal(m.Body, o.Body) || !maps.Equal(m.Properties, o.GetProperties()) {
			t.Errorf("item %d: %+v, want flag %d body %q props %q", i, m, o.Flag, o.Body, o.GetProperties())
		}
		ours = append(ours, message.Message{Flag: o.Flag, Body: o.Body, Properties: o.GetProperties()})
	}
	// Our encoder matches theirs byte for byte when there is at most one
	// property (theirs follows map order).
	for i := range ours {
		single := ours[i]
		single.Properties = map[string]string{"TAGS": "TagB"}
		o := primitive.NewMessage("TopicTest", single.Body)
		o.WithTag("TagB")
		o.Flag = single.Flag
		if got, want := message.EncodeBatch([]message.Message{single}), o.Marshal(); !bytes.Equal(got, want) {
			t.Errorf("item %d: ours %X, official %X", i, got, want)
		}
	}
}

func TestOfficialGoClientProperties(t *testing.T) {
	props := map[string]string{"TAGS": "a", "KEYS": "x y", "UNIQ_KEY": "ABC", "中": "文"}
	var m primitive.Message
	m.UnmarshalProperties([]byte(message.EncodeProperties(props)))
	if !maps.Equal(m.GetProperties(), props) {
		t.Errorf("official client parsed %q, want %q", m.GetProperties(), props)
	}
	m2 := primitive.NewMessage("t", nil)
	m2.WithProperties(props)
	if got := message.DecodeProperties(m2.MarshallProperties()); !maps.Equal(got, props) {
		t.Errorf("we parsed %q, want %q", got, props)
	}
}

func TestOfficialGoClientIDs(t *testing.T) {
	host := netip.MustParseAddrPort("192.168.7.9:10911")
	ip := host.Addr().As4()
	if got, want := message.OffsetMsgID(host, 123456789), primitive.CreateMessageId(ip[:], 10911, 123456789); got != want {
		t.Errorf("OffsetMsgID = %s, official %s", got, want)
	}
	id, err := primitive.UnmarshalMsgID([]byte(message.OffsetMsgID(host, 42)))
	if err != nil || id.Addr != "192.168.7.9" || id.Port != 10911 || id.Offset != 42 {
		t.Errorf("official UnmarshalMsgID = %+v, %v", id, err)
	}

	// The Go client's unique ids (mixed case, seconds resolution) parse,
	// and carry its pid and a time near now.
	before := time.Now()
	u, err := message.ParseUniqID(primitive.CreateUniqID())
	if err != nil {
		t.Fatal(err)
	}
	if u.PID != uint16(os.Getpid()) {
		t.Errorf("pid = %d, want %d", u.PID, uint16(os.Getpid()))
	}
	if d := before.Sub(u.Time(time.Now().Add(time.Second))); d < -2*time.Second || d > 2*time.Second {
		t.Errorf("embedded time off by %v", d)
	}
}

// TestOfficialClientFuzzSeeds writes inputs made by the official Go client
// into the fuzz corpora under -update, and otherwise checks they are there
// (go test runs them as seeds of FuzzDecodeBatch / FuzzDecodeProperties).
func TestOfficialClientFuzzSeeds(t *testing.T) {
	m1 := primitive.NewMessage("TopicTest", []byte("batched body one"))
	m1.WithTag("TagA")
	m1.WithKeys([]string{"k1", "k2"})
	m2 := primitive.NewMessage("TopicTest", nil)
	m2.WithProperty("custom", "value")
	seeds := []struct {
		fuzz, name, kind string
		data             []byte
	}{
		{"FuzzDecodeBatch", "official_go_client_batch", "[]byte", producer.MarshalMessageBatch(m1, m2)},
		{"FuzzDecodeProperties", "official_go_client_properties", "string", []byte(m1.MarshallProperties())},
	}
	for _, s := range seeds {
		path := filepath.Join("testdata", "fuzz", s.fuzz, s.name)
		content := "go test fuzz v1\n" + s.kind + "(" + strconv.Quote(string(s.data)) + ")\n"
		if f := flag.Lookup("update"); f != nil && f.Value.String() == "true" {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if _, err := os.Stat(path); err != nil {
			t.Errorf("missing fuzz seed %s (run with -update): %v", path, err)
		}
	}
}
