package broker

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/namesrv"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/testutil"
)

// testConfig is a broker on a free port with small store files in dir.
func testConfig(t testing.TB, dir string) Config {
	t.Helper()
	cfg := DefaultConfig()
	cfg.BrokerName = "broker-a"
	cfg.ListenPort = 0
	cfg.Store.StorePathRootDir = dir
	cfg.Store.MappedFileSizeCommitLog = 4 << 20
	cfg.Store.MappedFileSizeConsumeQueue = 20 * 1000
	cfg.Store.MaxMessageSize = 64 << 10
	cfg.Store.MessageIndexEnable = false
	cfg.SendMessageThreadPoolNums = 2
	cfg.PullMessageThreadPoolNums = 4
	return cfg
}

func startBroker(t *testing.T, cfg Config) *Broker {
	t.Helper()
	b, err := New(cfg, testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return b
}

func newClient(t *testing.T) *remoting.Client {
	t.Helper()
	c := remoting.NewClient(remoting.ClientConfig{Logger: testutil.Logger(t)})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func invoke(t *testing.T, c *remoting.Client, addr string, req *protocol.Command) *protocol.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.InvokeSync(ctx, addr, req)
	if err != nil {
		t.Fatalf("invoke %d: %v", req.Code, err)
	}
	return resp
}

func sendReq(topic string, queueID int32, body []byte, props map[string]string) *protocol.Command {
	h := protocol.SendMessageRequestHeader{
		ProducerGroup: "pg", Topic: topic, DefaultTopic: names.TopicAutoCreate, DefaultTopicQueueNums: 4,
		QueueID: queueID, BornTimestamp: time.Now().UnixMilli(), Properties: message.EncodeProperties(props),
	}
	return protocol.NewRequest(protocol.SendMessage, protocol.EncodeHeader(&h, false), body)
}

func pullReq(group, topic string, queueID int32, offset int64, sysFlag int32, suspend time.Duration, sub string) *protocol.Command {
	h := protocol.PullMessageRequestHeader{
		ConsumerGroup: group, Topic: topic, QueueID: queueID, QueueOffset: offset, MaxMsgNums: 32,
		SysFlag: sysFlag, SuspendTimeoutMillis: suspend.Milliseconds(), Subscription: sub, ExpressionType: "TAG",
	}
	return protocol.NewRequest(protocol.PullMessage, protocol.EncodeHeader(&h, false), nil)
}

// waitDispatched waits until the store's dispatch made n messages of a
// queue visible (a send is acknowledged before dispatch).
func waitDispatched(t *testing.T, b *Broker, topic string, queueID int32, n int64) {
	t.Helper()
	testutil.Eventually(t, 5*time.Second, func() bool { return b.Store.MaxOffsetInQueue(topic, queueID) >= n },
		"%s/%d not dispatched", topic, queueID)
}

func mustCode(t *testing.T, resp *protocol.Command, want protocol.ResponseCode) {
	t.Helper()
	if resp.Code != int32(want) {
		t.Fatalf("code = %d (%s) remark %q, want %s", resp.Code, protocol.ResponseCode(resp.Code), resp.Remark, want)
	}
}

// TestSendAutoCreateAndPull follows docs/protocol.md Appendix B: a send to an
// unknown topic with defaultTopic=TBW102 creates it (docs/broker.md §1.2) and the stored
// message comes back byte-exact from a pull with a tag subscription.
func TestSendAutoCreateAndPull(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	c := newClient(t)
	props := map[string]string{"TAGS": "TagA", "KEYS": "k1 k2", "user": "v"}
	resp := invoke(t, c, b.Addr(), sendReq("TopicTest", 1, []byte("hello"), props))
	mustCode(t, resp, protocol.Success)
	if resp.Ext("queueId") != "1" || resp.Ext("queueOffset") != "0" || len(resp.Ext("msgId")) != 32 || resp.Ext("MSG_REGION") != "DefaultRegion" {
		t.Fatalf("send response ext = %v", resp.ExtFields)
	}
	tc, ok := b.Topics.Get("TopicTest")
	if !ok || tc.WriteQueueNums != 4 || tc.Perm != protocol.PermRead|protocol.PermWrite {
		t.Fatalf("auto-created topic = %+v, %v", tc, ok)
	}
	// A second message with another tag, then pull with the TagA filter.
	mustCode(t, invoke(t, c, b.Addr(), sendReq("TopicTest", 1, []byte("other"), map[string]string{"TAGS": "TagB"})), protocol.Success)
	mustCode(t, invoke(t, c, b.Addr(), sendReq("TopicTest", 1, []byte("again"), map[string]string{"TAGS": "TagA"})), protocol.Success)

	var msgs []*message.Ext
	next := int64(0)
	testutil.Eventually(t, 5*time.Second, func() bool {
		resp = invoke(t, c, b.Addr(), pullReq("cg", "TopicTest", 1, next, protocol.PullFlagSubscription, 0, "TagA"))
		if resp.Code == int32(protocol.Success) {
			got, err := message.DecodeStoredAll(resp.Body, message.DecodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, got...)
		}
		next, _ = strconv.ParseInt(resp.Ext("nextBeginOffset"), 10, 64)
		return len(msgs) >= 2
	}, "pull never returned both TagA messages")
	if len(msgs) != 2 || string(msgs[0].Body) != "hello" || string(msgs[1].Body) != "again" {
		t.Fatalf("pulled %d messages", len(msgs))
	}
	m := msgs[0]
	if m.Properties["KEYS"] != "k1 k2" || m.Properties["user"] != "v" || m.Properties["UNIQ_KEY"] == "" ||
		m.Properties["CLUSTER"] != "DefaultCluster" || m.QueueID != 1 || m.StoreHost.String() != b.Addr() {
		t.Fatalf("stored message = %+v", m)
	}
}

func TestSendRejections(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	b := startBroker(t, cfg)
	c := newClient(t)
	tests := []struct {
		name string
		req  *protocol.Command
		want protocol.ResponseCode
	}{
		{"body over maxMessageSize", sendReq("Big", 0, make([]byte, cfg.Store.MaxMessageSize+1), nil), protocol.MessageIllegal},
		{"illegal topic name", sendReq("bad topic!", 0, []byte("x"), nil), protocol.InvalidParameter},
		{"system topic", sendReq(names.TopicSchedule, 0, []byte("x"), nil), protocol.NoPermission},
		{"queue out of range", sendReq("Small", 99, []byte("x"), nil), protocol.InvalidParameter},
		{"no template", protocol.NewRequest(protocol.SendMessage, protocol.EncodeHeader(&protocol.SendMessageRequestHeader{
			ProducerGroup: "pg", Topic: "NoTemplate", BornTimestamp: 1}, false), []byte("x")), protocol.TopicNotExist},
		{"missing header field", protocol.NewRequest(protocol.SendMessage, map[string]string{"topic": "T"}, []byte("x")), protocol.SystemError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mustCode(t, invoke(t, c, b.Addr(), tc.req), tc.want)
		})
	}
	// The broker keeps serving.
	mustCode(t, invoke(t, c, b.Addr(), sendReq("Small", 0, []byte("ok"), nil)), protocol.Success)
	if b.Stats().SendRejected == 0 {
		t.Error("rejections not counted")
	}
}

