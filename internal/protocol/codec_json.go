package protocol

import (
	"bytes"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// The JSON header (docs/protocol.md §1.4) is written by hand: no reflection on the
// hot path. Output is compact, properties in fastjson's alphabetical order,
// ext fields sorted by key (then Command.ExtList in its order):
//
//	{"code":105,"extFields":{"topic":"T"},"flag":0,"language":"GO","opaque":1,
//	 "remark":"x","serializeTypeCurrentRPC":"JSON","version":479}
//
// Every property is always written (extFields as {} and remark as "" when
// empty, as the Go client does). Codes above 32767 are written as is: only
// Java peers use them (POP), and the Go client never sees them.

// appendJSONHeader appends c's JSON header to dst.
func appendJSONHeader(dst []byte, c *Command) []byte {
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, int64(c.Code), 10)
	dst = append(dst, `,"extFields":{`...)
	if len(c.ExtFields) > 0 {
		var stack [32]string
		keys := stack[:0]
		for k := range c.ExtFields {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendHeaderString(dst, k)
			dst = append(dst, ':')
			dst = appendHeaderString(dst, c.ExtFields[k])
		}
	}
	for i := 0; i+1 < len(c.ExtList); i += 2 {
		if i > 0 || len(c.ExtFields) > 0 {
			dst = append(dst, ',')
		}
		dst = appendHeaderString(dst, c.ExtList[i])
		dst = append(dst, ':')
		dst = appendHeaderString(dst, c.ExtList[i+1])
	}
	dst = append(dst, '}')
	dst = append(dst, `,"flag":`...)
	dst = strconv.AppendInt(dst, int64(c.Flag), 10)
	dst = append(dst, `,"language":`...)
	if c.Language.known() {
		dst = append(dst, '"')
		dst = append(dst, languageNames[c.Language]...)
		dst = append(dst, '"')
	} else {
		dst = strconv.AppendInt(dst, int64(c.Language), 10)
	}
	dst = append(dst, `,"opaque":`...)
	dst = strconv.AppendInt(dst, int64(c.Opaque), 10)
	dst = append(dst, `,"remark":`...)
	dst = appendHeaderString(dst, c.Remark)
	dst = append(dst, `,"serializeTypeCurrentRPC":"JSON","version":`...)
	dst = strconv.AppendInt(dst, int64(c.Version), 10)
	return append(dst, '}')
}

const hexDigits = "0123456789abcdef"

// appendHeaderString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD,
// as encoding/json does.
func appendHeaderString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// jsonScanner is a small, lenient, non-recursive scanner for the header
// object. It accepts any property order, nulls, unknown properties (skipped,
// whatever their nesting), language as a name or a number, and numbers given
// as strings.
type jsonScanner struct {
	b   []byte
	i   int
	buf []byte // scratch for strings with escapes
	// str is string(b), made on the first non-empty string value: every
	// value without escapes is then a substring of it, so a header costs
	// one string allocation instead of one per ext key and value (the
	// strings share, and keep alive, the header's bytes).
	str string
}

// stringText reads a JSON string (the scanner is on its opening quote) as
// a string: a substring of s.str when it has no escapes.
func (s *jsonScanner) stringText() (string, error) {
	start := s.i + 1
	b, err := s.stringBytes()
	if err != nil || len(b) == 0 {
		return "", err
	}
	if s.i-start-1 != len(b) { // escapes (always shorter decoded): b is s.buf
		return string(b), nil
	}
	if s.str == "" {
		s.str = string(s.b)
	}
	return s.str[start : start+len(b)], nil
}

