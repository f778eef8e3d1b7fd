package store

import (
	"strings"
	"testing"
)

// checkIndexHash asserts that build's hash (topic# once, then the key, eight
// bytes per step) equals indexKeyHash of the joined key, which queries use.
func checkIndexHash(t *testing.T, topic, key []byte) {
	t.Helper()
	want := indexKeyHash(string(topic) + "#" + string(key))
	if got := indexSlotHash(javaHashFrom(31*javaHashFrom(0, topic)+'#', key)); got != want {
		t.Fatalf("topic %q key %q: hash %d, indexKeyHash %d", topic, key, got, want)
	}
	if got := indexSlotHash(javaHashFrom(0, []byte(string(topic)+"#"+string(key)))); got != want {
		t.Fatalf("topic %q key %q: one-piece hash %d, indexKeyHash %d", topic, key, got, want)
	}
}

func TestIndexHashMatchesJavaHash(t *testing.T) {
	for _, c := range [][2]string{
		{"", ""},
		{"BenchTopic", "0A0000020FA0000000000000000000AB"},
		{"T", "k"},
		{"topic-with-a-long-name_0123456789", "order-4711"},
		{"中文主题", "キー"},
		{"T", "a😀b" + strings.Repeat("x", 9)},  // a surrogate pair
		{"T\xe4\xb8", "\xb8\xff" + "12345678"}, // invalid UTF-8 on both sides
		{"T", "1234567\xe4\xb8\xad1234567812345678"},
	} {
		checkIndexHash(t, []byte(c[0]), []byte(c[1]))
	}
	// The Java values: "a".hashCode() = 97, "T#k" = 84*961 + 35*31 + 107.
	if got := indexSlotHash(javaHashFrom(0, []byte("a"))); got != 97 {
		t.Fatalf("hash of a = %d", got)
	}
	if got := indexSlotHash(javaHashFrom(0, []byte("T#k"))); got != 84*961+35*31+107 {
		t.Fatalf("hash of T#k = %d", got)
	}
}

func FuzzIndexHash(f *testing.F) {
	f.Add([]byte("BenchTopic"), []byte("0A0000020FA0000000000000000000AB"))
	f.Add([]byte("中文"), []byte("a😀b12345678"))
	f.Fuzz(func(t *testing.T, topic, key []byte) { checkIndexHash(t, topic, key) })
}
