package message

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"maps"
	"net/netip"
	"strings"
	"testing"
)

// unhex decodes hex with spaces and newlines for readability.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sampleExt() *Ext {
	return &Ext{
		Message: Message{
			Topic:      "TopicTest",
			Flag:       7,
			Body:       []byte("Hello"),
			Properties: map[string]string{"TAGS": "TagA"},
		},
		QueueID:         3,
		QueueOffset:     42,
		CommitLogOffset: 0x1000,
		BornTimestamp:   1700000000000,
		BornHost:        netip.MustParseAddrPort("192.168.0.10:54321"),
		StoreTimestamp:  1700000000123,
		StoreHost:       netip.MustParseAddrPort("127.0.0.1:10911"),
		ReconsumeTimes:  1,
	}
}

// sampleRecord is sampleExt written field by field from the layout table of
// docs/storage.md §2.3 (V1, IPv4 hosts): 91 + 5 + 9 + 10 = 115 bytes.
const sampleRecord = `
	00000073                  TOTALSIZE 115
	DAA320A7                  MAGICCODE V1
	77D18982                  BODYCRC crc32("Hello") & 0x7FFFFFFF
	00000003                  QUEUEID
	00000007                  FLAG
	000000000000002A          QUEUEOFFSET 42
	0000000000001000          PHYSICALOFFSET
	00000000                  SYSFLAG
	0000018BCFE56800          BORNTIMESTAMP 1700000000000
	C0A8000A 0000D431         BORNHOST 192.168.0.10:54321
	0000018BCFE5687B          STORETIMESTAMP 1700000000123
	7F000001 00002A9F         STOREHOST 127.0.0.1:10911
	00000001                  RECONSUMETIMES
	0000000000000000          PREPAREDTXOFFSET
	00000005 48656C6C6F       BODY "Hello"
	09 546F70696354657374     TOPIC "TopicTest"
	000A 54414753 01 54616741 02   PROPERTIES TAGS=TagA
`

// stripComments keeps only the leading hex words of each line.
func stripComments(s string) string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		for _, w := range strings.Fields(line) {
			if _, err := hex.DecodeString(w); err != nil || len(w)%2 != 0 {
				break
			}
			out = append(out, w)
		}
	}
	return strings.Join(out, "")
}

func TestStoredRecordMatchesLayoutTable(t *testing.T) {
	want := unhex(t, stripComments(sampleRecord))
	if len(want) != 115 {
		t.Fatalf("vector is %d bytes, want 115", len(want))
	}
	m := sampleExt()
	got, err := AppendStored(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("AppendStored:\n got %X\nwant %X", got, want)
	}
	if StoredSize(m) != len(want) {
		t.Errorf("StoredSize = %d, want %d", StoredSize(m), len(want))
	}

	dec, n, err := DecodeStored(want, DecodeOptions{VerifyCRC: true})
	if err != nil || n != len(want) {
		t.Fatalf("DecodeStored: n=%d err=%v", n, err)
	}
	m.StoreSize = 115
	m.BodyCRC = 0x77D18982
	assertExtEqual(t, dec, m)
	if dec.MsgID() != "7F00000100002A9F0000000000001000" {
		t.Errorf("MsgID = %s", dec.MsgID())
	}
}

func assertExtEqual(t *testing.T, got, want *Ext) {
	t.Helper()
	gotProps, wantProps := got.Properties, want.Properties
	g, w := scalarFields(got), scalarFields(want)
	if g != w {
		t.Errorf("ext mismatch:\n got %+v\nwant %+v", g, w)
	}
	if !bytes.Equal(got.Body, want.Body) {
		t.Errorf("body = %q, want %q", got.Body, want.Body)
	}
	if len(gotProps) != len(wantProps) || !maps.Equal(gotProps, wantProps) {
		t.Errorf("properties = %v, want %v", gotProps, wantProps)
	}
}

