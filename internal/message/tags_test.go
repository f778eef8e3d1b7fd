package message

import "testing"

// TestTagsHashCodeIsJavaStringHashCode checks values of Java's
// String.hashCode (UTF-16 code units, int32 overflow) from remoting.md §7.5.
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
