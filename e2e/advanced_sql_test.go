package e2e

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestSQL92PushConsumer: an official Go push consumer subscribed with
// consumer.MessageSelector{Type: SQL92, Expression: "a > 5 AND b = 'x'"}
// receives exactly the messages whose properties match (the broker
// evaluates the heartbeat's expression at pull time, docs/broker.md
// §1.13).
func TestSQL92PushConsumer(t *testing.T) {
	c := startCluster(t, func(cfg *broker.Config) { cfg.EnablePropertyFilter = true })
	topic := uniqueName(t, "T")
	const queues = 4
	c.createTopic(topic, queues)
	p := newProducer(t, c.nsAddr, producer.WithQueueSelector(&propQueueSelector{}))

	var mu sync.Mutex
	got := map[string]int{}
	newPushConsumerSel(t, c.nsAddr, uniqueName(t, "cg"), topic,
		consumer.MessageSelector{Type: consumer.SQL92, Expression: "a > 5 AND b = 'x'"},
		func(msgs ...*primitive.MessageExt) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				got[m.GetProperty("ID")]++
			}
		})

	type msg struct {
		a, b string // "" = property absent
	}
	var sends []msg
	for i := range 40 {
		sends = append(sends, msg{a: strconv.Itoa(i % 10), b: []string{"x", "y", ""}[i%3]})
	}
	sends = append(sends, msg{a: "abc", b: "x"}, msg{a: "", b: "x"}, msg{a: "6.5", b: "x"})
	want := map[string]bool{}
	ctx := testutil.Context(t, 30*time.Second)
	send := func(id string, s msg, queue int) {
		m := primitive.NewMessage(topic, []byte(id))
		m.WithProperty("ID", id)
		if s.a != "" {
			m.WithProperty("a", s.a)
		}
		if s.b != "" {
			m.WithProperty("b", s.b)
		}
		if queue >= 0 {
			m.WithProperty("Q", strconv.Itoa(queue))
		}
		if _, err := p.SendSync(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range sends {
		id := strconv.Itoa(i)
		n, err := strconv.ParseInt(s.a, 10, 64)
		if err == nil && n > 5 && s.b == "x" {
			want[id] = true
		}
		send(id, s, -1)
	}
	// A final matching message in every queue: once all have arrived, the
	// consumer has passed every earlier message of every queue.
	for q := range queues {
		id := "last-" + strconv.Itoa(q)
		want[id] = true
		send(id, msg{a: "100", b: "x"}, q)
	}
	testutil.Eventually(t, 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for id := range want {
			if got[id] == 0 {
				return false
			}
		}
		return true
	}, "matching messages not all received")
	mu.Lock()
	defer mu.Unlock()
	for id := range got {
		if !want[id] {
			t.Errorf("message %s does not match the expression but was delivered", id)
		}
	}
	if len(want) < 10 {
		t.Fatalf("test sends only %d matching messages", len(want))
	}
}

