package lite

import (
	"errors"
	"testing"
)

func TestValidateName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"00900", true}, {"session-1.a_b", true}, {"", false}, {"a$b", false}, {"a/b", false},
		{"a b", false}, {string(make([]byte, MaxNameLength+1)), false},
	} {
		err := ValidateName(tc.name)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalidName)) {
			t.Errorf("ValidateName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func TestQueueNameRoundTrip(t *testing.T) {
	q := QueueName("Parent", "s-1")
	if q != "%LMQ%$Parent$s-1" || !IsQueueName(q) {
		t.Fatalf("QueueName = %q", q)
	}
	p, n, ok := SplitQueueName(q)
	if !ok || p != "Parent" || n != "s-1" {
		t.Fatalf("SplitQueueName(%q) = %q %q %v", q, p, n, ok)
	}
	for _, bad := range []string{"Parent", "%LMQ%x", "%LMQ%$", "%LMQ%$P$", "%LMQ%$$x"} {
		if _, _, ok := SplitQueueName(bad); ok {
			t.Errorf("SplitQueueName(%q) ok", bad)
		}
	}
}

func FuzzSplitQueueName(f *testing.F) {
	f.Add("%LMQ%$P$l")
	f.Add("%LMQ%$$")
	f.Fuzz(func(t *testing.T, s string) {
		p, n, ok := SplitQueueName(s)
		if ok && QueueName(p, n) != s {
			t.Fatalf("%q splits to %q %q, which joins to %q", s, p, n, QueueName(p, n))
		}
	})
}