type extScalars struct {
	Topic                     string
	Flag                      int32
	StoreSize, QueueID        int32
	SysFlag                   int32
	BornTimestamp             int64
	BornHost                  netip.AddrPort
	StoreTimestamp            int64
	StoreHost                 netip.AddrPort
	QueueOffset               int64
	CommitLogOffset           int64
	BodyCRC                   uint32
	ReconsumeTimes            int32
	PreparedTransactionOffset int64
}

func scalarFields(m *Ext) extScalars {
	return extScalars{m.Topic, m.Flag, m.StoreSize, m.QueueID, m.SysFlag, m.BornTimestamp, m.BornHost,
		m.StoreTimestamp, m.StoreHost, m.QueueOffset, m.CommitLogOffset, m.BodyCRC, m.ReconsumeTimes,
		m.PreparedTransactionOffset}
}

func TestStoredRoundTripVariants(t *testing.T) {
	v6a := netip.MustParseAddrPort("[2001:db8::1]:40000")
	v6b := netip.MustParseAddrPort("[fe80::abcd:1]:10911")
	long := "%RETRY%" + strings.Repeat("g", 193) // 200 bytes
	tests := []struct {
		name       string
		mutate     func(m *Ext)
		wantMagic  uint32
		wantSize   int
		wantSysBit int32
	}{
		{"v1 ipv4", func(*Ext) {}, MagicV1, 115, 0},
		{"born ipv6", func(m *Ext) { m.BornHost = v6a }, MagicV1, 127, SysFlagBornHostV6},
		{"store ipv6", func(m *Ext) { m.StoreHost = v6b }, MagicV1, 127, SysFlagStoreHostV6},
		{"both ipv6", func(m *Ext) { m.BornHost, m.StoreHost = v6a, v6b }, MagicV1, 139, SysFlagBornHostV6 | SysFlagStoreHostV6},
		{"ipv4-mapped written as ipv4", func(m *Ext) {
			m.BornHost = netip.MustParseAddrPort("[::ffff:192.168.0.10]:54321")
		}, MagicV1, 115, 0},
		{"v2 topic 200 bytes", func(m *Ext) { m.Topic = long }, MagicV2, 115 - 9 + 200 + 1, 0},
		{"topic 127 bytes stays v1", func(m *Ext) { m.Topic = strings.Repeat("t", 127) }, MagicV1, 115 - 9 + 127, 0},
		{"topic 128 bytes is v2", func(m *Ext) { m.Topic = strings.Repeat("t", 128) }, MagicV2, 115 - 9 + 128 + 1, 0},
		{"empty body and properties", func(m *Ext) { m.Body, m.Properties = nil, nil }, MagicV1, 91 + 9, 0},
		{"many properties", func(m *Ext) {
			for i := range 40 {
				m.SetProperty("k"+strings.Repeat("x", i), "v")
			}
		}, MagicV1, 0, 0},
		{"negative and extreme fields", func(m *Ext) {
			m.QueueID, m.Flag, m.ReconsumeTimes = -1, -2147483648, 2147483647
			m.QueueOffset, m.CommitLogOffset, m.PreparedTransactionOffset = -1, 1<<62, 77
			m.SysFlag = SysFlagTransactionCommitType | SysFlagMultiTags
		}, MagicV1, 115, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := sampleExt()
			tc.mutate(m)
			b, err := AppendStored([]byte("prefix"), m)
			if err != nil {
				t.Fatal(err)
			}
			rec := b[len("prefix"):]
			if tc.wantSize != 0 && len(rec) != tc.wantSize {
				t.Errorf("size = %d, want %d", len(rec), tc.wantSize)
			}
			if len(rec) != StoredSize(m) {
				t.Errorf("StoredSize = %d, encoded %d", StoredSize(m), len(rec))
			}
			if got := binary.BigEndian.Uint32(rec[OffsetMagic:]); got != tc.wantMagic {
				t.Errorf("magic = %#x, want %#x", got, tc.wantMagic)
			}
			dec, n, err := DecodeStored(rec, DecodeOptions{VerifyCRC: true})
			if err != nil || n != len(rec) {
				t.Fatalf("decode: n=%d err=%v", n, err)
			}
			if dec.SysFlag&(SysFlagBornHostV6|SysFlagStoreHostV6) != tc.wantSysBit {
				t.Errorf("sysflag = %#x, want host bits %#x", dec.SysFlag, tc.wantSysBit)
			}
			want := *m
			want.StoreSize = int32(len(rec))
			want.BodyCRC = BodyCRC(m.Body)
			want.SysFlag = HostSysFlag(m.SysFlag, m.BornHost, m.StoreHost)
			want.BornHost = netip.AddrPortFrom(m.BornHost.Addr().Unmap(), m.BornHost.Port())
			if want.Properties == nil {
				want.Properties = map[string]string{}
			}
			assertExtEqual(t, dec, &want)
			// The stored timestamp and store host sit where the helpers say.
			if got := int64(binary.BigEndian.Uint64(rec[StoreTimestampOffset(dec.SysFlag):])); got != m.StoreTimestamp {
				t.Errorf("store timestamp at helper offset = %d", got)
			}
			if got := int32(binary.BigEndian.Uint32(rec[BodyLengthOffset(dec.SysFlag):])); int(got) != len(m.Body) {
				t.Errorf("body length at helper offset = %d", got)
			}
		})
	}
}

