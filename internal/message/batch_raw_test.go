package message

import (
	"bytes"
	"maps"
	"testing"
)

// FuzzDecodeBatchRaw: DecodeBatchRaw accepts exactly what DecodeBatch
// accepts, with the same items, and its raw properties decode to
// DecodeBatch's maps.
func FuzzDecodeBatchRaw(f *testing.F) {
	f.Add(EncodeBatch([]Message{
		{Flag: 1, Body: []byte("hi"), Properties: map[string]string{"TAGS": "a", "UNIQ_KEY": "X"}},
		{Flag: -1},
		{Body: []byte("third"), Properties: map[string]string{"k": "v"}},
	}))
	f.Add([]byte{0, 0, 0, 22, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		want, werr := DecodeBatch(b)
		got, props, err := DecodeBatchRaw(b)
		if (err == nil) != (werr == nil) {
			t.Fatalf("DecodeBatchRaw error %v, DecodeBatch error %v", err, werr)
		}
		if err != nil {
			if got != nil || props != nil {
				t.Fatal("results returned with an error")
			}
			return
		}
		if len(got) != len(want) || len(props) != len(want) {
			t.Fatalf("%d items and %d properties, want %d", len(got), len(props), len(want))
		}
		for i := range want {
			if got[i].Flag != want[i].Flag || !bytes.Equal(got[i].Body, want[i].Body) || got[i].Properties != nil {
				t.Fatalf("item %d: %+v, want %+v", i, got[i], want[i])
			}
			if p := DecodeProperties(props[i]); !maps.Equal(p, want[i].Properties) && (len(p) != 0 || len(want[i].Properties) != 0) {
				t.Fatalf("item %d: properties %q decode to %v, want %v", i, props[i], p, want[i].Properties)
			}
		}
	})
}
