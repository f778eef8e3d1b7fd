package broker

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/pop"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/store"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestPopStateFailover: a slave follows its master's POP state; after the
// master is gone and the slave's data directory starts as the master (what
// controller mode does on an election), every message the old master had
// in flight stays invisible until its invisible time and is then
// redelivered, acked messages (singly and by batch ack) never come back,
// and the old master's receipt handles still ack on the new one.
func TestPopStateFailover(t *testing.T) {
	mc := popTestConfig(t, t.TempDir())
	mc.Store.BrokerRole = store.RoleSyncMaster
	mc.InSyncReplicas = 2
	mc.Store.SlaveTimeout = 5 * time.Second
	master := startBroker(t, mc)
	sc := popTestConfig(t, t.TempDir())
	sc.BrokerID = 1
	sc.Store.BrokerRole = store.RoleSlave
	sc.HaMasterAddress = master.HAServer().Addr().String()
	sc.HaReconnectInterval = 50 * time.Millisecond
	slave, err := New(sc, testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := slave.Start(); err != nil {
		t.Fatal(err)
	}
	// No name server here: give the slave its master's address as a
	// registration answer would.
	slave.ha.mu.Lock()
	slave.ha.masterAddr = master.Addr()
	slave.ha.mu.Unlock()
	testutil.Eventually(t, 5*time.Second, func() bool { return len(master.HAServer().Stats().Slaves) == 1 }, "slave never connected")

	c := newClient(t)
	const topic, group = "PopFail", "GF"
	ct := protocol.CreateTopicRequestHeader{Topic: topic, ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, TopicFilterType: "SINGLE_TAG"}
	mustCode(t, invoke(t, c, master.Addr(), protocol.NewRequest(protocol.UpdateAndCreateTopic, protocol.EncodeHeader(&ct, false), nil)), protocol.Success)
	sendN(t, c, master, topic, 0, 10, "f") // SYNC_MASTER with 2 in sync: the slave has each one
	const invisible = 5 * time.Second
	poppedAt := time.Now() // before the pop: its invisible time ends after poppedAt+invisible
	got := popAll(t, c, master, group, topic, invisible)
	if len(got) != 10 {
		t.Fatalf("popped %d", len(got))
	}
	acked := map[string]bool{}
	for _, i := range []int{0, 3} {
		mustCode(t, invoke(t, c, master.Addr(), ackReq(group, got[i])), protocol.Success)
		acked[string(got[i].msg.Body)] = true
	}
	a := protocol.BatchAck{ConsumerGroup: group, Topic: topic, Retry: "0", QueueID: 0,
		ReviveQueueID: got[0].extra.ReviveQueueID, PopTime: got[0].extra.PopTime, InvisibleTime: got[0].extra.InvisibleTime}
	if err := a.SetOffsetsFrom(got[0].extra.CkQueueOffset, []int64{got[5].extra.QueueOffset, got[6].extra.QueueOffset}); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(protocol.BatchAckMessageRequestBody{BrokerName: "broker-a", Acks: []protocol.BatchAck{a}})
	mustCode(t, invoke(t, c, master.Addr(), protocol.NewRequest(protocol.BatchAckMessage, nil, body)), protocol.Success)
	acked["f-5"], acked["f-6"] = true, true

	testutil.Eventually(t, 10*time.Second, func() bool {
		ms, ss := master.pop.state.Stats(), slave.pop.state.Stats()
		return ss.InFlight == 6 && ms.InFlight == 6 && slave.pop.replica.upToDate.Load()
	}, "the slave's POP state never caught up: %+v", slave.pop.state.Stats())
	for i, p := range got {
		k := popKey(group, p)
		if in := slave.pop.state.InFlight(k, p.extra.CkQueueOffset, p.extra.PopTime, p.extra.QueueOffset); in == acked[string(p.msg.Body)] {
			t.Fatalf("message %d (%s): in flight on the slave %v, acked %v", i, p.msg.Body, in, acked[string(p.msg.Body)])
		}
	}
	// The slave's copy is its master's: acks and changes sent to it are
	// refused and change nothing.
	mustCode(t, invoke(t, c, slave.Addr(), ackReq(group, got[1])), protocol.SlaveNotAvailable)
	mustCode(t, invoke(t, c, slave.Addr(), protocol.NewRequest(protocol.BatchAckMessage, nil, body)), protocol.SlaveNotAvailable)
	mustCode(t, invoke(t, c, slave.Addr(), changeReq(group, got[1], time.Second)), protocol.SlaveNotAvailable)
	if st := slave.pop.state.Stats(); st.InFlight != 6 {
		t.Fatalf("a slave applied an ack: %+v", st)
	}
	// The slave's metadata (topic, group) as SlaveSynchronize copies it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := slave.SyncFromMaster(ctx, master.Addr()); err != nil {
		t.Fatal(err)
	}

	// Failover: the master goes, the slave's directory starts as master.
	if err := master.Close(); err != nil {
		t.Fatal(err)
	}
	if err := slave.Close(); err != nil {
		t.Fatal(err)
	}
	nc := sc
	nc.BrokerID, nc.HaMasterAddress = 0, ""
	nc.Store.BrokerRole = store.RoleAsyncMaster
	nm := startBroker(t, nc)
	if st := nm.pop.state.Stats(); st.InFlight != 6 {
		t.Fatalf("new master recovered %+v, want 6 in flight", st)
	}
	// An old receipt handle acks on the new master (unless a very slow
	// run already passed the invisible time), and the in-flight messages
	// stay invisible until then.
	want := []string{"f-1", "f-2", "f-4", "f-7", "f-8", "f-9"}
	var back []popped
	if time.Since(poppedAt) < invisible-time.Second {
		r := invoke(t, c, nm.Addr(), ackReq(group, got[9]))
		if r.Code != 0 || r.Remark != "" || nm.pop.state.Stats().InFlight != 5 {
			t.Fatalf("old handle on the new master: %d %q, %+v", r.Code, r.Remark, nm.pop.state.Stats())
		}
		acked["f-9"], want = true, want[:5]
		early := popAll(t, c, nm, group, topic, time.Minute)
		if len(early) != 0 && time.Since(poppedAt) < invisible {
			t.Fatalf("%d in-flight messages popped again before their invisible time", len(early))
		}
		back = append(back, early...)
	}
	testutil.Eventually(t, 15*time.Second, func() bool {
		back = append(back, popAll(t, c, nm, group, topic, time.Minute)...)
		return len(back) >= len(want)
	}, "redelivery on the new master")
	time.Sleep(300 * time.Millisecond)
	back = append(back, popAll(t, c, nm, group, topic, time.Minute)...)
	seen := map[string]int{}
	for _, p := range back {
		seen[string(p.msg.Body)]++
		if acked[string(p.msg.Body)] {
			t.Fatalf("acked message %s redelivered by the new master", p.msg.Body)
		}
		if p.real != protocol.PopRetryTopicV2(topic, group) || p.msg.ReconsumeTimes != 1 {
			t.Fatalf("%s redelivered from %s, reconsume %d", p.msg.Body, p.real, p.msg.ReconsumeTimes)
		}
	}
	for _, w := range want {
		if seen[w] != 1 {
			t.Fatalf("%s redelivered %d times after the failover; all: %v", w, seen[w], seen)
		}
	}
	if len(back) != len(want) {
		t.Fatalf("redelivered %v, want %v", seen, want)
	}
}

func popKey(group string, p popped) pop.QueueKey {
	return pop.QueueKey{Group: group, Topic: p.real, QueueID: p.extra.QueueID}
}