func TestStoredPatchInPlace(t *testing.T) {
	for _, born := range []string{"10.1.2.3:5", "[2001:db8::7]:5"} {
		m := sampleExt()
		m.BornHost = netip.MustParseAddrPort(born)
		rec, err := AppendStored(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		SetQueueOffset(rec, 99)
		SetPhysicalOffset(rec, 123456789)
		SetStoreTimestamp(rec, 1800000000000)
		dec, _, err := DecodeStored(rec, DecodeOptions{VerifyCRC: true})
		if err != nil {
			t.Fatal(err)
		}
		if dec.QueueOffset != 99 || dec.CommitLogOffset != 123456789 || dec.StoreTimestamp != 1800000000000 {
			t.Errorf("%s: patched fields = %d %d %d", born, dec.QueueOffset, dec.CommitLogOffset, dec.StoreTimestamp)
		}
		if dec.StoreHost != m.StoreHost || dec.ReconsumeTimes != m.ReconsumeTimes {
			t.Errorf("%s: patch clobbered neighbours: %v %d", born, dec.StoreHost, dec.ReconsumeTimes)
		}
	}
}

func TestStoredRawProperties(t *testing.T) {
	m := sampleExt()
	raw := "TAGS\x01TagA\x02"
	a, err := AppendStoredRawProperties(nil, m, raw)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := AppendStored(nil, m)
	if !bytes.Equal(a, b) {
		t.Errorf("raw-properties record differs:\n%X\n%X", a, b)
	}
}

func TestStoredKeepsGivenBodyCRC(t *testing.T) {
	m := sampleExt()
	m.BodyCRC = 0x1234
	rec, _ := AppendStored(nil, m)
	if _, _, err := DecodeStored(rec, DecodeOptions{VerifyCRC: true}); !errors.Is(err, ErrBadCRC) {
		t.Fatalf("err = %v, want ErrBadCRC", err)
	}
	dec, _, err := DecodeStored(rec, DecodeOptions{})
	if err != nil || dec.BodyCRC != 0x1234 {
		t.Fatalf("without VerifyCRC: %v %#x", err, dec.BodyCRC)
	}
}

func TestStoredCompressedBody(t *testing.T) {
	plain := bytes.Repeat([]byte("compress me please "), 300)
	z, err := Compress(plain, 5)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		sysFlag   int32
		opt       DecodeOptions
		wantBody  []byte
		wantFlag  int32
		wantError error
	}{
		{"go client flag", SysFlagCompressed, DecodeOptions{Decompress: true}, plain, 0, nil},
		{"java zlib flag", SysFlagCompressed | SysFlagCompressionZLIB, DecodeOptions{Decompress: true}, plain, SysFlagCompressionZLIB, nil},
		{"kept compressed without option", SysFlagCompressed, DecodeOptions{}, z, SysFlagCompressed, nil},
		{"lz4 flag on a zlib body stays compressed", SysFlagCompressed | SysFlagCompressionLZ4, DecodeOptions{Decompress: true}, z, SysFlagCompressed | SysFlagCompressionLZ4, nil},
		{"bomb limit leaves compressed", SysFlagCompressed, DecodeOptions{Decompress: true, MaxDecompressedSize: 100}, z, SysFlagCompressed, nil},
		{"crc is over the compressed bytes", SysFlagCompressed, DecodeOptions{Decompress: true, VerifyCRC: true}, plain, 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := sampleExt()
			m.Body, m.SysFlag = z, tc.sysFlag
			rec, err := AppendStored(nil, m)
			if err != nil {
				t.Fatal(err)
			}
			dec, _, err := DecodeStored(rec, tc.opt)
			if !errors.Is(err, tc.wantError) {
				t.Fatalf("err = %v", err)
			}
			if !bytes.Equal(dec.Body, tc.wantBody) {
				t.Errorf("body is %d bytes, want %d", len(dec.Body), len(tc.wantBody))
			}
			if dec.SysFlag != tc.wantFlag {
				t.Errorf("sysflag = %#x, want %#x", dec.SysFlag, tc.wantFlag)
			}
		})
	}
}

