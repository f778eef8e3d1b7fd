package lite

import (
	"strings"
	"testing"
)

func TestPatterns(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		valid   bool
		match   []string
		nomatch []string
	}{
		{"pay__refund", true, []string{"pay__refund"}, []string{"pay", "pay__refund__x", "payrefund"}},
		{"pay__*", true, []string{"pay__refund", "pay__ok"}, []string{"pay", "pay__refund__notify", "ship__ok"}},
		{"*__refund", true, []string{"pay__refund", "notify__refund"}, []string{"refund", "a__b__refund"}},
		{"pay__*__notify", true, []string{"pay__x__notify"}, []string{"pay__notify", "pay__x__y__notify"}},
		{"**", true, []string{"a", "a__b__c"}, []string{""}},
		{"pay__**", true, []string{"pay__a", "pay__a__b"}, []string{"pay", "ship__a"}},
		{"*", true, []string{"a", "a.b-c"}, []string{"a__b"}},
		{"", false, nil, []string{"a"}},
		{"pay__", false, nil, []string{"pay__"}},
		{"__pay", false, nil, nil},
		{"pay____x", false, nil, nil},
		{"**__pay", false, nil, []string{"a__pay"}},
		{"pay*", false, nil, []string{"payx"}},
	} {
		if got := ValidPattern(tc.pattern); got != tc.valid {
			t.Errorf("ValidPattern(%q) = %v, want %v", tc.pattern, got, tc.valid)
		}
		for _, n := range tc.match {
			if !MatchPattern(tc.pattern, n) {
				t.Errorf("%q does not match %q", tc.pattern, n)
			}
		}
		for _, n := range tc.nomatch {
			if MatchPattern(tc.pattern, n) {
				t.Errorf("%q matches %q", tc.pattern, n)
			}
		}
	}
	if !MatchAnyPattern([]string{"bad*", "x__*"}, "x__y") || MatchAnyPattern(nil, "x") {
		t.Error("MatchAnyPattern")
	}
}

// FuzzMatchPattern: matching never panics; a literal valid name matches
// itself, "**" matches every name, and a match implies a valid pattern.
func FuzzMatchPattern(f *testing.F) {
	f.Add("pay__*", "pay__refund")
	f.Add("**", "a__b")
	f.Add("a__**", "a")
	f.Add("*__*", "__")
	f.Fuzz(func(t *testing.T, pattern, name string) {
		m := MatchPattern(pattern, name)
		if m && !ValidPattern(pattern) {
			t.Fatalf("invalid %q matched %q", pattern, name)
		}
		if name != "" && ValidPattern(name) && !strings.Contains(name, "*") && !MatchPattern(name, name) {
			t.Fatalf("%q does not match itself", name)
		}
		if name != "" && !MatchPattern("**", name) {
			t.Fatalf("** does not match %q", name)
		}
	})
}
