package lite

import (
	"fmt"
	"testing"
)

// BenchmarkSubscriptionsRemove: a client holding 100,000 subscriptions
// removes 1,000 of them (PARTIAL_REMOVE) and adds them back per iteration;
// ns/op is the pair. Run with
//
//	go test -run '^$' -bench SubscriptionsRemove -benchtime 20x ./internal/lite
func BenchmarkSubscriptionsRemove(b *testing.B) {
	s := NewSubscriptions()
	all := make([]string, 100000)
	for i := range all {
		all[i] = QueueName("P", fmt.Sprint("t", i))
	}
	if _, _, err := s.Add("c", "g", "P", all, false, 0, 1); err != nil {
		b.Fatal(err)
	}
	some := make([]string, 0, 1000)
	for i := 0; i < len(all); i += 100 {
		some = append(some, all[i])
	}
	b.ReportAllocs()
	for b.Loop() {
		if n := len(s.Remove("c", some, 2)); n != len(some) {
			b.Fatalf("removed %d", n)
		}
		if added, _, _ := s.Add("c", "g", "P", some, false, 0, 3); len(added) != len(some) {
			b.Fatalf("added %d", len(added))
		}
	}
}
