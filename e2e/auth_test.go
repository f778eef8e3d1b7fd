package e2e

// ACL 2.0 end to end: a broker with authenticationEnabled and
// authorizationEnabled, driven by the official rocketmq-client-go/v2 with
// primitive.Credentials (docs/security.md).

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/apogeemq/apogee/internal/auth"
	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/namesrv"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/store"
	"github.com/apogeemq/apogee/internal/testutil"
)

const (
	superUser = "rocketmq"
	superPass = "12345678"
)

// startAuthCluster is a name server and a broker with both checks on and
// RocketMQ's documented init user.
func startAuthCluster(t *testing.T, mutate func(*broker.Config)) *testCluster {
	t.Helper()
	return startCluster(t, func(c *broker.Config) {
		c.AuthenticationEnabled = true
		c.AuthorizationEnabled = true
		c.InitAuthenticationUser = `{"username":"rocketmq","password":"12345678"}`
		c.InnerClientAuthenticationCredentials = `{"accessKey":"inner","secretKey":"inner-secret"}`
		if mutate != nil {
			mutate(c)
		}
	})
}

func creds(ak, sk string) primitive.Credentials {
	return primitive.Credentials{AccessKey: ak, SecretKey: sk}
}

// queueTotal is how many messages topic holds on the broker.
func queueTotal(c *testCluster, topic string) int64 {
	var n int64
	for q := int32(0); q < 8; q++ {
		n += max(0, c.b.Store.MaxOffsetInQueue(topic, q))
	}
	return n
}

func sendOne(p rocketmq.Producer, topic string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("hello "+topic)))
	if err == nil && res.Status != primitive.SendOK {
		return &sendStatusError{res.Status}
	}
	return err
}

type sendStatusError struct{ s primitive.SendStatus }

func (e *sendStatusError) Error() string { return "send status " + string(rune('0'+e.s)) }

func wantRefused(t *testing.T, err error, remark string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted, want a refusal with %q", remark)
	}
	if !strings.Contains(err.Error(), remark) {
		t.Fatalf("refused with %v, want %q", err, remark)
	}
}

// signedClient is a raw remoting client signing as ak/sk.
func signedClient(t *testing.T, ak, sk string) *remoting.Client {
	t.Helper()
	rc := remoting.NewClient(remoting.ClientConfig{Logger: testLogger(t), Sign: (&auth.Signer{AccessKey: ak, SecretKey: sk}).Sign})
	if err := rc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	return rc
}

// pullCode pulls one batch of topic/queue 0 as group and returns the
// response code and remark.
func pullCode(t *testing.T, rc *remoting.Client, addr, topic, group string) (int32, string) {
	t.Helper()
	req := protocol.NewRequest(protocol.PullMessage, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": "0", "queueOffset": "0", "maxMsgNums": "32",
		"sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0",
	}, nil)
	resp, err := rc.InvokeSync(testutil.Context(t, 5*time.Second), addr, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Code, resp.Remark
}

// quietGroup turns off NOTIFY_CONSUMER_IDS_CHANGED for group up front (the
// unsigned clean-up in startOfficialPushConsumer is refused here).
func quietGroup(t *testing.T, c *testCluster, group string) {
	t.Helper()
	sc := protocol.NewSubscriptionGroupConfig(group)
	sc.NotifyConsumerIdsChangedEnable = false
	if err := c.b.Groups.Update(sc); err != nil {
		t.Fatal(err)
	}
}

func grant(t *testing.T, c *testCluster, subject string, entries ...auth.EntryInfo) {
	t.Helper()
	acl, err := auth.ACLInfo{Subject: subject, Policies: []auth.PolicyInfo{{Entries: entries}}}.ACL()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.b.Auth().PutACL(acl); err != nil {
		t.Fatal(err)
	}
}

func allow(res, actions string) auth.EntryInfo {
	return auth.EntryInfo{Resource: res, Actions: strings.Split(actions, ","), Decision: "Allow"}
}

func deny(res, actions string) auth.EntryInfo {
	return auth.EntryInfo{Resource: res, Actions: strings.Split(actions, ","), Decision: "Deny"}
}

