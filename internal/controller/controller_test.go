package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/testutil"
)

// freePorts reserves n loopback ports (closed again before use).
func freePorts(t testing.TB, n int) []string {
	t.Helper()
	var out []string
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}

// cluster is n in-process controllers.
type cluster struct {
	t     testing.TB
	cfgs  []Config
	nodes []*Controller
}

func testConfigs(t testing.TB, n int) []Config {
	ports := freePorts(t, 2*n)
	raftAddrs, rpcAddrs := ports[:n], ports[n:]
	dir := t.TempDir()
	var cfgs []Config
	for i := range n {
		cfg := DefaultConfig()
		cfg.JRaftServerID = raftAddrs[i]
		cfg.JRaftInitConf = raftAddrs
		cfg.JRaftControllerRPCAddr = rpcAddrs
		cfg.ControllerStorePath = filepath.Join(dir, "n"+strconv.Itoa(i))
		cfg.ScanNotActiveBrokerInterval = 100 * time.Millisecond
		cfg.RaftHeartbeatTimeout = 300 * time.Millisecond
		cfg.RaftElectionTimeout = 300 * time.Millisecond
		cfg.RaftLeaderLeaseTimeout = 200 * time.Millisecond
		cfgs = append(cfgs, cfg)
	}
	return cfgs
}

func startCluster(t testing.TB, cfgs []Config) *cluster {
	cl := &cluster{t: t, cfgs: cfgs, nodes: make([]*Controller, len(cfgs))}
	for i := range cfgs {
		cl.start(i)
	}
	t.Cleanup(cl.closeAll)
	return cl
}

func (cl *cluster) start(i int) {
	c, err := New(cl.cfgs[i], testutil.DiscardLogger())
	if err != nil {
		cl.t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		cl.t.Fatal(err)
	}
	cl.nodes[i] = c
}

func (cl *cluster) stop(i int) {
	if cl.nodes[i] != nil {
		cl.nodes[i].Close()
		cl.nodes[i] = nil
	}
}

func (cl *cluster) closeAll() {
	for i := range cl.nodes {
		cl.stop(i)
	}
}

func (cl *cluster) leader() int {
	cl.t.Helper()
	idx := -1
	testutil.Eventually(cl.t, 10*time.Second, func() bool {
		for i, n := range cl.nodes {
			if n != nil && n.IsLeader() {
				idx = i
				return true
			}
		}
		return false
	}, "no controller leader")
	return idx
}

