package broker

import (
	"os"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/namesrv"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/store"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestPopSlaveActingMaster: a master and a slave with
// enableSlaveActingMaster behind a name server with supportActingMaster.
// With the master gone, the route shows the slave as id 0; it serves pops
// of the master's backlog, acks (also of the master's receipt handles)
// and changes of invisible time, and revives nothing. The returning master
// takes the slave's POP state before it registers: nothing acked on either
// is delivered again, every unacked message comes back once.
func TestPopSlaveActingMaster(t *testing.T) {
	nsCfg := namesrv.DefaultConfig()
	nsCfg.ListenPort, nsCfg.BindAddress, nsCfg.SupportActingMaster = 0, "127.0.0.1", true
	ns := namesrv.New(nsCfg, testutil.Logger(t))
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })

	mdir := t.TempDir()
	mc := popTestConfig(t, mdir)
	mc.ListenPort = testutil.FreePort(t) // the restarted master keeps its address
	mc.NamesrvAddr = []string{ns.Addr().String()}
	mc.EnableSlaveActingMaster = true
	mc.Store.BrokerRole = store.RoleSyncMaster
	mc.InSyncReplicas = 2
	mc.Store.SlaveTimeout = 5 * time.Second
	master := startBroker(t, mc)
	sc := popTestConfig(t, t.TempDir())
	sc.BrokerID = 1
	sc.Store.BrokerRole = store.RoleSlave
	sc.NamesrvAddr = mc.NamesrvAddr
	sc.EnableSlaveActingMaster = true
	sc.SyncBrokerMemberGroupPeriod = 100 * time.Millisecond
	sc.HaReconnectInterval = 50 * time.Millisecond
	slave := startBroker(t, sc)
	testutil.Eventually(t, 30*time.Second, func() bool { return len(master.HAServer().Stats().Slaves) == 1 }, "slave never connected")

	c := newClient(t)
	const topic, group = "PopActing", "GA"
	ct := protocol.CreateTopicRequestHeader{Topic: topic, ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, TopicFilterType: "SINGLE_TAG"}
	mustCode(t, invoke(t, c, master.Addr(), protocol.NewRequest(protocol.UpdateAndCreateTopic, protocol.EncodeHeader(&ct, false), nil)), protocol.Success)
	sendN(t, c, master, topic, 0, 12, "a") // SYNC_MASTER with 2 in sync: the slave has each one
	testutil.Eventually(t, 30*time.Second, func() bool { return slave.Store.MaxOffsetInQueue(topic, 0) >= 12 }, "the slave never dispatched the backlog")
	testutil.Eventually(t, 30*time.Second, func() bool { _, ok := slave.Topics.Get(topic); return ok }, "topic never synced to the slave")

	// The master pops 6 and acks 2.
	const invisible = 3 * time.Second
	mustCode(t, invoke(t, c, slave.Addr(), popReq(group, topic, -1, 6, invisible, 0, false)), protocol.SlaveNotAvailable)
	got := decodePop(t, invoke(t, c, master.Addr(), popReq(group, topic, -1, 6, invisible, 0, false)), group, "broker-a")
	if len(got) != 6 {
		t.Fatalf("master popped %d", len(got))
	}
	acked := map[string]bool{}
	for _, i := range []int{0, 1} {
		mustCode(t, invoke(t, c, master.Addr(), ackReq(group, got[i])), protocol.Success)
		acked[string(got[i].msg.Body)] = true
	}
	testutil.Eventually(t, 30*time.Second, func() bool {
		return slave.pop.state.Stats().InFlight == 4 && slave.pop.replica.upToDate.Load()
	}, "the slave's POP state never caught up: %+v", slave.pop.state.Stats())

	// The master goes: the slave acts.
	if err := master.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() bool { return slave.acting.on.Load() }, "the slave never acted as master")
	route := ns.Routes().PickupTopicRouteData(topic)
	if route == nil || len(route.BrokerDatas) != 1 || route.BrokerDatas[0].BrokerAddrs[protocol.MasterID] != slave.Addr() {
		t.Fatalf("route without the master: %+v", route)
	}
	// The slave pops the rest of the backlog (the master's 4 in flight
	// stay invisible), acks one of its own and one of the master's
	// handles, and re-times one.
	var fromSlave []popped
	testutil.Eventually(t, 30*time.Second, func() bool {
		fromSlave = append(fromSlave, popAll(t, c, slave, group, topic, invisible)...)
		return len(fromSlave) >= 6
	}, "the acting slave popped %d of the 6 not popped before", len(fromSlave))
	for _, p := range fromSlave {
		if b := string(p.msg.Body); b < "a-6" && len(b) == 3 {
			t.Fatalf("%s popped again on the slave before its invisible time", b)
		}
	}
	for _, p := range []popped{fromSlave[0], fromSlave[1], got[2]} {
		mustCode(t, invoke(t, c, slave.Addr(), ackReq(group, p)), protocol.Success)
		acked[string(p.msg.Body)] = true
	}
	mustCode(t, invoke(t, c, slave.Addr(), changeReq(group, fromSlave[2], invisible)), protocol.Success)
	if st := slave.pop.state.Stats(); st.InFlight != 7 {
		t.Fatalf("acting slave in flight %+v, want 7", st)
	}
	if _, err := os.Stat(slave.actingMarkerPath()); err != nil {
		t.Fatalf("no acting marker: %v", err)
	}
	// Nothing is revived on the slave, even past the invisible time.
	time.Sleep(invisible + 500*time.Millisecond)
	if n := slave.pop.revived.Load(); n != 0 {
		t.Fatalf("the acting slave revived %d", n)
	}

	// The master returns: it takes the slave's state before registering.
	master = startBroker(t, mc)
	if st := master.pop.state.Stats(); st.InFlight != 7 {
		t.Fatalf("returning master has %+v in flight, want the slave's 7", st)
	}
	testutil.Eventually(t, 30*time.Second, func() bool {
		return !slave.acting.on.Load() && !slave.acting.acted.Load() && slave.pop.replica.upToDate.Load()
	}, "the slave never followed the returning master again")
	mustCode(t, invoke(t, c, slave.Addr(), ackReq(group, fromSlave[3])), protocol.SlaveNotAvailable)
	if _, err := os.Stat(slave.actingMarkerPath()); !os.IsNotExist(err) {
		t.Fatalf("acting marker left: %v", err)
	}

	want := map[string]bool{}
	for _, p := range append(append([]popped(nil), got...), fromSlave...) {
		if !acked[string(p.msg.Body)] {
			want[string(p.msg.Body)] = true
		}
	}
	var back []popped
	testutil.Eventually(t, 40*time.Second, func() bool {
		back = append(back, popAll(t, c, master, group, topic, time.Minute)...)
		return len(back) >= len(want)
	}, "the returning master redelivered %d of %d", len(back), len(want))
	time.Sleep(300 * time.Millisecond)
	back = append(back, popAll(t, c, master, group, topic, time.Minute)...)
	seen := map[string]int{}
	for _, p := range back {
		seen[string(p.msg.Body)]++
		if acked[string(p.msg.Body)] {
			t.Fatalf("acked message %s delivered again", p.msg.Body)
		}
	}
	for w := range want {
		if seen[w] != 1 {
			t.Fatalf("%s redelivered %d times; all %v", w, seen[w], seen)
		}
	}
	if len(back) != len(want) {
		t.Fatalf("redelivered %v, want %v", seen, want)
	}
}
