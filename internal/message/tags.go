package message

import (
	"unicode/utf16"
	"unicode/utf8"
)

// TagsHashCode returns the consume-queue tag code of a TAGS value: Java's
// String.hashCode over the UTF-16 code units of the whole string (also for
// "a||b" multi-tag values), sign-extended to int64 (docs/protocol.md §7.5).
// Untagged messages use 0 (the hash of ""). Invalid UTF-8 bytes count as
// U+FFFD, as Java's decoder substitutes them.
func TagsHashCode(tags string) int64 { return tagsHash(tags) }

// TagsHashCodeBytes is TagsHashCode of a tag held in bytes (for example
// StoredView.Property), without allocating.
func TagsHashCodeBytes(tags []byte) int64 { return tagsHash(tags) }

func tagsHash[S ~string | ~[]byte](tags S) int64 {
	var h int32
	for i := 0; i < len(tags); {
		c := tags[i]
		if c < utf8.RuneSelf {
			h = 31*h + int32(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(string(tags[i:min(i+utf8.UTFMax, len(tags))]))
		i += size
		if r > 0xFFFF {
			r1, r2 := utf16.EncodeRune(r)
			h = 31*h + r1
			h = 31*h + r2
			continue
		}
		h = 31*h + r
	}
	return int64(h)
}
