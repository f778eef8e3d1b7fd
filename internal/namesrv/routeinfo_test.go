package namesrv

import (
	"errors"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

type fakeChannel struct {
	id     uint64
	closed atomic.Bool
}

func (c *fakeChannel) ID() uint64   { return c.id }
func (c *fakeChannel) Close() error { c.closed.Store(true); return nil }

// topics builds a topic table: name -> queue count (read = write), perm 6.
func topics(counter int64, qs map[string]int32) *protocol.TopicConfigSerializeWrapper {
	w := &protocol.TopicConfigSerializeWrapper{
		DataVersion:      protocol.DataVersion{Timestamp: 1000, Counter: counter},
		TopicConfigTable: map[string]protocol.TopicConfig{},
	}
	for name, n := range qs {
		tc := protocol.NewTopicConfig(name)
		tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm = n, n, 6
		w.TopicConfigTable[name] = tc
	}
	return w
}

func reg(cluster, name string, id int64, addr string, tc *protocol.TopicConfigSerializeWrapper) RegisterBrokerRequest {
	return RegisterBrokerRequest{ClusterName: cluster, BrokerName: name, BrokerID: id, BrokerAddr: addr,
		HaServerAddr: addr + "-ha", TopicConfig: tc}
}

func newTestRegistry(opts RouteOptions) (*RouteInfoManager, *fakeClock) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	return NewRouteInfoManager(opts, clk.now, nil), clk
}

func mustRegister(t *testing.T, m *RouteInfoManager, r RegisterBrokerRequest) RegisterBrokerResult {
	t.Helper()
	res, err := m.RegisterBroker(r)
	if err != nil {
		t.Fatalf("register %s/%d: %v", r.BrokerName, r.BrokerID, err)
	}
	return res
}

// queues returns brokerName -> write queue count of a topic's route, or nil.
func queues(m *RouteInfoManager, topic string) map[string]int32 {
	r := m.PickupTopicRouteData(topic)
	if r == nil {
		return nil
	}
	out := map[string]int32{}
	for _, qd := range r.QueueDatas {
		out[qd.BrokerName] = qd.WriteQueueNums
	}
	return out
}

// TestRegisterBrokerTopicSemantics covers docs/broker.md §3.2 / docs/protocol.md §3.5: upsert,
// not replacement, and re-reading topic configs only on a version change.
func TestRegisterBrokerTopicSemantics(t *testing.T) {
	tests := []struct {
		name  string
		steps []*protocol.TopicConfigSerializeWrapper // registrations of broker-a master, in order
		opts  RouteOptions
		topic string
		want  map[string]int32 // route of topic; nil = no route
	}{
		{"first registration creates routes",
			[]*protocol.TopicConfigSerializeWrapper{topics(1, map[string]int32{"A": 4, "B": 8})}, RouteOptions{}, "B",
			map[string]int32{"broker-a": 8}},
		{"incremental registration keeps unlisted topics (§9.5 item 42)",
			[]*protocol.TopicConfigSerializeWrapper{topics(1, map[string]int32{"A": 4, "B": 8}), topics(2, map[string]int32{"C": 2})},
			RouteOptions{}, "A", map[string]int32{"broker-a": 4}},
		{"incremental registration adds its topic",
			[]*protocol.TopicConfigSerializeWrapper{topics(1, map[string]int32{"A": 4, "B": 8}), topics(2, map[string]int32{"C": 2})},
			RouteOptions{}, "C", map[string]int32{"broker-a": 2}},
		{"changed data version updates queue counts",
			[]*protocol.TopicConfigSerializeWrapper{topics(1, map[string]int32{"A": 4, "B": 8}), topics(2, map[string]int32{"A": 16, "B": 8})},
			RouteOptions{}, "A", map[string]int32{"broker-a": 16}},
		{"same data version does not re-read known topics",
			[]*protocol.TopicConfigSerializeWrapper{topics(1, map[string]int32{"A": 4, "B": 8}), topics(1, map[string]int32{"A": 16, "B": 8})},
			RouteOptions{}, "A", map[string]int32{"broker-a": 4}},
		{"same data version still adds a new topic",
			[]*protocol.TopicConfigSerializeWrapper{topics(1, map[string]int32{"A": 4, "B": 8}), topics(1, map[string]int32{"A": 4, "D": 3})},
			RouteOptions{}, "D", map[string]int32{"broker-a": 3}},
		{"deleteTopicWithBrokerRegistration prunes unlisted topics",
			[]*protocol.TopicConfigSerializeWrapper{topics(1, map[string]int32{"A": 4, "B": 8}), topics(2, map[string]int32{"A": 4, "C": 1})},
			RouteOptions{DeleteTopicWithBrokerRegistration: true}, "B", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newTestRegistry(tc.opts)
			for _, w := range tc.steps {
				mustRegister(t, m, reg("C1", "broker-a", 0, "10.0.0.1:10911", w))
			}
			if got := queues(m, tc.topic); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("route of %s = %v, want %v", tc.topic, got, tc.want)
			}
		})
	}
}

