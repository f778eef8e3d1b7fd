package lite

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
)

func TestRegistryTouchQuotaExpire(t *testing.T) {
	r := NewRegistry()
	for i, name := range []string{"a", "b", "c"} {
		_, created, err := r.Touch("P", name, int64(100+i), 3)
		if !created || err != nil {
			t.Fatalf("Touch %s = %v %v", name, created, err)
		}
	}
	if _, _, err := r.Touch("P", "d", 200, 3); !errors.Is(err, ErrQuota) {
		t.Fatalf("fourth lite topic: %v, want ErrQuota", err)
	}
	if _, created, err := r.Touch("P", "a", 150, 3); created || err != nil {
		t.Fatalf("existing lite topic at quota: %v %v", created, err)
	}
	if r.Count("P") != 3 || r.Len() != 3 || r.Count("Q") != 0 {
		t.Fatalf("counts %d %d", r.Count("P"), r.Len())
	}
	ttl := func(p string) int64 {
		if p == "P" {
			return 50
		}
		return 0
	}
	// b (101) and c (102) are older than 160-50; a was written at 150.
	got := r.Expire(160, ttl, 0)
	if !slices.Equal(got, []string{QueueName("P", "b"), QueueName("P", "c")}) {
		t.Fatalf("Expire = %v", got)
	}
	if !r.Exists(QueueName("P", "a")) || r.Exists(QueueName("P", "b")) {
		t.Fatal("wrong survivors")
	}
	if got := r.Expire(199, ttl, 0); len(got) != 0 {
		t.Fatalf("a expired early: %v", got)
	}
	if got := r.Expire(200, ttl, 0); len(got) != 1 || r.Len() != 0 || len(r.Parents()) != 0 {
		t.Fatalf("Expire(200) = %v, len %d, parents %v", got, r.Len(), r.Parents())
	}
	// Never-expiring parents keep everything.
	r.Touch("Q", "x", 1, 0)
	if got := r.Expire(1<<40, ttl, 0); len(got) != 0 {
		t.Fatalf("Q expired: %v", got)
	}
}

func TestRegistryRestoreAndList(t *testing.T) {
	r := NewRegistry()
	found := map[string]int64{"Plain": 5}
	for i := range 50 {
		found[QueueName("P", fmt.Sprintf("s%02d", i))] = int64(1000 - i) // s49 oldest
	}
	if n := r.Restore(found); n != 50 {
		t.Fatalf("Restore = %d", n)
	}
	got := r.Expire(1000-40+10, func(string) int64 { return 10 }, 0)
	// Written at <= 960: s40..s49, oldest first.
	if len(got) != 10 || got[0] != QueueName("P", "s49") || got[9] != QueueName("P", "s40") {
		t.Fatalf("Expire after restore = %v", got)
	}
	l := r.List("P", 3)
	if len(l) != 3 || l[0].Name != "s00" || l[2].Name != "s02" || l[0].LastWrite != 1000 {
		t.Fatalf("List = %+v", l)
	}
}

func TestRegistryConcurrent(t *testing.T) {
	r := NewRegistry()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				r.Touch("P", fmt.Sprintf("%d-%d", g, i%50), int64(i), 0)
				if i%100 == 0 {
					r.Expire(int64(i), func(string) int64 { return 30 }, 10)
				}
			}
		}()
	}
	wg.Wait()
	n := 0
	for range r.List("P", 0) {
		n++
	}
	if n != r.Count("P") || n != r.Len() {
		t.Fatalf("list %d, count %d, len %d", n, r.Count("P"), r.Len())
	}
}

func TestRegistryRestoreAtRefine(t *testing.T) {
	r := NewRegistry()
	qs := []string{QueueName("P", "old"), QueueName("P", "new"), QueueName("P", "sent")}
	if n := r.RestoreAt(qs, 1000); n != 3 {
		t.Fatalf("RestoreAt = %d", n)
	}
	r.Touch("P", "sent", 1000, 0) // a send at start: its time stays
	r.Touch("P", "sent", 1200, 0)
	r.Refine(map[string]int64{qs[0]: 100, qs[1]: 900, qs[2]: 50}, 1000)
	if lw, _ := r.LastWrite(qs[2]); lw != 1200 {
		t.Fatalf("a lite topic sent to after start refined to %d", lw)
	}
	got := r.Expire(1150, func(string) int64 { return 200 }, 0)
	if !slices.Equal(got, []string{qs[0], qs[1]}) {
		t.Fatalf("Expire after Refine = %v, want old then new", got)
	}
}
