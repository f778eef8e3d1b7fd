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

// allAckInSyncStateSet: a put needs every SyncStateSet replica; a shrink
// of the set releases puts the remaining members already hold.
func TestGroupTransferAllAck(t *testing.T) {
	tests := []struct {
		name string
		set  []uint64
		acks map[uint64]int64
		want bool
	}{
		{"set of the master alone", nil, nil, true},
		{"member behind", []uint64{2}, map[uint64]int64{2: 99}, false},
		{"member at offset", []uint64{2}, map[uint64]int64{2: 100}, true},
		{"an ack outside the set does not count", []uint64{2}, map[uint64]int64{3: 100}, false},
		{"one of two members behind", []uint64{2, 3}, map[uint64]int64{2: 100, 3: 10}, false},
		{"both members", []uint64{2, 3}, map[uint64]int64{2: 100, 3: 100}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGroupTransfer(1, time.Hour, nil)
			g.allAck = true
			defer g.stop()
			g.SetSyncStateSet(tc.set)
			for id, off := range tc.acks {
				g.Ack(id, off)
			}
			var got []store.PutStatus
			g.AwaitReplicated(100, func(st store.PutStatus) { got = append(got, st) })
			if released := len(got) == 1 && got[0] == store.PutOK; released != tc.want {
				t.Fatalf("released=%v (%v), want %v", released, got, tc.want)
			}
			if !tc.want {
				g.SetSyncStateSet(nil) // shrink to the master: released
				if len(got) != 1 || got[0] != store.PutOK {
					t.Fatalf("after shrink: %v", got)
				}
			}
		})
	}
}

// A controller-mode slave identifies itself (handshake) and its acks are
// keyed by its broker id; Progress reports it.
func TestHandshakeIdentifiesSlave(t *testing.T) {
	master := openStore(t, t.TempDir(), store.RoleSyncMaster)
	slave := openStore(t, t.TempDir(), store.RoleSlave)
	cfg := testServerConfig()
	cfg.AllAck, cfg.SyncFromMinOffset = true, true
	srv := startServer(t, cfg, master)
	srv.Transfer().SetSyncStateSet([]uint64{7})
	master.SetReplicator(srv.Replicator())
	ccfg := testClientConfig(srv.Addr().String())
	ccfg.BrokerID = 7
	startClient(t, ccfg, slave)
	putN(t, master, "T", 0, 20) // sync puts: released only by broker 7's acks
	waitIdentical(t, master, slave, 0)
	testutil.Eventually(t, 5*time.Second, func() bool {
		p, ok := srv.Progress()[7]
		return ok && p.AckOffset == master.MaxPhyOffset() && !p.LastCaughtUp.IsZero()
	}, "progress of broker 7: %v", srv.Progress())
}

// The confirm offset (allAck mode) is the lowest ack of the SyncStateSet's
// replicas; -1 (no limit) for the master alone; kept while a member has
// no connection; computed again as acks and the set change.
func TestGroupTransferConfirmOffset(t *testing.T) {
	type step struct {
		set  []uint64 // non-nil: SetSyncStateSet
		ack  [2]int64 // id, offset (id 0: none)
		gone uint64   // Remove
		want int64    // the listener's last value
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"master alone: no limit", []step{{set: []uint64{}, want: -1}}},
		{"lowest ack of the set", []step{
			{set: []uint64{1, 2}, want: 500}, // no acks yet: the initial value stays
			{ack: [2]int64{1, 300}, want: 500},
			{ack: [2]int64{2, 200}, want: 200},
			{ack: [2]int64{2, 400}, want: 300},
			{ack: [2]int64{1, 900}, want: 400},
		}},
		{"a disconnected member freezes it", []step{
			{set: []uint64{1}, want: 500},
			{ack: [2]int64{1, 600}, want: 600},
			{gone: 1, want: 600},
			{ack: [2]int64{3, 900}, want: 600}, // not a member
			{ack: [2]int64{1, 700}, want: 700}, // reconnected
		}},
		{"shrink to the master lifts the limit", []step{
			{set: []uint64{1}, want: 500},
			{ack: [2]int64{1, 550}, want: 550},
			{set: []uint64{}, want: -1},
			{set: []uint64{1}, want: 550}, // expanded again: its ack counts
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGroupTransfer(1, time.Hour, nil)
			g.allAck = true
			defer g.stop()
			// As the broker does: the set first, then the listener, with
			// the initial value (500) set by the broker itself.
			g.SetSyncStateSet(tc.steps[0].set)
			got := int64(500)
			g.SetConfirmListener(func(c int64) { got = c })
			if got != tc.steps[0].want {
				t.Fatalf("initial: confirm %d, want %d", got, tc.steps[0].want)
			}
			for i, s := range tc.steps[1:] {
				switch {
				case s.set != nil:
					g.SetSyncStateSet(s.set)
				case s.gone != 0:
					g.Remove(s.gone)
				default:
					g.Ack(uint64(s.ack[0]), s.ack[1])
				}
				if got != s.want {
					t.Fatalf("step %d %+v: confirm %d, want %d", i, s, got, s.want)
				}
			}
		})
	}
}
