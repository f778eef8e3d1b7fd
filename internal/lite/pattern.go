package lite

import "strings"

// Wildcard lite subscriptions (RocketMQ 5.5's LitePatternMatcher): a client
// of a wildcard group (lite.sub.wildcard) names patterns instead of lite
// topics. A pattern is segments separated by "__" (lite topic names cannot
// hold '$', and '.' is common in them, so RocketMQ chose "__"): a literal
// segment matches itself, "*" any one segment, and "**", allowed only as
// the last segment, one or more segments. "**" alone matches every lite
// topic.

// PatternSeparator separates the segments of patterns and lite topic names.
const PatternSeparator = "__"

// ValidPattern reports whether p is a pattern: non-empty, no empty
// segment, "**" only last, '*' only as a whole segment.
func ValidPattern(p string) bool {
	if p == "" {
		return false
	}
	segs := strings.Split(p, PatternSeparator)
	for i, s := range segs {
		switch {
		case s == "":
			return false
		case s == "**":
			if i != len(segs)-1 {
				return false
			}
		case s == "*":
		case strings.Contains(s, "*"):
			return false
		}
	}
	return true
}

// MatchPattern reports whether the lite topic name matches the pattern (an
// invalid pattern matches nothing).
func MatchPattern(pattern, name string) bool {
	if name == "" || !ValidPattern(pattern) {
		return false
	}
	return matchSegs(strings.Split(pattern, PatternSeparator), strings.Split(name, PatternSeparator))
}

func matchSegs(p, n []string) bool {
	for i, s := range p {
		switch {
		case s == "**":
			return len(n) > i // one or more segments left
		case i >= len(n):
			return false
		case s != "*" && s != n[i]:
			return false
		}
	}
	return len(n) == len(p)
}

// MatchAnyPattern reports whether name matches one of patterns.
func MatchAnyPattern(patterns []string, name string) bool {
	for _, p := range patterns {
		if MatchPattern(p, name) {
			return true
		}
	}
	return false
}