func (s *jsonScanner) skipWS() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (s *jsonScanner) peek() byte {
	s.skipWS()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

func (s *jsonScanner) expect(c byte) error {
	if s.peek() != c {
		return badFrame("JSON header: expected %q at offset %d", c, s.i)
	}
	s.i++
	return nil
}

// stringBytes reads a JSON string (the scanner is on its opening quote) and
// returns its decoded bytes, valid until the next call.
func (s *jsonScanner) stringBytes() ([]byte, error) {
	s.i++ // opening quote
	start := s.i
	// Two vectorized scans (closing quote, then a backslash before it)
	// instead of a byte loop: strings are most of a header.
	rest := s.b[start:]
	q := bytes.IndexByte(rest, '"')
	if q < 0 {
		q = len(rest)
	}
	if e := bytes.IndexByte(rest[:q], '\\'); e >= 0 {
		s.i += e
		return s.stringSlow(start)
	}
	if q == len(rest) {
		s.i = len(s.b)
		return nil, badFrame("JSON header: unterminated string")
	}
	s.i += q + 1
	return rest[:q], nil
}

// stringSlow decodes a string with escapes into s.buf.
func (s *jsonScanner) stringSlow(start int) ([]byte, error) {
	if s.buf == nil {
		// Decoded strings are never longer than their JSON text, so one
		// buffer the size of the rest of the header never grows.
		s.buf = make([]byte, 0, len(s.b)-start)
	}
	s.buf = append(s.buf[:0], s.b[start:s.i]...)
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return s.buf, nil
		case c != '\\':
			s.buf = append(s.buf, c)
			s.i++
			continue
		}
		if s.i+1 >= len(s.b) {
			break
		}
		e := s.b[s.i+1]
		s.i += 2
		switch e {
		case '"', '\\', '/':
			s.buf = append(s.buf, e)
		case 'b':
			s.buf = append(s.buf, '\b')
		case 'f':
			s.buf = append(s.buf, '\f')
		case 'n':
			s.buf = append(s.buf, '\n')
		case 'r':
			s.buf = append(s.buf, '\r')
		case 't':
			s.buf = append(s.buf, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return nil, badFrame("JSON header: bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
					save := s.i
					s.i += 2
					var ok2 bool
					if r2, ok2 = s.hex4(); !ok2 {
						return nil, badFrame("JSON header: bad \\u escape")
					}
					if utf16.DecodeRune(r, r2) == utf8.RuneError {
						s.i = save // not a pair: decode the second escape on its own
						r2 = -1
					}
				}
				if r2 < 0 {
					r = utf8.RuneError
				} else {
					r = utf16.DecodeRune(r, r2)
				}
			}
			s.buf = utf8.AppendRune(s.buf, r)
		default:
			return nil, badFrame("JSON header: bad escape \\%c", e)
		}
	}
	return nil, badFrame("JSON header: unterminated string")
}

func (s *jsonScanner) hex4() (rune, bool) {
	if s.i+4 > len(s.b) {
		return 0, false
	}
	var r rune
	for _, c := range s.b[s.i : s.i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	s.i += 4
	return r, true
}

// literal reads a bare token (number, true, false, null).
func (s *jsonScanner) literal() []byte {
	start := s.i
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ',', '}', ']', ':', ' ', '\t', '\r', '\n', '"', '{', '[':
			return s.b[start:s.i]
		}
		s.i++
	}
	return s.b[start:s.i]
}

// skipValue skips one value of any nesting without recursion and returns
// its raw bytes.
func (s *jsonScanner) skipValue() ([]byte, error) {
	s.skipWS()
	start := s.i
	depth := 0
	for {
		s.skipWS()
		if s.i >= len(s.b) {
			return nil, badFrame("JSON header: truncated value")
		}
		switch c := s.b[s.i]; c {
		case '{', '[':
			depth++
			s.i++
			continue
		case '}', ']':
			if depth == 0 {
				return nil, badFrame("JSON header: unexpected %q at offset %d", c, s.i)
			}
			depth--
			s.i++
		case ',', ':':
			if depth == 0 {
				return nil, badFrame("JSON header: unexpected %q at offset %d", c, s.i)
			}
			s.i++
			continue
		case '"':
			if _, err := s.stringBytes(); err != nil {
				return nil, err
			}
		default:
			if len(s.literal()) == 0 {
				return nil, badFrame("JSON header: unexpected byte at offset %d", s.i)
			}
		}
		if depth == 0 {
			return s.b[start:s.i], nil
		}
	}
}

// int32Value reads a number (or a quoted number, or null = 0).
func (s *jsonScanner) int32Value(name string) (int32, error) {
	var tok []byte
	if s.peek() == '"' {
		b, err := s.stringBytes()
		if err != nil {
			return 0, err
		}
		tok = b
	} else {
		tok = s.literal()
	}
	if string(tok) == "null" {
		return 0, nil
	}
	n, ok := parseInt32(tok)
	if !ok {
		return 0, badFrame("JSON header: %s %q is not an int32", name, tok)
	}
	return n, nil
}

