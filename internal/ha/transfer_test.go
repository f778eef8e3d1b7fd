package ha

import (
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/store"
	"github.com/apogeemq/apogee/internal/testutil"
)

// 9.1 quorum: needAcks counts the master; a put is released once
// needAcks-1 replicas acknowledged its end offset.
func TestGroupTransferQuorum(t *testing.T) {
	tests := []struct {
		name     string
		needAcks int
		acks     map[uint64]int64
		next     int64
		want     bool // released with PUT_OK at once
	}{
		{"inSyncReplicas=1 never waits", 1, nil, 100, true},
		{"no replica", 2, nil, 100, false},
		{"replica behind", 2, map[uint64]int64{1: 99}, 100, false},
		{"replica at offset", 2, map[uint64]int64{1: 100}, 100, true},
		{"one of two needed", 3, map[uint64]int64{1: 100, 2: 50}, 100, false},
		{"two of two", 3, map[uint64]int64{1: 100, 2: 150}, 100, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGroupTransfer(tc.needAcks, time.Hour, nil)
			defer g.stop()
			for id, off := range tc.acks {
				g.Ack(id, off)
			}
			var got []store.PutStatus
			g.AwaitReplicated(tc.next, func(st store.PutStatus) { got = append(got, st) })
			if released := len(got) == 1 && got[0] == store.PutOK; released != tc.want {
				t.Fatalf("released=%v (%v), want %v", released, got, tc.want)
			}
		})
	}
}

func TestGroupTransferAckReleasesAndTimeoutExpires(t *testing.T) {
	g := NewGroupTransfer(2, 200*time.Millisecond, nil)
	done := make(chan struct{})
	go func() { defer close(done); g.run() }()
	defer func() { g.stop(); <-done }()

	res := make(chan store.PutStatus, 3)
	g.AwaitReplicated(100, func(st store.PutStatus) { res <- st })
	g.AwaitReplicated(200, func(st store.PutStatus) { res <- st })
	g.Ack(7, 150)
	if st := <-res; st != store.PutOK {
		t.Fatalf("first waiter: %v", st)
	}
	g.Remove(7)
	g.Ack(8, 120) // another replica, still short of 200
	start := time.Now()
	select {
	case st := <-res:
		if st != store.FlushSlaveTimeout {
			t.Fatalf("second waiter: %v", st)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("second waiter never expired")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("expiry took %v", d)
	}
	testutil.Eventually(t, time.Second, func() bool { return g.Waiting() == 0 })
}
