package message

import (
	"bytes"
	"errors"
	"reflect"
	"strconv"
	"testing"
)

// batchBody returns n records with distinct topics, properties and bodies
// and the messages they were made from.
func batchBody(t *testing.T, n int) ([]byte, []*Ext) {
	t.Helper()
	var body []byte
	var want []*Ext
	for i := range n {
		m := sampleExt()
		m.Topic = "Topic" + strconv.Itoa(i)
		m.QueueOffset = int64(i)
		m.Body = bytes.Repeat([]byte{byte('a' + i%26)}, i*3)
		m.Properties = map[string]string{"TAGS": "Tag" + strconv.Itoa(i), "KEYS": "k" + strconv.Itoa(i)}
		var err error
		if body, err = AppendStored(body, m); err != nil {
			t.Fatal(err)
		}
		m.StoreSize = int32(StoredSize(m))
		m.BodyCRC = BodyCRC(m.Body)
		want = append(want, m)
	}
	return body, want
}

// TestDecodeStoredAllMatchesDecodeStored: every field of a batch decode,
// owned or copied, equals the one-record decode, for batches below and
// above the inline view buffer.
func TestDecodeStoredAllMatchesDecodeStored(t *testing.T) {
	for _, n := range []int{1, 5, 64, 65, 130} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			body, want := batchBody(t, n)
			copied, err := DecodeStoredAll(body, DecodeOptions{VerifyCRC: true})
			if err != nil {
				t.Fatal(err)
			}
			owned, err := DecodeStoredAllOwned(append([]byte(nil), body...), DecodeOptions{VerifyCRC: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(copied) != n || len(owned) != n {
				t.Fatalf("got %d and %d messages, want %d", len(copied), len(owned), n)
			}
			off := 0
			for i := range n {
				one, size, err := DecodeStored(body[off:], DecodeOptions{})
				if err != nil {
					t.Fatal(err)
				}
				off += size
				if !sameExt(copied[i], one) || !sameExt(owned[i], one) {
					t.Fatalf("message %d:\n  all   %+v\n  owned %+v\n  one   %+v", i, copied[i], owned[i], one)
				}
				if one.Topic != want[i].Topic || one.Properties["TAGS"] != want[i].Properties["TAGS"] {
					t.Fatalf("message %d: topic %q props %v", i, one.Topic, one.Properties)
				}
			}
		})
	}
}

// TestDecodeStoredAllOwnedAliases: the owned decode's bodies are the
// input's bytes, not a copy.
func TestDecodeStoredAllOwnedAliases(t *testing.T) {
	body, _ := batchBody(t, 3)
	got, err := DecodeStoredAllOwned(body, DecodeOptions{})
	if err != nil || len(got) != 3 {
		t.Fatalf("%d messages, %v", len(got), err)
	}
	clear(body)
	if got[2].Body[0] != 0 {
		t.Fatal("owned decode copied the body")
	}
	if got[2].Topic != "Topic2" || got[2].Properties["KEYS"] != "k2" {
		t.Fatal("strings alias the input")
	}
	if m, err := DecodeStoredAllOwned(nil, DecodeOptions{}); m != nil || err != nil {
		t.Fatalf("empty input: %v, %v", m, err)
	}
}

// TestDecodeStoredAllStopsAtBadRecord: the records before a bad one are
// returned with its error, for a CRC failure and for a corrupt length.
func TestDecodeStoredAllStopsAtBadRecord(t *testing.T) {
	body, _ := batchBody(t, 4)
	_, size0, _ := DecodeStored(body, DecodeOptions{})
	_, size1, _ := DecodeStored(body[size0:], DecodeOptions{})
	tests := []struct {
		name    string
		corrupt func(b []byte)
		opt     DecodeOptions
		want    error
		n       int
	}{
		{"crc of record 2", func(b []byte) { b[size0+size1+OffsetBodyCRC] ^= 1 }, DecodeOptions{VerifyCRC: true}, ErrBadCRC, 2},
		{"magic of record 1", func(b []byte) { b[size0+OffsetMagic] ^= 0xFF }, DecodeOptions{}, ErrBadMagic, 1},
		{"magic of record 0", func(b []byte) { b[OffsetMagic] ^= 0xFF }, DecodeOptions{}, ErrBadMagic, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := append([]byte(nil), body...)
			tt.corrupt(b)
			for _, owned := range []bool{false, true} {
				var got []*Ext
				var err error
				if owned {
					got, err = DecodeStoredAllOwned(append([]byte(nil), b...), tt.opt)
				} else {
					got, err = DecodeStoredAll(b, tt.opt)
				}
				if len(got) != tt.n || !errors.Is(err, tt.want) {
					t.Fatalf("owned=%v: %d messages, err %v; want %d, %v", owned, len(got), err, tt.n, tt.want)
				}
			}
		})
	}
}

// sameExt compares all fields, bodies with bytes.Equal (an aliased empty
// body is non-nil, a copied one nil).
func sameExt(a, b *Ext) bool {
	x, y := *a, *b
	if !bytes.Equal(x.Body, y.Body) {
		return false
	}
	x.Body, y.Body = nil, nil
	return reflect.DeepEqual(x, y)
}
