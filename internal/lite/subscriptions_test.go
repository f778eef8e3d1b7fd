package lite

import (
	"slices"
	"sync"
	"testing"
)

func TestSubscriptionsAddRemoveReplace(t *testing.T) {
	s := NewSubscriptions()
	qa, qb, qc := QueueName("P", "a"), QueueName("P", "b"), QueueName("P", "c")
	if added, _, err := s.Add("c1", "g", "P", []string{qa, qb}, false, 3, 1); err != nil || len(added) != 2 {
		t.Fatalf("add = %v %v", added, err)
	}
	if _, _, err := s.Add("c2", "g", "P", []string{qa, qc}, false, 3, 1); err != ErrSubscriptionQuota {
		t.Fatalf("add past the quota: %v", err)
	}
	if s.Count() != 2 {
		t.Fatalf("count %d after a refused add", s.Count())
	}
	if !s.Wants("c1", qa) || s.Wants("c1", qc) || s.Wants("c2", qa) {
		t.Fatal("Wants wrong")
	}
	if g, p, _, n, q, ok := s.Client("c1", 1); !ok || g != "g" || p != "P" || n != 2 || len(q) != 1 || (q[0] != qa && q[0] != qb) {
		t.Fatalf("client = %s %s %d %v %v, want g P, 2, one of a b", g, p, n, q, ok)
	}
	if added, _ := s.Replace("c1", "g", "P", []string{qb, qc}, false, nil, 2); !slices.Equal(added, []string{qc}) || s.Count() != 2 {
		t.Fatalf("replace added %v, count %d", added, s.Count())
	}
	if subs := s.Subscribers(qa); len(subs) != 0 {
		t.Fatalf("a still has %v", subs)
	}
	if got := s.Remove("c1", []string{qc, qa}, 3); !slices.Equal(got, []string{qc}) || s.Count() != 1 {
		t.Fatalf("remove = %v, count %d", got, s.Count())
	}
	// Another parent or group starts a new session.
	s.Add("c1", "g", "Q", []string{QueueName("Q", "x")}, false, 0, 4)
	if s.Count() != 1 || len(s.Subscribers(qb)) != 0 {
		t.Fatal("rebinding kept the old set")
	}
	if ev := s.Clean(QueueName("Q", "x")); len(ev) != 1 || ev[0] != (Eviction{"c1", "g", QueueName("Q", "x")}) || s.Count() != 0 {
		t.Fatalf("clean = %v, count %d", ev, s.Count())
	}
	s.Drop("c1")
	if s.ClientCount() != 0 {
		t.Fatal("drop kept the client")
	}
}

func TestSubscriptionsExclusiveAndWildcard(t *testing.T) {
	s := NewSubscriptions()
	qa := QueueName("P", "a")
	s.Add("c1", "g", "P", []string{qa}, true, 0, 1)
	s.Add("o1", "other", "P", []string{qa}, true, 0, 1)
	_, ev, _ := s.Add("c2", "g", "P", []string{qa}, true, 0, 1)
	if len(ev) != 1 || ev[0] != (Eviction{"c1", "g", qa}) {
		t.Fatalf("evictions %v, want c1 only (other groups keep theirs)", ev)
	}
	if _, again := s.Replace("c1", "g", "P", []string{qa}, false, nil, 2); len(again) != 1 || s.Wants("c1", qa) {
		t.Fatalf("complete set naming a tombstoned queue: renotify %v, wants %v", again, s.Wants("c1", qa))
	}
	// Once the set stops naming it, the tombstone goes; a later add takes it back.
	s.Replace("c1", "g", "P", nil, false, nil, 3)
	if _, again := s.Replace("c1", "g", "P", []string{qa}, false, nil, 4); len(again) != 0 || !s.Wants("c1", qa) {
		t.Fatal("stale tombstone kept")
	}
	s.Replace("w", "gw", "P", nil, true, nil, 5)
	if !s.Wants("w", QueueName("P", "zz")) || s.Wants("w", QueueName("Q", "zz")) || !slices.Contains(s.Subscribers(qa), "w") {
		t.Fatal("wildcard client does not want its parent's lite topics")
	}
	s.Replace("wp", "gw", "P", nil, true, []string{"pay__*"}, 5)
	if !s.Wants("wp", QueueName("P", "pay__x")) || s.Wants("wp", QueueName("P", "ship__x")) ||
		slices.Contains(s.Subscribers(qa), "wp") || !slices.Contains(s.Subscribers(QueueName("P", "pay__x")), "wp") {
		t.Fatal("wildcard patterns not applied")
	}
	s.Drop("wp")
	n := s.Count()
	s.Drop("w")
	if s.Count() != n-1 {
		t.Fatal("dropping the wildcard client did not release its subscription")
	}
}

func TestSubscriptionsConcurrent(t *testing.T) {
	s := NewSubscriptions()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := string(rune('a' + i))
			for j := range 200 {
				q := QueueName("P", string(rune('a'+j%7)))
				s.Add(id, "g", "P", []string{q}, i%2 == 0, 0, int64(j))
				s.Client(id, 0)
				s.Wants(id, q)
				if j%5 == 0 {
					s.Remove(id, []string{q}, int64(j))
				}
				if j%11 == 0 {
					s.Clean(q)
				}
			}
			s.Drop(id)
		}()
	}
	wg.Wait()
	if s.Count() != 0 || s.ClientCount() != 0 {
		t.Fatalf("count %d clients %d after every client dropped", s.Count(), s.ClientCount())
	}
}
