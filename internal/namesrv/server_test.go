package namesrv

import (
	"context"
	"hash/crc32"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/testutil"
)

// testServer starts a name server on 127.0.0.1:0 with a temp KV file.
func testServer(t *testing.T, mutate func(*Config)) *Server {
	t.Helper()
	cfg := DefaultConfig()
	cfg.ListenPort = 0
	cfg.BindAddress = "127.0.0.1"
	cfg.KVConfigPath = filepath.Join(t.TempDir(), "kvConfig.json")
	cfg.ScanNotActiveBrokerInterval = 50 * time.Millisecond
	cfg.DefaultThreadPoolNums, cfg.ClientRequestThreadPoolNums = 2, 2
	if mutate != nil {
		mutate(&cfg)
	}
	s := New(cfg, testutil.Logger(t))
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// rpc is a remoting client bound to one name server.
type rpc struct {
	t    *testing.T
	c    *remoting.Client
	addr string
}

func newRPC(t *testing.T, s *Server) *rpc {
	t.Helper()
	c := remoting.NewClient(remoting.ClientConfig{Logger: testutil.Logger(t)})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rpc{t: t, c: c, addr: s.Addr().String()}
}

func (r *rpc) call(code protocol.RequestCode, ext map[string]string, body []byte) *protocol.Command {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := r.c.InvokeSync(ctx, r.addr, protocol.NewRequest(code, ext, body))
	if err != nil {
		r.t.Fatalf("%v: %v", code, err)
	}
	return resp
}

func (r *rpc) ok(code protocol.RequestCode, ext map[string]string, body []byte) *protocol.Command {
	r.t.Helper()
	resp := r.call(code, ext, body)
	if resp.Code != int32(protocol.Success) {
		r.t.Fatalf("%v: code %d remark %q", code, resp.Code, resp.Remark)
	}
	return resp
}

type brokerReg struct {
	cluster, name, addr string
	id                  int64
	topics              map[string]int32
	counter             int64
}

func (b brokerReg) request(t *testing.T) (map[string]string, []byte) {
	t.Helper()
	body := protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: *topics(b.counter, b.topics)}
	raw, err := body.Encode()
	if err != nil {
		t.Fatal(err)
	}
	ext := protocol.EncodeHeader(&protocol.RegisterBrokerRequestHeader{
		BrokerName: b.name, BrokerAddr: b.addr, ClusterName: b.cluster, HaServerAddr: b.addr + "-ha", BrokerID: b.id,
		BodyCrc32: int32(crc32.ChecksumIEEE(raw) & 0x7FFFFFFF),
	}, false)
	return ext, raw
}

func (r *rpc) register(b brokerReg) *protocol.Command {
	r.t.Helper()
	ext, body := b.request(r.t)
	return r.ok(protocol.RegisterBroker, ext, body)
}

func (r *rpc) route(topic string) *protocol.TopicRouteData {
	r.t.Helper()
	resp := r.call(protocol.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil)
	if resp.Code == int32(protocol.TopicNotExist) {
		return nil
	}
	if resp.Code != 0 {
		r.t.Fatalf("route %s: code %d %q", topic, resp.Code, resp.Remark)
	}
	route, err := protocol.DecodeTopicRouteData(resp.Body)
	if err != nil {
		r.t.Fatalf("route body %s: %v", resp.Body, err)
	}
	return route
}