func TestDecodeStoredErrors(t *testing.T) {
	good, _ := AppendStored(nil, sampleExt())
	patch := func(off int, v uint32) []byte {
		b := bytes.Clone(good)
		binary.BigEndian.PutUint32(b[off:], v)
		return b
	}
	bodyLenAt := BodyLengthOffset(0)
	tests := []struct {
		name  string
		in    []byte
		want  error
		wantN int
	}{
		{"empty", nil, ErrShortBuffer, 0},
		{"7 bytes", good[:7], ErrShortBuffer, 0},
		{"torn tail", good[:len(good)-1], ErrShortBuffer, 0},
		{"header only", good[:8], ErrShortBuffer, 0},
		{"zeroed", make([]byte, 200), ErrBadMagic, 0},
		{"bad magic", patch(OffsetMagic, 0xDEADBEEF), ErrBadMagic, 0},
		{"blank", AppendBlank(nil, 4096), ErrBlank, 4096},
		{"blank too small", AppendBlank(nil, 4), ErrCorrupt, 0},
		{"total below minimum", patch(OffsetTotalSize, 90), ErrCorrupt, 0},
		{"negative total", patch(OffsetTotalSize, 0xFFFFFFFF), ErrCorrupt, 0},
		{"total larger than fields", append(patch(OffsetTotalSize, uint32(len(good)+1)), 0), ErrCorrupt, 0},
		{"total smaller than fields", patch(OffsetTotalSize, uint32(len(good)-1)), ErrCorrupt, 0},
		{"body length negative", patch(bodyLenAt, 0x80000000), ErrCorrupt, 0},
		{"body length huge", patch(bodyLenAt, 0x7FFFFFFF), ErrCorrupt, 0},
		{"ipv6 flags make fixed part too long", patch(OffsetSysFlag, SysFlagBornHostV6|SysFlagStoreHostV6), ErrCorrupt, 0},
		{"bad crc", patch(OffsetBodyCRC, 1), ErrBadCRC, 0},
		{"port out of range", patch(OffsetBornHost+4, 0x10000), ErrCorrupt, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, n, err := DecodeStored(tc.in, DecodeOptions{VerifyCRC: true})
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if m != nil {
				t.Errorf("message returned with error")
			}
			if tc.wantN != 0 && n != tc.wantN {
				t.Errorf("n = %d, want %d", n, tc.wantN)
			}
			if errors.Is(err, ErrBlank) && errors.Is(err, ErrBadMagic) {
				t.Errorf("blank must not read as bad magic")
			}
		})
	}
}