func TestRegisterBrokerMasterSlave(t *testing.T) {
	m, _ := newTestRegistry(RouteOptions{})
	master := reg("C1", "broker-a", 0, "10.0.0.1:10911", topics(1, map[string]int32{"T": 4, "U": 1}))
	slave := reg("C1", "broker-a", 1, "10.0.0.2:10911", topics(1, map[string]int32{"T": 4, "S": 9}))

	if res := mustRegister(t, m, slave); res.MasterAddr != "" {
		t.Fatalf("slave before master got master %q", res.MasterAddr)
	}
	if r := m.PickupTopicRouteData("T"); r != nil {
		t.Fatalf("a slave's topics must not create queue data, got %+v", r)
	}
	if res := mustRegister(t, m, master); res.MasterAddr != "" || res.HaServerAddr != "" || !res.NewBroker {
		t.Fatalf("master result %+v, want a new broker without master address", res)
	}
	res := mustRegister(t, m, slave)
	if res.MasterAddr != "10.0.0.1:10911" || res.HaServerAddr != "10.0.0.1:10911-ha" {
		t.Fatalf("slave result %+v, want the master's address and HA address", res)
	}
	r := m.PickupTopicRouteData("T")
	if r == nil || len(r.BrokerDatas) != 1 {
		t.Fatalf("route %+v", r)
	}
	want := map[int64]string{0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}
	if !reflect.DeepEqual(r.BrokerDatas[0].BrokerAddrs, want) {
		t.Fatalf("brokerAddrs %v, want %v", r.BrokerDatas[0].BrokerAddrs, want)
	}
	if m.PickupTopicRouteData("S") != nil {
		t.Fatal("topic only a slave reports has a route")
	}

	// The slave is promoted: same address, id 0. The old master's id is
	// taken over and the slave's old id disappears.
	promoted := reg("C1", "broker-a", 0, "10.0.0.2:10911", topics(2, map[string]int32{"T": 4, "U": 1}))
	mustRegister(t, m, promoted)
	r = m.PickupTopicRouteData("T")
	if got := r.BrokerDatas[0].BrokerAddrs; !reflect.DeepEqual(got, map[int64]string{0: "10.0.0.2:10911"}) {
		t.Fatalf("after promotion brokerAddrs = %v", got)
	}
}

