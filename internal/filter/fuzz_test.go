package filter

import (
	"strings"
	"testing"
	"time"
)

// FuzzParse checks that Compile never panics, answers quickly, that a
// failure is always a *ParseError with a position inside the input, and
// that a compiled expression evaluates without panicking.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"a > 5 AND b = 'x'", "a BETWEEN 1 AND 2", "a NOT IN ('x','y')", "a IS NOT NULL",
		"KEYS CONTAINS 'k' OR TAGS STARTSWITH 't'", "NOT (a <> 1.5e3)", "-a = -9223372036854775808",
		"a = 0x1F -- c", "/* x */ TRUE", "((a = 1))", "a = 'it''s'", "a >", "'", "(((",
	} {
		f.Add(s)
	}
	props := map[string]string{"a": "7", "b": "x", "KEYS": "k", "TAGS": "t1"}
	f.Fuzz(func(t *testing.T, src string) {
		start := time.Now()
		e, err := Compile(src)
		if d := time.Since(start); d > time.Second {
			t.Fatalf("Compile took %v for %d bytes", d, len(src))
		}
		if err != nil {
			pe, ok := err.(*ParseError)
			if !ok {
				t.Fatalf("error %T is not a *ParseError: %v", err, err)
			}
			if pe.Pos < 0 || pe.Pos > len(src) && len(src) <= MaxLength {
				t.Fatalf("position %d outside the input (%d bytes)", pe.Pos, len(src))
			}
			_ = err.Error()
			return
		}
		e.Match(props)
		e.Match(nil)
		// Compiling the same text again gives the same verdict.
		e2, err := Compile(e.String())
		if err != nil || e2.Match(props) != e.Match(props) {
			t.Fatalf("recompile of %q differs: %v", src, err)
		}
		if strings.TrimSpace(src) == "" {
			t.Fatal("empty expression compiled")
		}
	})
}