func TestServerRegisterAndRoute(t *testing.T) {
	s := testServer(t, nil)
	c := newRPC(t, s)
	if c.route("T") != nil {
		t.Fatal("route before registration")
	}
	resp := c.call(protocol.GetRouteInfoByTopic, map[string]string{"topic": "T"}, nil)
	if resp.Code != int32(protocol.TopicNotExist) || !strings.Contains(resp.Remark, "No topic route info in name server for the topic: T") {
		t.Fatalf("unknown topic answered %d %q", resp.Code, resp.Remark)
	}
	master := brokerReg{"C1", "broker-a", "127.0.0.1:10911", 0, map[string]int32{"T": 4, "TBW102": 8}, 1}
	if resp := c.register(master); resp.Ext("masterAddr") != "" || len(resp.Body) != 0 {
		t.Fatalf("master registration answered ext %v body %q", resp.ExtFields, resp.Body)
	}
	slave := brokerReg{"C1", "broker-a", "127.0.0.1:10921", 1, map[string]int32{"T": 4, "TBW102": 8}, 1}
	if resp := c.register(slave); resp.Ext("masterAddr") != master.addr || resp.Ext("haServerAddr") != master.addr+"-ha" {
		t.Fatalf("slave registration answered %v", resp.ExtFields)
	}
	r := c.route("T")
	if r == nil || len(r.QueueDatas) != 1 || r.QueueDatas[0].WriteQueueNums != 4 || r.QueueDatas[0].Perm != 6 {
		t.Fatalf("route %+v", r)
	}
	if want := map[int64]string{0: master.addr, 1: slave.addr}; !reflect.DeepEqual(r.BrokerDatas[0].BrokerAddrs, want) {
		t.Fatalf("brokerAddrs %v, want %v", r.BrokerDatas[0].BrokerAddrs, want)
	}
	resp = c.call(protocol.GetRouteInfoByTopic, map[string]string{"topic": "T"}, nil)
	if !strings.Contains(string(resp.Body), `"brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.1:10921"}`) {
		t.Fatalf("route body %s: want quoted compact broker ids", resp.Body)
	}

	c.ok(protocol.UnregisterBroker, map[string]string{"brokerName": "broker-a", "brokerAddr": master.addr,
		"clusterName": "C1", "brokerId": "0"}, nil)
	if r := c.route("T"); r == nil || r.BrokerDatas[0].MasterAddr() != "" {
		t.Fatalf("after master unregistered: %+v", r)
	}
	c.ok(protocol.UnregisterBroker, map[string]string{"brokerName": "broker-a", "brokerAddr": slave.addr,
		"clusterName": "C1", "brokerId": "1"}, nil)
	if r := c.route("T"); r != nil {
		t.Fatalf("route after every broker unregistered: %+v", r)
	}
}

func TestServerRegisterBodyChecks(t *testing.T) {
	s := testServer(t, nil)
	c := newRPC(t, s)
	b := brokerReg{"C1", "broker-a", "127.0.0.1:10911", 0, map[string]int32{"T": 4, "U": 1}, 1}

	ext, body := b.request(t)
	ext["bodyCrc32"] = strconv.Itoa(int(crc32.ChecksumIEEE(body)&0x7FFFFFFF) ^ 1)
	resp := c.call(protocol.RegisterBroker, ext, body)
	if resp.Code != int32(protocol.SystemError) || resp.Remark != "crc32 not match" {
		t.Fatalf("bad crc answered %d %q", resp.Code, resp.Remark)
	}

	one := brokerReg{"C1", "broker-b", "127.0.0.1:10912", 0, map[string]int32{"X": 1}, 1}
	ext, body = one.request(t)
	if resp := c.call(protocol.RegisterBroker, ext, body); resp.Code != int32(protocol.SystemError) || resp.Remark != "register broker failed" {
		t.Fatalf("one-topic registration of an unknown broker answered %d %q", resp.Code, resp.Remark)
	}

	// Compressed body, with and without the header flag (docs/protocol.md §9.5 item 36).
	for _, flag := range []string{"true", "false"} {
		reg := protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: *topics(int64(len(flag)), map[string]int32{"Z" + flag: 2, "U": 1})}
		zbody, err := reg.EncodeCompressed(protocol.CurrentVersion)
		if err != nil {
			t.Fatal(err)
		}
		ext, _ := b.request(t)
		ext["compressed"] = flag
		ext["bodyCrc32"] = strconv.Itoa(int(crc32.ChecksumIEEE(zbody) & 0x7FFFFFFF))
		c.ok(protocol.RegisterBroker, ext, zbody)
		if r := c.route("Z" + flag); r == nil || r.QueueDatas[0].WriteQueueNums != 2 {
			t.Fatalf("compressed registration (flag %s): route %+v", flag, r)
		}
	}

	ext, _ = b.request(t)
	if resp := c.call(protocol.RegisterBroker, ext, []byte("{not json")); resp.Code != int32(protocol.SystemError) {
		t.Fatalf("garbage body answered %d", resp.Code)
	}
	delete(ext, "brokerName")
	if resp := c.call(protocol.RegisterBroker, ext, nil); resp.Code != int32(protocol.SystemError) {
		t.Fatalf("missing brokerName answered %d", resp.Code)
	}
}

func TestServerOrderTopicConfig(t *testing.T) {
	s := testServer(t, func(c *Config) { c.OrderMessageEnable = true })
	c := newRPC(t, s)
	c.ok(protocol.PutKVConfig, map[string]string{"namespace": protocol.NamespaceOrderTopicConfig, "key": "T", "value": "broker-a:2"}, nil)
	resp := c.register(brokerReg{"C1", "broker-a", "127.0.0.1:10911", 0, map[string]int32{"T": 4, "U": 1}, 1})
	kv, err := protocol.DecodeKVTable(resp.Body)
	if err != nil || kv.Table["T"] != "broker-a:2" {
		t.Fatalf("register response body %q (%v), want the ORDER_TOPIC_CONFIG table", resp.Body, err)
	}
	if r := c.route("T"); r == nil || r.OrderTopicConf != "broker-a:2" {
		t.Fatalf("route %+v, want orderTopicConf", r)
	}
	if r := c.route("U"); r == nil || r.OrderTopicConf != "" {
		t.Fatalf("route of U %+v, want no orderTopicConf", r)
	}
}