// TestSendQueueTimeout: a send that waited longer than
// waitTimeMillsInSendQueue is answered [TIMEOUT_CLEAN_QUEUE] (docs/broker.md §1.17).
func TestSendQueueTimeout(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.WaitTimeMillsInSendQueue = time.Nanosecond
	b := startBroker(t, cfg)
	c := newClient(t)
	// A send run at once on the read loop (the queue was empty) waited
	// in no queue: it is stored whatever the budget.
	mustCode(t, invoke(t, c, b.Addr(), sendReq("T", 0, []byte("x"), nil)), protocol.Success)
	// Replies always go through the queue, and this one waited longer
	// than 1 ns there.
	req := sendReq("T", 0, []byte("x"), nil)
	req.Code = int32(protocol.SendReplyMessage)
	resp := invoke(t, c, b.Addr(), req)
	mustCode(t, resp, protocol.SystemBusy)
	if !strings.HasPrefix(resp.Remark, "[TIMEOUT_CLEAN_QUEUE]") {
		t.Fatalf("remark = %q", resp.Remark)
	}
	if b.Stats().SendQueueTimeout != 1 {
		t.Fatalf("stats = %+v", b.Stats())
	}
}

// TestLongPolling: a pull at the queue's end is held (docs/broker.md §1.7) and answered as
// soon as a message arrives; without arrivals it is answered PULL_NOT_FOUND
// when its hold time ends.
func TestLongPolling(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	c := newClient(t)
	mustCode(t, invoke(t, c, b.Addr(), sendReq("LP", 0, []byte("m0"), nil)), protocol.Success)
	waitDispatched(t, b, "LP", 0, 1)

	flags := int32(protocol.PullFlagSuspend | protocol.PullFlagSubscription)
	// Hold expiry.
	start := time.Now()
	resp := invoke(t, c, b.Addr(), pullReq("cg", "LP", 0, 1, flags, 300*time.Millisecond, "*"))
	mustCode(t, resp, protocol.PullNotFound)
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("answered after %v, before the hold ended", d)
	}
	if resp.Ext("nextBeginOffset") != "1" || resp.Ext("maxOffset") != "1" {
		t.Fatalf("ext = %v", resp.ExtFields)
	}

	// Wake-up by arrival.
	type result struct {
		resp *protocol.Command
		err  error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		r, err := c.InvokeSync(ctx, b.Addr(), pullReq("cg", "LP", 0, 1, flags, 15*time.Second, "*"))
		done <- result{r, err}
	}()
	testutil.Eventually(t, 5*time.Second, func() bool { return b.pullHold.heldCount() == 1 }, "pull not held")
	sent := time.Now()
	mustCode(t, invoke(t, c, b.Addr(), sendReq("LP", 0, []byte("m1"), nil)), protocol.Success)
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		mustCode(t, r.resp, protocol.Success)
		msgs, err := message.DecodeStoredAll(r.resp.Body, message.DecodeOptions{})
		if err != nil || len(msgs) != 1 || string(msgs[0].Body) != "m1" {
			t.Fatalf("msgs = %v, %v", msgs, err)
		}
		if d := time.Since(sent); d > 3*time.Second {
			t.Fatalf("woken after %v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("held pull not woken by arrival")
	}
}