func TestRegisterBrokerRefusals(t *testing.T) {
	t.Run("one topic from an unknown broker id", func(t *testing.T) {
		m, _ := newTestRegistry(RouteOptions{})
		_, err := m.RegisterBroker(reg("C1", "broker-a", 0, "a:1", topics(1, map[string]int32{"T": 4})))
		if !errors.Is(err, ErrRegisterRefused) {
			t.Fatalf("err = %v, want ErrRegisterRefused", err)
		}
		if s := m.Stats(); s != (Stats{}) {
			t.Fatalf("refused registration left state behind: %+v", s)
		}
		// Once registered, a one-topic registration is fine.
		mustRegister(t, m, reg("C1", "broker-a", 0, "a:1", topics(1, map[string]int32{"T": 4, "U": 1})))
		mustRegister(t, m, reg("C1", "broker-a", 0, "a:1", topics(2, map[string]int32{"V": 2})))
		if queues(m, "V") == nil {
			t.Fatal("incremental one-topic registration of a known broker ignored")
		}
	})
	t.Run("stale state version", func(t *testing.T) {
		m, _ := newTestRegistry(RouteOptions{})
		newer := topics(1, map[string]int32{"T": 4, "U": 1})
		newer.DataVersion.StateVersion = 5
		mustRegister(t, m, reg("C1", "broker-a", 0, "new:1", newer))
		res := mustRegister(t, m, reg("C1", "broker-a", 0, "old:1", topics(9, map[string]int32{"T": 4, "U": 1})))
		if !res.Stale {
			t.Fatal("registration with an older state version not flagged stale")
		}
		if got := m.PickupTopicRouteData("T").BrokerDatas[0].BrokerAddrs[0]; got != "new:1" {
			t.Fatalf("master = %q, want new:1", got)
		}
	})
}

func TestScanNotActiveBroker(t *testing.T) {
	m, clk := newTestRegistry(RouteOptions{BrokerChannelExpiredTime: 120 * time.Second})
	chA, chB := &fakeChannel{id: 1}, &fakeChannel{id: 2}
	a := reg("C1", "broker-a", 0, "a:1", topics(1, map[string]int32{"T": 4, "X": 1}))
	a.Channel = chA
	b := reg("C1", "broker-b", 0, "b:1", topics(1, map[string]int32{"T": 2, "Y": 1}))
	b.Channel, b.HeartbeatTimeout = chB, 10*time.Second
	mustRegister(t, m, a)
	mustRegister(t, m, b)

	clk.advance(11 * time.Second)
	expired := m.ScanNotActiveBroker()
	if len(expired) != 1 || expired[0].BrokerAddr != "b:1" || expired[0].Channel != chB {
		t.Fatalf("expired %+v, want broker-b (own 10 s timeout)", expired)
	}
	if got := queues(m, "T"); !reflect.DeepEqual(got, map[string]int32{"broker-a": 4}) {
		t.Fatalf("T after broker-b expired = %v", got)
	}
	if m.PickupTopicRouteData("Y") != nil {
		t.Fatal("topic of an expired broker still routed")
	}

	clk.advance(100 * time.Second)
	if !m.UpdateBrokerInfoUpdateTimestamp("C1", "a:1", 0) {
		t.Fatal("heartbeat of a registered broker not accepted")
	}
	clk.advance(100 * time.Second) // 211 s after registering, 100 s after the heartbeat
	if exp := m.ScanNotActiveBroker(); len(exp) != 0 {
		t.Fatalf("broker expired despite a heartbeat: %+v", exp)
	}
	clk.advance(21 * time.Second)
	if exp := m.ScanNotActiveBroker(); len(exp) != 1 || exp[0].Channel != chA {
		t.Fatalf("expired %+v, want broker-a", exp)
	}
	if s := m.Stats(); s != (Stats{}) {
		t.Fatalf("tables not empty after every broker expired: %+v", s)
	}
	if m.UpdateBrokerInfoUpdateTimestamp("C1", "a:1", 0) {
		t.Fatal("heartbeat of an expired broker accepted")
	}
}

func TestOnChannelDestroy(t *testing.T) {
	m, _ := newTestRegistry(RouteOptions{})
	ch := &fakeChannel{id: 7}
	master := reg("C1", "broker-a", 0, "a:1", topics(1, map[string]int32{"T": 4, "U": 1}))
	master.Channel = ch
	slave := reg("C1", "broker-a", 1, "a:2", topics(1, map[string]int32{"T": 4, "U": 1}))
	slave.Channel = &fakeChannel{id: 8}
	mustRegister(t, m, master)
	mustRegister(t, m, slave)

	if got := m.OnChannelDestroy(99); len(got) != 0 {
		t.Fatalf("unknown channel removed %v", got)
	}
	got := m.OnChannelDestroy(7)
	if len(got) != 1 || got[0].BrokerAddr != "a:1" {
		t.Fatalf("removed %v, want the master", got)
	}
	// The group keeps its slave; the queue data stays, with no master
	// producers skip it (docs/broker.md §3.3).
	r := m.PickupTopicRouteData("T")
	if r == nil || r.BrokerDatas[0].MasterAddr() != "" || r.BrokerDatas[0].BrokerAddrs[1] != "a:2" {
		t.Fatalf("route after master channel closed: %+v", r)
	}
	m.OnChannelDestroy(8)
	if m.PickupTopicRouteData("T") != nil || m.Stats() != (Stats{}) {
		t.Fatalf("state left after the whole group left: %+v", m.Stats())
	}
}

