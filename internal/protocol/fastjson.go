package protocol

// fastjson compatibility (docs/protocol.md §5.1, §5.2).
//
// Java RocketMQ writes bodies with fastjson, which is not standard JSON in
// two ways that matter to us:
//
//   - maps with non-String keys use the key's own JSON text as the key:
//     {"brokerAddrs":{0:"10.0.0.1:10911"}} and, for Map<MessageQueue,X>,
//     {"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:5}};
//   - its parser is lenient: unquoted keys, single quotes, trailing commas.
//
// Reading: UnmarshalFastJSON accepts both dialects. Standard JSON goes
// straight to encoding/json; anything else is first rewritten by
// NormalizeFastJSON into standard JSON in which every non-string object key
// becomes a string holding the key's compact JSON text ("0", or
// "{\"brokerName\":\"b\",\"queueId\":0,\"topic\":\"T\"}"). Go maps keyed by
// integers (map[int64]string) then decode as usual; maps keyed by objects
// decode into map[string]X whose keys the caller unmarshals again.
//
// Writing: MarshalJSON emits compact standard JSON without HTML escaping
// (what docs/protocol.md §5.2 recommends for every body, including quoted numeric keys).
// AppendObjectKeyMap writes fastjson's object-key form, which
// encoding/json cannot produce and which Java tools need for every
// Map<MessageQueue,X>; callers assemble the surrounding object by hand
// because encoding/json rejects invalid JSON from a json.Marshaler.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"
)

// maxFastJSONDepth bounds the nesting NormalizeFastJSON accepts, so hostile
// input cannot exhaust the stack. Real bodies nest fewer than 10 levels.
const maxFastJSONDepth = 256

// ErrFastJSONSyntax is wrapped by NormalizeFastJSON's errors.
var ErrFastJSONSyntax = errors.New("protocol: fastjson syntax error")