// TestConsumerOffsetsAndRestart: offsets committed by UPDATE_CONSUMER_OFFSET
// and piggy-backed on pulls survive a clean restart (consumerOffset.json).
func TestConsumerOffsetsAndRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	b, err := New(cfg, testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	c := newClient(t)
	mustCode(t, invoke(t, c, b.Addr(), sendReq("OT", 0, []byte("x"), nil)), protocol.Success)
	waitDispatched(t, b, "OT", 0, 1)
	// No offset yet: a young queue answers 0 (docs/protocol.md §9.4 #33).
	q := protocol.QueryConsumerOffsetRequestHeader{ConsumerGroup: "g", Topic: "OT", QueueID: 0}
	resp := invoke(t, c, b.Addr(), protocol.NewRequest(protocol.QueryConsumerOffset, protocol.EncodeHeader(&q, false), nil))
	mustCode(t, resp, protocol.Success)
	if resp.Ext("offset") != "0" {
		t.Fatalf("offset = %q", resp.Ext("offset"))
	}
	if _, _, err := b.Groups.FindOrCreate("g", true); err != nil { // a consumer's heartbeat would create it
		t.Fatal(err)
	}
	u := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: "g", Topic: "OT", QueueID: 0, CommitOffset: 1}
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.UpdateConsumerOffset, protocol.EncodeHeader(&u, false), nil)), protocol.Success)
	// Piggy-backed commit on a pull of queue 1.
	pr := pullReq("g", "OT", 1, 0, protocol.PullFlagSubscription|protocol.PullFlagCommitOffset, 0, "*")
	pr.SetExt("commitOffset", "7")
	invoke(t, c, b.Addr(), pr)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b2 := startBroker(t, cfg)
	if off, ok := b2.Offsets.Query("g", "OT", 0); !ok || off != 1 {
		t.Fatalf("queue 0 offset after restart = %d, %v", off, ok)
	}
	if off, ok := b2.Offsets.Query("g", "OT", 1); !ok || off != 7 {
		t.Fatalf("queue 1 offset after restart = %d, %v", off, ok)
	}
	resp = invoke(t, c, b2.Addr(), protocol.NewRequest(protocol.QueryConsumerOffset, protocol.EncodeHeader(&q, false), nil))
	mustCode(t, resp, protocol.Success)
	if resp.Ext("offset") != "1" {
		t.Fatalf("offset = %q", resp.Ext("offset"))
	}
	// The message survives too.
	resp = invoke(t, c, b2.Addr(), pullReq("g", "OT", 0, 0, protocol.PullFlagSubscription, 0, "*"))
	mustCode(t, resp, protocol.Success)
}

// TestHeartbeatNotifiesGroup: a second consumer joining a group makes the
// broker push NOTIFY_CONSUMER_IDS_CHANGED to the members (docs/broker.md §1.6), and
// GET_CONSUMER_LIST_BY_GROUP lists both.
func TestHeartbeatNotifiesGroup(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	var notified atomic.Int32
	clients := make([]*remoting.Client, 2)
	for i := range clients {
		clients[i] = newClient(t)
		clients[i].RegisterProcessor(protocol.NotifyConsumerIDsChanged, func(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
			if req.Ext("consumerGroup") == "cg" {
				notified.Add(1)
			}
			return nil, nil
		})
	}
	hb := func(i int) {
		body, _ := protocol.MarshalJSON(&protocol.HeartbeatData{
			ClientID: "client-" + strconv.Itoa(i),
			ConsumerDataSet: []protocol.ConsumerData{{GroupName: "cg", ConsumeType: protocol.ConsumePassively,
				MessageModel: protocol.MessageModelClustering, ConsumeFromWhere: protocol.ConsumeFromLastOffset,
				SubscriptionDataSet: []protocol.SubscriptionData{{Topic: "T", SubString: "*"}}}},
		})
		mustCode(t, invoke(t, clients[i], b.Addr(), protocol.NewRequest(protocol.HeartBeat, nil, body)), protocol.Success)
	}
	hb(0)
	hb(1)
	testutil.Eventually(t, 5*time.Second, func() bool { return notified.Load() >= 2 }, "members not notified")
	if !b.Topics.Contains(names.RetryTopic("cg")) {
		t.Fatal("retry topic not created at heartbeat")
	}
	h := protocol.ConsumerGroupHeader{ConsumerGroup: "cg"}
	resp := invoke(t, clients[0], b.Addr(), protocol.NewRequest(protocol.GetConsumerListByGroup, protocol.EncodeHeader(&h, false), nil))
	mustCode(t, resp, protocol.Success)
	if string(resp.Body) != `{"consumerIdList":["client-0","client-1"]}` {
		t.Fatalf("body = %s", resp.Body)
	}
	// A client leaving (connection closed) is removed at once.
	clients[1].Close()
	testutil.Eventually(t, 5*time.Second, func() bool { return len(b.Clients.ConsumerIDs("cg")) == 1 }, "closed client not removed")
	// Joins notified 1 + 2 members, the leave 1 more.
	testutil.Eventually(t, 5*time.Second, func() bool { return notified.Load() >= 4 }, "remaining member not notified of the leave")
	before := notified.Load()

	// The group's notifyConsumerIdsChangedEnable=false silences it: a
	// member leaving notifies nobody. A third client joins and leaves with
	// notifications off; then notifications go back on and a fourth joins:
	// client 0 must have seen exactly one more notification (the
	// fourth's join), which arrives on its connection after any the broker
	// wrongly sent for the silenced changes.
	setNotify := func(on bool) {
		g := protocol.NewSubscriptionGroupConfig("cg")
		g.NotifyConsumerIdsChangedEnable = on
		body, _ := protocol.MarshalJSON(&g)
		mustCode(t, invoke(t, clients[0], b.Addr(), protocol.NewRequest(protocol.UpdateAndCreateSubscriptionGroup, nil, body)), protocol.Success)
	}
	join := func(id string) *remoting.Client {
		c := newClient(t)
		body, _ := protocol.MarshalJSON(&protocol.HeartbeatData{
			ClientID: id,
			ConsumerDataSet: []protocol.ConsumerData{{GroupName: "cg", ConsumeType: protocol.ConsumePassively,
				MessageModel: protocol.MessageModelClustering, ConsumeFromWhere: protocol.ConsumeFromLastOffset,
				SubscriptionDataSet: []protocol.SubscriptionData{{Topic: "T", SubString: "*"}}}},
		})
		mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.HeartBeat, nil, body)), protocol.Success)
		return c
	}
	setNotify(false)
	c3 := join("client-3")
	c3.Close()
	testutil.Eventually(t, 5*time.Second, func() bool { return len(b.Clients.ConsumerIDs("cg")) == 1 }, "client 3 not removed")
	setNotify(true)
	join("client-4")
	testutil.Eventually(t, 5*time.Second, func() bool { return notified.Load() >= before+1 }, "no notification after re-enabling")
	// One more round trip on client 0's connection: everything the broker
	// wrote to it before has been read by now.
	mustCode(t, invoke(t, clients[0], b.Addr(), protocol.NewRequest(protocol.GetConsumerListByGroup, protocol.EncodeHeader(&h, false), nil)), protocol.Success)
	if n := notified.Load(); n != before+1 {
		t.Fatalf("notifications with the group's notify switched off: %d, want %d", n, before+1)
	}
}