func TestActingMaster(t *testing.T) {
	m, _ := newTestRegistry(RouteOptions{SupportActingMaster: true})
	yes := true
	master := reg("C1", "broker-a", 0, "a:0", topics(1, map[string]int32{"T": 4, "U": 1}))
	master.EnableActingMaster = &yes
	slave := reg("C1", "broker-a", 1, "a:1", topics(1, map[string]int32{"T": 4, "U": 1}))
	slave.EnableActingMaster = &yes
	mustRegister(t, m, master)
	mustRegister(t, m, slave)

	m.UnregisterBroker("C1", "a:0", "broker-a")
	r := m.PickupTopicRouteData("T")
	if r == nil {
		t.Fatal("no route after master left")
	}
	if protocol.PermWritable(r.QueueDatas[0].Perm) {
		t.Fatalf("queues still writable without a master: perm %d", r.QueueDatas[0].Perm)
	}
	if got := r.BrokerDatas[0].BrokerAddrs; !reflect.DeepEqual(got, map[int64]string{0: "a:1"}) {
		t.Fatalf("acting master not presented as id 0: %v", got)
	}
}

func TestDeleteTopicAndPerms(t *testing.T) {
	setup := func(t *testing.T) *RouteInfoManager {
		m, _ := newTestRegistry(RouteOptions{})
		mustRegister(t, m, reg("C1", "broker-a", 0, "a:1", topics(1, map[string]int32{"T": 4, "U": 1})))
		mustRegister(t, m, reg("C2", "broker-b", 0, "b:1", topics(1, map[string]int32{"T": 2, "V": 1})))
		return m
	}
	tests := []struct {
		name  string
		op    func(m *RouteInfoManager) int
		wantN int
		topic string
		want  map[string]int32
		perm  int32 // expected perm of broker-a's queue data of topic, when routed
	}{
		{"delete everywhere", func(m *RouteInfoManager) int { m.DeleteTopic("T", ""); return 0 }, 0, "T", nil, 0},
		{"delete in one cluster", func(m *RouteInfoManager) int { m.DeleteTopic("T", "C2"); return 0 }, 0, "T",
			map[string]int32{"broker-a": 4}, 6},
		{"delete in an unknown cluster", func(m *RouteInfoManager) int { m.DeleteTopic("T", "nope"); return 0 }, 0, "T",
			map[string]int32{"broker-a": 4, "broker-b": 2}, 6},
		{"wipe write perm", func(m *RouteInfoManager) int { return m.WipeWritePermOfBroker("broker-a") }, 2, "U",
			map[string]int32{"broker-a": 1}, protocol.PermRead},
		{"add write perm", func(m *RouteInfoManager) int {
			m.WipeWritePermOfBroker("broker-a")
			return m.AddWritePermOfBroker("broker-a")
		}, 2, "U", map[string]int32{"broker-a": 1}, protocol.PermRead | protocol.PermWrite},
		{"perm of unknown broker", func(m *RouteInfoManager) int { return m.WipeWritePermOfBroker("zzz") }, 0, "U",
			map[string]int32{"broker-a": 1}, 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := setup(t)
			if n := tc.op(m); n != tc.wantN {
				t.Fatalf("count = %d, want %d", n, tc.wantN)
			}
			if got := queues(m, tc.topic); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("route of %s = %v, want %v", tc.topic, got, tc.want)
			}
			if tc.want != nil {
				for _, qd := range m.PickupTopicRouteData(tc.topic).QueueDatas {
					if qd.BrokerName == "broker-a" && qd.Perm != tc.perm {
						t.Fatalf("perm = %d, want %d", qd.Perm, tc.perm)
					}
				}
			}
		})
	}
}

