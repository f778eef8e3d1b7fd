package config

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Properties is an ordered set of key/value pairs read from a properties
// file. Order is kept so that warnings name keys in file order.
type Properties struct {
	keys   []string
	values map[string]string
}

// Get returns the value of key and whether it was present.
func (p *Properties) Get(key string) (string, bool) {
	v, ok := p.values[key]
	return v, ok
}

// Keys returns the keys in the order they first appeared.
func (p *Properties) Keys() []string { return append([]string(nil), p.keys...) }

// Set stores a value, keeping first-appearance order.
func (p *Properties) Set(key, value string) {
	if p.values == nil {
		p.values = make(map[string]string)
	}
	if _, ok := p.values[key]; !ok {
		p.keys = append(p.keys, key)
	}
	p.values[key] = value
}

// Len reports the number of keys.
func (p *Properties) Len() int { return len(p.keys) }

// LoadFile reads a properties file.
func LoadFile(path string) (*Properties, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	p, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("config: %s: %w", path, err)
	}
	return p, nil
}

// maxLine bounds one logical line so a hostile file cannot make us buffer
// without limit.
const maxLine = 1 << 20

// Parse reads properties syntax from r.
func Parse(r io.Reader) (*Properties, error) {
	p := &Properties{values: make(map[string]string)}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	var logical strings.Builder
	lineNo := 0
	continuing := false
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		if continuing {
			line = strings.TrimLeft(line, " \t\f")
		} else {
			line = strings.TrimLeft(line, " \t\f")
			if line == "" || line[0] == '#' || line[0] == '!' {
				continue
			}
		}
		if endsWithOddBackslashes(line) {
			logical.WriteString(line[:len(line)-1])
			if logical.Len() > maxLine {
				return nil, fmt.Errorf("line %d: logical line longer than %d bytes", lineNo, maxLine)
			}
			continuing = true
			continue
		}
		logical.WriteString(line)
		continuing = false
		k, v, err := splitEntry(logical.String())
		logical.Reset()
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
		p.Set(k, v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", lineNo+1, err)
	}
	if continuing && logical.Len() > 0 {
		k, v, err := splitEntry(logical.String())
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
		p.Set(k, v)
	}
	return p, nil
}

func endsWithOddBackslashes(s string) bool {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitEntry splits a logical line at the first unescaped '=', ':' or blank.
func splitEntry(line string) (string, string, error) {
	i := 0
	for i < len(line) {
		c := line[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			break
		}
		i++
	}
	if i > len(line) {
		i = len(line)
	}
	rawKey := line[:i]
	rest := line[i:]
	rest = strings.TrimLeft(rest, " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	key, err := unescape(rawKey)
	if err != nil {
		return "", "", err
	}
	val, err := unescape(rest)
	if err != nil {
		return "", "", err
	}
	// RocketMQ trims values when it applies them (MixAll.properties2Object).
	return key, strings.TrimSpace(val), nil
}

func unescape(s string) (string, error) {
	if !strings.Contains(s, "\\") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			break
		}
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf("malformed \\u escape in %q", s)
			}
			n, err := strconv.ParseUint(s[i+1:i+5], 16, 32)
			if err != nil {
				return "", fmt.Errorf("malformed \\u escape in %q", s)
			}
			r := rune(n)
			if !utf8.ValidRune(r) {
				r = utf8.RuneError
			}
			b.WriteRune(r)
			i += 4
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}

// Apply copies properties into the exported fields of the struct that dst
// points to. A field's key is its `conf` tag (RocketMQ's key name); fields
// without the tag are skipped. Supported kinds: string, bool, all ints,
// floats, time.Duration (Go syntax, or a bare integer meaning milliseconds),
// and []string (comma or semicolon separated).
//
// It returns the keys that matched no field (callers warn about them) and
// an error naming the first key whose value does not parse.
func Apply(p *Properties, dst any) (unknown []string, err error) {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("config: Apply needs a pointer to a struct, got %T", dst)
	}
	fields := fieldsByKey(v.Elem())
	for _, k := range p.keys {
		f, ok := fields[k]
		if !ok {
			unknown = append(unknown, k)
			continue
		}
		if err := setField(f, p.values[k]); err != nil {
			return unknown, fmt.Errorf("config: key %s: bad value %q: %w", k, p.values[k], err)
		}
	}
	return unknown, nil
}

// SetKey sets a single key on dst, as Apply would. It reports whether the
// key is known.
func SetKey(dst any, key, value string) (bool, error) {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return false, fmt.Errorf("config: SetKey needs a pointer to a struct, got %T", dst)
	}
	f, ok := fieldsByKey(v.Elem())[key]
	if !ok {
		return false, nil
	}
	if err := setField(f, value); err != nil {
		return true, fmt.Errorf("config: key %s: bad value %q: %w", key, value, err)
	}
	return true, nil
}

// Keys lists the conf keys of the struct src points to (or is), sorted.
func Keys(src any) []string {
	v := reflect.Indirect(reflect.ValueOf(src))
	m := fieldsByKey(v)
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ToMap renders the struct's conf fields as strings, the shape RocketMQ's
// GET_BROKER_CONFIG and the startup log use.
func ToMap(src any) map[string]string {
	v := reflect.Indirect(reflect.ValueOf(src))
	out := make(map[string]string)
	for k, f := range fieldsByKey(v) {
		out[k] = formatField(f)
	}
	return out
}

func fieldsByKey(v reflect.Value) map[string]reflect.Value {
	out := make(map[string]reflect.Value)
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct {
			for k, f := range fieldsByKey(v.Field(i)) {
				out[k] = f
			}
			continue
		}
		key := sf.Tag.Get("conf")
		if key == "" || key == "-" {
			continue
		}
		out[key] = v.Field(i)
	}
	return out
}

var durationType = reflect.TypeOf(time.Duration(0))

func setField(f reflect.Value, s string) error {
	s = strings.TrimSpace(s)
	if f.Type() == durationType {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			f.SetInt(int64(time.Duration(n) * time.Millisecond))
			return nil
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		f.SetInt(int64(d))
		return nil
	}
	switch f.Kind() {
	case reflect.String:
		f.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return err
		}
		f.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, f.Type().Bits())
		if err != nil {
			return err
		}
		f.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(s, 10, f.Type().Bits())
		if err != nil {
			return err
		}
		f.SetUint(n)
	case reflect.Float32, reflect.Float64:
		n, err := strconv.ParseFloat(s, f.Type().Bits())
		if err != nil {
			return err
		}
		f.SetFloat(n)
	case reflect.Slice:
		if f.Type().Elem().Kind() != reflect.String {
			return fmt.Errorf("unsupported field type %s", f.Type())
		}
		parts := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' })
		out := make([]string, 0, len(parts))
		for _, p := range parts {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		f.Set(reflect.ValueOf(out))
	default:
		return fmt.Errorf("unsupported field type %s", f.Type())
	}
	return nil
}

func formatField(f reflect.Value) string {
	if f.Type() == durationType {
		return strconv.FormatInt(int64(time.Duration(f.Int())/time.Millisecond), 10)
	}
	switch f.Kind() {
	case reflect.Slice:
		parts := make([]string, f.Len())
		for i := range parts {
			parts[i] = f.Index(i).String()
		}
		return strings.Join(parts, ";")
	default:
		return fmt.Sprint(f.Interface())
	}
}
