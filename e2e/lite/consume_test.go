package litee2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/client/litepop"
)

// createGroup creates consumer groups with attributes on the cluster.
func (s *server) createGroup(t *testing.T, group string, attrs map[string]string) {
	t.Helper()
	a, err := admin.New(admin.WithNameServers(s.namesrv))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	raw, _ := json.Marshal(map[string]any{"groupName": group, "consumeEnable": true, "retryMaxTimes": 16,
		"retryQueueNums": 1, "attributes": attrs})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.CreateSubscriptionGroups(ctx, []json.RawMessage{raw}, admin.Target{Cluster: "DefaultCluster"}); err != nil {
		t.Fatalf("create group %s: %v", group, err)
	}
}

// liteProducer returns a v5.1.4 producer of parent and its send function.
func liteProducer(t *testing.T, s *server, parent string) func(liteTopic, body string) {
	t.Helper()
	p, err := rmq.NewProducer(clientConfig(s.grpc, ""), rmq.WithTopics(parent))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.GracefulStop() })
	return func(liteTopic, body string) {
		t.Helper()
		m := &rmq.Message{Topic: parent, Body: []byte(body)}
		m.SetLiteTopic(liteTopic)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if _, err := p.Send(ctx, m); err != nil {
			t.Fatalf("send %s to %s: %v", body, liteTopic, err)
		}
	}
}

func newLitePop(t *testing.T, s *server, id, group, parent string) (*litepop.Consumer, *[]string, *sync.Mutex) {
	t.Helper()
	c, err := litepop.New(litepop.Config{BrokerAddr: s.broker, BrokerName: "broker-a", ClientID: id, Group: group, Topic: parent})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var told []string
	c.OnUnsubscribe(func(l string) {
		mu.Lock()
		told = append(told, l)
		mu.Unlock()
	})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, &told, &mu
}

// receiveAll pops until n messages came (acking each) or d passes, and
// returns "lite:body" in arrival order.
func receiveAll(t *testing.T, c *litepop.Consumer, n int, d time.Duration) []string {
	t.Helper()
	var got []string
	deadline := time.Now().Add(d)
	for len(got) < n && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		msgs, err := c.Receive(ctx, 32, 20*time.Second, 2*time.Second)
		cancel()
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		for _, m := range msgs {
			got = append(got, m.LiteTopic+":"+string(m.Body))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := c.Ack(ctx, m); err != nil {
				t.Fatalf("ack %s: %v", m.Body, err)
			}
			cancel()
		}
	}
	return got
}