func TestRegisterTopic(t *testing.T) {
	m, _ := newTestRegistry(RouteOptions{})
	mustRegister(t, m, reg("C1", "broker-a", 0, "a:1", topics(1, map[string]int32{"T": 4, "U": 1})))
	if m.RegisterTopic("N", []protocol.QueueData{{BrokerName: "ghost", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}}) {
		t.Fatal("topic registered on an unknown broker")
	}
	if !m.RegisterTopic("N", []protocol.QueueData{{BrokerName: "broker-a", ReadQueueNums: 3, WriteQueueNums: 3, Perm: 6}}) {
		t.Fatal("register topic refused")
	}
	if got := queues(m, "N"); !reflect.DeepEqual(got, map[string]int32{"broker-a": 3}) {
		t.Fatalf("route %v", got)
	}
}

func TestListings(t *testing.T) {
	m, _ := newTestRegistry(RouteOptions{})
	w := topics(1, map[string]int32{"T": 4, "U": 1, "UNIT": 1, "SUB": 1})
	unit := w.TopicConfigTable["UNIT"]
	unit.TopicSysFlag = protocol.TopicSysFlagUnit | protocol.TopicSysFlagUnitSub
	w.TopicConfigTable["UNIT"] = unit
	sub := w.TopicConfigTable["SUB"]
	sub.TopicSysFlag = protocol.TopicSysFlagUnitSub
	w.TopicConfigTable["SUB"] = sub
	mustRegister(t, m, reg("C1", "broker-a", 0, "a:1", w))
	mustRegister(t, m, reg("C2", "broker-b", 0, "b:1", topics(1, map[string]int32{"T": 2, "V": 1})))

	check := func(name string, got, want []string) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("all topics", m.GetAllTopicList(), []string{"SUB", "T", "U", "UNIT", "V"})
	check("topics of C2", m.GetTopicsByCluster("C2"), []string{"T", "V"})
	check("topics of unknown cluster", m.GetTopicsByCluster("C9"), nil)
	check("unit", m.GetUnitTopicList(UnitTopics), []string{"UNIT"})
	check("has unit sub", m.GetUnitTopicList(HasUnitSubTopics), []string{"SUB", "UNIT"})
	check("has unit sub, not unit", m.GetUnitTopicList(HasUnitSubUnunitTopics), []string{"SUB"})
	sys := m.GetSystemTopicList()
	check("system topics", sys.TopicList, []string{"C1", "broker-a", "C2", "broker-b"})
	if sys.BrokerAddr != "a:1" {
		t.Errorf("system topic broker addr %q", sys.BrokerAddr)
	}
	ci := m.GetAllClusterInfo()
	if len(ci.BrokerAddrTable) != 2 || ci.BrokerAddrTable["broker-b"].BrokerAddrs[0] != "b:1" ||
		!reflect.DeepEqual(ci.ClusterAddrTable["C1"], []string{"broker-a"}) {
		t.Errorf("cluster info %+v", ci)
	}
	g := m.GetBrokerMemberGroup("C1", "broker-a")
	if !reflect.DeepEqual(g.BrokerAddrs, map[int64]string{0: "a:1"}) {
		t.Errorf("member group %+v", g)
	}
	// Callers get copies: changing one must not change the registry.
	ci.BrokerAddrTable["broker-a"].BrokerAddrs[0] = "mutated"
	if m.PickupTopicRouteData("T").BrokerDatas[0].BrokerAddrs[0] != "a:1" {
		t.Error("cluster info shares maps with the registry")
	}
}

