package message

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
	"strings"
	"testing"
)

// batchVector is two items written from the table of docs/protocol.md §6.7.
const batchVector = `
	0000001F 00000000 00000000 00000001 00000002 6869 0007 54414753 01 61 02
	00000016 00000000 00000000 FFFFFFFF 00000000 0000
`

func TestEncodeBatchMatchesSpec(t *testing.T) {
	msgs := []Message{
		{Flag: 1, Body: []byte("hi"), Properties: map[string]string{"TAGS": "a"}},
		{Flag: -1},
	}
	want := unhex(t, batchVector)
	got := EncodeBatch(msgs)
	if !bytes.Equal(got, want) {
		t.Fatalf("EncodeBatch:\n got %X\nwant %X", got, want)
	}
	dec, err := DecodeBatch(want)
	if err != nil || len(dec) != 2 {
		t.Fatalf("DecodeBatch: %d, %v", len(dec), err)
	}
	if dec[0].Flag != 1 || string(dec[0].Body) != "hi" || dec[0].Tags() != "a" {
		t.Errorf("item 0 = %+v", dec[0])
	}
	if dec[1].Flag != -1 || len(dec[1].Body) != 0 || len(dec[1].Properties) != 0 {
		t.Errorf("item 1 = %+v", dec[1])
	}
	// Decoded bodies do not alias the request buffer.
	clear(want)
	if string(dec[0].Body) != "hi" {
		t.Errorf("body aliases input")
	}
}

func TestBatchRoundTrip(t *testing.T) {
	var msgs []Message
	for i := range 50 {
		m := Message{Flag: int32(i), Body: bytes.Repeat([]byte{byte(i)}, i*7)}
		m.SetKeys("key", strings.Repeat("k", i))
		m.SetUniqKey("UNIQ" + strings.Repeat("0", i%5))
		msgs = append(msgs, m)
	}
	b := EncodeBatch(msgs)
	n := 0
	for i := range msgs {
		n += BatchItemSize(&msgs[i])
	}
	if len(b) != n {
		t.Errorf("encoded %d bytes, BatchItemSize sums to %d", len(b), n)
	}
	dec, err := DecodeBatch(b)
	if err != nil || len(dec) != len(msgs) {
		t.Fatalf("decoded %d, %v", len(dec), err)
	}
	for i := range msgs {
		if dec[i].Flag != msgs[i].Flag || !bytes.Equal(dec[i].Body, msgs[i].Body) || !maps.Equal(dec[i].Properties, msgs[i].Properties) {
			t.Errorf("item %d differs: %+v", i, dec[i])
		}
	}
}

func TestDecodeBatchRejectsBadItems(t *testing.T) {
	good := unhex(t, batchVector)
	patch := func(off int, v uint32) []byte {
		b := bytes.Clone(good)
		binary.BigEndian.PutUint32(b[off:], v)
		return b
	}
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"truncated item", good[:len(good)-1], ErrShortBuffer},
		{"truncated header", good[:10], ErrShortBuffer},
		{"trailing bytes", append(bytes.Clone(good), 0, 0, 0), ErrShortBuffer},
		{"total size too small", patch(0, 5), ErrCorrupt},
		{"total size negative", patch(0, 0x80000000), ErrCorrupt},
		{"total size past end", patch(0, 1000), ErrShortBuffer},
		{"total size disagrees", patch(0, 0x20), ErrCorrupt},
		{"body length past item", patch(16, 100), ErrCorrupt},
		{"body length negative", patch(16, 0xFFFFFFFF), ErrCorrupt},
		{"properties length negative", func() []byte {
			b := bytes.Clone(good)
			binary.BigEndian.PutUint16(b[22:], 0x8000)
			return b
		}(), ErrCorrupt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msgs, err := DecodeBatch(tc.in)
			if !errors.Is(err, tc.want) || msgs != nil {
				t.Fatalf("DecodeBatch = %d msgs, %v; want %v", len(msgs), err, tc.want)
			}
		})
	}
	if msgs, err := DecodeBatch(nil); msgs != nil || err != nil {
		t.Errorf("empty body: %v %v", msgs, err)
	}
}

func TestAppendBatchPropertiesTooLarge(t *testing.T) {
	m := Message{Properties: map[string]string{"big": strings.Repeat("v", MaxPropertiesSize)}}
	out, err := AppendBatch([]byte("x"), []Message{{Body: []byte("ok")}, m})
	if !errors.Is(err, ErrPropertiesTooLarge) || string(out) != "x" {
		t.Fatalf("AppendBatch = %q, %v", out, err)
	}
	if EncodeBatch([]Message{m}) != nil {
		t.Errorf("EncodeBatch of an unencodable message must be nil")
	}
}

func FuzzDecodeBatch(f *testing.F) {
	f.Add(EncodeBatch([]Message{
		{Flag: 1, Body: []byte("hi"), Properties: map[string]string{"TAGS": "a"}},
		{Flag: -1},
	}))
	f.Add([]byte{0, 0, 0, 22, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		msgs, err := DecodeBatch(b)
		if err != nil {
			if msgs != nil {
				t.Fatalf("messages returned with error %v", err)
			}
			if !errors.Is(err, ErrShortBuffer) && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if len(msgs)*batchItemFixedSize > len(b) {
			t.Fatalf("%d messages from %d bytes", len(msgs), len(b))
		}
		// Decoded messages are valid input: decode(encode(x)) == x.
		again, err := DecodeBatch(EncodeBatch(msgs))
		if err != nil || len(again) != len(msgs) {
			t.Fatalf("re-decode: %d, %v", len(again), err)
		}
		for i := range msgs {
			if again[i].Flag != msgs[i].Flag || !bytes.Equal(again[i].Body, msgs[i].Body) || !maps.Equal(again[i].Properties, msgs[i].Properties) {
				t.Fatalf("item %d differs after round trip", i)
			}
		}
	})
}
