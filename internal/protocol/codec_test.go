package protocol

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
)

var update = flag.Bool("update", false, "rewrite testdata golden frames")

// unhex decodes a hex string with spaces and newlines.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// equalCommand compares commands treating a nil and an empty ext map alike.
func equalCommand(a, b *Command) bool {
	if a.Code != b.Code || a.Language != b.Language || a.Version != b.Version || a.Opaque != b.Opaque ||
		a.Flag != b.Flag || a.Remark != b.Remark || a.SerializeType != b.SerializeType ||
		!bytes.Equal(a.Body, b.Body) || len(a.ExtFields) != len(b.ExtFields) {
		return false
	}
	return maps.Equal(a.ExtFields, b.ExtFields)
}

// TestRocketMQHeaderWorkedExample checks the exact bytes of docs/protocol.md §1.5's
// worked example, in both directions.
func TestRocketMQHeaderWorkedExample(t *testing.T) {
	want := unhex(t, `00 00 00 2d  01 00 00 29
		00 69  09  01 3d  00 00 00 01  00 00 00 00
		00 00 00 00
		00 00 00 14
		00 05 74 6f 70 69 63  00 00 00 09 54 6f 70 69 63 54 65 73 74`)
	cmd := &Command{Code: 105, Language: LanguageGo, Version: 317, Opaque: 1,
		ExtFields: map[string]string{"topic": "TopicTest"}, SerializeType: SerializeRocketMQ}
	got, err := AppendFrame(nil, cmd)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encode:\n got %x\nwant %x", got, want)
	}
	dec, err := DecodeFrame(want[4:])
	if err != nil {
		t.Fatal(err)
	}
	if !equalCommand(dec, cmd) {
		t.Fatalf("decode: got %+v want %+v", dec, cmd)
	}
}