// TestAuthOfficialClient: unsigned and wrong-secret sends are refused
// (NO_PERMISSION with RocketMQ's remark) and store nothing; the super user
// sends and consumes; a normal user with Pub on one topic sends there and
// nowhere else, cannot consume until granted Sub on topic and group; an
// explicit Deny beats a wildcard Allow; deleting the user revokes access at
// once on the open connection; users and ACLs survive a restart.
func TestAuthOfficialClient(t *testing.T) {
	c := startAuthCluster(t, nil)
	c.createTopic("orders", 4)
	c.createTopic("other", 4)
	c.createTopic("secret", 4)

	unsigned := newProducer(t, c.nsAddr)
	wantRefused(t, sendOne(unsigned, "orders"), "username cannot be null.")
	wrong := newProducer(t, c.nsAddr, producer.WithCredentials(creds(superUser, "not-the-password")))
	wantRefused(t, sendOne(wrong, "orders"), "check signature failed.")
	ghost := newProducer(t, c.nsAddr, producer.WithCredentials(creds("ghost", "x")))
	wantRefused(t, sendOne(ghost, "orders"), "User:ghost is not found.")
	if n := queueTotal(c, "orders"); n != 0 {
		t.Fatalf("refused sends stored %d messages", n)
	}

	// The super user sends and consumes.
	root := newProducer(t, c.nsAddr, producer.WithCredentials(creds(superUser, superPass)))
	if err := sendOne(root, "orders"); err != nil {
		t.Fatalf("super send: %v", err)
	}
	superGroup := uniqueName(t, "cg")
	quietGroup(t, c, superGroup)
	got := newReceived()
	newPushConsumer(t, c.nsAddr, superGroup, "orders", "*", got, consumer.WithCredentials(creds(superUser, superPass)))
	testutil.Eventually(t, 20*time.Second, func() bool { return got.count.Load() >= 1 }, "super user consumed nothing")

	// A normal user with Pub on orders only.
	if err := c.b.Auth().CreateUser(auth.User{Username: "alice", Password: "alice-secret"}); err != nil {
		t.Fatal(err)
	}
	grant(t, c, "User:alice", allow("Topic:orders", "Pub"))
	alice := newProducer(t, c.nsAddr, producer.WithCredentials(creds("alice", "alice-secret")))
	if err := sendOne(alice, "orders"); err != nil {
		t.Fatalf("alice send to orders: %v", err)
	}
	wantRefused(t, sendOne(alice, "other"), "User:alice has no permission to access Topic:other from 127.0.0.1, no matched policies.")
	if n := queueTotal(c, "other"); n != 0 {
		t.Fatalf("refused send stored %d messages in other", n)
	}

	// Consuming needs Sub on the topic and on the group.
	group := uniqueName(t, "cg")
	quietGroup(t, c, group)
	rc := signedClient(t, "alice", "alice-secret")
	if code, remark := pullCode(t, rc, c.b.Addr(), "orders", group); code != int32(protocol.NoPermission) || !strings.Contains(remark, "Topic:orders") {
		t.Fatalf("pull without Sub: %d %q", code, remark)
	}
	grant(t, c, "User:alice", allow("Topic:orders", "Pub,Sub"))
	if code, remark := pullCode(t, rc, c.b.Addr(), "orders", group); code != int32(protocol.NoPermission) || !strings.Contains(remark, "Group:"+group) {
		t.Fatalf("pull with Sub on the topic only: %d %q", code, remark)
	}
	grant(t, c, "User:alice", allow("Group:"+group, "Sub"))
	if code, remark := pullCode(t, rc, c.b.Addr(), "orders", group); code == int32(protocol.NoPermission) {
		t.Fatalf("pull after both grants refused: %q", remark)
	}
	aliceGot := newReceived()
	newPushConsumer(t, c.nsAddr, group, "orders", "*", aliceGot, consumer.WithCredentials(creds("alice", "alice-secret")))
	testutil.Eventually(t, 20*time.Second, func() bool { return aliceGot.count.Load() >= 2 }, "alice consumed %d of 2", aliceGot.count.Load())

	// An explicit Deny beats a wildcard Allow.
	grant(t, c, "User:alice", allow("Topic:*", "Pub"), deny("Topic:secret", "Pub"))
	if err := sendOne(alice, "other"); err != nil {
		t.Fatalf("wildcard allow: %v", err)
	}
	wantRefused(t, sendOne(alice, "secret"), "the decision is deny.")

	// Deleting the user revokes access at once on the open connection.
	if err := c.b.Auth().DeleteUser("alice"); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, sendOne(alice, "orders"), "User:alice is not found.")
	if code, _ := pullCode(t, rc, c.b.Addr(), "orders", group); code != int32(protocol.NoPermission) {
		t.Fatalf("pull after delete: code %d", code)
	}

	// Users and ACLs survive a restart.
	if err := c.b.Auth().CreateUser(auth.User{Username: "bob", Password: "bob-secret"}); err != nil {
		t.Fatal(err)
	}
	grant(t, c, "User:bob", allow("Topic:other", "Pub"))
	c.stopBroker()
	c.startBroker()
	bob := newProducer(t, c.nsAddr, producer.WithCredentials(creds("bob", "bob-secret")))
	if err := sendOne(bob, "other"); err != nil {
		t.Fatalf("bob after restart: %v", err)
	}
	wantRefused(t, sendOne(bob, "orders"), "no matched policies.")
	if err := sendOne(root, "orders"); err != nil {
		t.Fatalf("super after restart: %v", err)
	}
}

