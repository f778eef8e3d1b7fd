package filter

import (
	"errors"
	"strings"
	"testing"
)

// TestMatch covers the grammar of docs/broker.md §1.13 against one
// property set.
func TestMatch(t *testing.T) {
	props := map[string]string{
		"a": "10", "b": "x", "c": "2.5", "TAGS": "TagA", "KEYS": "k1 k2", "flag": "true",
		"neg": "-3", "junk": "abc", "empty": "", "q": "it's",
	}
	tests := []struct {
		expr string
		want bool
	}{
		{"a > 5", true},
		{"a > 5 AND b = 'x'", true},
		{"a > 50 AND b = 'x'", false},
		{"a > 50 OR b = 'x'", true},
		{"a = 10", true},
		{"a = 10L", true},
		{"a <> 10", false},
		{"a >= 10 AND a <= 10", true},
		{"a < 10", false},
		{"a = 10.0", true},
		{"c > 2", false}, // "2.5" does not parse as a long: evaluation error
		{"c > 2.0", true},
		{"c < 2.6e0", true},
		{"a = 0xA", true},
		{"neg = -3", true},
		{"-neg = 3", true},
		{"-a < 0", true},
		{"+a = 10", true},
		{"a BETWEEN 1 AND 10", true},
		{"a BETWEEN 11 AND 20", false},
		{"a NOT BETWEEN 11 AND 20", true},
		{"a NOT BETWEEN 1 AND 10", false},
		{"b IN ('x', 'y')", true},
		{"b IN ('y')", false},
		{"b NOT IN ('y', 'z')", true},
		{"b NOT IN ('x')", false},
		{"TAGS = 'TagA'", true},
		{"KEYS CONTAINS 'k2'", true},
		{"KEYS NOT CONTAINS 'k2'", false},
		{"KEYS STARTSWITH 'k1'", true},
		{"KEYS NOT STARTSWITH 'k2'", true},
		{"KEYS ENDSWITH 'k2'", true},
		{"KEYS NOT ENDSWITH 'k2'", false},
		{"missing IS NULL", true},
		{"a IS NULL", false},
		{"a IS NOT NULL", true},
		{"empty IS NOT NULL", true},
		{"empty = ''", true},
		{"q = 'it''s'", true},
		{"flag = TRUE", true},
		{"flag = FALSE", false},
		{"flag <> FALSE", true},
		{"TRUE", true},
		{"FALSE", false},
		{"NOT FALSE", true},
		{"NOT (a > 5)", false},
		{"not a > 50", true},
		{"(a > 5 OR b = 'y') AND b = 'x'", true},
		{"a > 5 OR b = 'y' AND b = 'z'", true}, // AND binds tighter
		{"(a > 50 OR b = 'y') AND b = 'x'", false},
		{"NOT NOT a > 5", true},
		{"a > 5 and B = 'x'", false}, // identifiers are case-sensitive
		{"a > 5 -- comment\n AND b = 'x'", true},
		{"a /* block */ > 5", true},
		{"junk > 5", false}, // not a number: no match
		{"NOT (junk > 5)", false},
		{"junk > 5 OR a = 10", false}, // an error anywhere fails the whole expression
		{"(a) = 10", true},
		{"(a > 5) = TRUE", true},
		{"a = '10'", true},
		{"b > junk", false}, // ordering of two strings is an error
		{"a > neg", false},  // two strings cannot be ordered, even numeric ones
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			e, err := Compile(tc.expr)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			if got := e.Match(props); got != tc.want {
				t.Fatalf("Match = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestThreeValuedLogic checks SQL NULL semantics: a missing property makes
// a comparison unknown, which AND/OR/NOT propagate.
func TestThreeValuedLogic(t *testing.T) {
	props := map[string]string{"a": "1"}
	type result int
	const (
		isFalse result = iota
		isTrue
		isNull
	)
	tests := []struct {
		expr string
		want result
	}{
		{"x = 1", isNull},
		{"x <> 1", isNull},
		{"NOT x = 1", isNull},
		{"x = 1 AND a = 1", isNull},
		{"x = 1 AND a = 2", isFalse},
		{"a = 2 AND x = 1", isFalse},
		{"x = 1 OR a = 1", isTrue},
		{"x = 1 OR a = 2", isNull},
		{"x = 1 OR x = 2", isNull},
		{"x BETWEEN 1 AND 2", isNull},
		{"x NOT BETWEEN 1 AND 2", isNull},
		{"x IN ('1')", isNull},
		{"x NOT IN ('1')", isNull},
		{"x CONTAINS '1'", isNull},
		{"x NOT CONTAINS '1'", isNull},
		{"x IS NULL", isTrue},
		{"x IS NOT NULL", isFalse},
		{"a = NULL", isNull},
		{"NOT (x = 1 AND a = 2)", isTrue},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			e, err := Compile(tc.expr)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			res, known, err := e.Evaluate(props)
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			got := isNull
			if known {
				got = isFalse
				if res {
					got = isTrue
				}
			}
			if got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			if e.Match(props) != (tc.want == isTrue) {
				t.Fatalf("Match disagrees with Evaluate")
			}
		})
	}
}

// TestCompileErrors checks that bad expressions fail with a position that
// points at the problem.
func TestCompileErrors(t *testing.T) {
	tests := []struct {
		expr string
		pos  int
		msg  string
	}{
		{"", 0, "empty"},
		{"   ", 0, "empty"},
		{"a", 0, "boolean"},
		{"a > ", 4, "unexpected end"},
		{"a > 5 AND", 9, "unexpected end"},
		{"a >> 5", 3, "unexpected"},
		{"a > 5 b = 1", 6, "expected AND, OR"},
		{"a = 'x", 4, "unterminated string"},
		{"a = 1 /* x", 6, "unterminated comment"},
		{"(a > 5", 6, "expected )"},
		{"a > 'x'", 2, "cannot be compared"},
		{"a BETWEEN 10 AND 1", 2, "lower bound"},
		{"a BETWEEN 'a' AND 'b'", 2, "BETWEEN"},
		{"a IN (1, 2)", 6, "string literal"},
		{"a IN 'x'", 5, "( after IN"},
		{"a IS 5", 5, "expected NULL"},
		{"a NOT 5", 6, "after NOT"},
		{"a CONTAINS 5", 11, "string literal"},
		{"a = 99999999999999999999", 4, "out of range"},
		{"a # 1", 2, "unexpected character"},
		{"a = 12abc", 4, "malformed number"},
		{"a > 5 AND b", 6, "not a boolean"},
		{"a LIKE 'x'", 2, "expected AND, OR"},
		{"TRUE > 1", 5, "cannot be compared"},
		{"a = 1e", 4, "exponent"},
		{"NOT a", 0, "NOT"},
		{"a = 1 OR 5", 6, "OR"},
		{"- 'x' = 1", 0, "sign"},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			_, err := Compile(tc.expr)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Compile(%q) error = %v, want *ParseError", tc.expr, err)
			}
			if pe.Pos != tc.pos {
				t.Errorf("position = %d, want %d (%v)", pe.Pos, tc.pos, err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not mention %q", err, tc.msg)
			}
			if !strings.Contains(err.Error(), "position") {
				t.Errorf("error %q does not name the position", err)
			}
		})
	}
}

