package message

import (
	"testing"
	"unicode/utf16"
)

// TestTagsHashCodeIsJavaStringHashCode checks values of Java's
// String.hashCode (UTF-16 code units, int32 overflow) from docs/protocol.md §7.5.
func TestTagsHashCodeIsJavaStringHashCode(t *testing.T) {
	tests := []struct {
		tags string
		want int64
	}{
		{"", 0},
		{"*", 42},
		{"TagA", 2598919},
		{"a||b", 3012833}, // multi-tag values hash as a whole
		{"中文", 646394},
		{"😀x", 54959989}, // a surrogate pair counts as two code units
		{"TagATagATagATagATagA", -1267059421},
		{"ééééééééééééééééé", 1132337129},
	}
	for _, tc := range tests {
		if got := TagsHashCode(tc.tags); got != tc.want {
			t.Errorf("TagsHashCode(%q) = %d, want %d", tc.tags, got, tc.want)
		}
	}
	// Invalid UTF-8 hashes like U+FFFD (Java's replacement character).
	if TagsHashCode("\xff") != 0xFFFD {
		t.Errorf("invalid byte = %d, want %d", TagsHashCode("\xff"), 0xFFFD)
	}
}

func FuzzTagsHashCode(f *testing.F) {
	f.Add("TagA")
	f.Add("😀\xff中")
	f.Fuzz(func(t *testing.T, s string) {
		var want int32
		for _, u := range utf16.Encode([]rune(s)) {
			want = 31*want + int32(u)
		}
		if got := TagsHashCode(s); got != int64(want) {
			t.Fatalf("TagsHashCode(%q) = %d, want %d", s, got, want)
		}
		if got := TagsHashCodeBytes([]byte(s)); got != int64(want) {
			t.Fatalf("TagsHashCodeBytes(%q) = %d, want %d", s, got, want)
		}
	})
}

func TestTagsHashCodeBytesNoAllocs(t *testing.T) {
	tags := []byte("标签😀TagA")
	allocs := testing.AllocsPerRun(100, func() {
		if TagsHashCodeBytes(tags) != TagsHashCode("标签😀TagA") {
			t.Fatal("bytes and string hashes differ")
		}
	})
	if allocs != 0 {
		t.Errorf("TagsHashCodeBytes allocates %.1f times", allocs)
	}
}