func TestTopicAndGroupAdmin(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	c := newClient(t)
	ct := protocol.CreateTopicRequestHeader{Topic: "Admin", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6,
		TopicFilterType: "SINGLE_TAG", Attributes: "+message.type=NORMAL"}
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.UpdateAndCreateTopic, protocol.EncodeHeader(&ct, false), nil)), protocol.Success)
	tc, ok := b.Topics.Get("Admin")
	if !ok || tc.ReadQueueNums != 2 || tc.Attributes["message.type"] != "NORMAL" {
		t.Fatalf("topic = %+v", tc)
	}
	resp := invoke(t, c, b.Addr(), protocol.NewRequest(protocol.GetAllTopicConfig, nil, nil))
	mustCode(t, resp, protocol.Success)
	w, err := protocol.DecodeTopicConfigSerializeWrapper(resp.Body)
	if err != nil || w.TopicConfigTable["Admin"].WriteQueueNums != 2 || w.TopicConfigTable[names.TopicAutoCreate].Perm != 7 {
		t.Fatalf("wrapper = %+v, %v", w, err)
	}
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.DeleteTopicInBroker, map[string]string{"topic": "Admin"}, nil)), protocol.Success)
	if b.Topics.Contains("Admin") {
		t.Fatal("topic not deleted")
	}
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.DeleteTopicInBroker, map[string]string{"topic": names.TopicAutoCreate}, nil)), protocol.InvalidParameter)

	g := protocol.NewSubscriptionGroupConfig("admin_group")
	g.RetryMaxTimes = 3
	body, _ := protocol.MarshalJSON(&g)
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.UpdateAndCreateSubscriptionGroup, nil, body)), protocol.Success)
	resp = invoke(t, c, b.Addr(), protocol.NewRequest(protocol.GetAllSubscriptionGroupConfig, nil, nil))
	mustCode(t, resp, protocol.Success)
	var wrapper protocol.SubscriptionGroupWrapper
	if err := protocol.UnmarshalFastJSON(resp.Body, &wrapper); err != nil || wrapper.SubscriptionGroupTable["admin_group"].RetryMaxTimes != 3 {
		t.Fatalf("groups = %s, %v", resp.Body, err)
	}
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.DeleteSubscriptionGroup, map[string]string{"groupName": "admin_group"}, nil)), protocol.Success)
	if _, ok := b.Groups.Get("admin_group"); ok {
		t.Fatal("group not deleted")
	}
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.RequestCode(9999), nil, nil)), protocol.RequestCodeNotSupported)
}