// TestJSONHeaderWorkedExample decodes docs/protocol.md §1.2's frame (Go client
// asking for the route of TopicTest, §1.4's sample request header).
func TestJSONHeaderWorkedExample(t *testing.T) {
	header := `{"code":105,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"TopicTest"}}`
	frame := append(unhex(t, "00 00 00 70 00 00 00 6c"), header...)
	if len(header) != 108 {
		t.Fatalf("header is %d bytes", len(header))
	}
	dec, err := DecodeFrame(frame[4:])
	if err != nil {
		t.Fatal(err)
	}
	want := &Command{Code: 105, Language: LanguageGo, Version: 317, Opaque: 1,
		ExtFields: map[string]string{"topic": "TopicTest"}}
	if !equalCommand(dec, want) {
		t.Fatalf("got %+v want %+v", dec, want)
	}
	// Our own encoding of the same command is compact, alphabetical and
	// decodes back to it.
	enc, err := AppendFrame(nil, want)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON := `{"code":105,"extFields":{"topic":"TopicTest"},"flag":0,"language":"GO","opaque":1,"remark":"","serializeTypeCurrentRPC":"JSON","version":317}`
	if got := string(enc[8:]); got != wantJSON {
		t.Fatalf("encode:\n got %s\nwant %s", got, wantJSON)
	}
	back, err := DecodeFrame(enc[4:])
	if err != nil || !equalCommand(back, want) {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
}

// TestJSONHeaderJavaPullResponse decodes the Java broker header of docs/protocol.md §1.4.
func TestJSONHeaderJavaPullResponse(t *testing.T) {
	h := `{"code":0,"extFields":{"groupSysFlag":"0","maxOffset":"100","minOffset":"0","nextBeginOffset":"32",` +
		`"suggestWhichBrokerId":"0","topicSysFlag":"0"},"flag":1,"language":"JAVA","opaque":42,` +
		`"remark":"FOUND","serializeTypeCurrentRPC":"JSON","version":479}`
	c := &Command{}
	if err := decodeJSONHeader([]byte(h), c); err != nil {
		t.Fatal(err)
	}
	want := &Command{Code: 0, Flag: 1, Language: LanguageJava, Opaque: 42, Remark: "FOUND", Version: 479,
		ExtFields: map[string]string{"groupSysFlag": "0", "maxOffset": "100", "minOffset": "0",
			"nextBeginOffset": "32", "suggestWhichBrokerId": "0", "topicSysFlag": "0"}}
	if !equalCommand(c, want) {
		t.Fatalf("got %+v want %+v", c, want)
	}
	if !c.IsResponse() || c.IsOneway() {
		t.Fatal("flag bits")
	}
}

// TestJSONHeaderLenient covers the parsing rules of docs/protocol.md §1.4.
func TestJSONHeaderLenient(t *testing.T) {
	tests := []struct {
		name   string
		header string
		want   Command
	}{
		{"any order, missing remark and extFields", `{"version":1,"opaque":7,"code":34,"flag":2,"language":"GO"}`,
			Command{Code: 34, Version: 1, Opaque: 7, Flag: 2, Language: LanguageGo}},
		{"nulls", `{"code":11,"remark":null,"extFields":null,"language":null,"opaque":null}`,
			Command{Code: 11}},
		{"null ext value dropped", `{"code":1,"extFields":{"a":null,"b":"x"}}`,
			Command{Code: 1, ExtFields: map[string]string{"b": "x"}}},
		{"unknown properties skipped", `{"x":{"y":[1,{"z":"}"}],"w":null},"code":5,"serializeTypeCurrentRPC":"JSON","t":true}`,
			Command{Code: 5}},
		{"language as number", `{"code":1,"language":9}`, Command{Code: 1, Language: LanguageGo}},
		{"unknown language name", `{"code":1,"language":"COBOL"}`, Command{Code: 1, Language: LanguageOther}},
		{"whitespace", " {\n \"code\" : 2 ,\t\"remark\" : \"a b\" } \n", Command{Code: 2, Remark: "a b"}},
		{"escapes", `{"code":1,"remark":"q\"\\\/\n\u00e9\ud83d\ude00\ud800x"}`,
			Command{Code: 1, Remark: "q\"\\/\né😀\uFFFDx"}},
		{"non-string ext values as text", `{"code":1,"extFields":{"n":12,"b":true}}`,
			Command{Code: 1, ExtFields: map[string]string{"n": "12", "b": "true"}}},
		{"quoted number", `{"code":"17","opaque":-3}`, Command{Code: 17, Opaque: -3}},
		{"pop code", `{"code":200050}`, Command{Code: 200050}},
		{"duplicate ext key: later wins", `{"extFields":{"k":"1","k":"2"}}`,
			Command{ExtFields: map[string]string{"k": "2"}}},
		{"empty object", `{}`, Command{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c Command
			if err := decodeJSONHeader([]byte(tc.header), &c); err != nil {
				t.Fatal(err)
			}
			if !equalCommand(&c, &tc.want) {
				t.Fatalf("got %+v want %+v", c, tc.want)
			}
		})
	}
}

func TestJSONHeaderRejects(t *testing.T) {
	for _, h := range []string{
		``, `[]`, `{`, `{"code":}`, `{"code":1.5}`, `{"code":99999999999}`, `{"code":1,}`,
		`{"code":1} x`, `{"extFields":[]}`, `{"remark":"abc`, `{"remark":"\x"}`, `{"remark":"\u12"}`,
		`{"language":"GO"`, `{code:1}`, `{"a":}`, `{"a":]}`,
	} {
		var c Command
		err := decodeJSONHeader([]byte(h), &c)
		if !errors.Is(err, ErrBadFrame) {
			t.Errorf("%q: got %v, want ErrBadFrame", h, err)
		}
	}
}

func TestRocketMQHeaderRejects(t *testing.T) {
	base := unhex(t, `00 69 09 01 3d 00 00 00 01 00 00 00 00 00 00 00 00 00 00 00 14
		00 05 74 6f 70 69 63 00 00 00 09 54 6f 70 69 63 54 65 73 74`)
	mut := func(off int, b ...byte) []byte {
		c := bytes.Clone(base)
		copy(c[off:], b)
		return c
	}
	tests := map[string][]byte{
		"short fixed part":         base[:20],
		"remark length too long":   mut(13, 0, 0, 0, 0x7f),
		"remark length negative":   mut(13, 0xff, 0xff, 0xff, 0xff),
		"ext length exceeds":       mut(17, 0, 0, 0, 0x15),
		"key length exceeds":       mut(21, 0, 0x20),
		"key length negative":      mut(21, 0x80, 0),
		"value length exceeds":     mut(28, 0, 0, 0, 0x0a),
		"truncated entry":          append(mut(17, 0, 0, 0, 0x15), 0),
		"truncated before ext len": base[:19],
	}
	for name, h := range tests {
		var c Command
		if err := decodeRocketMQHeader(h, &c); !errors.Is(err, ErrBadFrame) {
			t.Errorf("%s: got %v, want ErrBadFrame", name, err)
		}
	}
	var c Command
	if err := decodeRocketMQHeader(base, &c); err != nil || c.Ext("topic") != "TopicTest" {
		t.Fatalf("base: %v %+v", err, c)
	}
}

func TestDecodeFrameRejects(t *testing.T) {
	tests := map[string][]byte{
		"empty":                    {},
		"no header word":           {0, 0, 0},
		"header longer than frame": {0, 0, 0, 9, '{', '}'},
		"unknown serialize type":   {2, 0, 0, 2, '{', '}'},
		"bad JSON":                 {0, 0, 0, 1, '{'},
	}
	for name, f := range tests {
		if _, err := DecodeFrame(f); !errors.Is(err, ErrBadFrame) {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

func TestEncodeLimits(t *testing.T) {
	pop := &Command{Code: int32(PopMessage), SerializeType: SerializeRocketMQ}
	if _, err := AppendFrame(nil, pop); !errors.Is(err, ErrUnencodable) {
		t.Fatalf("POP code in ROCKETMQ header: %v", err)
	}
	pop.SerializeType = SerializeJSON
	b, err := AppendFrame(nil, pop)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := DecodeFrame(b[4:]); err != nil || c.Code != 200050 {
		t.Fatalf("POP code over JSON: %+v %v", c, err)
	}
	if _, err := AppendFrame(nil, &Command{SerializeType: 7}); !errors.Is(err, ErrUnencodable) {
		t.Fatalf("unknown serialize type: %v", err)
	}
}

// roundTripCases are commands that both encodings represent exactly.
func roundTripCases() map[string]*Command {
	return map[string]*Command{
		"request": NewRequest(SendMessage, map[string]string{"topic": "T", "queueId": "3", "properties": "a\x01b\x02"},
			[]byte("hello")),
		"response": {Code: int32(SystemBusy), Language: LanguageJava, Version: 479, Opaque: -5, Flag: FlagResponse,
			Remark: "[OVERLOAD]system busy, start flow control for a while"},
		"oneway":       {Code: 40, Flag: FlagOneway, ExtFields: map[string]string{"consumerGroup": "g"}},
		"unicode":      {Code: 1, Remark: "héllo \"q\" \\ \t\n\x00 日本", ExtFields: map[string]string{"ké\x1f": "vä\"l"}},
		"empty":        {},
		"odd language": {Code: 1, Language: 200},
		"many ext": func() *Command {
			c := &Command{Code: 1}
			for i := range 40 {
				c.SetExt(strings.Repeat("k", i+1), strings.Repeat("v", i))
			}
			return c
		}(),
		"big body": {Code: 10, Body: bytes.Repeat([]byte{0xAB}, 70000)},
	}
}

func TestRoundTripBothEncodings(t *testing.T) {
	for name, c := range roundTripCases() {
		for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
			t.Run(name+"/"+st.String(), func(t *testing.T) {
				c := *c
				c.SerializeType = st
				frame, err := AppendFrame([]byte("prefix"), &c)
				if err != nil {
					t.Fatal(err)
				}
				frame = frame[len("prefix"):]
				got, err := DecodeFrame(frame[4:])
				if err != nil {
					t.Fatal(err)
				}
				if !equalCommand(got, &c) {
					t.Fatalf("got %+v\nwant %+v", got, &c)
				}
			})
		}
	}
}

// TestGoldenFrames pins our encoder's exact bytes (testdata/*.hex,
// regenerate with -update).
func TestGoldenFrames(t *testing.T) {
	cases := roundTripCases()
	for _, name := range []string{"request", "response", "oneway", "unicode"} {
		for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
			c := *cases[name]
			c.SerializeType = st
			got, err := AppendFrame(nil, &c)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", name+"."+strings.ToLower(st.String())+".hex")
			if *update {
				if err := os.WriteFile(path, []byte(hex.Dump(got)), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if hex.Dump(got) != string(want) {
				t.Errorf("%s: got\n%s\nwant\n%s", path, hex.Dump(got), want)
			}
		}
	}
}

func TestFrameReader(t *testing.T) {
	var stream []byte
	var want []*Command
	for _, c := range roundTripCases() {
		for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
			c := *c
			c.SerializeType = st
			var err error
			if stream, err = AppendFrame(stream, &c); err != nil {
				t.Fatal(err)
			}
			want = append(want, &c)
		}
	}
	for _, mode := range []string{"whole", "one byte", "half"} {
		t.Run(mode, func(t *testing.T) {
			var r io.Reader = bytes.NewReader(stream)
			switch mode {
			case "one byte":
				r = iotest.OneByteReader(r)
			case "half":
				r = iotest.HalfReader(r)
			}
			fr := NewFrameReader(r, 0, 64)
			for i, w := range want {
				got, err := fr.Next()
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				if !equalCommand(got, w) {
					t.Fatalf("frame %d: got %+v want %+v", i, got, w)
				}
			}
			if _, err := fr.Next(); err != io.EOF {
				t.Fatalf("end: %v", err)
			}
		})
	}
}

func TestFrameReaderLimits(t *testing.T) {
	tests := []struct {
		name  string
		input []byte
		max   int
		want  error
	}{
		{"claims 2 GiB", []byte{0x80, 0, 0, 0, 0, 0, 0, 2}, 0, ErrFrameTooLarge},
		{"claims 4 GiB-1", []byte{0xff, 0xff, 0xff, 0xff}, 0, ErrFrameTooLarge},
		{"16 MiB", []byte{0x01, 0x00, 0x00, 0x00}, 0, ErrFrameTooLarge},
		{"over a small limit", []byte{0, 0, 0, 100}, 100, ErrFrameTooLarge},
		{"too short for header word", []byte{0, 0, 0, 3, 0, 0, 0}, 0, ErrBadFrame},
		{"truncated", []byte{0, 0, 0, 10, 0, 0, 0, 2, '{'}, 0, io.ErrUnexpectedEOF},
		{"truncated length", []byte{0, 0}, 0, io.ErrUnexpectedEOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewFrameReader(bytes.NewReader(tc.input), tc.max, 0).Next()
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v want %v", err, tc.want)
			}
		})
	}
	// The largest accepted L is limit-4 (docs/protocol.md §1.7): L = 16777212 passes
	// the check (and then fails only because the bytes are missing).
	_, err := NewFrameReader(bytes.NewReader([]byte{0x00, 0xff, 0xff, 0xfc}), 0, 0).Next()
	if err != io.ErrUnexpectedEOF {
		t.Fatalf("L=16777212: %v", err)
	}
	_, err = NewFrameReader(bytes.NewReader([]byte{0x00, 0xff, 0xff, 0xfd}), 0, 0).Next()
	if !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("L=16777213: %v", err)
	}
}