// TestSQL92BadExpressionRefused: a SQL92 subscription that does not compile
// is answered with SUBSCRIPTION_PARSE_FAILED (23) naming the position, both
// by CHECK_CLIENT_CONFIG (Java clients' start-up check) and by a pull that
// posts the subscription; an official Go consumer with it receives nothing.
func TestSQL92BadExpressionRefused(t *testing.T) {
	c := startCluster(t, func(cfg *broker.Config) { cfg.EnablePropertyFilter = true })
	topic := uniqueName(t, "T")
	c.createTopic(topic, 1)
	p := newProducer(t, c.nsAddr)
	m := primitive.NewMessage(topic, []byte("m"))
	m.WithProperty("a", "10")
	if _, err := p.SendSync(testutil.Context(t, 10*time.Second), m); err != nil {
		t.Fatal(err)
	}

	rc := remoting.NewClient(remoting.ClientConfig{Logger: testutil.Logger(t)})
	if err := rc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	const bad = "a > 5 AND AND b = 'x'"
	body, err := protocol.MarshalJSON(&protocol.CheckClientRequestBody{ClientID: "c", Group: "g",
		SubscriptionData: &protocol.SubscriptionData{Topic: topic, SubString: bad, ExpressionType: protocol.ExpressionSQL92}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := rc.InvokeSync(ctx, c.b.Addr(), protocol.NewRequest(protocol.CheckClientConfig, nil, body))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != int32(protocol.SubscriptionParseFailed) || !strings.Contains(resp.Remark, "position 10") {
		t.Fatalf("CHECK_CLIENT_CONFIG: code %d remark %q, want 23 naming position 10", resp.Code, resp.Remark)
	}
	h := protocol.PullMessageRequestHeader{ConsumerGroup: "g", Topic: topic, QueueID: 0, MaxMsgNums: 32,
		SysFlag: protocol.PullFlagSubscription, Subscription: bad, ExpressionType: protocol.ExpressionSQL92}
	resp, err = rc.InvokeSync(ctx, c.b.Addr(), protocol.NewRequest(protocol.PullMessage, protocol.EncodeHeader(&h, false), nil))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != int32(protocol.SubscriptionParseFailed) || !strings.Contains(resp.Remark, "position") {
		t.Fatalf("pull: code %d remark %q, want 23", resp.Code, resp.Remark)
	}

	var mu sync.Mutex
	n := 0
	newPushConsumerSel(t, c.nsAddr, uniqueName(t, "cg"), topic, consumer.MessageSelector{Type: consumer.SQL92, Expression: bad},
		func(msgs ...*primitive.MessageExt) { mu.Lock(); n += len(msgs); mu.Unlock() })
	// A good consumer of the same topic gets the message; by then the bad
	// one has pulled (and been refused) too.
	r := newReceived()
	newPushConsumerSel(t, c.nsAddr, uniqueName(t, "cg"), topic, consumer.MessageSelector{Type: consumer.SQL92, Expression: "a = 10"},
		func(msgs ...*primitive.MessageExt) { r.add(msgs...) })
	testutil.Eventually(t, 30*time.Second, func() bool { return r.count.Load() == 1 }, "good SQL92 consumer")
	mu.Lock()
	defer mu.Unlock()
	if n != 0 {
		t.Fatalf("consumer with a bad expression received %d messages", n)
	}
}

// propQueueSelector sends a message with property Q to that queue id and
// spreads the others round-robin.
type propQueueSelector struct{ next atomic.Int64 }

func (s *propQueueSelector) Select(m *primitive.Message, mqs []*primitive.MessageQueue, _ string) *primitive.MessageQueue {
	if q, err := strconv.Atoi(m.GetProperty("Q")); err == nil {
		for _, mq := range mqs {
			if mq.QueueId == q {
				return mq
			}
		}
	}
	return mqs[int(s.next.Add(1))%len(mqs)]
}

// TestSQL92ApogeeSDK: the Apogee SDK's SQL92Selector registers the
// expression with the broker, which then delivers only matching messages.
func TestSQL92ApogeeSDK(t *testing.T) {
	c := startCluster(t, func(cfg *broker.Config) { cfg.EnablePropertyFilter = true })
	topic := uniqueName(t, "T")
	c.createTopic(topic, 1)
	p := newProducer(t, c.nsAddr)
	ctx := testutil.Context(t, 30*time.Second)
	for i := range 20 {
		m := primitive.NewMessage(topic, []byte(strconv.Itoa(i)))
		m.WithProperty("n", strconv.Itoa(i))
		m.WithTag([]string{"red", "blue"}[i%2])
		if _, err := p.SendSync(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var got []string
	newSDKPushConsumer(t, c.nsAddr, uniqueName(t, "cg"), topic, client.SQL92Selector("n BETWEEN 10 AND 19 AND TAGS = 'red'"),
		func(_ context.Context, msgs []*client.MessageExt) (client.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				got = append(got, string(m.Body))
			}
			return client.ConsumeSuccess, nil
		})
	testutil.Eventually(t, 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(got, "18")
	}, "last matching message not received")
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(got)
	if strings.Join(got, ",") != "10,12,14,16,18" {
		t.Fatalf("received %v, want 10 12 14 16 18", got)
	}
}
