package e2e

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestSDKPushConsumerRebalancesOnNotify: with the default 20 s rebalance
// period, a second member joining makes the first give up queues within
// seconds, driven by the broker's NOTIFY_CONSUMER_IDS_CHANGED (docs/protocol.md
// §3.6); closing the second gives them back.
func TestSDKPushConsumerRebalancesOnNotify(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 8)
	group := uniqueName(t, "cg")
	r := newSDKReceived()
	slowRebalance := client.WithRebalanceInterval(20 * time.Second)
	c1 := newSDKPushConsumer(t, c.nsAddr, group, topic, client.TagSelector("*"), recordListener(r), slowRebalance)
	// The 8 topic queues; the retry topic's queue joins once the broker
	// has registered %RETRY%<group> with the name server.
	if got := c1.Stats().Queues; got < 8 {
		t.Fatalf("first member holds %d queues, want 8", got)
	}
	c2 := newSDKPushConsumer(t, c.nsAddr, group, topic, client.TagSelector("*"), recordListener(r), slowRebalance)
	testutil.Eventually(t, 8*time.Second, func() bool {
		return c1.Stats().Queues < 8 && c2.Stats().Queues > 0
	}, "no rebalance after the second member joined")
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 8*time.Second, func() bool { return c1.Stats().Queues >= 8 }, "queues not taken back")
}

// TestSDKAndOfficialConsumersShareGroup: an Apogee consumer and an official
// Go consumer in one group compute the same allocation (sorted queues and
// client ids, averagely), so each message is consumed by exactly one of
// them once both are running.
func TestSDKAndOfficialConsumersShareGroup(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 8)
	group := uniqueName(t, "cg")
	p := newProducer(t, c.nsAddr)

	official := newReceived()
	oc := newPushConsumer(t, c.nsAddr, group, topic, "*", official)
	sdk := newSDKReceived()
	sc := newSDKPushConsumer(t, c.nsAddr, group, topic, client.TagSelector("*"), recordListener(sdk))
	testutil.Eventually(t, 15*time.Second, func() bool {
		return len(c.b.Clients.ConsumerIDs(group)) == 2 && sc.Stats().Queues >= 4 && sc.Stats().Queues <= 5
	}, "group never split")
	settleSplit(t, p, topic, func(id string) bool { _, ok := official.get(id); return ok },
		func(id string) bool { _, ok := sdk.get(id); return ok })
	baseO, baseS := official.count.Load(), sdk.count.Load()
	ids := sendN(t, p, topic, "", "steady", 200)
	testutil.Eventually(t, 30*time.Second, func() bool {
		for _, id := range ids {
			_, a := official.get(id)
			_, b := sdk.get(id)
			if !a && !b {
				return false
			}
		}
		return true
	}, "not every message consumed")
	both := 0
	for _, id := range ids {
		_, a := official.get(id)
		_, b := sdk.get(id)
		if a && b {
			both++
		}
	}
	if both != 0 {
		t.Errorf("%d messages consumed by both members", both)
	}
	if official.count.Load() == baseO || sdk.count.Load() == baseS {
		t.Errorf("not split: official %d, sdk %d", official.count.Load()-baseO, sdk.count.Load()-baseS)
	}
	// Shut the official consumer down first: the official client races
	// (under -race) when a membership notification arrives during its
	// own shutdown, which closing the Apogee member first would cause.
	_ = oc.Shutdown()
}

// TestSDKPushConsumerSQL92Subscription: an SQL92 selector is registered
// with the broker as written (heartbeat subscription, docs/protocol.md §5.3.4)
// and sent with the pulls; the broker filters it, so only matching messages
// arrive, and a pull with the SQL92 selector is served (an error fails).
func TestSDKPushConsumerSQL92Subscription(t *testing.T) {
	c := startCluster(t, func(cfg *broker.Config) { cfg.EnablePropertyFilter = true })
	topic := uniqueName(t, "T")
	c.createTopic(topic, 2)
	group := uniqueName(t, "cg")
	const expr = "a > 5 AND (b = 'x' OR b IS NULL)"
	r := newSDKReceived()
	newSDKPushConsumer(t, c.nsAddr, group, topic, client.SQL92Selector(expr), recordListener(r))
	testutil.Eventually(t, 10*time.Second, func() bool {
		s, ok := c.b.Clients.Subscription(group, topic)
		return ok && s.SubString == expr && s.ExpressionType == protocol.ExpressionSQL92
	}, "SQL92 subscription not registered as written")

	pc := newSDKPullConsumer(t, c.nsAddr, uniqueName(t, "cg"))
	ctx := testutil.Context(t, 30*time.Second)
	mq := client.MessageQueue{Topic: topic, BrokerName: "broker-a", QueueID: 0}
	// The broker filters SQL92 (enablePropertyFilter is on): a pull with an
	// SQL92 selector must be served, never refused.
	if _, err := pc.Pull(ctx, mq, client.SQL92Selector(expr), 0, 8); err != nil {
		t.Fatalf("SQL92 pull refused: %v", err)
	}
	sp := newSDKProducer(t, c.nsAddr)
	for i, props := range []map[string]string{{"a": "6", "b": "x"}, {"a": "7"}, {"a": "1", "b": "x"}, {"a": "9", "b": "y"}} {
		m := client.NewMessage(topic, []byte{byte('0' + i)})
		for k, v := range props {
			m.SetProperty(k, v)
		}
		if _, err := sp.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 20*time.Second, func() bool { return r.count.Load() >= 2 }, "matching messages not received")
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.msgs {
		if b := string(m.Body); b != "0" && b != "1" {
			t.Errorf("non-matching message %s received", b)
		}
	}
}