func TestServerQueryDataVersionAndHeartbeat(t *testing.T) {
	s := testServer(t, nil)
	c := newRPC(t, s)
	id := map[string]string{"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911", "clusterName": "C1", "brokerId": "0"}
	dv := topics(5, nil).DataVersion
	dvBody, _ := dv.Encode()
	if resp := c.ok(protocol.QueryDataVersion, id, dvBody); resp.Ext("changed") != "true" || len(resp.Body) != 0 {
		t.Fatalf("unknown broker: changed=%q body=%q", resp.Ext("changed"), resp.Body)
	}
	c.register(brokerReg{"C1", "broker-a", "127.0.0.1:10911", 0, map[string]int32{"T": 4, "U": 1}, 5})
	resp := c.ok(protocol.QueryDataVersion, id, dvBody)
	stored, err := protocol.DecodeDataVersion(resp.Body)
	if resp.Ext("changed") != "false" || err != nil || *stored != dv {
		t.Fatalf("registered broker: changed=%q body=%q", resp.Ext("changed"), resp.Body)
	}
	c.ok(protocol.BrokerHeartbeat, map[string]string{"clusterName": "C1", "brokerAddr": "127.0.0.1:10911", "brokerName": "broker-a"}, nil)

	g := c.ok(protocol.GetBrokerMemberGroup, map[string]string{"clusterName": "C1", "brokerName": "broker-a"}, nil)
	body, err := protocol.DecodeGetBrokerMemberGroupResponseBody(g.Body)
	if err != nil || body.BrokerMemberGroup.BrokerAddrs[0] != "127.0.0.1:10911" {
		t.Fatalf("member group %s (%v)", g.Body, err)
	}
}

func TestServerBrokerRemovedOnConnectionClose(t *testing.T) {
	s := testServer(t, nil)
	admin := newRPC(t, s)
	broker := newRPC(t, s)
	broker.register(brokerReg{"C1", "broker-a", "127.0.0.1:10911", 0, map[string]int32{"T": 4, "U": 1}, 1})
	if admin.route("T") == nil {
		t.Fatal("no route after registration")
	}
	broker.c.CloseConn(broker.addr)
	testutil.Eventually(t, 5*time.Second, func() bool { return admin.route("T") == nil },
		"route still served after the broker's connection closed")
}

func TestServerBrokerExpires(t *testing.T) {
	s := testServer(t, func(c *Config) {
		c.ScanNotActiveBrokerInterval = 20 * time.Millisecond
		c.BrokerChannelExpiredTime = 200 * time.Millisecond
	})
	admin := newRPC(t, s)
	broker := newRPC(t, s)
	broker.register(brokerReg{"C1", "broker-a", "127.0.0.1:10911", 0, map[string]int32{"T": 4, "U": 1}, 1})
	if admin.route("T") == nil {
		t.Fatal("no route after registration")
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return admin.route("T") == nil },
		"route still served after the broker stopped registering")
	if got := s.Routes().Stats(); got != (Stats{}) {
		t.Fatalf("tables after expiry: %+v", got)
	}
}

