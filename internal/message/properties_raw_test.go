package message

import (
	"maps"
	"testing"
)

// walkProperties collects s's pairs with NextProperty (last wins) and
// reports whether every pair was canonical.
func walkProperties(s string) (map[string]string, bool) {
	m := map[string]string{}
	for n := 0; s != "" && n <= len(s); n++ {
		k, v, rest, ok := NextProperty(s)
		if !ok {
			return m, false
		}
		m[k] = v
		s = rest
	}
	return m, s == ""
}

func TestNextProperty(t *testing.T) {
	tests := []struct {
		in        string
		canonical bool
		want      map[string]string
	}{
		{"", true, map[string]string{}},
		{"A\x01b\x02", true, map[string]string{"A": "b"}},
		{"A\x01b\x02C\x01d\x01e\x02", true, map[string]string{"A": "b", "C": "d\x01e"}},
		{"A\x01b\x02A\x01c\x02", true, map[string]string{"A": "c"}},
		{"A\x01b", false, nil},         // unterminated
		{"A\x01\x02", false, nil},      // empty value
		{"\x01b\x02", false, nil},      // empty name
		{"Ab\x02", false, nil},         // no name/value separator
		{"A\x01b\x02\x02", false, nil}, // empty segment
	}
	for _, tt := range tests {
		got, ok := walkProperties(tt.in)
		if ok != tt.canonical {
			t.Errorf("%q: canonical = %v, want %v", tt.in, ok, tt.canonical)
			continue
		}
		if ok && !maps.Equal(got, tt.want) {
			t.Errorf("%q: pairs = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestAppendProperty(t *testing.T) {
	b := AppendProperty([]byte("A\x01b\x02"), "C", "d")
	if got := DecodeProperties(string(b)); !maps.Equal(got, map[string]string{"A": "b", "C": "d"}) {
		t.Fatalf("decoded %v", got)
	}
}

func TestNextPropertyAllocs(t *testing.T) {
	s := "TAGS\x01t\x02UNIQ_KEY\x01AC11\x02WAIT\x01true\x02"
	if n := testing.AllocsPerRun(100, func() { walkNoAlloc(s) }); n != 0 {
		t.Fatalf("NextProperty allocates %v times per walk", n)
	}
}

func walkNoAlloc(s string) int {
	n := 0
	for s != "" {
		_, v, rest, ok := NextProperty(s)
		if !ok {
			break
		}
		n += len(v)
		s = rest
	}
	return n
}

// FuzzNextProperty checks that a string NextProperty walks completely
// decodes to the same pairs with DecodeProperties and LookupProperty, so it
// may be stored verbatim.
func FuzzNextProperty(f *testing.F) {
	for _, s := range []string{"", "A\x01b\x02", "A\x01b\x02A\x01\x01c\x02", "A\x01b", "\x02\x01", "K\x01v\x02\x02"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := walkProperties(s)
		if !ok {
			return
		}
		want := DecodeProperties(s)
		if !maps.Equal(got, want) {
			t.Fatalf("%q: walk %v, DecodeProperties %v", s, got, want)
		}
		for k, v := range got {
			if lv, found := LookupProperty(s, k); !found || lv != v {
				t.Fatalf("%q: LookupProperty(%q) = %q, %v; want %q", s, k, lv, found, v)
			}
		}
	})
}

func TestStoredRawPropertiesExtra(t *testing.T) {
	m := sampleExt()
	tests := []struct {
		raw   string
		extra []string
		want  map[string]string
	}{
		{"TAGS\x01TagA\x02", []string{"CLUSTER", "c", "X", "y"}, map[string]string{"TAGS": "TagA", "CLUSTER": "c", "X": "y"}},
		{"", []string{"CLUSTER", "c", "odd"}, map[string]string{"CLUSTER": "c"}},
		{"K\x01v\x02", nil, map[string]string{"K": "v"}},
	}
	for _, tt := range tests {
		rec, err := AppendStoredRawProperties(nil, m, tt.raw, tt.extra...)
		if err != nil {
			t.Fatal(err)
		}
		dec, n, err := DecodeStored(rec, DecodeOptions{VerifyCRC: true})
		if err != nil || n != len(rec) {
			t.Fatalf("%q %q: decode n=%d/%d err=%v", tt.raw, tt.extra, n, len(rec), err)
		}
		if !maps.Equal(dec.Properties, tt.want) {
			t.Errorf("%q %q: properties %q, want %q", tt.raw, tt.extra, dec.Properties, tt.want)
		}
	}
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() {
		_, _ = AppendStoredRawProperties(buf, m, "TAGS\x01t\x02", "CLUSTER", "c", "MSG_REGION", "r")
	}); n != 0 {
		t.Fatalf("AppendStoredRawProperties allocates %v times", n)
	}
}