// TestSDKProducerToSDKConsumer: the Apogee producer's sync, batch and
// compressed sends round-trip through the Apogee consumer byte for byte.
func TestSDKProducerToSDKConsumer(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 4)
	ctx := testutil.Context(t, 60*time.Second)
	p := newSDKProducer(t, c.nsAddr)
	want := map[string][]byte{}
	big := make([]byte, 64<<10)
	for i := range big {
		big[i] = byte(i % 7)
	}
	for _, body := range [][]byte{[]byte("one"), big} {
		m := client.NewMessage(topic, body).WithTag("t").WithKeys("k1", "k2")
		m.SetProperty("user", "ü")
		res, err := p.Send(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		want[res.MsgID] = body
	}
	var batch []*client.Message
	for i := range 10 {
		batch = append(batch, client.NewMessage(topic, []byte{byte(i), 0, 255}).WithTag("t"))
	}
	if _, err := p.SendBatch(ctx, batch...); err != nil {
		t.Fatal(err)
	}
	r := newSDKReceived()
	newSDKPushConsumer(t, c.nsAddr, uniqueName(t, "cg"), topic, client.TagSelector("t"), recordListener(r),
		client.WithConsumeMessageBatchMaxSize(8))
	testutil.Eventually(t, 30*time.Second, func() bool { return r.count.Load() >= int64(len(want)+len(batch)) },
		"received %d", r.count.Load())
	for id, body := range want {
		m, ok := r.get(id)
		if !ok {
			t.Fatalf("%s missing", id)
		}
		if string(m.Body) != string(body) || m.Property("user") != "ü" || len(m.Keys()) != 2 || m.Tag() != "t" {
			t.Errorf("%s: body %d bytes, props %v", id, len(m.Body), m.Properties)
		}
	}
	seen := map[byte]bool{}
	r.mu.Lock()
	for _, m := range r.msgs {
		if len(m.Body) == 3 && m.Body[1] == 0 && m.Body[2] == 255 {
			seen[m.Body[0]] = true
		}
	}
	r.mu.Unlock()
	if len(seen) != len(batch) {
		t.Fatalf("batch messages received: %d of %d", len(seen), len(batch))
	}
}

// TestSDKPushConsumerFollowsServerSideReset: after an admin resets the
// group's offsets to the beginning (INVOKE_BROKER_TO_RESET_OFFSET, served
// as PULL_OFFSET_MOVED on the next pull, docs/protocol.md §7.6), the running
// consumer receives the messages again.
func TestSDKPushConsumerFollowsServerSideReset(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 2)
	group := uniqueName(t, "cg")
	p := newProducer(t, c.nsAddr)
	ids := sendN(t, p, topic, "", "reset", 20)
	var mu sync.Mutex
	deliveries := map[string]int{}
	l := func(_ context.Context, msgs []*client.MessageExt) (client.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			deliveries[m.MsgID]++
		}
		return client.ConsumeSuccess, nil
	}
	pc := newSDKPushConsumer(t, c.nsAddr, group, topic, client.TagSelector("*"), l)
	countAtLeast := func(n int) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, id := range ids {
				if deliveries[id] < n {
					return false
				}
			}
			return true
		}
	}
	testutil.Eventually(t, 30*time.Second, countAtLeast(1), "first delivery incomplete")
	// Committed to the broker before the reset.
	testutil.Eventually(t, 10*time.Second, func() bool {
		var sum int64
		for _, off := range pc.Offsets() {
			sum += off
		}
		return sum == int64(len(ids))
	}, "offsets not at the end")

	adm, err := admin.New(admin.WithNameServers(c.nsAddr), admin.WithLogger(testutil.Logger(t)))
	if err != nil {
		t.Fatal(err)
	}
	if err := adm.Start(); err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx := testutil.Context(t, 30*time.Second)
	if _, err := adm.ResetOffsetByTime(ctx, topic, group, time.UnixMilli(0), true); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, countAtLeast(2), "messages not redelivered after the reset")
}