func invoke(t testing.TB, cl *remoting.Client, addr string, code protocol.RequestCode, h any, body []byte) *protocol.Command {
	t.Helper()
	var ext map[string]string
	if h != nil {
		ext = protocol.EncodeHeader(h, false)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cl.InvokeSync(ctx, addr, protocol.NewRequest(code, ext, body))
	if err != nil {
		t.Fatalf("%s to %s: %v", code, addr, err)
	}
	return resp
}

func newClient(t testing.TB) *remoting.Client {
	c := remoting.NewClient(remoting.ClientConfig{Logger: testutil.DiscardLogger()})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// fakeBroker applies for an id, registers and heartbeats like a broker.
type fakeBroker struct {
	t      testing.TB
	cl     *remoting.Client
	name   string
	id     int64
	addr   string
	offset int64
}

func (b *fakeBroker) join(ctl string) {
	b.t.Helper()
	resp := invoke(b.t, b.cl, ctl, protocol.ControllerGetNextBrokerID, &protocol.GetNextBrokerIDRequestHeader{ClusterName: "c", BrokerName: b.name}, nil)
	if resp.Code != 0 {
		b.t.Fatalf("next id: %d %s", resp.Code, resp.Remark)
	}
	id, _ := strconv.ParseInt(resp.Ext("nextBrokerId"), 10, 64)
	resp = invoke(b.t, b.cl, ctl, protocol.ControllerApplyBrokerID, &protocol.ApplyBrokerIDRequestHeader{ClusterName: "c", BrokerName: b.name, AppliedBrokerID: id, RegisterCheckCode: b.addr}, nil)
	if resp.Code != 0 {
		b.t.Fatalf("apply id %d: %d %s", id, resp.Code, resp.Remark)
	}
	b.id = id
	resp = invoke(b.t, b.cl, ctl, protocol.ControllerRegisterBroker, &protocol.RegisterBrokerToControllerRequestHeader{ClusterName: "c", BrokerName: b.name, BrokerID: id, BrokerAddress: b.addr}, nil)
	if resp.Code != 0 {
		b.t.Fatalf("register: %d %s", resp.Code, resp.Remark)
	}
}

func (b *fakeBroker) beat(ctl string, timeout time.Duration) *protocol.Command {
	ms := timeout.Milliseconds()
	ep := int32(0)
	return invoke(b.t, b.cl, ctl, protocol.BrokerHeartbeat, &protocol.BrokerHeartbeatRequestHeader{ClusterName: "c", BrokerName: b.name,
		BrokerAddr: b.addr, BrokerID: &b.id, MaxOffset: &b.offset, HeartbeatTimeoutMills: &ms, Epoch: &ep}, nil)
}

func replicaInfo(t testing.TB, cl *remoting.Client, ctl, name string) (master int64, epoch int32, set protocol.SyncStateSet) {
	t.Helper()
	resp := invoke(t, cl, ctl, protocol.ControllerGetReplicaInfo, &protocol.GetReplicaInfoRequestHeader{BrokerName: name}, nil)
	if resp.Code != 0 {
		t.Fatalf("replica info: %d %s", resp.Code, resp.Remark)
	}
	master, _ = strconv.ParseInt(resp.Ext("masterBrokerId"), 10, 64)
	e, _ := strconv.ParseInt(resp.Ext("masterEpoch"), 10, 32)
	set, err := protocol.DecodeSyncStateSet(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return master, int32(e), set
}

// TestControllerElectionAndFailover: three controllers elect a raft
// leader; two brokers join through a follower (forwarded); the first to
// heartbeat becomes master; the SyncStateSet grows; when the master's
// heartbeats stop, the slave is elected with a new epoch; the metadata
// survives a restart of every controller.
func TestControllerElectionAndFailover(t *testing.T) {
	cfgs := testConfigs(t, 3)
	cl := startCluster(t, cfgs)
	leader := cl.leader()
	follower := (leader + 1) % 3
	fctl := cfgs[follower].JRaftControllerRPCAddr[follower]
	lctl := cfgs[leader].JRaftControllerRPCAddr[leader]
	rc := newClient(t)

	// GET_METADATA_INFO answers on every node and names the leader.
	md := invoke(t, rc, fctl, protocol.ControllerGetMetadataInfo, nil, nil)
	if md.Ext("controllerLeaderAddress") != lctl || md.Ext("isLeader") != "false" || md.Ext("group") != "jRaft-Controller" {
		t.Fatalf("metadata from follower: %v", md.ExtFields)
	}

	a := &fakeBroker{t: t, cl: rc, name: "b", addr: "127.0.0.1:1001", offset: 100}
	b := &fakeBroker{t: t, cl: rc, name: "b", addr: "127.0.0.1:1002", offset: 50}
	a.join(fctl) // forwarded by the follower
	b.join(lctl)
	if a.id != 1 || b.id != 2 {
		t.Fatalf("ids %d %d, want 1 2", a.id, b.id)
	}
	a.beat(lctl, 10*time.Second)
	testutil.Eventually(t, 5*time.Second, func() bool {
		m, _, _ := replicaInfo(t, rc, fctl, "b")
		return m == a.id
	}, "first master not elected")
	b.beat(lctl, 10*time.Second)
	_, epoch, set := replicaInfo(t, rc, lctl, "b")
	if epoch != 1 || len(set.SyncStateSet) != 1 {
		t.Fatalf("epoch %d set %v", epoch, set)
	}
	// The master adds b to the SyncStateSet; a stale epoch is refused.
	alter := func(ids []int64, ssEpoch int32, masterEpoch int32) *protocol.Command {
		return invoke(t, rc, fctl, protocol.ControllerAlterSyncStateSet,
			&protocol.AlterSyncStateSetRequestHeader{BrokerName: "b", MasterBrokerID: a.id, MasterEpoch: masterEpoch},
			protocol.SyncStateSet{SyncStateSet: ids, SyncStateSetEpoch: ssEpoch}.Encode())
	}
	if r := alter([]int64{1, 2}, set.SyncStateSetEpoch, 0); r.Code != int32(protocol.ControllerFencedMasterEpoch) {
		t.Fatalf("stale master epoch: code %d %s", r.Code, r.Remark)
	}
	if r := alter([]int64{1, 2}, set.SyncStateSetEpoch, epoch); r.Code != 0 {
		t.Fatalf("alter: %d %s", r.Code, r.Remark)
	}
	if r := alter([]int64{1, 2}, set.SyncStateSetEpoch, epoch); r.Code != int32(protocol.ControllerFencedSyncStateSetEpoch) {
		t.Fatalf("stale set epoch: code %d %s", r.Code, r.Remark)
	}

	// The master's heartbeats stop (short timeout); b keeps beating.
	a.beat(lctl, 300*time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b.beat(lctl, 10*time.Second)
		if m, _, _ := replicaInfo(t, rc, lctl, "b"); m == b.id {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	m, epoch2, set2 := replicaInfo(t, rc, fctl, "b")
	if m != b.id || epoch2 != epoch+1 || len(set2.SyncStateSet) != 1 || set2.SyncStateSet[0] != b.id {
		t.Fatalf("after failover: master %d epoch %d set %v", m, epoch2, set2)
	}
	// The heartbeat answer carries the master view (used for the lease).
	hb := b.beat(lctl, 10*time.Second)
	if hb.Ext("masterBrokerId") != "2" || hb.Ext("masterEpoch") != strconv.Itoa(int(epoch2)) {
		t.Fatalf("heartbeat answer: %v", hb.ExtFields)
	}

	// GET_SYNC_STATE_DATA from any node.
	resp := invoke(t, rc, fctl, protocol.ControllerGetSyncStateData, nil, []byte(`["b"]`))
	var info protocol.BrokerReplicasInfo
	if err := json.Unmarshal(resp.Body, &info); err != nil {
		t.Fatal(err)
	}
	if ri := info.ReplicasInfoTable["b"]; ri.MasterBrokerID != 2 || len(ri.InSyncReplicas) != 1 || len(ri.NotInSyncReplicas) != 1 {
		t.Fatalf("sync state data: %+v", info)
	}

	// Restart every controller: epochs, sets and ids survive.
	cl.closeAll()
	for i := range cfgs {
		cl.start(i)
	}
	l2 := cl.leader()
	ctl := cfgs[l2].JRaftControllerRPCAddr[l2]
	m3, epoch3, set3 := replicaInfo(t, rc, ctl, "b")
	if m3 != m || epoch3 != epoch2 || fmt.Sprint(set3) != fmt.Sprint(set2) {
		t.Fatalf("after restart: master %d epoch %d set %v, want %d %d %v", m3, epoch3, set3, m, epoch2, set2)
	}
	resp = invoke(t, rc, ctl, protocol.ControllerGetNextBrokerID, &protocol.GetNextBrokerIDRequestHeader{ClusterName: "c", BrokerName: "b"}, nil)
	if resp.Ext("nextBrokerId") != "3" {
		t.Fatalf("next id after restart: %v", resp.ExtFields)
	}
}

// TestControllerLeaderLoss: killing the raft leader leaves a majority that
// elects a new leader; a master that stopped beating is replaced by it.
func TestControllerLeaderLoss(t *testing.T) {
	cfgs := testConfigs(t, 3)
	cl := startCluster(t, cfgs)
	leader := cl.leader()
	rc := newClient(t)
	lctl := cfgs[leader].JRaftControllerRPCAddr[leader]
	a := &fakeBroker{t: t, cl: rc, name: "x", addr: "127.0.0.1:2001"}
	b := &fakeBroker{t: t, cl: rc, name: "x", addr: "127.0.0.1:2002"}
	a.join(lctl)
	b.join(lctl)
	a.beat(lctl, 10*time.Second)
	testutil.Eventually(t, 5*time.Second, func() bool { m, _, _ := replicaInfo(t, rc, lctl, "x"); return m == a.id }, "no master")
	b.beat(lctl, 10*time.Second)
	_, ep, set := replicaInfo(t, rc, lctl, "x")
	r := invoke(t, rc, lctl, protocol.ControllerAlterSyncStateSet, &protocol.AlterSyncStateSetRequestHeader{BrokerName: "x", MasterBrokerID: a.id, MasterEpoch: ep},
		protocol.SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: set.SyncStateSetEpoch}.Encode())
	if r.Code != 0 {
		t.Fatalf("alter: %d %s", r.Code, r.Remark)
	}

	// Leader and master die together.
	cl.stop(leader)
	l2 := cl.leader()
	ctl := cfgs[l2].JRaftControllerRPCAddr[l2]
	// The new leader gives every broker a fresh timeout (10 s here), so it
	// only elects once the master is declared dead: close-channel does it.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b.beat(ctl, 10*time.Second)
		invoke(t, rc, ctl, protocol.BrokerCloseChannelRequest, &protocol.BrokerCloseChannelRequestHeader{BrokerName: "x", BrokerID: a.id}, nil)
		if m, _, _ := replicaInfo(t, rc, ctl, "x"); m == b.id {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if m, e, _ := replicaInfo(t, rc, ctl, "x"); m != b.id || e != ep+1 {
		t.Fatalf("after leader+master loss: master %d epoch %d", m, e)
	}
}