func TestCloseIdempotentAndStartAfterClose(t *testing.T) {
	b, err := New(testConfig(t, t.TempDir()), testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Start(); err == nil {
		t.Fatal("Start after Close succeeded")
	}
}

// TestAdminQueries covers the statistics and connection queries tools use
// (docs/protocol.md §3.7) and the server-side offset reset (§7.6).
func TestAdminQueries(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	c := newClient(t)
	for i := range 3 {
		mustCode(t, invoke(t, c, b.Addr(), sendReq("Stats", 0, []byte("m"+strconv.Itoa(i)), nil)), protocol.Success)
	}
	waitDispatched(t, b, "Stats", 0, 3)
	// Stats of a topic: object-keyed map (fastjson form).
	resp := invoke(t, c, b.Addr(), protocol.NewRequest(protocol.GetTopicStatsInfo, map[string]string{"topic": "Stats"}, nil))
	mustCode(t, resp, protocol.Success)
	if !strings.Contains(string(resp.Body), `{"topic":"Stats","brokerName":"broker-a","queueId":0}:{"minOffset":0,"maxOffset":3,`) {
		t.Fatalf("topic stats = %s", resp.Body)
	}
	// A consumer registers and commits.
	body, _ := protocol.MarshalJSON(&protocol.HeartbeatData{ClientID: "cid-1",
		ConsumerDataSet: []protocol.ConsumerData{{GroupName: "sg", ConsumeType: protocol.ConsumePassively,
			MessageModel: protocol.MessageModelClustering, SubscriptionDataSet: []protocol.SubscriptionData{{Topic: "Stats", SubString: "*"}}}},
		ProducerDataSet: []protocol.ProducerData{{GroupName: "spg"}}})
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.HeartBeat, nil, body)), protocol.Success)
	b.Offsets.Commit("sg", "Stats", 0, 2)

	resp = invoke(t, c, b.Addr(), protocol.NewRequest(protocol.GetConsumeStats, map[string]string{"consumerGroup": "sg", "topic": "Stats"}, nil))
	mustCode(t, resp, protocol.Success)
	if !strings.Contains(string(resp.Body), `"queueId":0}:{"brokerOffset":3,"consumerOffset":2,"pullOffset":2,`) {
		t.Fatalf("consume stats = %s", resp.Body)
	}
	resp = invoke(t, c, b.Addr(), protocol.NewRequest(protocol.GetConsumerConnectionList, map[string]string{"consumerGroup": "sg"}, nil))
	mustCode(t, resp, protocol.Success)
	var cc protocol.ConsumerConnection
	if err := protocol.UnmarshalFastJSON(resp.Body, &cc); err != nil || len(cc.ConnectionSet) != 1 ||
		cc.ConnectionSet[0].ClientID != "cid-1" || cc.ConnectionSet[0].Language != "GO" || cc.MessageModel != "CLUSTERING" {
		t.Fatalf("connections = %s, %v", resp.Body, err)
	}
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.GetConsumerConnectionList, map[string]string{"consumerGroup": "nobody"}, nil)), protocol.ConsumerNotOnline)
	resp = invoke(t, c, b.Addr(), protocol.NewRequest(protocol.GetProducerConnectionList, map[string]string{"producerGroup": "spg"}, nil))
	mustCode(t, resp, protocol.Success)
	resp = invoke(t, c, b.Addr(), protocol.NewRequest(protocol.QueryTopicConsumeByWho, map[string]string{"topic": "Stats"}, nil))
	mustCode(t, resp, protocol.Success)
	if string(resp.Body) != `{"groupList":["sg"]}` {
		t.Fatalf("consume by who = %s", resp.Body)
	}
	resp = invoke(t, c, b.Addr(), protocol.NewRequest(protocol.GetBrokerRuntimeInfo, nil, nil))
	mustCode(t, resp, protocol.Success)
	var kv protocol.KVTable
	if err := protocol.UnmarshalFastJSON(resp.Body, &kv); err != nil || kv.Table["msgPutTotalTodayNow"] != "3" {
		t.Fatalf("runtime info = %s, %v", resp.Body, err)
	}
	resp = invoke(t, c, b.Addr(), protocol.NewRequest(protocol.GetBrokerConfig, nil, nil))
	mustCode(t, resp, protocol.Success)
	if !strings.Contains(string(resp.Body), "brokerName=broker-a\n") || resp.Ext("version") == "" {
		t.Fatalf("broker config = %q", resp.Body)
	}

	// Server-side reset to the beginning: the next pull says OFFSET_MOVED
	// to 0, and UPDATE_CONSUMER_OFFSET is ignored until then.
	rh := map[string]string{"topic": "Stats", "group": "sg", "timestamp": "0", "isForce": "true"}
	resp = invoke(t, c, b.Addr(), protocol.NewRequest(protocol.InvokeBrokerToResetOffset, rh, nil))
	mustCode(t, resp, protocol.Success)
	if string(resp.Body) != `{"offsetTable":{{"topic":"Stats","brokerName":"broker-a","queueId":0}:0,{"topic":"Stats","brokerName":"broker-a","queueId":1}:0,{"topic":"Stats","brokerName":"broker-a","queueId":2}:0,{"topic":"Stats","brokerName":"broker-a","queueId":3}:0}}` {
		t.Fatalf("reset body = %s", resp.Body)
	}
	u := protocol.UpdateConsumerOffsetRequestHeader{ConsumerGroup: "sg", Topic: "Stats", QueueID: 0, CommitOffset: 3}
	invoke(t, c, b.Addr(), protocol.NewRequest(protocol.UpdateConsumerOffset, protocol.EncodeHeader(&u, false), nil))
	if off, _ := b.Offsets.Query("sg", "Stats", 0); off != 0 {
		t.Fatalf("offset after ignored update = %d", off)
	}
	resp = invoke(t, c, b.Addr(), pullReq("sg", "Stats", 0, 2, 0, 0, ""))
	mustCode(t, resp, protocol.PullOffsetMoved)
	if resp.Ext("nextBeginOffset") != "0" {
		t.Fatalf("nextBeginOffset = %q", resp.Ext("nextBeginOffset"))
	}
	resp = invoke(t, c, b.Addr(), pullReq("sg", "Stats", 0, 0, 0, 0, ""))
	mustCode(t, resp, protocol.Success)
}