// TestSDKPushConsumerSurvivesSilentBroker: a topic on two brokers, one of
// which accepts connections but never answers. The consumer still
// consumes every message of the live broker (each queue is pulled on its
// own; a failed rebalance round is retried), and Close returns promptly
// although pulls to the silent broker are outstanding.
func TestSDKPushConsumerSurvivesSilentBroker(t *testing.T) {
	c, topic := twoBrokerTopic(t)
	p := newSDKProducer(t, c.nsAddr, client.WithSendLatencyFaultEnable(true), client.WithSendTimeout(time.Second))
	ctx := testutil.Context(t, 60*time.Second)
	var ids []string
	for len(ids) < 30 {
		res, err := p.Send(ctx, client.NewMessage(topic, []byte("live")))
		if err != nil {
			continue // the first send may hit the silent broker
		}
		ids = append(ids, res.MsgID)
	}
	r := newSDKReceived()
	pc := newSDKPushConsumer(t, c.nsAddr, uniqueName(t, "cg"), topic, client.TagSelector("*"), recordListener(r))
	testutil.Eventually(t, 40*time.Second, func() bool { return r.missing(ids) == 0 }, "messages of the live broker not consumed")
	start := time.Now()
	if err := pc.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Close took %v", d)
	}
}

// TestSDKPushConsumerSurvivesBrokerRestart: pulls fail while the broker is
// down and resume after it restarts on the same address; messages sent
// before and after are all consumed, and committed offsets survive.
func TestSDKPushConsumerSurvivesBrokerRestart(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 2)
	p := newSDKProducer(t, c.nsAddr)
	ctx := testutil.Context(t, 60*time.Second)
	send := func(prefix string, n int) []string {
		var ids []string
		for i := range n {
			res, err := p.Send(ctx, client.NewMessage(topic, []byte(prefix+strconv.Itoa(i))))
			if err != nil {
				t.Fatalf("send %s%d: %v", prefix, i, err)
			}
			ids = append(ids, res.MsgID)
		}
		return ids
	}
	before := send("before-", 10)
	r := newSDKReceived()
	newSDKPushConsumer(t, c.nsAddr, uniqueName(t, "cg"), topic, client.TagSelector("*"), recordListener(r))
	testutil.Eventually(t, 20*time.Second, func() bool { return r.count.Load() == 10 }, "before restart")

	c.stopBroker()
	c.startBroker()
	var after []string
	testutil.Eventually(t, 30*time.Second, func() bool {
		// Sends fail until the producer reconnects; retry until 10 pass.
		res, err := p.Send(ctx, client.NewMessage(topic, []byte("after")))
		if err == nil {
			after = append(after, res.MsgID)
		}
		return len(after) >= 10
	}, "broker did not come back for the producer")
	testutil.Eventually(t, 30*time.Second, func() bool { return r.missing(after) == 0 }, "messages sent after the restart not consumed")
	for _, id := range before {
		if _, ok := r.get(id); !ok {
			t.Fatalf("message %s lost", id)
		}
	}
}