func TestServerAdminCalls(t *testing.T) {
	s := testServer(t, nil)
	c := newRPC(t, s)
	c.register(brokerReg{"C1", "broker-a", "127.0.0.1:10911", 0, map[string]int32{"T": 4, "U": 1}, 1})
	c.register(brokerReg{"C2", "broker-b", "127.0.0.1:10912", 0, map[string]int32{"T": 2, "V": 1}, 1})

	list := func(code protocol.RequestCode, ext map[string]string) *protocol.TopicList {
		t.Helper()
		resp := c.ok(code, ext, nil)
		tl, err := protocol.DecodeTopicList(resp.Body)
		if err != nil {
			t.Fatalf("%v body %s: %v", code, resp.Body, err)
		}
		return tl
	}
	if got := list(protocol.GetAllTopicListFromNameServer, nil).TopicList; !reflect.DeepEqual(got, []string{"T", "U", "V"}) {
		t.Errorf("all topics %v", got)
	}
	if got := list(protocol.GetTopicsByCluster, map[string]string{"cluster": "C2"}).TopicList; !reflect.DeepEqual(got, []string{"T", "V"}) {
		t.Errorf("topics of C2 %v", got)
	}
	if got := list(protocol.GetSystemTopicListFromNS, nil); len(got.TopicList) != 4 || got.BrokerAddr == "" {
		t.Errorf("system topics %+v", got)
	}
	if got := list(protocol.GetUnitTopicList, nil).TopicList; len(got) != 0 {
		t.Errorf("unit topics %v", got)
	}
	ci, err := protocol.DecodeClusterInfo(c.ok(protocol.GetBrokerClusterInfo, nil, nil).Body)
	if err != nil || len(ci.BrokerAddrTable) != 2 || ci.ClusterAddrTable["C2"][0] != "broker-b" {
		t.Errorf("cluster info %+v (%v)", ci, err)
	}

	if n := c.ok(protocol.WipeWritePermOfBroker, map[string]string{"brokerName": "broker-a"}, nil).Ext("wipeTopicCount"); n != "2" {
		t.Errorf("wipeTopicCount %q", n)
	}
	if r := c.route("U"); protocol.PermWritable(r.QueueDatas[0].Perm) {
		t.Errorf("U still writable after wipe: %+v", r.QueueDatas)
	}
	if n := c.ok(protocol.AddWritePermOfBroker, map[string]string{"brokerName": "broker-a"}, nil).Ext("addTopicCount"); n != "2" {
		t.Errorf("addTopicCount %q", n)
	}

	c.ok(protocol.DeleteTopicInNamesrv, map[string]string{"topic": "T", "clusterName": "C2"}, nil)
	if r := c.route("T"); r == nil || len(r.QueueDatas) != 1 || r.QueueDatas[0].BrokerName != "broker-a" {
		t.Errorf("T after delete in C2: %+v", r)
	}
	c.ok(protocol.DeleteTopicInNamesrv, map[string]string{"topic": "T"}, nil)
	if r := c.route("T"); r != nil {
		t.Errorf("T after delete: %+v", r)
	}

	route, _ := (&protocol.TopicRouteData{QueueDatas: []protocol.QueueData{{BrokerName: "broker-b", ReadQueueNums: 3, WriteQueueNums: 3, Perm: 6}}}).Encode()
	c.ok(protocol.RegisterTopicInNamesrv, map[string]string{"topic": "N"}, route)
	if r := c.route("N"); r == nil || r.QueueDatas[0].WriteQueueNums != 3 {
		t.Errorf("registered topic N: %+v", r)
	}

	if resp := c.call(protocol.RequestCode(9999), nil, nil); resp.Code != int32(protocol.RequestCodeNotSupported) {
		t.Errorf("unknown code answered %d %q", resp.Code, resp.Remark)
	}
}

func TestServerKVConfig(t *testing.T) {
	s := testServer(t, nil)
	c := newRPC(t, s)
	key := map[string]string{"namespace": "ns", "key": "k"}
	if resp := c.call(protocol.GetKVConfig, key, nil); resp.Code != int32(protocol.QueryNotFound) {
		t.Fatalf("missing key answered %d", resp.Code)
	}
	if resp := c.call(protocol.GetKVListByNamespace, map[string]string{"namespace": "ns"}, nil); resp.Code != int32(protocol.QueryNotFound) {
		t.Fatalf("missing namespace answered %d", resp.Code)
	}
	c.ok(protocol.PutKVConfig, map[string]string{"namespace": "ns", "key": "k", "value": "v1"}, nil)
	if v := c.ok(protocol.GetKVConfig, key, nil).Ext("value"); v != "v1" {
		t.Fatalf("value %q", v)
	}
	kv, err := protocol.DecodeKVTable(c.ok(protocol.GetKVListByNamespace, map[string]string{"namespace": "ns"}, nil).Body)
	if err != nil || !reflect.DeepEqual(kv.Table, map[string]string{"k": "v1"}) {
		t.Fatalf("kv list %+v (%v)", kv, err)
	}
	// Persisted: a fresh manager on the same file sees it.
	reload := NewKVConfigManager(s.Config().KVConfigPath)
	if err := reload.Load(); err != nil {
		t.Fatal(err)
	}
	if v, _ := reload.Get("ns", "k"); v != "v1" {
		t.Fatalf("persisted value %q", v)
	}
	c.ok(protocol.DeleteKVConfig, key, nil)
	if resp := c.call(protocol.GetKVConfig, key, nil); resp.Code != int32(protocol.QueryNotFound) {
		t.Fatalf("deleted key answered %d", resp.Code)
	}
	if resp := c.call(protocol.PutKVConfig, map[string]string{"namespace": "ns"}, nil); resp.Code != int32(protocol.SystemError) {
		t.Fatalf("put without key answered %d", resp.Code)
	}
}