// TestLiteRemotingConsumer: our remoting lite consumer (client/litepop)
// against a real broker process. One POP_LITE_MESSAGE returns the messages
// of both subscribed lite topics, each in send order, and none of an
// unsubscribed one; a held pop is answered by a send; OffsetOption MAX,
// OFFSET and TAIL_N place a subscription; in an exclusive group a second
// consumer's subscription takes the lite topic and the first is told
// (NOTIFY_UNSUBSCRIBE_LITE); a wildcard group's pattern subscription gets
// only the matching lite topics; an expired lite topic is told too; a
// subscription past maxLiteSubscriptionCount answers
// LITE_SUBSCRIPTION_QUOTA_EXCEEDED (2018).
func TestLiteRemotingConsumer(t *testing.T) {
	s := startServer(t, "", "--set", "liteExpirationUnitMs=2000", "--set", "liteTtlCheckInterval=200",
		"--set", "minLiteTTl=0", "--set", "maxLiteSubscriptionCount=6")
	// PopParent's lite topics never expire (however slow the machine);
	// PopExpire's go 4 units of 2 s after their last send.
	const parent, expiring = "PopParent", "PopExpire"
	s.createTopic(t, parent, "+message.type=LITE", 1)
	s.createTopic(t, expiring, "+message.type=LITE,+lite.topic.expiration=4", 1)
	s.createGroup(t, "PopGroup", map[string]string{"lite.bind.topic": parent})
	s.createGroup(t, "PopExclusive", map[string]string{"lite.sub.model": "Exclusive"})
	send := liteProducer(t, s, parent)
	for i := range 3 {
		send("r1", fmt.Sprint("a", i))
		send("r2", fmt.Sprint("b", i))
		send("r3", fmt.Sprint("c", i))
	}

	c1, told1, mu1 := newLitePop(t, s, "pop-1", "PopGroup", parent)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c1.Subscribe(ctx, nil, "r1", "r2"); err != nil {
		t.Fatal(err)
	}
	got := receiveAll(t, c1, 6, 30*time.Second)
	per := map[string][]string{}
	for _, g := range got {
		l, b, _ := strings.Cut(g, ":")
		per[l] = append(per[l], b)
	}
	if strings.Join(per["r1"], ",") != "a0,a1,a2" || strings.Join(per["r2"], ",") != "b0,b1,b2" || len(per["r3"]) > 0 {
		t.Fatalf("received %v, want r1 a0..a2 and r2 b0..b2 in order, nothing of r3", got)
	}

	// A held pop is answered by a send to a subscribed lite topic.
	res := make(chan []*litepop.Message, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		msgs, err := c1.Receive(ctx, 32, 20*time.Second, 30*time.Second)
		if err != nil {
			t.Error(err)
		}
		res <- msgs
	}()
	time.Sleep(300 * time.Millisecond) // let the pop be held (the send is found either way)
	send("r2", "b3")
	if msgs := <-res; len(msgs) != 1 || string(msgs[0].Body) != "b3" {
		t.Fatalf("held pop got %d messages, want b3", len(msgs))
	} else {
		_ = c1.Ack(ctx, msgs[0])
	}

	// Admin (mqadmin's lite commands): pop-1's subscriptions and last pop,
	// the group's lag on r1 after two unconsumed sends, a trigger.
	send("r1", "a3")
	send("r1", "a4")
	mqadmin := func(args ...string) []byte {
		t.Helper()
		out, err := exec.Command(apogeeBin, append(append([]string{"admin"}, args...), "-n", s.namesrv, "--json")...).CombinedOutput()
		if err != nil {
			t.Fatalf("apogee admin %v: %v\n%s", args, err, out)
		}
		return out
	}
	var clientInfo map[string]struct {
		LiteTopicCount int      `json:"liteTopicCount"`
		LiteTopicSet   []string `json:"liteTopicSet"`
		LastAccessTime int64    `json:"lastAccessTime"`
	}
	if out := mqadmin("getLiteClientInfo", "-p", parent, "-g", "PopGroup", "-c", "pop-1", "-s"); json.Unmarshal(out, &clientInfo) != nil ||
		clientInfo["broker-a"].LiteTopicCount != 2 || len(clientInfo["broker-a"].LiteTopicSet) != 2 || clientInfo["broker-a"].LastAccessTime <= 0 {
		t.Fatalf("getLiteClientInfo: %s, want 2 lite topics and a last access", out)
	}
	var groupInfo struct {
		Brokers map[string]struct {
			TotalLagCount          int64 `json:"totalLagCount"`
			LiteTopicOffsetWrapper struct {
				BrokerOffset   int64 `json:"brokerOffset"`
				ConsumerOffset int64 `json:"consumerOffset"`
			} `json:"liteTopicOffsetWrapper"`
			LagCountTopK []struct {
				LiteTopic string `json:"liteTopic"`
				LagCount  int64  `json:"lagCount"`
			} `json:"lagCountTopK"`
		} `json:"brokers"`
		TotalLagCount int64 `json:"totalLagCount"`
	}
	eventually(t, 20*time.Second, "r1's two new messages stored", func() bool {
		out := mqadmin("getLiteGroupInfo", "-p", parent, "-g", "PopGroup", "-l", "r1")
		return json.Unmarshal(out, &groupInfo) == nil && groupInfo.TotalLagCount == 2
	})
	if w := groupInfo.Brokers["broker-a"].LiteTopicOffsetWrapper; w.BrokerOffset != 5 || w.ConsumerOffset != 3 {
		t.Fatalf("getLiteGroupInfo -l r1: %+v, want broker offset 5, consumer offset 3", groupInfo)
	}
	if out := mqadmin("getLiteGroupInfo", "-p", parent, "-g", "PopGroup", "-k", "5"); json.Unmarshal(out, &groupInfo) != nil ||
		groupInfo.TotalLagCount != 2 || len(groupInfo.Brokers["broker-a"].LagCountTopK) != 1 ||
		groupInfo.Brokers["broker-a"].LagCountTopK[0].LiteTopic != "r1" {
		t.Fatalf("getLiteGroupInfo: %s, want a lag of 2, all of r1", out)
	}
	if out := mqadmin("triggerLiteDispatch", "-p", parent, "-g", "PopGroup", "-c", "pop-1"); !strings.Contains(string(out), "dispatched") {
		t.Fatalf("triggerLiteDispatch: %s", out)
	}
	if got := receiveAll(t, c1, 2, 20*time.Second); strings.Join(got, ",") != "r1:a3,r1:a4" {
		t.Fatalf("after the trigger c1 received %v, want r1 a3,a4", got)
	}

	// Offset options on a group new to r3.
	c2, _, _ := newLitePop(t, s, "pop-2", "PopGroup2", parent)
	if err := c2.Subscribe(ctx, litepop.FromMax, "r3"); err != nil {
		t.Fatal(err)
	}
	send("r3", "c3")
	if got := receiveAll(t, c2, 1, 20*time.Second); strings.Join(got, ",") != "r3:c3" {
		t.Fatalf("FromMax received %v, want only r3:c3", got)
	}
	if err := c2.Subscribe(ctx, litepop.FromOffset(1), "r3"); err != nil {
		t.Fatal(err)
	}
	if got := receiveAll(t, c2, 3, 20*time.Second); strings.Join(got, ",") != "r3:c1,r3:c2,r3:c3" {
		t.Fatalf("FromOffset(1) received %v, want c1..c3", got)
	}
	if err := c2.Subscribe(ctx, litepop.FromTail(2), "r3"); err != nil {
		t.Fatal(err)
	}
	if got := receiveAll(t, c2, 2, 20*time.Second); strings.Join(got, ",") != "r3:c2,r3:c3" {
		t.Fatalf("FromTail(2) received %v, want c2,c3", got)
	}

	// Quota: 3 of 6 held; 4 more are refused with LITE_SUBSCRIPTION_QUOTA_EXCEEDED.
	var be *client.BrokerError
	if err := c2.Subscribe(ctx, nil, "q1", "q2", "q3", "q4"); !errors.As(err, &be) || be.Code != 2018 {
		t.Fatalf("subscription past the quota: %v, want LITE_SUBSCRIPTION_QUOTA_EXCEEDED (2018)", err)
	}

	// Exclusive group: x moves from e1 to e2; e1 is told and gets nothing more.
	e1, toldE1, muE1 := newLitePop(t, s, "excl-1", "PopExclusive", parent)
	e2, _, _ := newLitePop(t, s, "excl-2", "PopExclusive", parent)
	if err := e1.Subscribe(ctx, nil, "x"); err != nil {
		t.Fatal(err)
	}
	send("x", "x0")
	if got := receiveAll(t, e1, 1, 20*time.Second); strings.Join(got, ",") != "x:x0" {
		t.Fatalf("e1 received %v, want x:x0", got)
	}
	if err := e2.Subscribe(ctx, nil, "x"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "e1 told it lost x", func() bool {
		muE1.Lock()
		defer muE1.Unlock()
		return strings.Join(*toldE1, ",") == "x"
	})
	if len(e1.LiteTopics()) != 0 {
		t.Fatalf("e1 still holds %v", e1.LiteTopics())
	}
	send("x", "x1")
	if got := receiveAll(t, e2, 1, 20*time.Second); strings.Join(got, ",") != "x:x1" {
		t.Fatalf("e2 received %v, want x:x1", got)
	}
	if msgs, err := e1.Receive(ctx, 32, 20*time.Second, 0); err != nil || len(msgs) != 0 {
		t.Fatalf("evicted e1 received %d messages (%v)", len(msgs), err)
	}

	// Wildcard group: a pattern subscription consumes the matching lite topics only.
	s.createGroup(t, "PopWildcard", map[string]string{"lite.sub.wildcard": ""})
	w, _, _ := newLitePop(t, s, "wild-1", "PopWildcard", parent)
	if err := w.SubscribePatterns(ctx, "w__*"); err != nil {
		t.Fatal(err)
	}
	send("w__1", "w1")
	send("v__1", "v1")
	send("w__2", "w2")
	got = receiveAll(t, w, 2, 20*time.Second)
	slices.Sort(got)
	if strings.Join(got, ",") != "w__1:w1,w__2:w2" {
		t.Fatalf("pattern w__* received %v, want w__1 and w__2", got)
	}
	if msgs, err := w.Receive(ctx, 32, 20*time.Second, 0); err != nil || len(msgs) != 0 {
		t.Fatalf("pattern w__* also received %d messages (%v)", len(msgs), err)
	}

	// Expiry: a lite topic of PopExpire idles past 4 units of 2 s; its
	// subscriber is told.
	cx, toldX, muX := newLitePop(t, s, "pop-x", "PopExpireGroup", expiring)
	if err := cx.Subscribe(ctx, nil, "gone"); err != nil {
		t.Fatal(err)
	}
	sendX := liteProducer(t, s, expiring)
	sendX("gone", "g0")
	if got := receiveAll(t, cx, 1, 20*time.Second); strings.Join(got, ",") != "gone:g0" {
		t.Fatalf("expiring lite topic received %v", got)
	}
	eventually(t, time.Minute, "pop-x told gone expired", func() bool {
		muX.Lock()
		defer muX.Unlock()
		return strings.Join(*toldX, ",") == "gone"
	})
	if len(cx.LiteTopics()) != 0 {
		t.Fatalf("pop-x still holds %v", cx.LiteTopics())
	}
	mu1.Lock()
	defer mu1.Unlock()
	if len(*told1) != 0 {
		t.Fatalf("c1 told %v, but PopParent's lite topics do not expire", *told1)
	}
}