func TestDecodeStoredAll(t *testing.T) {
	var body []byte
	var want []*Ext
	for i := range 5 {
		m := sampleExt()
		m.QueueOffset = int64(i)
		m.Body = bytes.Repeat([]byte{byte('a' + i)}, i*10)
		var err error
		if body, err = AppendStored(body, m); err != nil {
			t.Fatal(err)
		}
		want = append(want, m)
	}
	got, err := DecodeStoredAll(body, DecodeOptions{VerifyCRC: true})
	if err != nil || len(got) != 5 {
		t.Fatalf("got %d messages, err %v", len(got), err)
	}
	for i, m := range got {
		if m.QueueOffset != int64(i) || !bytes.Equal(m.Body, want[i].Body) {
			t.Errorf("message %d: offset %d body %q", i, m.QueueOffset, m.Body)
		}
	}
	// The result must not alias the input.
	clear(body)
	if got[4].Body[0] != 'e' {
		t.Errorf("body aliases the input")
	}

	body, _ = AppendStored(nil, sampleExt())
	body = append(body, 1, 2, 3)
	got, err = DecodeStoredAll(body, DecodeOptions{})
	if len(got) != 1 || !errors.Is(err, ErrShortBuffer) {
		t.Errorf("trailing garbage: %d messages, err %v", len(got), err)
	}
}

func TestAppendStoredLimits(t *testing.T) {
	m := sampleExt()
	m.SetProperty("big", strings.Repeat("x", MaxPropertiesSize))
	before := []byte("keep")
	out, err := AppendStored(before, m)
	if !errors.Is(err, ErrPropertiesTooLarge) || string(out) != "keep" {
		t.Fatalf("err = %v, out %q", err, out)
	}
	m = sampleExt()
	m.Topic = strings.Repeat("t", MaxTopicSize+1)
	if _, err := AppendStored(nil, m); !errors.Is(err, ErrTopicTooLong) {
		t.Fatalf("err = %v, want ErrTopicTooLong", err)
	}

	const maxMsg = 4 << 20
	tests := []struct {
		name                         string
		body, topic, props, recorded int
		want                         error
	}{
		{"ok", maxMsg, 10, 100, maxMsg + 300, nil},
		{"body too large", maxMsg + 1, 10, 100, maxMsg + 300, ErrBodyTooLarge},
		{"record too large", 10, 10, 100, maxMsg + 64<<10 + 1, ErrBodyTooLarge},
		{"properties exactly max", 10, 10, MaxPropertiesSize, 40000, nil},
		{"properties too large", 10, 10, MaxPropertiesSize + 1, 40000, ErrPropertiesTooLarge},
		{"topic too long", 10, MaxTopicSize + 1, 10, 40000, ErrTopicTooLong},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckLimits(tc.body, tc.topic, tc.props, tc.recorded, maxMsg)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("CheckLimits = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestAppendBlank(t *testing.T) {
	b := AppendBlank(nil, 100)
	want := unhex(t, "00000064 CBD43194")
	if !bytes.Equal(b, want) {
		t.Fatalf("blank = %X", b)
	}
	n, err := StoredLen(append(b, make([]byte, 92)...))
	if !errors.Is(err, ErrBlank) || n != 100 {
		t.Fatalf("StoredLen = %d, %v", n, err)
	}
}

func TestAppendStoredNoAllocs(t *testing.T) {
	m := sampleExt()
	m.Body = make([]byte, 1024)
	m.Properties = map[string]string{"TAGS": "TagA", "KEYS": "order-1 order-2", "UNIQ_KEY": "7F0000010001000000000000000A0001", "WAIT": "true"}
	buf := make([]byte, 0, 4096)
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		if _, err = AppendStored(buf[:0], m); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("AppendStored allocates %.1f times per record", allocs)
	}
}

func TestExtLogValue(t *testing.T) {
	m := sampleExt()
	v := m.LogValue()
	got := map[string]string{}
	for _, a := range v.Group() {
		got[a.Key] = a.Value.String()
	}
	if got["topic"] != "TopicTest" || got["queueId"] != "3" || got["queueOffset"] != "42" ||
		got["msgId"] != "7F00000100002A9F0000000000001000" {
		t.Errorf("LogValue = %v", got)
	}
}
