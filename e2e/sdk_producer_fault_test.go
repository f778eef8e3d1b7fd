package e2e

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/testutil"
)

// blackhole accepts connections and reads them without ever answering: a
// broker that stopped responding.
func blackhole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				io.Copy(io.Discard, c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// attemptCounter is a send hook counting attempts per broker.
type attemptCounter struct {
	mu       sync.Mutex
	attempts map[string]int
	failures map[string]int
}

func (a *attemptCounter) OnAfterSend(_ context.Context, sc *client.SendContext) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.attempts[sc.Queue.BrokerName]++
	if sc.Err != nil {
		a.failures[sc.Queue.BrokerName]++
	}
}

func (a *attemptCounter) get(broker string) (int, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.attempts[broker], a.failures[broker]
}

// twoBrokerTopic serves topic from the real broker-a and from broker-b,
// which is registered with the name server but never answers.
func twoBrokerTopic(t *testing.T) (c *testCluster, topic string) {
	c = startCluster(t, nil)
	topic = uniqueName(t, "T")
	c.createTopic(topic, 4)
	fb := newFakeBroker(t, c.nsAddr, c.cfg.BrokerClusterName, "broker-b", blackhole(t), 0)
	fb.addTopic(topic, 4, 6)
	fb.register()
	testutil.Eventually(t, 10*time.Second, func() bool {
		r := c.ns.Routes().PickupTopicRouteData(topic)
		return r != nil && len(r.QueueDatas) == 2
	}, "topic %s not routed to both brokers", topic)
	return c, topic
}

// The fault strategy's isolation (sendLatencyFaultEnable) is tested in
// client (TestFaultStrategyIsolatesBrokerByLatency) against fake brokers
// that inject the latency, so a loaded machine cannot make the healthy
// broker look slow.

// TestSDKRetryMovesToAnotherBroker: without fault tolerance, a send whose
// first attempt fails on a dead broker (connection refused) is retried on
// the other broker (retryTimesWhenSendFailed, docs/broker.md §4.3), so every send
// succeeds.
func TestSDKRetryMovesToAnotherBroker(t *testing.T) {
	noLeaks(t)
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 4)
	// A broker address nobody listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	fb := newFakeBroker(t, c.nsAddr, c.cfg.BrokerClusterName, "broker-b", dead, 0)
	fb.addTopic(topic, 4, 6)
	fb.register()
	testutil.Eventually(t, 10*time.Second, func() bool {
		r := c.ns.Routes().PickupTopicRouteData(topic)
		return r != nil && len(r.QueueDatas) == 2
	}, "topic %s not routed to both brokers", topic)

	counter := &attemptCounter{attempts: map[string]int{}, failures: map[string]int{}}
	p := newSDKProducer(t, c.nsAddr, client.WithHooks(counter))
	ctx := testutil.Context(t, 60*time.Second)
	var ok atomic.Int64
	for i := range 20 {
		res, err := p.Send(ctx, client.NewMessage(topic, []byte("retry")))
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		if res.Queue.BrokerName == c.cfg.BrokerName {
			ok.Add(1)
		}
	}
	attemptsB, failuresB := counter.get("broker-b")
	if ok.Load() != 20 || attemptsB == 0 || failuresB != attemptsB {
		t.Fatalf("ok %d, broker-b attempts %d failures %d: want 20 ok and only failed attempts on broker-b", ok.Load(), attemptsB, failuresB)
	}
}

// TestSDKProducerSurvivesBrokerRestart: after the broker restarts on the
// same address the producer redials and sends again without a new route.
func TestSDKProducerSurvivesBrokerRestart(t *testing.T) {
	noLeaks(t)
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 4)
	p := newSDKProducer(t, c.nsAddr)
	ctx := testutil.Context(t, 60*time.Second)
	if _, err := p.Send(ctx, client.NewMessage(topic, []byte("before"))); err != nil {
		t.Fatal(err)
	}
	c.stopBroker()
	if _, err := p.Send(ctx, client.NewMessage(topic, []byte("down"))); err == nil {
		t.Fatal("send to a stopped broker succeeded")
	}
	c.startBroker()
	waitRoute(t, c.ns, topic)
	testutil.Eventually(t, 20*time.Second, func() bool {
		_, err := p.Send(ctx, client.NewMessage(topic, []byte("after")))
		return err == nil
	}, "no successful send after the broker restarted")
}

// noLeaks fails the test if goroutines started during it outlive its
// cleanups (the SDK producer, name server and broker must all stop). Only
// for tests that do not use the official client, which keeps global
// goroutines.
func noLeaks(t *testing.T) {
	t.Helper()
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}