// TestLongPollingTagFilterAndShortPolling: an arrival whose tag does not
// match a held pull's subscription leaves it parked; a matching one wakes
// it (docs/broker.md §1.7 wake-up path 1). With longPollingEnable=false the hold is
// shortPollingTimeMills.
func TestLongPollingTagFilterAndShortPolling(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	c := newClient(t)
	mustCode(t, invoke(t, c, b.Addr(), sendReq("LT", 0, []byte("m0"), map[string]string{"TAGS": "TagB"})), protocol.Success)
	waitDispatched(t, b, "LT", 0, 1)
	flags := int32(protocol.PullFlagSuspend | protocol.PullFlagSubscription)
	done := make(chan *protocol.Command, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		r, err := c.InvokeSync(ctx, b.Addr(), pullReq("cg", "LT", 0, 1, flags, 15*time.Second, "TagA"))
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	testutil.Eventually(t, 5*time.Second, func() bool { return b.pullHold.heldCount() == 1 }, "pull not held")
	mustCode(t, invoke(t, c, b.Addr(), sendReq("LT", 0, []byte("m1"), map[string]string{"TAGS": "TagB"})), protocol.Success)
	waitDispatched(t, b, "LT", 0, 2)
	select {
	case r := <-done:
		t.Fatalf("woken by a non-matching tag: code %d", r.Code)
	case <-time.After(300 * time.Millisecond):
	}
	mustCode(t, invoke(t, c, b.Addr(), sendReq("LT", 0, []byte("m2"), map[string]string{"TAGS": "TagA"})), protocol.Success)
	select {
	case r := <-done:
		mustCode(t, r, protocol.Success)
		msgs, err := message.DecodeStoredAll(r.Body, message.DecodeOptions{})
		if err != nil || len(msgs) != 1 || string(msgs[0].Body) != "m2" {
			t.Fatalf("msgs = %v, %v", msgs, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("matching arrival did not wake the held pull")
	}

	cfg := testConfig(t, t.TempDir())
	cfg.LongPollingEnable = false
	cfg.ShortPollingTimeMills = 200 * time.Millisecond
	sb := startBroker(t, cfg)
	mustCode(t, invoke(t, c, sb.Addr(), sendReq("SP", 0, []byte("m0"), nil)), protocol.Success)
	waitDispatched(t, sb, "SP", 0, 1)
	start := time.Now()
	r := invoke(t, c, sb.Addr(), pullReq("cg", "SP", 0, 1, flags, 15*time.Second, "*"))
	mustCode(t, r, protocol.PullNotFound)
	if d := time.Since(start); d > 5*time.Second || d < 150*time.Millisecond {
		t.Fatalf("short polling held %v, want about 200ms", d)
	}
}

// TestClientChannelExpiry: a channel without a heartbeat for
// channelExpiredTimeout is dropped and its connection closed (docs/broker.md §1.6).
func TestClientChannelExpiry(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	c := newClient(t)
	body, _ := protocol.MarshalJSON(&protocol.HeartbeatData{ClientID: "old",
		ConsumerDataSet: []protocol.ConsumerData{{GroupName: "eg", SubscriptionDataSet: []protocol.SubscriptionData{{Topic: "T", SubString: "*"}}}}})
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.HeartBeat, nil, body)), protocol.Success)
	if n := b.Clients.ScanExpired(time.Now().Add(time.Minute), b.cfg.ChannelExpiredTimeout); n != 0 {
		t.Fatalf("expired %d live channels", n)
	}
	if n := b.Clients.ScanExpired(time.Now().Add(3*time.Minute), b.cfg.ChannelExpiredTimeout); n != 1 {
		t.Fatalf("expired %d channels, want 1", n)
	}
	if ids := b.Clients.ConsumerIDs("eg"); len(ids) != 0 {
		t.Fatalf("expired consumer still listed: %v", ids)
	}
}

