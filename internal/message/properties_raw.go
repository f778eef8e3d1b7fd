package message

import "strings"

// NextProperty reads the first pair of a raw properties string: name, value
// and the rest after its 0x02. ok is false when s is empty or the first
// segment is not a canonical pair: a non-empty name, 0x01, a non-empty value
// and a closing 0x02 (DecodeProperties would drop or re-terminate such a
// segment). It allocates nothing; name, value and rest alias s.
//
// A string every pair of which NextProperty accepts decodes (DecodeProperties)
// to exactly the pairs NextProperty yields, the last occurrence of a name
// winning; such a string can be stored verbatim instead of re-encoding its
// map.
func NextProperty(s string) (name, value, rest string, ok bool) {
	end := strings.IndexByte(s, PropertySeparator)
	if end < 0 {
		return "", "", s, false
	}
	seg := s[:end]
	k, v, found := strings.Cut(seg, string(NameValueSeparator))
	if !found || k == "" || v == "" {
		return "", "", s, false
	}
	return k, v, s[end+1:], true
}

// AppendProperty appends one name/value pair in the properties encoding.
func AppendProperty(dst []byte, name, value string) []byte {
	dst = append(dst, name...)
	dst = append(dst, NameValueSeparator)
	dst = append(dst, value...)
	return append(dst, PropertySeparator)
}
