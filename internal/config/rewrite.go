package config

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Writing run-time configuration updates back to a properties file (the
// broker's UPDATE_BROKER_CONFIG and the controller's
// UPDATE_CONTROLLER_CONFIG persist to the file the process was started
// with, as RocketMQ does).

// PersistKeys rewrites the properties file at path with updates
// applied: every line that sets an updated key (also one continued over
// several lines) becomes "key=value"; comments, blank lines and other keys
// stay as they were; updated keys the file lacks are appended in sorted
// order. The new file replaces the old atomically (temp file in the same
// directory, fsync, rename, directory fsync) and keeps its mode.
func PersistKeys(path string, updates map[string]string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: file: %w", err)
	}
	out := RewriteKeys(old, updates)
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("config: file: %w", err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("config: write %s: %w", path, err)
	}
	if _, err := f.Write(out); err != nil {
		return fail(err)
	}
	if err := f.Chmod(mode); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("config: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("config: replace %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// RewriteKeys applies updates to properties text (see PersistKeys). Keys
// are recognised with this package's own parser, one logical line at a time, so escapes and continuations read as
// at start-up.
func RewriteKeys(old []byte, updates map[string]string) []byte {
	var out bytes.Buffer
	written := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(old))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	var logical []string // physical lines of the entry being read
	flush := func() {
		if len(logical) == 0 {
			return
		}
		text := strings.Join(logical, "\n")
		key := ""
		if p, err := Parse(strings.NewReader(text)); err == nil && p.Len() == 1 {
			key = p.Keys()[0]
		}
		if v, ok := updates[key]; ok {
			out.WriteString(escapePropertyKey(key) + "=" + escapePropertyValue(v) + "\n")
			written[key] = true
		} else {
			out.WriteString(text + "\n")
		}
		logical = logical[:0]
	}
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " \t\f")
		if len(logical) == 0 && (trimmed == "" || trimmed[0] == '#' || trimmed[0] == '!') {
			out.WriteString(line + "\n")
			continue
		}
		logical = append(logical, line)
		if !endsWithOddBackslash(line) {
			flush()
		}
	}
	flush()
	var missing []string
	for k := range updates {
		if !written[k] {
			missing = append(missing, k)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 && endsWithOddBackslash(strings.TrimSuffix(out.String(), "\n")) {
		// The file ends inside a continued entry: a blank line closes it
		// so the first appended key is not read as its continuation.
		out.WriteByte('\n')
	}
	for _, k := range missing {
		out.WriteString(escapePropertyKey(k) + "=" + escapePropertyValue(updates[k]) + "\n")
	}
	return out.Bytes()
}

func endsWithOddBackslash(s string) bool {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// escapePropertyKey escapes what would end or alter a key in properties
// syntax. Bytes are copied as they are (specials are ASCII), so invalid
// UTF-8 survives.
func escapePropertyKey(k string) string {
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		switch c := k[i]; c {
		case '=', ':', ' ', '\t', '\f', '#', '!', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// escapePropertyValue escapes backslashes, line breaks and a leading blank.
func escapePropertyValue(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\\':
			b.WriteString(`\\`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case i == 0 && (c == ' ' || c == '\t' || c == '\f'):
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