// MarshalJSON encodes v as compact JSON without HTML escaping and without a
// trailing newline.
func MarshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("protocol: encode %T: %w", v, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// UnmarshalFastJSON decodes data, in standard JSON or in fastjson's dialect,
// into v. Property names match case-insensitively (encoding/json rules).
func UnmarshalFastJSON(data []byte, v any) error {
	if !json.Valid(data) {
		norm, err := NormalizeFastJSON(data)
		if err != nil {
			return err
		}
		data = norm
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("protocol: decode %T: %w", v, err)
	}
	return nil
}

// NormalizeFastJSON rewrites one fastjson value into compact standard JSON:
// bare or single-quoted keys and strings are double-quoted, non-string keys
// (numbers, objects, arrays, literals) become strings holding their compact
// JSON text, and trailing commas are dropped. Scalars are copied as
// written; the result is not guaranteed valid if they were not. It never
// panics and allocates at most a small multiple of len(src).
func NormalizeFastJSON(src []byte) ([]byte, error) {
	n := &normalizer{src: src, out: make([]byte, 0, len(src)+len(src)/8)}
	n.skipSpace()
	if err := n.value(0); err != nil {
		return nil, err
	}
	n.skipSpace()
	if n.pos != len(n.src) {
		return nil, n.errorf("trailing data")
	}
	return n.out, nil
}

type normalizer struct {
	src []byte
	pos int
	out []byte
	// inKey is set while normalizing an object or array used as a key.
	// Such a key may not itself hold object or array keys: quoting nests
	// escapes, so each level would double the output (a tiny input could
	// demand exponential memory). Real bodies (MessageQueue keys) need one
	// level.
	inKey bool
}

func (n *normalizer) errorf(format string, args ...any) error {
	return fmt.Errorf("%w at byte %d: %s", ErrFastJSONSyntax, n.pos, fmt.Sprintf(format, args...))
}

func (n *normalizer) skipSpace() {
	for n.pos < len(n.src) {
		switch n.src[n.pos] {
		case ' ', '\t', '\n', '\r', '\f':
			n.pos++
		default:
			return
		}
	}
}

func (n *normalizer) value(depth int) error {
	if depth > maxFastJSONDepth {
		return n.errorf("nesting deeper than %d", maxFastJSONDepth)
	}
	if n.pos >= len(n.src) {
		return n.errorf("unexpected end of input")
	}
	switch c := n.src[n.pos]; c {
	case '{':
		return n.object(depth)
	case '[':
		return n.array(depth)
	case '"', '\'':
		return n.str(c)
	default:
		tok := n.bare()
		if len(tok) == 0 {
			return n.errorf("unexpected %q", c)
		}
		n.out = append(n.out, tok...)
		return nil
	}
}

func (n *normalizer) object(depth int) error {
	n.pos++ // '{'
	n.out = append(n.out, '{')
	first := true
	for {
		n.skipSpace()
		if n.pos >= len(n.src) {
			return n.errorf("unterminated object")
		}
		switch n.src[n.pos] {
		case '}':
			n.pos++
			n.out = append(n.out, '}')
			return nil
		case ',': // fastjson tolerates stray and trailing commas
			n.pos++
			continue
		}
		if !first {
			n.out = append(n.out, ',')
		}
		first = false
		if err := n.key(depth); err != nil {
			return err
		}
		n.skipSpace()
		if n.pos >= len(n.src) || n.src[n.pos] != ':' {
			return n.errorf("want ':' after object key")
		}
		n.pos++
		n.out = append(n.out, ':')
		n.skipSpace()
		if err := n.value(depth + 1); err != nil {
			return err
		}
		n.skipSpace()
		if n.pos < len(n.src) && n.src[n.pos] != ',' && n.src[n.pos] != '}' {
			return n.errorf("want ',' or '}' in object")
		}
	}
}

// key writes one object key as a JSON string.
func (n *normalizer) key(depth int) error {
	switch c := n.src[n.pos]; c {
	case '"', '\'':
		return n.str(c)
	case '{', '[':
		// Object or array key (Map<MessageQueue,X>): normalize it on its
		// own, then quote the resulting text.
		if n.inKey {
			return n.errorf("object key nested in an object key")
		}
		saved := n.out
		n.out = nil
		n.inKey = true
		err := n.value(depth + 1)
		n.inKey = false
		if err != nil {
			return err
		}
		inner := n.out
		n.out = appendJSONString(saved, inner)
		return nil
	default:
		tok := n.bare()
		if len(tok) == 0 {
			return n.errorf("unexpected %q in object key", c)
		}
		n.out = appendJSONString(n.out, tok)
		return nil
	}
}

func (n *normalizer) array(depth int) error {
	n.pos++ // '['
	n.out = append(n.out, '[')
	first := true
	for {
		n.skipSpace()
		if n.pos >= len(n.src) {
			return n.errorf("unterminated array")
		}
		switch n.src[n.pos] {
		case ']':
			n.pos++
			n.out = append(n.out, ']')
			return nil
		case ',':
			n.pos++
			continue
		}
		if !first {
			n.out = append(n.out, ',')
		}
		first = false
		if err := n.value(depth + 1); err != nil {
			return err
		}
		n.skipSpace()
		if n.pos < len(n.src) && n.src[n.pos] != ',' && n.src[n.pos] != ']' {
			return n.errorf("want ',' or ']' in array")
		}
	}
}

// str copies a string quoted with q as a double-quoted JSON string. Escapes
// are kept as written except \' which becomes a plain quote.
func (n *normalizer) str(q byte) error {
	start := n.pos
	n.pos++
	n.out = append(n.out, '"')
	for n.pos < len(n.src) {
		c := n.src[n.pos]
		switch {
		case c == q:
			n.pos++
			n.out = append(n.out, '"')
			return nil
		case c == '\\':
			if n.pos+1 >= len(n.src) {
				n.pos = len(n.src)
				return n.errorf("unterminated escape")
			}
			e := n.src[n.pos+1]
			if e == '\'' {
				n.out = append(n.out, '\'')
			} else {
				n.out = append(n.out, '\\', e)
			}
			n.pos += 2
		case c == '"': // only reachable inside a single-quoted string
			n.out = append(n.out, '\\', '"')
			n.pos++
		case c < 0x20:
			n.out = append(n.out, fmt.Sprintf(`\u%04x`, c)...)
			n.pos++
		default:
			n.out = append(n.out, c)
			n.pos++
		}
	}
	n.pos = start
	return n.errorf("unterminated string")
}

// bare returns the run of literal characters at pos (numbers, true, false,
// null, or an unquoted key) and advances past it.
func (n *normalizer) bare() []byte {
	start := n.pos
	for n.pos < len(n.src) {
		c := n.src[n.pos]
		if c == '-' || c == '+' || c == '.' || c == '_' || c == '$' ||
			(c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') {
			n.pos++
			continue
		}
		break
	}
	return n.src[start:n.pos]
}

// appendJSONString appends s as a JSON string literal.
func appendJSONString(dst, s []byte) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c < 0x20:
				dst = append(dst, fmt.Sprintf(`\u%04x`, c)...)
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, `\ufffd`...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

// FastJSONEntry is one entry of a map that fastjson writes with a
// non-string key.
type FastJSONEntry struct {
	Key   any // encoded with MarshalJSON and written unquoted, e.g. a MessageQueue struct or an int64
	Value any // encoded with MarshalJSON
}

// AppendObjectKeyMap appends entries as a fastjson map whose keys are the
// keys' raw JSON, e.g. {{"brokerName":"b","queueId":0,"topic":"T"}:5}. The
// output is what Java tools and the Go client's reset-offset parser read; it
// is not valid JSON. Entries are written in the given order, compactly.
func AppendObjectKeyMap(dst []byte, entries []FastJSONEntry) ([]byte, error) {
	dst = append(dst, '{')
	for i, e := range entries {
		if i > 0 {
			dst = append(dst, ',')
		}
		k, err := MarshalJSON(e.Key)
		if err != nil {
			return dst, err
		}
		v, err := MarshalJSON(e.Value)
		if err != nil {
			return dst, err
		}
		dst = append(dst, k...)
		dst = append(dst, ':')
		dst = append(dst, v...)
	}
	return append(dst, '}'), nil
}

// AppendInt64KeyMap appends m with bare numeric keys ({0:"a",1:"b"}), the
// plain fastjson form of Map<Long,String>, keys in ascending order. Prefer
// MarshalJSON (quoted keys), which every reader accepts; this exists for
// byte-level compatibility tests.
func AppendInt64KeyMap(dst []byte, m map[int64]string) []byte {
	keys := make([]int64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, k, 10)
		dst = append(dst, ':')
		dst = appendJSONString(dst, []byte(m[k]))
	}
	return append(dst, '}')
}
