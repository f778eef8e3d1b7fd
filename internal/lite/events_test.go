package lite

import (
	"reflect"
	"sort"
	"testing"
)

func TestEventsOfferPoll(t *testing.T) {
	e := NewEvents()
	if _, ok := e.Poll("c", 0); ok {
		t.Fatal("poll of an unknown client found an event")
	}
	for _, q := range []string{"a", "b", "a", "c"} {
		if !e.Offer("c", "g", q, 3, 1) {
			t.Fatalf("offer %s refused below capacity", q)
		}
	}
	if e.Offer("c", "g", "d", 3, 1) {
		t.Fatal("offer past capacity accepted")
	}
	if n := e.Len("c"); n != 3 {
		t.Fatalf("len = %d, want 3 (a once)", n)
	}
	var got []string
	for {
		q, ok := e.Poll("c", 5)
		if !ok {
			break
		}
		got = append(got, q)
	}
	if !reflect.DeepEqual(got, []string{"a", "b", "c"}) {
		t.Fatalf("polled %v, want a b c in order", got)
	}
	if acc, con, ok := e.Access("c"); !ok || acc != 5 || con != 5 {
		t.Fatalf("access = %d %d %v, want 5 5", acc, con, ok)
	}
	// Reuse of the consumed front keeps the order.
	for i, q := range []string{"x", "y", "z"} {
		e.Offer("c", "g", q, 3, int64(10+i))
		if i == 1 {
			e.Poll("c", 11)
		}
	}
	if q, _ := e.Poll("c", 12); q != "y" {
		t.Fatalf("poll = %s, want y", q)
	}
	if g, pending := e.Remove("c"); g != "g" || !reflect.DeepEqual(pending, []string{"z"}) {
		t.Fatalf("remove = %s %v, want g [z]", g, pending)
	}
	if e.Has("c") || e.Clients() != 0 {
		t.Fatal("client still known after Remove")
	}
}

func TestEventsMaybeBlocked(t *testing.T) {
	e := NewEvents()
	e.Offer("busy", "g", "a", 10, 0) // events, no pop for 10+ s: blocked
	e.Offer("idle", "g", "a", 10, 0)
	e.Poll("idle", 0) // empty, popped at 0: blocked only after 35 s
	e.Offer("live", "g", "a", 10, 0)
	e.Poll("live", 0)
	e.Offer("live", "g", "b", 10, 0)
	e.Poll("live", ClientInactiveMs) // popped just now
	cases := []struct {
		now  int64
		want []string
	}{
		{ClientInactiveMs, nil},
		{ClientInactiveMs + 1, []string{"busy"}},
		{ClientLongPollingMs + 1, []string{"busy", "idle"}},
		{ClientLongPollingMs + ClientInactiveMs + 1, []string{"busy", "idle", "live"}},
	}
	for _, c := range cases {
		got := e.MaybeBlocked(c.now)
		sort.Strings(got)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("MaybeBlocked(%d) = %v, want %v", c.now, got, c.want)
		}
	}
	blocked, active, low := e.Readiness("live", 5, ClientInactiveMs+ActiveConsumingMs-1)
	if blocked || !active || !low {
		t.Fatalf("readiness of live = %v %v %v, want false true true", blocked, active, low)
	}
	e.Offer("busy", "g", "b", 10, 0)
	if _, _, low := e.Readiness("busy", 10, 0); low {
		t.Fatal("2 of 10 events is not below the low water mark 0.2")
	}
}
