package message

import (
	"maps"
	"strings"
	"testing"
)

// TestDecodePropertiesJavaRules follows docs/protocol.md §6.2: split on 0x02, the
// name ends at the first 0x01, empty names and values are dropped, a value
// may contain 0x01.
func TestDecodePropertiesJavaRules(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"empty", "", map[string]string{}},
		{"one pair", "TAGS\x01TagA\x02", map[string]string{"TAGS": "TagA"}},
		{"no trailing separator", "a\x01b\x02c\x01d", map[string]string{"a": "b", "c": "d"}},
		{"empty value dropped", "a\x01\x02b\x01x\x02", map[string]string{"b": "x"}},
		{"empty name dropped", "\x01v\x02b\x01x\x02", map[string]string{"b": "x"}},
		{"value keeps further 0x01", "a\x01b\x01c\x02", map[string]string{"a": "b\x01c"}},
		{"segment without 0x01 dropped", "junk\x02a\x01b\x02", map[string]string{"a": "b"}},
		{"short segments dropped", "\x02\x02ab\x02a\x01b\x02", map[string]string{"a": "b"}},
		{"last duplicate wins", "a\x011\x02a\x012\x02", map[string]string{"a": "2"}},
		{"utf-8", "键\x01值\x02", map[string]string{"键": "值"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := DecodeProperties(tc.in)
			if got == nil || !maps.Equal(got, tc.want) {
				t.Errorf("DecodeProperties(%q) = %q, want %q", tc.in, got, tc.want)
			}
			for k, v := range tc.want {
				if lv, ok := LookupProperty(tc.in, k); !ok || lv != v {
					t.Errorf("LookupProperty(%q) = %q, %v; want %q", k, lv, ok, v)
				}
			}
		})
	}
}

func TestLookupPropertyMisses(t *testing.T) {
	s := "TAGS\x01TagA\x02KEYS\x01k1 k2\x02A\x01\x02"
	for _, name := range []string{"TAG", "TAGSX", "AGS", "", "A", "TAGS\x01TagA", "k1"} {
		if v, ok := LookupProperty(s, name); ok {
			t.Errorf("LookupProperty(%q) = %q, want absent", name, v)
		}
	}
	if v, _ := LookupProperty(s, "KEYS"); v != "k1 k2" {
		t.Errorf("KEYS = %q", v)
	}
}

func TestEncodePropertiesSortedWithTrailingSeparator(t *testing.T) {
	got := EncodeProperties(map[string]string{"WAIT": "true", "KEYS": "a b", "TAGS": "x"})
	want := "KEYS\x01a b\x02TAGS\x01x\x02WAIT\x01true\x02"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if EncodeProperties(nil) != "" || PropertiesLen(nil) != 0 {
		t.Errorf("empty map must encode to the empty string")
	}
	big := map[string]string{}
	for i := range 100 {
		big[strings.Repeat("k", i+1)] = "v"
	}
	enc := EncodeProperties(big)
	if len(enc) != PropertiesLen(big) || !maps.Equal(DecodeProperties(enc), big) {
		t.Errorf("100-key map does not round trip")
	}
}

func FuzzDecodeProperties(f *testing.F) {
	f.Add("TAGS\x01TagA\x02KEYS\x01k1 k2\x02")
	f.Add("a\x01b\x01c\x02\x02\x01\x02x")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		props := DecodeProperties(s)
		for k, v := range props {
			if k == "" || v == "" || strings.ContainsAny(k, "\x01\x02") || strings.Contains(v, "\x02") {
				t.Fatalf("invalid pair %q=%q", k, v)
			}
			if lv, ok := LookupProperty(s, k); !ok || lv != v {
				t.Fatalf("LookupProperty(%q) = %q, %v; map has %q", k, lv, ok, v)
			}
		}
		// Decoded maps are valid input, so they must round trip.
		enc := EncodeProperties(props)
		if len(enc) != PropertiesLen(props) {
			t.Fatalf("PropertiesLen %d != %d", PropertiesLen(props), len(enc))
		}
		if again := DecodeProperties(enc); !maps.Equal(again, props) {
			t.Fatalf("round trip: %q -> %q", props, again)
		}
	})
}

func TestMessageHelpers(t *testing.T) {
	var m Message
	if m.Tags() != "" || m.Keys() != nil || m.UniqKey() != "" || !m.WaitStoreMsgOK() || m.DelayTimeLevel() != 0 {
		t.Fatalf("zero message helpers: %+v", m)
	}
	m.SetTags("TagA")
	m.SetKeys("k1", "k2")
	m.SetDelayTimeLevel(3)
	m.SetWaitStoreMsgOK(false)
	m.SetUniqKey("ID")
	m.SetProperty(PropertyReconsumeTime, "4")
	if m.Tags() != "TagA" || m.Property(PropertyKeys) != "k1 k2" || m.DelayTimeLevel() != 3 ||
		m.WaitStoreMsgOK() || m.UniqKey() != "ID" || m.ReconsumeTime() != 4 {
		t.Fatalf("after setters: %q", m.Properties)
	}
	if got := m.Keys(); len(got) != 2 || got[0] != "k1" || got[1] != "k2" {
		t.Errorf("Keys = %q", got)
	}
	c := m.Clone()
	c.SetTags("other")
	if m.Tags() != "TagA" {
		t.Errorf("Clone shares properties")
	}
	m.SetTags("")
	m.SetDelayTimeLevel(0)
	m.SetKeys()
	if m.HasProperty(PropertyTags) || m.HasProperty(PropertyDelayTimeLevel) || m.HasProperty(PropertyKeys) {
		t.Errorf("clearing setters left %q", m.Properties)
	}
	m.SetProperty(PropertyWaitStoreMsgOK, "TRUE")
	if !m.WaitStoreMsgOK() {
		t.Errorf("WAIT=TRUE must mean wait (Boolean.parseBoolean)")
	}
}

func TestSplitKeysLikeTheIndex(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a", []string{"a"}},
		{"a b", []string{"a", "b"}},
		{"  a  b ", []string{"a", "b"}},
		{"a\tb", []string{"a\tb"}}, // only spaces separate keys
	}
	for _, tc := range tests {
		got := SplitKeys(tc.in)
		if len(got) != len(tc.want) || strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("SplitKeys(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestIsSystemProperty(t *testing.T) {
	for _, name := range []string{"KEYS", "TAGS", "UNIQ_KEY", "DELAY", "__transactionId__", "TIMER_DELIVER_MS", "__RMQ.TRANSIENT.x"} {
		if !IsSystemProperty(name) {
			t.Errorf("IsSystemProperty(%q) = false", name)
		}
	}
	for _, name := range []string{"", "orderId", "tags", "KEYS2"} {
		if IsSystemProperty(name) {
			t.Errorf("IsSystemProperty(%q) = true", name)
		}
	}
}