// TestLiteExclusiveGoClient: two v5.1.4 LitePushConsumers of an exclusive
// group (lite.sub.model=Exclusive) subscribe the same lite topic: the
// second takes it, the first is told (NotifyUnsubscribeLiteCommand, which
// the Go client logs and acts on) and only the second receives what is
// sent afterwards.
func TestLiteExclusiveGoClient(t *testing.T) {
	s := startServer(t, "")
	const parent, group = "ExclParent", "ExclGroup"
	s.createTopic(t, parent, "+message.type=LITE", 1)
	s.createGroup(t, group, map[string]string{"lite.sub.model": "Exclusive"})
	send := liteProducer(t, s, parent)

	var mu sync.Mutex
	got := map[string][]string{}
	// GracefulStop waits for the consumer's in-flight long poll: stop both
	// at once.
	var started []rmq.LitePushConsumer
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, c := range started {
			wg.Go(func() { c.GracefulStop() })
		}
		wg.Wait()
	})
	consumer := func(name string) rmq.LitePushConsumer {
		c, err := rmq.NewLitePushConsumer(clientConfig(s.grpc, group), rmq.NewLitePushConsumerConfig(parent, 20*time.Second),
			rmq.WithPushAwaitDuration(5*time.Second),
			rmq.WithPushMessageListener(&rmq.FuncMessageListener{Consume: func(mv *rmq.MessageView) rmq.ConsumerResult {
				mu.Lock()
				got[name] = append(got[name], string(mv.GetBody()))
				mu.Unlock()
				return rmq.SUCCESS
			}}))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		started = append(started, c)
		return c
	}
	first := consumer("first")
	if err := first.SubscribeLite("room"); err != nil {
		t.Fatal(err)
	}
	send("room", "m0")
	eventually(t, 30*time.Second, "first receives m0", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got["first"]) == 1
	})
	second := consumer("second")
	if err := second.SubscribeLite("room"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the first consumer told it lost room", func() bool {
		b, _ := os.ReadFile(clientLog)
		return strings.Contains(string(b), "notifyUnsubscribeLite liteTopic:room")
	})
	for i := 1; i <= 3; i++ {
		send("room", fmt.Sprint("m", i))
	}
	eventually(t, 30*time.Second, "second receives m1..m3", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got["second"]) == 3
	})
	time.Sleep(time.Second) // a stray delivery to the first would show now
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(got["first"], ",") != "m0" || strings.Join(got["second"], ",") != "m1,m2,m3" {
		t.Fatalf("received %v, want first m0 and second m1..m3", got)
	}
}

// TestNodeOffsetOption runs node/offset.js: the Node.js client 1.0.8's
// subscribeLite(liteTopic, OffsetOption) places new subscriptions at an
// offset, at the end, and N messages back.
func TestNodeOffsetOption(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	if _, err := os.Stat(filepath.Join("node", "node_modules", "rocketmq-client-nodejs")); err != nil {
		t.Skip("run `npm ci` in e2e/lite/node first")
	}
	s := startServer(t, "")
	s.createTopic(t, "NodeOffset", "+message.type=LITE", 1)
	cmd := exec.Command(node, "offset.js")
	cmd.Dir = "node"
	cmd.Env = append(os.Environ(), "ENDPOINT="+s.grpc, "LITE_TOPIC=NodeOffset")
	out, err := cmd.CombinedOutput()
	t.Logf("node offset.js:\n%s", out)
	if err != nil {
		t.Fatalf("node offset.js: %v", err)
	}
	for _, step := range []string{"offset", "max", "tail", "done"} {
		if !strings.Contains(string(out), `"step":"`+step+`"`) {
			t.Errorf("node output lacks %s", step)
		}
	}
}