// TestAuthNameServer: with authentication on at the name server, route and
// cluster-info queries stay open to unsigned clients, admin writes need a
// signed request, and a broker registers with its inner credentials.
func TestAuthNameServer(t *testing.T) {
	authCfg := auth.AuthConfig{AuthenticationEnabled: true, AuthorizationEnabled: true,
		InitAuthenticationUser:               `{"username":"rocketmq","password":"12345678"}`,
		InnerClientAuthenticationCredentials: `{"accessKey":"inner","secretKey":"inner-secret"}`}
	ns := startNamesrv(t, func(c *namesrv.Config) { c.AuthConfig = authCfg })
	nsAddr := ns.Addr().String()
	cfg := brokerTestConfig(t.TempDir())
	cfg.NamesrvAddr = []string{nsAddr}
	cfg.AuthConfig = authCfg
	c := &testCluster{t: t, ns: ns, nsAddr: nsAddr, cfg: cfg}
	c.startBroker()
	t.Cleanup(c.stopBroker)
	c.createTopic("orders", 2) // routed: the signed registration was accepted

	plain := remoting.NewClient(remoting.ClientConfig{Logger: testLogger(t)})
	if err := plain.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plain.Close() })
	ctx := testutil.Context(t, 5*time.Second)
	for _, req := range []*protocol.Command{
		protocol.NewRequest(protocol.GetRouteInfoByTopic, map[string]string{"topic": "orders"}, nil),
		protocol.NewRequest(protocol.GetBrokerClusterInfo, nil, nil),
	} {
		resp, err := plain.InvokeSync(ctx, nsAddr, req)
		if err != nil || resp.Code != int32(protocol.Success) {
			t.Fatalf("unsigned %s: %v %+v", protocol.RequestCode(req.Code), err, resp)
		}
	}
	put := func(rc *remoting.Client) *protocol.Command {
		resp, err := rc.InvokeSync(ctx, nsAddr, protocol.NewRequest(protocol.PutKVConfig,
			map[string]string{"namespace": "ns", "key": "k", "value": "v"}, nil))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if resp := put(plain); resp.Code != int32(protocol.NoPermission) || resp.Remark != "username cannot be null." {
		t.Fatalf("unsigned PUT_KV_CONFIG: %d %q", resp.Code, resp.Remark)
	}
	if resp := put(signedClient(t, superUser, superPass)); resp.Code != int32(protocol.Success) {
		t.Fatalf("signed PUT_KV_CONFIG: %d %q", resp.Code, resp.Remark)
	}
	// The official client routes and sends with credentials.
	p := newProducer(t, nsAddr, producer.WithCredentials(creds(superUser, superPass)))
	if err := sendOne(p, "orders"); err != nil {
		t.Fatal(err)
	}
}

// TestAuthSlaveCopiesMaster: a slave copies users and ACLs from its master
// (signed with the inner credentials), so a user created on the master
// reads from the slave too.
func TestAuthSlaveCopiesMaster(t *testing.T) {
	ns := startNamesrv(t, nil)
	nsAddr := ns.Addr().String()
	withAuth := func(c *broker.Config) {
		c.NamesrvAddr = []string{nsAddr}
		c.AuthenticationEnabled, c.AuthorizationEnabled = true, true
		c.InitAuthenticationUser = `{"username":"rocketmq","password":"12345678"}`
		c.InnerClientAuthenticationCredentials = `{"accessKey":"inner","secretKey":"inner-secret"}`
	}
	mcfg := brokerTestConfig(t.TempDir())
	withAuth(&mcfg)
	mcfg.Store.BrokerRole = store.RoleAsyncMaster
	master := haBroker(t, mcfg)
	scfg := brokerTestConfig(t.TempDir())
	withAuth(&scfg)
	scfg.BrokerID = 1
	scfg.Store.BrokerRole = store.RoleSlave
	scfg.HaReconnectInterval = 100 * time.Millisecond
	scfg.SlaveSyncPeriod = 300 * time.Millisecond
	slave := haBroker(t, scfg)

	if err := master.Auth().CreateUser(auth.User{Username: "alice", Password: "alice-secret"}); err != nil {
		t.Fatal(err)
	}
	acl, err := auth.ACLInfo{Subject: "User:alice", Policies: []auth.PolicyInfo{{Entries: []auth.EntryInfo{allow("Topic:orders", "Pub")}}}}.ACL()
	if err != nil {
		t.Fatal(err)
	}
	if err := master.Auth().PutACL(acl); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 15*time.Second, func() bool {
		_, ok, _ := slave.Auth().GetACL("User:alice")
		u, uok := slave.Auth().User("alice")
		return ok && uok && u.Password == "alice-secret"
	}, "slave never copied alice and her ACL")
	if slave.Auth().Version() != master.Auth().Version() {
		t.Fatalf("slave at version %d, master %d", slave.Auth().Version(), master.Auth().Version())
	}
}