// TestFrameReaderLargeFrame reads a frame above eagerAlloc, which grows
// while it is read.
func TestFrameReaderLargeFrame(t *testing.T) {
	c := &Command{Code: 10, Body: bytes.Repeat([]byte("0123456789"), 300_000)}
	b, err := AppendFrame(nil, c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := NewFrameReader(iotest.HalfReader(bytes.NewReader(b)), 0, 0).Next()
	if err != nil || !equalCommand(got, c) {
		t.Fatalf("%v", err)
	}
}

// TestFrameReaderAllocationBounded: a peer claiming a huge frame costs at
// most what it sends (plus the 1 MiB eager buffer), never what it claims.
func TestFrameReaderAllocationBounded(t *testing.T) {
	tests := []struct {
		name  string
		claim uint32
		limit int
	}{
		{"2 GiB over the limit", 2 << 30, 0},
		{"16 MiB within the limit, 100 bytes sent", DefaultMaxFrameSize - 4, 0},
		{"64 MiB within a raised limit, 100 bytes sent", 64 << 20, 128 << 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			input := append(binary.BigEndian.AppendUint32(nil, tc.claim), make([]byte, 100)...)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := NewFrameReader(bytes.NewReader(input), tc.limit, 4096).Next()
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Fatal("truncated frame decoded")
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 2<<20 {
				t.Fatalf("allocated %d bytes for a frame claiming %d", grew, tc.claim)
			}
		})
	}
}