func TestAdminOffsetTools(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	c := newClient(t)
	mustCode(t, invoke(t, c, b.Addr(), sendReq("Span", 0, []byte("a"), nil)), protocol.Success)
	mustCode(t, invoke(t, c, b.Addr(), sendReq("Span", 0, []byte("b"), nil)), protocol.Success)
	waitDispatched(t, b, "Span", 0, 2)
	b.Offsets.Commit("src", "Span", 0, 1)
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.CloneGroupOffset,
		map[string]string{"srcGroup": "src", "destGroup": "dst"}, nil)), protocol.Success)
	if off, ok := b.Offsets.Query("dst", "Span", 0); !ok || off != 1 {
		t.Fatalf("cloned offset = %d, %v", off, ok)
	}
	resp := invoke(t, c, b.Addr(), protocol.NewRequest(protocol.QueryConsumeTimeSpan, map[string]string{"topic": "Span", "group": "src"}, nil))
	mustCode(t, resp, protocol.Success)
	var spans struct {
		ConsumeTimeSpanSet []queueTimeSpan `json:"consumeTimeSpanSet"`
	}
	if err := protocol.UnmarshalFastJSON(resp.Body, &spans); err != nil || len(spans.ConsumeTimeSpanSet) != 4 {
		t.Fatalf("spans = %s, %v", resp.Body, err)
	}
	s0 := spans.ConsumeTimeSpanSet[0]
	if s0.MinTimeStamp == 0 || s0.MaxTimeStamp < s0.MinTimeStamp || s0.ConsumeTimeStamp != s0.MinTimeStamp {
		t.Fatalf("queue 0 span = %+v", s0)
	}
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.CleanExpiredConsumeQueue, nil, nil)), protocol.Success)
}

// TestUpdateBrokerConfig: UPDATE_BROKER_CONFIG makes the broker read-only
// at run time (brokerPermission=4: the route says so, and sends to ordered
// topics are refused as in RocketMQ) and refuses keys that cannot change.
func TestUpdateBrokerConfig(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	c := newClient(t)
	mustCode(t, invoke(t, c, b.Addr(), sendReq("RO", 0, []byte("a"), nil)), protocol.Success)
	ct := protocol.CreateTopicRequestHeader{Topic: "RO_ORDER", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, Order: true}
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.UpdateAndCreateTopic, protocol.EncodeHeader(&ct, false), nil)), protocol.Success)
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.UpdateBrokerConfig, nil, []byte("brokerPermission=4\n"))), protocol.Success)
	mustCode(t, invoke(t, c, b.Addr(), sendReq("RO_ORDER", 0, []byte("b"), nil)), protocol.NoPermission)
	resp := invoke(t, c, b.Addr(), protocol.NewRequest(protocol.GetBrokerConfig, nil, nil))
	if !strings.Contains(string(resp.Body), "brokerPermission=4\n") {
		t.Fatalf("config does not show the update: %q", resp.Body)
	}
	tw := b.topicWrapper()
	if tw.TopicConfigTable["RO"].Perm != protocol.PermRead {
		t.Fatalf("registered perm = %d, want read-only", tw.TopicConfigTable["RO"].Perm)
	}
	resp = invoke(t, c, b.Addr(), protocol.NewRequest(protocol.UpdateBrokerConfig, nil, []byte("storePathRootDir=/elsewhere\n")))
	mustCode(t, resp, protocol.NoPermission)
	if !strings.Contains(resp.Remark, "storePathRootDir") {
		t.Fatalf("remark %q does not name the key", resp.Remark)
	}
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.UpdateBrokerConfig, nil, []byte("brokerPermission=6\n"))), protocol.Success)
	mustCode(t, invoke(t, c, b.Addr(), sendReq("RO", 0, []byte("c"), nil)), protocol.Success)
}

// TestSlavePullRules: a slave without slaveReadEnable refuses pulls up
// front with SYSTEM_BUSY, as RocketMQ 5's rejectRequest does
// (docs/protocol.md §7.3).
func TestSlavePullRules(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.BrokerID = 1
	cfg.Store.BrokerRole = "SLAVE"
	b := startBroker(t, cfg)
	c := newClient(t)
	resp := invoke(t, c, b.Addr(), pullReq("g", names.TopicSelfTest, 0, 5, protocol.PullFlagSubscription, 0, "*"))
	mustCode(t, resp, protocol.SystemBusy)
	if resp.Remark != "[REJECTREQUEST]system busy, start flow control for a while" {
		t.Fatalf("remark = %q", resp.Remark)
	}
	// Sends are refused up front on a slave.
	resp = invoke(t, c, b.Addr(), sendReq("T", 0, []byte("x"), nil))
	mustCode(t, resp, protocol.SystemBusy)
	if !strings.HasPrefix(resp.Remark, "[REJECTREQUEST]") {
		t.Fatalf("remark = %q", resp.Remark)
	}
}

