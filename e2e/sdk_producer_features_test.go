package e2e

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/testutil"
)

type e2eTxListener struct{ checks chan string }

func (l *e2eTxListener) ExecuteLocalTransaction(_ context.Context, m *client.Message, _ any) client.LocalTransactionState {
	switch string(m.Body) {
	case "commit":
		return client.TransactionCommit
	case "rollback":
		return client.TransactionRollback
	}
	return client.TransactionUnknown
}

func (l *e2eTxListener) CheckLocalTransaction(_ context.Context, m *client.MessageExt) client.LocalTransactionState {
	select {
	case l.checks <- string(m.Body):
	default:
	}
	return client.TransactionCommit
}

// TestSDKTransactions (docs/broker.md §1.11, docs/protocol.md Appendix
// B): a committed half message reaches consumers; a rolled-back one never
// does; an unknown one is resolved by the broker's check-back, answered by
// the listener's CheckLocalTransaction (commit here).
func TestSDKTransactions(t *testing.T) {
	c := startCluster(t, func(cfg *broker.Config) {
		cfg.TransactionTimeOut = time.Second
		cfg.TransactionCheckInterval = 500 * time.Millisecond
	})
	topic := uniqueName(t, "T")
	c.createTopic(topic, 4)
	l := &e2eTxListener{checks: make(chan string, 16)}
	p := newSDKProducer(t, c.nsAddr, client.WithTransactionListener(l))
	ctx := testutil.Context(t, 60*time.Second)
	ids := map[string]string{}
	for _, body := range []string{"commit", "rollback", "unknown"} {
		res, err := p.SendInTransaction(ctx, client.NewMessage(topic, []byte(body)), nil)
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if res.Status != client.SendOK || res.TransactionID == "" {
			t.Fatalf("%s: %+v", body, res)
		}
		ids[body] = res.MsgID
	}
	r := newReceived()
	newPushConsumer(t, c.nsAddr, uniqueName(t, "cg"), topic, "*", r)
	testutil.Eventually(t, 30*time.Second, func() bool {
		_, a := r.get(ids["commit"])
		_, b := r.get(ids["unknown"])
		return a && b
	}, "committed and checked-then-committed messages not both consumed (got %d)", r.count.Load())
	select {
	case body := <-l.checks:
		if body != "unknown" {
			t.Fatalf("check for %q", body)
		}
	default:
		t.Fatal("the unknown transaction was committed without a check")
	}
	if _, ok := r.get(ids["rollback"]); ok {
		t.Fatal("rolled-back message was delivered")
	}
}

// TestSDKOrderedSendAndNamespace: messages of one key go to one queue in
// send order (SendOrderly + HashQueueSelector) and a namespaced producer's
// messages reach a consumer of the same namespace.
func TestSDKOrderedSendAndNamespace(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 8)
	p := newSDKProducer(t, c.nsAddr)
	ctx := testutil.Context(t, 60*time.Second)
	type pos struct {
		queue  int
		offset int64
	}
	last := map[string]pos{}
	for i := range 30 {
		key := fmt.Sprintf("order-%d", i%3)
		res, err := p.SendOrderly(ctx, client.NewMessage(topic, []byte(key)), client.HashQueueSelector{}, key)
		if err != nil {
			t.Fatal(err)
		}
		if prev, ok := last[key]; ok && (prev.queue != res.Queue.QueueID || res.QueueOffset <= prev.offset) {
			t.Fatalf("key %s: %v then queue %d offset %d", key, prev, res.Queue.QueueID, res.QueueOffset)
		}
		last[key] = pos{res.Queue.QueueID, res.QueueOffset}
	}

	ns := "nsE2E"
	c.createTopic(ns+"%"+topic, 4)
	np := newSDKProducer(t, c.nsAddr, client.WithNamespace(ns))
	res, err := np.Send(ctx, client.NewMessage(topic, []byte("namespaced")))
	if err != nil {
		t.Fatal(err)
	}
	if res.Queue.Topic != topic {
		t.Fatalf("result topic %s", res.Queue.Topic)
	}
	r := newReceived()
	newPushConsumer(t, c.nsAddr, uniqueName(t, "cg"), topic, "*", r, consumer.WithNamespace(ns))
	testutil.Eventually(t, 30*time.Second, func() bool {
		_, ok := r.get(res.MsgID)
		return ok
	}, "namespaced message not consumed in its namespace")
}

// TestSDKAutoCreateTopic: a send to a topic nobody created goes along
// TBW102's route with defaultTopic=TBW102; the broker creates the topic and
// registers it, so a later route lookup finds it.
func TestSDKAutoCreateTopic(t *testing.T) {
	noLeaks(t)
	c := startCluster(t, nil)
	topic := uniqueName(t, "AUTO")
	p := newSDKProducer(t, c.nsAddr, client.WithDefaultTopicQueueNums(2))
	ctx := testutil.Context(t, 30*time.Second)
	for range 4 {
		res, err := p.Send(ctx, client.NewMessage(topic, []byte("auto")))
		if err != nil {
			t.Fatal(err)
		}
		if res.Queue.QueueID >= 2 {
			t.Fatalf("queue %d beyond defaultTopicQueueNums", res.Queue.QueueID)
		}
	}
	waitRoute(t, c.ns, topic)
	qs, err := p.Queues(ctx, topic)
	if err != nil || len(qs) != 2 {
		t.Fatalf("queues %v (%v)", qs, err)
	}
}

// freePortPair returns a loopback port p with p-2 also free (the broker's
// VIP channel listens on ListenPort-2).
func freePortPair(t *testing.T) int {
	t.Helper()
	for range 50 {
		l1, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := l1.Addr().(*net.TCPAddr).Port
		l2, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p-2))
		l1.Close()
		if err == nil {
			l2.Close()
			return p
		}
	}
	t.Skip("no free port pair for the VIP channel")
	return 0
}

type addrHook struct{ addrs chan string }

func (h addrHook) OnAfterSend(_ context.Context, sc *client.SendContext) {
	select {
	case h.addrs <- sc.BrokerAddr:
	default:
	}
}

// TestSDKVIPChannel: with WithVIPChannel, sends go to the broker's VIP
// port (listen port - 2), which the broker serves.
func TestSDKVIPChannel(t *testing.T) {
	port := freePortPair(t)
	c := startCluster(t, func(cfg *broker.Config) {
		cfg.ListenPort = port
		cfg.VIPChannelEnable = true
	})
	if c.b.VIPAddr() == "" {
		t.Fatal("broker with vipChannelEnable has no VIP channel address")
	}
	topic := uniqueName(t, "T")
	c.createTopic(topic, 2)
	h := addrHook{addrs: make(chan string, 1)}
	p := newSDKProducer(t, c.nsAddr, client.WithVIPChannel(true), client.WithHooks(h))
	if _, err := p.Send(testutil.Context(t, 20*time.Second), client.NewMessage(topic, []byte("vip"))); err != nil {
		t.Fatal(err)
	}
	if got := <-h.addrs; got != c.b.VIPAddr() {
		t.Fatalf("sent to %s, want the VIP address %s (main %s)", got, c.b.VIPAddr(), c.b.Addr())
	}
}