func TestLimits(t *testing.T) {
	deep := strings.Repeat("(", MaxDepth+1) + "a = 1" + strings.Repeat(")", MaxDepth+1)
	if _, err := Compile(deep); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Fatalf("deep nesting: err = %v", err)
	}
	ok := strings.Repeat("(", MaxDepth-1) + "a = 1" + strings.Repeat(")", MaxDepth-1)
	if _, err := Compile(ok); err != nil {
		t.Fatalf("nesting within the limit: %v", err)
	}
	nots := strings.Repeat("NOT ", MaxDepth+1) + "a = 1"
	if _, err := Compile(nots); err == nil {
		t.Fatal("deep NOT chain accepted")
	}
	long := "a = '" + strings.Repeat("x", MaxLength) + "'"
	if _, err := Compile(long); err == nil {
		t.Fatal("over-long expression accepted")
	}
	// A long flat chain is fine (iterative, not recursive).
	chain := "a = 1" + strings.Repeat(" OR a = 1", 2000)
	e, err := Compile(chain)
	if err != nil {
		t.Fatalf("long OR chain: %v", err)
	}
	if !e.Match(map[string]string{"a": "1"}) {
		t.Fatal("long OR chain does not match")
	}
}

func TestKeywordsCaseInsensitive(t *testing.T) {
	e, err := Compile("a between 1 and 3 or b in ('x') and b is not null and not b contains 'y'")
	if err != nil {
		t.Fatal(err)
	}
	if !e.Match(map[string]string{"a": "2"}) || !e.Match(map[string]string{"b": "x"}) || e.Match(nil) {
		t.Fatal("lower-case keywords evaluate wrongly")
	}
	if e.String() == "" {
		t.Fatal("String is empty")
	}
}

func TestLongBoundaries(t *testing.T) {
	e, err := Compile("a = -9223372036854775808 AND b = 9223372036854775807 AND c = 0x7FFFFFFFFFFFFFFF")
	if err != nil {
		t.Fatal(err)
	}
	if !e.Match(map[string]string{"a": "-9223372036854775808", "b": "9223372036854775807", "c": "9223372036854775807"}) {
		t.Fatal("int64 boundaries do not match")
	}
	if _, err := Compile("a = 9223372036854775808"); err == nil {
		t.Fatal("int64 overflow accepted")
	}
}

func BenchmarkMatch(b *testing.B) {
	e, err := Compile("a > 5 AND b = 'x' AND (c IN ('p', 'q') OR d IS NULL)")
	if err != nil {
		b.Fatal(err)
	}
	props := map[string]string{"a": "10", "b": "x", "c": "p", "UNIQ_KEY": "AC11000100002A9F0000000000000000", "TAGS": "t"}
	b.ReportAllocs()
	for b.Loop() {
		if !e.Match(props) {
			b.Fatal("no match")
		}
	}
}

// BenchmarkCompile: the broker compiles a SQL92 subscription per pull.
func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile("a > 5 AND b = 'x' AND (c IN ('p', 'q') OR d IS NULL)"); err != nil {
			b.Fatal(err)
		}
	}
}