// TestQueryAndViewMessage: QUERY_MESSAGE finds messages by KEYS and by
// UNIQ_KEY through the index; VIEW_MESSAGE_BY_ID returns the stored record
// at the offset an offset message id names (docs/protocol.md §3.4).
func TestQueryAndViewMessage(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.Store.MessageIndexEnable = true
	cfg.Store.MaxHashSlotNum = 1000
	cfg.Store.MaxIndexNum = 4000
	b := startBroker(t, cfg)
	c := newClient(t)
	resp := invoke(t, c, b.Addr(), sendReq("Q", 0, []byte("findme"), map[string]string{"KEYS": "order-1 order-2", "UNIQ_KEY": "UNIQ123"}))
	mustCode(t, resp, protocol.Success)
	_, offset, err := message.ParseOffsetMsgID(resp.Ext("msgId"))
	if err != nil {
		t.Fatal(err)
	}
	view := invoke(t, c, b.Addr(), protocol.NewRequest(protocol.ViewMessageByID, map[string]string{"offset": strconv.FormatInt(offset, 10)}, nil))
	mustCode(t, view, protocol.Success)
	m, _, err := message.DecodeStored(view.Body, message.DecodeOptions{})
	if err != nil || string(m.Body) != "findme" || m.CommitLogOffset != offset {
		t.Fatalf("viewed %+v, %v", m, err)
	}
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.ViewMessageByID, map[string]string{"offset": "999999999"}, nil)), protocol.SystemError)

	now := time.Now().UnixMilli()
	query := func(key string, unique bool) *protocol.Command {
		h := protocol.QueryMessageRequestHeader{Topic: "Q", Key: key, MaxNum: 32, BeginTimestamp: now - 60000, EndTimestamp: now + 60000}
		ext := protocol.EncodeHeader(&h, false)
		if unique {
			ext["_UNIQUE_KEY_QUERY"] = "true"
		}
		return invoke(t, c, b.Addr(), protocol.NewRequest(protocol.QueryMessage, ext, nil))
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return query("order-2", false).Code == int32(protocol.Success) }, "key not indexed")
	for _, q := range []struct {
		key    string
		unique bool
	}{{"order-1", false}, {"UNIQ123", true}} {
		r := query(q.key, q.unique)
		mustCode(t, r, protocol.Success)
		got, err := message.DecodeStoredAll(r.Body, message.DecodeOptions{})
		if err != nil || len(got) != 1 || string(got[0].Body) != "findme" {
			t.Fatalf("query %s: %d messages, %v", q.key, len(got), err)
		}
	}
	mustCode(t, query("absent", false), protocol.QueryNotFound)
}

// TestHeartbeatAfterCloseNotRegistered: a heartbeat handled after its
// connection's close (it was read before the EOF and waited in the
// heartbeat pool) must not bring the dead client back into its group,
// where it would hold queues no one consumes until the 120 s expiry scan.
func TestHeartbeatAfterCloseNotRegistered(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	c := newClient(t)
	data := protocol.ConsumerData{GroupName: "cg", ConsumeType: protocol.ConsumePassively,
		MessageModel: protocol.MessageModelClustering, ConsumeFromWhere: protocol.ConsumeFromLastOffset,
		SubscriptionDataSet: []protocol.SubscriptionData{{Topic: "T", SubString: "*"}}}
	body, _ := protocol.MarshalJSON(&protocol.HeartbeatData{ClientID: "dead", ConsumerDataSet: []protocol.ConsumerData{data},
		ProducerDataSet: []protocol.ProducerData{{GroupName: "pg"}}})
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.HeartBeat, nil, body)), protocol.Success)
	info, ok := b.Clients.ConsumerGroup("cg")
	if !ok || len(info.Channels) != 1 {
		t.Fatalf("group after heartbeat: %+v %v", info, ok)
	}
	ch := info.Channels[0] // the broker's side of the connection
	c.Close()
	testutil.Eventually(t, 5*time.Second, func() bool { return len(b.Clients.ConsumerIDs("cg")) == 0 }, "closed client not removed")

	// The late heartbeat, as the heartbeat worker would register it.
	if b.Clients.RegisterConsumer(&data, ch, false) {
		t.Error("RegisterConsumer on a closed connection reported a membership change")
	}
	b.Clients.RegisterProducer("pg", ch)
	if ids := b.Clients.ConsumerIDs("cg"); len(ids) != 0 {
		t.Fatalf("dead client registered again: %v", ids)
	}
	if chs := b.Clients.ProducerChannels("pg"); len(chs) != 0 {
		t.Fatalf("dead producer registered again: %+v", chs)
	}
}

// TestSendCreatedTopicRoutedBeforeAnswer: a send that auto-creates its topic
// is answered only after the name server has the topic (RocketMQ's
// createTopicInSendMessageMethod registers synchronously), so a consumer
// starting right after the first send finds the route.
func TestSendCreatedTopicRoutedBeforeAnswer(t *testing.T) {
	nsCfg := namesrv.DefaultConfig()
	nsCfg.ListenPort, nsCfg.BindAddress = 0, "127.0.0.1"
	ns := namesrv.New(nsCfg, testutil.Logger(t))
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	cfg := testConfig(t, t.TempDir())
	cfg.NamesrvAddr = []string{ns.Addr().String()}
	b := startBroker(t, cfg)
	c := newClient(t)
	h := protocol.GetRouteInfoRequestHeader{Topic: names.TopicAutoCreate}
	testutil.Eventually(t, 10*time.Second, func() bool {
		return invoke(t, c, ns.Addr().String(), protocol.NewRequest(protocol.GetRouteInfoByTopic, protocol.EncodeHeader(&h, false), nil)).Code == int32(protocol.Success)
	}, "the broker never registered")
	for i := range 5 {
		topic := "RoutedAtOnce" + strconv.Itoa(i)
		mustCode(t, invoke(t, c, b.Addr(), sendReq(topic, 0, []byte("x"), nil)), protocol.Success)
		rh := protocol.GetRouteInfoRequestHeader{Topic: topic}
		resp := invoke(t, c, ns.Addr().String(), protocol.NewRequest(protocol.GetRouteInfoByTopic, protocol.EncodeHeader(&rh, false), nil))
		mustCode(t, resp, protocol.Success)
	}
}