// parseInt32 parses an optionally signed decimal int32 without allocating.
func parseInt32(b []byte) (int32, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 10 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	if n < -1<<31 || n > 1<<31-1 {
		return 0, false
	}
	return int32(n), true
}

// stringValue reads a string; null gives ""; any other value gives its raw
// text (fastjson's lenient conversion).
func (s *jsonScanner) stringValue() (string, bool, error) {
	switch s.peek() {
	case '"':
		v, err := s.stringText()
		return v, err == nil, err
	case 'n':
		if s.i+4 <= len(s.b) && string(s.b[s.i:s.i+4]) == "null" {
			s.i += 4
			return "", false, nil
		}
	}
	raw, err := s.skipValue()
	if err != nil {
		return "", false, err
	}
	return string(raw), true, nil
}

// extCount estimates the number of entries of the ext object the scanner
// is in (just after its '{'): the colons up to the first '}'. A colon or a
// brace inside a value makes it a little off; it only sizes the map.
func (s *jsonScanner) extCount() int {
	rest := s.b[s.i:]
	if end := bytes.IndexByte(rest, '}'); end >= 0 {
		rest = rest[:end]
	}
	return bytes.Count(rest, []byte{':'})
}

// decodeJSONHeader fills c from a JSON header.
func decodeJSONHeader(b []byte, c *Command) error {
	s := jsonScanner{b: b}
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.i++
		return s.end()
	}
	for {
		if s.peek() != '"' {
			return badFrame("JSON header: expected property name at offset %d", s.i)
		}
		name, err := s.stringBytes()
		if err != nil {
			return err
		}
		prop := string(name) // no allocation in the switch below
		switch prop {
		case "code", "flag", "opaque", "version", "language", "remark", "extFields":
		default:
			prop = ""
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		switch prop {
		case "code":
			c.Code, err = s.int32Value("code")
		case "flag":
			c.Flag, err = s.int32Value("flag")
		case "opaque":
			c.Opaque, err = s.int32Value("opaque")
		case "version":
			c.Version, err = s.int32Value("version")
		case "language":
			err = s.language(c)
		case "remark":
			c.Remark, _, err = s.stringValue()
		case "extFields":
			err = s.extFields(c)
		default:
			_, err = s.skipValue()
		}
		if err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return s.end()
		default:
			return badFrame("JSON header: expected ',' or '}' at offset %d", s.i)
		}
	}
}

func (s *jsonScanner) end() error {
	if s.peek() != 0 {
		return badFrame("JSON header: trailing data at offset %d", s.i)
	}
	return nil
}

func (s *jsonScanner) language(c *Command) error {
	switch s.peek() {
	case '"':
		b, err := s.stringBytes()
		if err != nil {
			return err
		}
		c.Language = LanguageOther
		for i, n := range languageNames {
			if n == string(b) {
				c.Language = LanguageCode(i)
				break
			}
		}
		return nil
	}
	tok := s.literal()
	if string(tok) == "null" {
		c.Language = LanguageJava
		return nil
	}
	n, ok := parseInt32(tok)
	if !ok || n < 0 || n > 255 {
		return badFrame("JSON header: language %q", tok)
	}
	c.Language = LanguageCode(n)
	return nil
}

func (s *jsonScanner) extFields(c *Command) error {
	switch s.peek() {
	case 'n':
		_, err := s.skipValue()
		return err
	case '{':
		s.i++
	default:
		return badFrame("JSON header: extFields is not an object")
	}
	if s.peek() == '}' {
		s.i++
		return nil
	}
	if c.ExtFields == nil {
		c.ExtFields = make(map[string]string, s.extCount())
	}
	for {
		if s.peek() != '"' {
			return badFrame("JSON header: expected ext key at offset %d", s.i)
		}
		k, _, err := s.stringValue()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		v, present, err := s.stringValue()
		if err != nil {
			return err
		}
		if present {
			c.ExtFields[k] = v
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return badFrame("JSON header: expected ',' or '}' in extFields at offset %d", s.i)
		}
	}
}