func TestServerNamesrvConfig(t *testing.T) {
	s := testServer(t, nil)
	c := newRPC(t, s)
	body := string(c.ok(protocol.GetNamesrvConfig, nil, nil).Body)
	if !strings.Contains(body, "orderMessageEnable=false\n") || !strings.Contains(body, "scanNotActiveBrokerInterval=50\n") {
		t.Fatalf("config body:\n%s", body)
	}
	c.ok(protocol.UpdateNamesrvConfig, nil, []byte("orderMessageEnable=true\ndeleteTopicWithBrokerRegistration=true\n"))
	if cfg := s.Config(); !cfg.OrderMessageEnable || !cfg.DeleteTopicWithBrokerRegistration {
		t.Fatalf("config not updated: %+v", cfg)
	}
	for _, tc := range []struct {
		body string
		code protocol.ResponseCode
	}{
		{"kvConfigPath=/tmp/x\n", protocol.NoPermission},
		{"listenPort=1\n", protocol.SystemError},
		{"nope=1\n", protocol.SystemError},
		{"orderMessageEnable=maybe\n", protocol.SystemError},
	} {
		if resp := c.call(protocol.UpdateNamesrvConfig, nil, []byte(tc.body)); resp.Code != int32(tc.code) {
			t.Errorf("update %q answered %d %q, want %d", tc.body, resp.Code, resp.Remark, tc.code)
		}
	}
}

func TestServerLifecycle(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ListenPort, cfg.BindAddress, cfg.KVConfigPath = 0, "127.0.0.1", ""
	s := New(cfg, nil)
	if s.Addr() != nil {
		t.Fatal("New must not listen")
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err == nil {
		t.Fatal("second Start succeeded")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.Start(); err == nil {
		t.Fatal("Start after Close succeeded")
	}

	bad := DefaultConfig()
	bad.ScanNotActiveBrokerInterval = 0
	b := New(bad, nil)
	if err := b.Start(); err == nil || !strings.Contains(err.Error(), "scanNotActiveBrokerInterval") {
		t.Fatalf("Start with a bad config: %v", err)
	}
	b.Close()
}

func TestServerZoneFilter(t *testing.T) {
	s := testServer(t, nil)
	c := newRPC(t, s)
	for _, b := range []struct{ name, addr, zone string }{{"broker-a", "a:1", "z1"}, {"broker-b", "b:1", "z2"}} {
		ext, body := brokerReg{"C1", b.name, b.addr, 0, map[string]int32{"T": 4, "U": 1}, 1}.request(t)
		ext["__ZONE_NAME"] = b.zone
		c.ok(protocol.RegisterBroker, ext, body)
	}
	brokers := func(ext map[string]string) []string {
		t.Helper()
		ext["topic"] = "T"
		route, err := protocol.DecodeTopicRouteData(c.ok(protocol.GetRouteInfoByTopic, ext, nil).Body)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, qd := range route.QueueDatas {
			names = append(names, qd.BrokerName)
		}
		for _, bd := range route.BrokerDatas {
			names = append(names, bd.BrokerName+"@"+bd.ZoneName)
		}
		return names
	}
	if got := brokers(map[string]string{}); !reflect.DeepEqual(got, []string{"broker-a", "broker-b", "broker-a@z1", "broker-b@z2"}) {
		t.Errorf("no zone mode: %v", got)
	}
	if got := brokers(map[string]string{"__ZONE_MODE": "true", "__ZONE_NAME": "z2"}); !reflect.DeepEqual(got, []string{"broker-b", "broker-b@z2"}) {
		t.Errorf("zone z2: %v", got)
	}
	if got := brokers(map[string]string{"__ZONE_MODE": "false", "__ZONE_NAME": "z2"}); len(got) != 4 {
		t.Errorf("zone mode off: %v", got)
	}
}

func TestServerNeedWaitForService(t *testing.T) {
	s := testServer(t, func(c *Config) { c.NeedWaitForService, c.WaitSecondsForService = true, 3600 })
	c := newRPC(t, s)
	c.register(brokerReg{"C1", "broker-a", "127.0.0.1:10911", 0, map[string]int32{"T": 4, "U": 1}, 1})
	resp := c.call(protocol.GetRouteInfoByTopic, map[string]string{"topic": "T"}, nil)
	if resp.Code != int32(protocol.SystemError) || resp.Remark != "name server not ready" {
		t.Fatalf("route during the start-up wait answered %d %q", resp.Code, resp.Remark)
	}
}