func TestQueryDataVersion(t *testing.T) {
	m, _ := newTestRegistry(RouteOptions{})
	w := topics(3, map[string]int32{"T": 4, "U": 1})
	if !m.IsBrokerTopicConfigChanged("C1", "a:1", w.DataVersion) || m.QueryBrokerTopicConfig("C1", "a:1") != nil {
		t.Fatal("unknown broker must report changed and no version")
	}
	mustRegister(t, m, reg("C1", "broker-a", 0, "a:1", w))
	if m.IsBrokerTopicConfigChanged("C1", "a:1", w.DataVersion) {
		t.Fatal("same version reported changed")
	}
	if !m.IsBrokerTopicConfigChanged("C1", "a:1", w.DataVersion.Next(2000)) {
		t.Fatal("next version reported unchanged")
	}
	if dv := m.QueryBrokerTopicConfig("C1", "a:1"); dv == nil || *dv != w.DataVersion {
		t.Fatalf("stored version %+v", dv)
	}
}

// A broker that re-registered on a new connection is not removed when its
// old connection closes afterwards.
func TestChannelDestroyAfterReconnect(t *testing.T) {
	m, _ := newTestRegistry(RouteOptions{})
	r := reg("C1", "broker-a", 0, "a:1", topics(1, map[string]int32{"T": 4, "U": 1}))
	r.Channel = &fakeChannel{id: 1}
	mustRegister(t, m, r)
	r.Channel = &fakeChannel{id: 2}
	mustRegister(t, m, r)
	if got := m.OnChannelDestroy(1); len(got) != 0 {
		t.Fatalf("old connection removed %v", got)
	}
	if m.PickupTopicRouteData("T") == nil {
		t.Fatal("route lost when the old connection closed")
	}
	if got := m.OnChannelDestroy(2); len(got) != 1 {
		t.Fatalf("current connection removed %v", got)
	}
}

// topicsAt is topics with the broker's data version timestamp ts.
func topicsAt(ts time.Time, counter int64, qs map[string]int32) *protocol.TopicConfigSerializeWrapper {
	w := topics(counter, qs)
	w.DataVersion.Timestamp = ts.UnixMilli()
	return w
}

func tombstoneCount(m *RouteInfoManager) int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n := 0
	for _, inner := range m.topicTombstones {
		n += len(inner)
	}
	return n
}

