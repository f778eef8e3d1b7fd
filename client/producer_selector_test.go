package client

import "testing"

func TestJavaStringHash(t *testing.T) {
	tests := []struct {
		in   string
		want int32
	}{
		{"", 0},
		{"a", 97},
		{"order-1", -1207111310},
		{"hello world", 1794106052},
		{"€", 8364},
		{"😀", 1772899},
	}
	for _, tc := range tests {
		if got := javaStringHash(tc.in); got != tc.want {
			t.Errorf("javaStringHash(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestHashQueueSelectorIsStable(t *testing.T) {
	qs := pqueues("a", "b")
	var s HashQueueSelector
	for _, key := range []any{"order-1", 42, "x"} {
		first := s.Select(qs, nil, key)
		for range 10 {
			if q := s.Select(qs, nil, key); q != first {
				t.Fatalf("key %v: %v then %v", key, first, q)
			}
		}
	}
	// Java: Math.abs("order-1".hashCode()) % 8 = 1207111310 % 8 = 6.
	if q := s.Select(qs, nil, "order-1"); q != qs[6] {
		t.Fatalf("order-1 -> %v, want %v", q, qs[6])
	}
	// Sharding key when arg is nil.
	m := NewMessage("T", []byte("x")).WithShardingKey("order-1")
	if q := s.Select(qs, m, nil); q != qs[6] {
		t.Fatalf("sharding key -> %v, want %v", q, qs[6])
	}
}