// TestSDKPushConsumerAnswersBrokerRelays: the consumer answers the admin
// requests a broker relays to it (docs/protocol.md §3.6):
// GET_CONSUMER_RUNNING_INFO with its subscriptions and
// CONSUME_MESSAGE_DIRECTLY by running its listener on the message.
func TestSDKPushConsumerAnswersBrokerRelays(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 1)
	group := uniqueName(t, "cg")
	ctx := testutil.Context(t, 30*time.Second)
	p := newSDKProducer(t, c.nsAddr)
	res, err := p.Send(ctx, client.NewMessage(topic, []byte("direct")).WithTag("d"))
	if err != nil {
		t.Fatal(err)
	}
	var direct atomic.Int64
	l := func(ctx context.Context, msgs []*client.MessageExt) (client.ConsumeResult, error) {
		for _, m := range msgs {
			if string(m.Body) == "direct" {
				direct.Add(1)
			}
		}
		return client.ConsumeSuccess, nil
	}
	pc := newSDKPushConsumer(t, c.nsAddr, group, topic, client.TagSelector("d"), l)
	testutil.Eventually(t, 20*time.Second, func() bool { return direct.Load() == 1 }, "not consumed")

	rc := remoting.NewClient(remoting.ClientConfig{Logger: testutil.Logger(t)})
	if err := rc.Start(); err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	info, err := rc.InvokeSync(ctx, c.b.Addr(), protocol.NewRequest(protocol.GetConsumerRunningInfo,
		map[string]string{"consumerGroup": group, "clientId": pc.ClientID()}, nil))
	if err != nil || info.Code != int32(protocol.Success) {
		t.Fatalf("running info: %v %+v", err, info)
	}
	var body struct {
		Properties      map[string]string           `json:"properties"`
		SubscriptionSet []protocol.SubscriptionData `json:"subscriptionSet"`
		MQTable         map[string]struct {
			CachedMsgCount int64 `json:"cachedMsgCount"`
			LastPull       int64 `json:"lastPullTimestamp"`
		} `json:"mqTable"` // object keys, as fastjson writes them
	}
	if err := protocol.UnmarshalFastJSON(info.Body, &body); err != nil {
		t.Fatalf("running info body %s: %v", info.Body, err)
	}
	if len(body.MQTable) == 0 {
		t.Fatalf("no process queues in %s", info.Body)
	}
	for k, v := range body.MQTable {
		if !strings.Contains(k, topic) && !strings.Contains(k, "%RETRY%") || v.LastPull == 0 {
			t.Fatalf("mqTable entry %s: %+v", k, v)
		}
	}
	found := false
	for _, s := range body.SubscriptionSet {
		found = found || (s.Topic == topic && s.SubString == "d")
	}
	if !found || body.Properties["PROP_CONSUME_TYPE"] != protocol.ConsumePassively {
		t.Fatalf("running info %s", info.Body)
	}

	dr, err := rc.InvokeSync(ctx, c.b.Addr(), protocol.NewRequest(protocol.ConsumeMessageDirectly,
		map[string]string{"consumerGroup": group, "clientId": pc.ClientID(), "msgId": res.OffsetMsgID}, nil))
	if err != nil || dr.Code != int32(protocol.Success) {
		t.Fatalf("consume directly: %v %+v", err, dr)
	}
	var result struct {
		ConsumeResult string `json:"consumeResult"`
	}
	if err := json.Unmarshal(dr.Body, &result); err != nil || result.ConsumeResult != "CR_SUCCESS" {
		t.Fatalf("consume directly result %s (%v)", dr.Body, err)
	}
	if direct.Load() != 2 {
		t.Fatalf("listener ran %d times, want 2", direct.Load())
	}
}

// TestSDKConsumersCloseLeavesNoGoroutines: push (concurrent and orderly),
// lite pull and pull consumers stop every goroutine they started, their
// connections' included, on Close.
func TestSDKConsumersCloseLeavesNoGoroutines(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 2)
	ctx := testutil.Context(t, 30*time.Second)
	p := newProducer(t, c.nsAddr)
	sendN(t, p, topic, "", "leak", 4)
	baseline := goleak.IgnoreCurrent()

	r := newSDKReceived()
	var closers []func() error
	for _, orderly := range []bool{false, true} {
		pc, err := client.NewPushConsumer(uniqueName(t, "cg"), client.WithNameServers(c.nsAddr),
			client.WithConsumeOrderly(orderly), client.WithConsumeFromWhere(client.ConsumeFromFirstOffset))
		if err != nil {
			t.Fatal(err)
		}
		if err := pc.Subscribe(topic, client.TagSelector("*"), recordListener(r)); err != nil {
			t.Fatal(err)
		}
		if err := pc.Start(); err != nil {
			t.Fatal(err)
		}
		closers = append(closers, pc.Close)
	}
	lc, err := client.NewLitePullConsumer(uniqueName(t, "cg"), client.WithNameServers(c.nsAddr),
		client.WithConsumeFromWhere(client.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	if err := lc.Subscribe(topic, client.TagSelector("*")); err != nil {
		t.Fatal(err)
	}
	if err := lc.Start(); err != nil {
		t.Fatal(err)
	}
	closers = append(closers, lc.Close)
	pull, err := client.NewPullConsumer(uniqueName(t, "cg"), client.WithNameServers(c.nsAddr))
	if err != nil {
		t.Fatal(err)
	}
	if err := pull.Start(); err != nil {
		t.Fatal(err)
	}
	closers = append(closers, pull.Close)
	if _, err := pull.Pull(ctx, client.MessageQueue{Topic: topic, BrokerName: "broker-a"}, client.TagSelector("*"), 0, 4); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*time.Second, func() bool { return r.count.Load() >= 4 }, "nothing consumed")
	if _, err := lc.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	for _, closeFn := range closers {
		if err := closeFn(); err != nil {
			t.Errorf("close: %v", err)
		}
	}
	// goleak retries while the broker side of the closed connections
	// winds down.
	goleak.VerifyNone(t, baseline)
}