// TestDeleteTopicTombstone covers a registration snapshotted before the
// broker deleted a topic that arrives after DELETE_TOPIC_IN_NAMESRV: it
// must not re-add the topic, while a registration made after the topic was
// re-created must.
func TestDeleteTopicTombstone(t *testing.T) {
	const addr = "10.0.0.1:10911"
	type env struct {
		t    *testing.T
		m    *RouteInfoManager
		clk  *fakeClock
		base time.Time // the broker's last topic change before the deletion
	}
	register := func(e env, ts time.Time, counter int64, qs map[string]int32) {
		mustRegister(e.t, e.m, reg("C1", "broker-a", 0, addr, topicsAt(ts, counter, qs)))
	}
	tests := []struct {
		name          string
		after         func(e env) // runs after: register {T:4, U:1} at base, delete T everywhere
		want          map[string]int32
		wantTombstone int
	}{
		{"stale registration with the same version is ignored", func(e env) {
			register(e, e.base, 1, map[string]int32{"T": 4, "U": 1})
		}, nil, 1},
		{"stale registration with a newer counter is ignored", func(e env) {
			register(e, e.base, 2, map[string]int32{"T": 4, "U": 1})
		}, nil, 1},
		{"stale single-topic registration is ignored", func(e env) {
			register(e, e.base, 2, map[string]int32{"T": 4})
		}, nil, 1},
		{"registration after the broker deleted it does not list it", func(e env) {
			register(e, e.base.Add(time.Millisecond), 2, map[string]int32{"U": 1})
		}, nil, 1},
		{"re-created after the deletion is re-added", func(e env) {
			e.clk.advance(time.Second)
			register(e, e.clk.now(), 3, map[string]int32{"T": 8, "U": 1})
		}, map[string]int32{"broker-a": 8}, 0},
		{"re-created by a single-topic registration is re-added", func(e env) {
			e.clk.advance(time.Millisecond)
			register(e, e.clk.now(), 3, map[string]int32{"T": 8})
		}, map[string]int32{"broker-a": 8}, 0},
		{"tombstone still holds just before expiry", func(e env) {
			e.clk.advance(DefaultBrokerChannelExpiredTime - time.Second)
			register(e, e.base, 1, map[string]int32{"T": 4, "U": 1}) // keeps the broker live
			if got := e.m.ScanNotActiveBroker(); len(got) != 0 {
				e.t.Fatalf("expired %v", got)
			}
			register(e, e.base, 1, map[string]int32{"T": 4, "U": 1})
		}, nil, 1},
		{"tombstone expires after brokerChannelExpiredTime", func(e env) {
			e.clk.advance(DefaultBrokerChannelExpiredTime / 2)
			register(e, e.base, 1, map[string]int32{"T": 4, "U": 1}) // keeps the broker live
			e.clk.advance(DefaultBrokerChannelExpiredTime/2 + time.Second)
			if got := e.m.ScanNotActiveBroker(); len(got) != 0 {
				e.t.Fatalf("expired %v", got)
			}
			if n := tombstoneCount(e.m); n != 0 {
				e.t.Fatalf("%d tombstones after expiry scan", n)
			}
			register(e, e.base, 1, map[string]int32{"T": 4, "U": 1})
		}, map[string]int32{"broker-a": 4}, 0},
		{"expired tombstone is ignored before the scan", func(e env) {
			e.clk.advance(DefaultBrokerChannelExpiredTime + time.Second)
			register(e, e.base, 1, map[string]int32{"T": 4, "U": 1})
		}, map[string]int32{"broker-a": 4}, 0},
		{"broker removal drops its tombstones", func(e env) {
			e.m.UnregisterBroker("C1", addr, "broker-a")
			if n := tombstoneCount(e.m); n != 0 {
				e.t.Fatalf("%d tombstones after unregister", n)
			}
			register(e, e.base, 1, map[string]int32{"T": 4, "U": 1})
		}, map[string]int32{"broker-a": 4}, 0},
		{"REGISTER_TOPIC_IN_NAMESRV drops the tombstone", func(e env) {
			e.m.RegisterTopic("T", []protocol.QueueData{{BrokerName: "broker-a", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6}})
		}, map[string]int32{"broker-a": 2}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, clk := newTestRegistry(RouteOptions{})
			e := env{t: t, m: m, clk: clk, base: clk.now().Add(-10 * time.Second)}
			register(e, e.base, 1, map[string]int32{"T": 4, "U": 1})
			m.DeleteTopic("T", "")
			if got := queues(m, "T"); got != nil {
				t.Fatalf("route of T after delete = %v", got)
			}
			tc.after(e)
			if got := queues(m, "T"); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("route of T = %v, want %v", got, tc.want)
			}
			if got := queues(m, "U"); !reflect.DeepEqual(got, map[string]int32{"broker-a": 1}) {
				t.Fatalf("route of U = %v", got)
			}
			if n := tombstoneCount(m); n != tc.wantTombstone {
				t.Fatalf("tombstones = %d, want %d", n, tc.wantTombstone)
			}
		})
	}
}

// TestDeleteTopicTombstoneScope checks that a cluster-scoped delete leaves
// tombstones only for that cluster's broker groups.
func TestDeleteTopicTombstoneScope(t *testing.T) {
	m, clk := newTestRegistry(RouteOptions{})
	old := clk.now().Add(-time.Second)
	mustRegister(t, m, reg("C1", "broker-a", 0, "a:1", topicsAt(old, 1, map[string]int32{"T": 4, "U": 1})))
	mustRegister(t, m, reg("C2", "broker-b", 0, "b:1", topicsAt(old, 1, map[string]int32{"T": 2, "U": 1})))
	m.DeleteTopic("T", "C2")
	mustRegister(t, m, reg("C1", "broker-a", 0, "a:1", topicsAt(old, 1, map[string]int32{"T": 4})))
	mustRegister(t, m, reg("C2", "broker-b", 0, "b:1", topicsAt(old, 1, map[string]int32{"T": 2})))
	if got, want := queues(m, "T"), map[string]int32{"broker-a": 4}; !reflect.DeepEqual(got, want) {
		t.Fatalf("route of T = %v, want %v", got, want)
	}
	if n := tombstoneCount(m); n != 1 {
		t.Fatalf("tombstones = %d, want 1", n)
	}
}
