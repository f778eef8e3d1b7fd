package broker

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/store"
	"github.com/apogeemq/apogee/internal/testutil"
)

func haPair(t *testing.T, inSync int) (master, slave *Broker) {
	t.Helper()
	mc := testConfig(t, t.TempDir())
	mc.Store.BrokerRole = store.RoleSyncMaster
	mc.InSyncReplicas = inSync
	mc.Store.SlaveTimeout = 500 * time.Millisecond
	master = startBroker(t, mc)
	if master.HAServer() == nil || master.HAServer().Addr() == nil {
		t.Fatal("master runs no HA server")
	}
	sc := testConfig(t, t.TempDir())
	sc.BrokerID = 1
	sc.Store.BrokerRole = store.RoleSlave
	sc.SlaveReadEnable = true
	sc.HaMasterAddress = master.HAServer().Addr().String()
	sc.HaReconnectInterval = 50 * time.Millisecond
	slave = startBroker(t, sc)
	testutil.Eventually(t, 5*time.Second, func() bool {
		st := master.HAServer().Stats()
		return len(st.Slaves) == 1 && st.Slaves[0].AckOffset >= 0
	}, "slave never connected")
	return master, slave
}

// docs/broker.md §2.1: a SYNC_MASTER with inSyncReplicas=2 acknowledges a send only once
// the slave has it; the slave copies the master's metadata and serves
// pulls; without the slave a send gets FLUSH_SLAVE_TIMEOUT (12).
func TestMasterSlaveSyncReplication(t *testing.T) {
	master, slave := haPair(t, 2)
	c := newClient(t)
	ct := protocol.CreateTopicRequestHeader{Topic: "HA", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6, TopicFilterType: "SINGLE_TAG"}
	mustCode(t, invoke(t, c, master.Addr(), protocol.NewRequest(protocol.UpdateAndCreateTopic, protocol.EncodeHeader(&ct, false), nil)), protocol.Success)
	for i := range 10 {
		resp := invoke(t, c, master.Addr(), sendReq("HA", 0, []byte("payload"), nil))
		mustCode(t, resp, protocol.Success)
		if slave.Store.MaxPhyOffset() < master.Store.MaxPhyOffset() {
			t.Fatalf("send %d acknowledged before the slave had it", i)
		}
	}
	if _, _, err := master.Groups.FindOrCreate("g1", true); err != nil { // a consumer's heartbeat would create it
		t.Fatal(err)
	}
	oh := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: "g1", Topic: "HA", QueueID: 0, CommitOffset: 7}
	mustCode(t, invoke(t, c, master.Addr(), protocol.NewRequest(protocol.UpdateConsumerOffset, protocol.EncodeHeader(&oh, false), nil)), protocol.Success)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := slave.SyncFromMaster(ctx, master.Addr()); err != nil {
		t.Fatal(err)
	}
	if tc, ok := slave.Topics.Get("HA"); !ok || tc.ReadQueueNums != 2 {
		t.Fatalf("slave topic = %+v, %v", tc, ok)
	}
	if off, ok := slave.Offsets.Query("g1", "HA", 0); !ok || off != 7 {
		t.Fatalf("slave offset = %d, %v", off, ok)
	}
	waitDispatched(t, slave, "HA", 0, 10)
	resp := invoke(t, c, slave.Addr(), pullReq("g2", "HA", 0, 0, protocol.PullFlagSubscription, 0, "*"))
	mustCode(t, resp, protocol.Success)
	if resp.Body == nil {
		t.Fatal("slave pull returned no messages")
	}
	// Sends to the slave are refused.
	mustCode(t, invoke(t, c, slave.Addr(), sendReq("HA", 0, []byte("x"), nil)), protocol.SystemBusy)

	if err := slave.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return len(master.HAServer().Stats().Slaves) == 0 })
	mustCode(t, invoke(t, c, master.Addr(), sendReq("HA", 0, []byte("lonely"), nil)), protocol.FlushSlaveTimeout)
}

// docs/broker.md §2.1: inSyncReplicas=1 (the 5.x default) never waits for a slave, even on
// a SYNC_MASTER with none connected.
func TestSyncMasterDefaultInSyncReplicasDoesNotWait(t *testing.T) {
	mc := testConfig(t, t.TempDir())
	mc.Store.BrokerRole = store.RoleSyncMaster
	master := startBroker(t, mc)
	c := newClient(t)
	mustCode(t, invoke(t, c, master.Addr(), sendReq("T", 0, []byte("x"), nil)), protocol.Success)
}

// A slave takes its master's addresses from the registration answer; a
// master's brokerId is forced to 0 and a slave needs one > 0.
func TestSlaveTakesMasterAddressFromRegistration(t *testing.T) {
	sc := testConfig(t, t.TempDir())
	sc.BrokerID = 2
	sc.Store.BrokerRole = store.RoleSlave
	slave := startBroker(t, sc)
	resp := protocol.NewResponse(protocol.NewRequest(protocol.RegisterBroker, nil, nil), protocol.Success, "")
	resp.ExtFields = protocol.EncodeHeader(&protocol.RegisterBrokerResponseHeader{HaServerAddr: "127.0.0.1:1", MasterAddr: "127.0.0.1:2"}, false)
	slave.onRegisterResult(resp)
	if got := slave.HAClient().MasterAddress(); got != "127.0.0.1:1" {
		t.Fatalf("HA master address %q", got)
	}
	if got := slave.MasterAddr(); got != "127.0.0.1:2" {
		t.Fatalf("master address %q", got)
	}
	// An empty answer (master gone) keeps the last addresses.
	slave.onRegisterResult(protocol.NewResponse(protocol.NewRequest(protocol.RegisterBroker, nil, nil), protocol.Success, ""))
	if got := slave.HAClient().MasterAddress(); got != "127.0.0.1:1" {
		t.Fatalf("HA master address after empty answer %q", got)
	}

	mc := testConfig(t, t.TempDir())
	mc.BrokerID = 3
	b, err := New(mc, testutil.Logger(t))
	if err != nil || b.Config().BrokerID != 0 {
		t.Fatalf("master brokerId = %d, %v; want forced to 0", b.Config().BrokerID, err)
	}
	bad := testConfig(t, t.TempDir())
	bad.Store.BrokerRole = store.RoleSlave
	if _, err := New(bad, nil); err == nil {
		t.Fatal("a SLAVE with brokerId 0 was accepted")
	}
}

// A busy derived HA port (listenPort+1) does not stop a master: it listens
// on a free port and registers that one.
func TestMasterHAPortFallsBackWhenDerivedPortBusy(t *testing.T) {
	first := startBroker(t, testConfig(t, t.TempDir()))
	busy := first.HAServer().Addr().(*net.TCPAddr).Port // held by the first broker
	cfg := testConfig(t, t.TempDir())
	cfg.VIPChannelEnable = false
	cfg.ListenPort = busy - 1
	b, err := New(cfg, testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Skipf("listen port %d not free: %v", busy-1, err)
	}
	defer b.Close()
	got := b.HAServer().Addr().(*net.TCPAddr).Port
	if got == busy || b.haServerAddr() != net.JoinHostPort("127.0.0.1", strconv.Itoa(got)) {
		t.Fatalf("HA port %d, registered %s (busy %d)", got, b.haServerAddr(), busy)
	}
}
