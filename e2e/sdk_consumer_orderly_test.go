package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/testutil"
)

// sendOrdered sends n messages per key, each key to the queue key%queues,
// with bodies "key:seq".
func sendOrdered(t *testing.T, ctx context.Context, p *client.Producer, topic string, keys, n int) {
	t.Helper()
	for seq := range n {
		for key := range keys {
			m := client.NewMessage(topic, []byte(fmt.Sprintf("%d:%d", key, seq)))
			if _, err := p.SendOrderly(ctx, m, client.HashQueueSelector{}, strconv.Itoa(key)); err != nil {
				t.Fatalf("send %d:%d: %v", key, seq, err)
			}
		}
	}
}

// orderChecker records "key:seq" bodies and reports any key whose
// sequence went backwards.
type orderChecker struct {
	mu    sync.Mutex
	last  map[string]int
	count int
	bad   []string
}

func (o *orderChecker) listener(fail func(seq int) bool) client.MessageListener {
	return func(_ context.Context, msgs []*client.MessageExt) (client.ConsumeResult, error) {
		o.mu.Lock()
		defer o.mu.Unlock()
		for _, m := range msgs {
			_, seqS, _ := strings.Cut(string(m.Body), ":")
			seq, _ := strconv.Atoi(seqS)
			if fail != nil && fail(seq) && m.ReconsumeTimes == 0 {
				// The whole batch is retried later, in the same order.
				return client.SuspendCurrentQueueAMoment, nil
			}
		}
		for _, m := range msgs {
			key, seqS, _ := strings.Cut(string(m.Body), ":")
			seq, _ := strconv.Atoi(seqS)
			if prev, ok := o.last[key]; ok && seq != prev+1 {
				o.bad = append(o.bad, fmt.Sprintf("%s: %d after %d", key, seq, prev))
			}
			o.last[key] = seq
			o.count++
		}
		return client.ConsumeSuccess, nil
	}
}

func (o *orderChecker) total() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.count
}

// TestSDKPushConsumerOrderlyBroadcasting: orderly consumption hands each
// queue's messages to the listener in offset order, one batch at a time,
// also when a batch is suspended and retried (no broker locks in
// broadcasting mode).
func TestSDKPushConsumerOrderlyBroadcasting(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 4)
	ctx := testutil.Context(t, 60*time.Second)
	p := newSDKProducer(t, c.nsAddr)
	const keys, n = 8, 25
	sendOrdered(t, ctx, p, topic, keys, n)

	o := &orderChecker{last: map[string]int{}}
	newSDKPushConsumer(t, c.nsAddr, uniqueName(t, "cg"), topic, client.TagSelector("*"),
		o.listener(func(seq int) bool { return seq%10 == 5 }),
		client.WithConsumeOrderly(true), client.WithMessageModel(client.Broadcasting),
		client.WithOffsetStoreDir(t.TempDir()), client.WithConsumeMessageBatchMaxSize(3),
		client.WithSuspendCurrentQueueTime(50*time.Millisecond), client.WithConsumeGoroutines(4))
	testutil.Eventually(t, 30*time.Second, func() bool { return o.total() >= keys*n }, "consumed %d of %d", o.total(), keys*n)
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.bad) > 0 {
		t.Fatalf("order broken: %v", o.bad)
	}
}

// brokerSupports reports whether the broker answers code with anything
// but REQUEST_CODE_NOT_SUPPORTED.
func brokerSupports(t *testing.T, addr string, code protocol.RequestCode, body []byte) bool {
	t.Helper()
	rc := remoting.NewClient(remoting.ClientConfig{Logger: testutil.Logger(t)})
	if err := rc.Start(); err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	resp, err := rc.InvokeSync(testutil.Context(t, 5*time.Second), addr, protocol.NewRequest(code, nil, body))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Code != int32(protocol.RequestCodeNotSupported)
}

// TestSDKPushConsumerOrderlyClustering: orderly clustering consumers lock
// their queues on the broker (LOCK_BATCH_MQ, docs/protocol.md §7.7) and keep
// per-key order across two members.
func TestSDKPushConsumerOrderlyClustering(t *testing.T) {
	c := startCluster(t, nil)
	if !brokerSupports(t, c.b.Addr(), protocol.LockBatchMQ, []byte(`{"consumerGroup":"g","clientId":"x","mqSet":[]}`)) {
		t.Fatal("broker does not serve LOCK_BATCH_MQ")
	}
	topic := uniqueName(t, "T")
	c.createTopic(topic, 4)
	ctx := testutil.Context(t, 60*time.Second)
	p := newSDKProducer(t, c.nsAddr)
	const keys, n = 8, 25
	group := uniqueName(t, "cg")
	o := &orderChecker{last: map[string]int{}}
	opts := []client.ConsumerOpt{client.WithConsumeOrderly(true), client.WithConsumeMessageBatchMaxSize(2)}
	c1 := newSDKPushConsumer(t, c.nsAddr, group, topic, client.TagSelector("*"), o.listener(nil), opts...)
	c2 := newSDKPushConsumer(t, c.nsAddr, group, topic, client.TagSelector("*"), o.listener(nil), opts...)
	testutil.Eventually(t, 15*time.Second, func() bool {
		// 4 topic queues and the retry queue.
		return c1.Stats().Queues > 0 && c2.Stats().Queues > 0 && c1.Stats().Queues+c2.Stats().Queues == 5
	}, "queues never split")
	sendOrdered(t, ctx, p, topic, keys, n)
	testutil.Eventually(t, 30*time.Second, func() bool { return o.total() >= keys*n }, "consumed %d of %d", o.total(), keys*n)
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.bad) > 0 {
		t.Fatalf("order broken: %v", o.bad)
	}
}

// TestSDKPushConsumerOrderlyDeadLetter: an orderly consumer retries a
// failing message locally up to maxReconsumeTimes, then sends it to the
// dead-letter queue (CONSUMER_SEND_MSG_BACK delayLevel -1, docs/protocol.md
// §7.7) so the queue moves on in order.
func TestSDKPushConsumerOrderlyDeadLetter(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 1)
	ctx := testutil.Context(t, 60*time.Second)
	p := newSDKProducer(t, c.nsAddr)
	for _, body := range []string{"a", "poison", "b", "c"} {
		if _, err := p.Send(ctx, client.NewMessage(topic, []byte(body))); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var order []string
	poisonAttempts := 0
	l := func(_ context.Context, msgs []*client.MessageExt) (client.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			if string(m.Body) == "poison" {
				poisonAttempts++
				return client.SuspendCurrentQueueAMoment, nil
			}
			order = append(order, string(m.Body))
		}
		return client.ConsumeSuccess, nil
	}
	group := uniqueName(t, "cg")
	newSDKPushConsumer(t, c.nsAddr, group, topic, client.TagSelector("*"), l,
		client.WithConsumeOrderly(true), client.WithMaxReconsumeTimes(2),
		client.WithSuspendCurrentQueueTime(50*time.Millisecond))
	testutil.Eventually(t, 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) == 3
	}, "queue did not move past the poison message")
	mu.Lock()
	if strings.Join(order, ",") != "a,b,c" || poisonAttempts != 3 {
		t.Errorf("order %v, poison attempts %d (want 3: first + 2 retries)", order, poisonAttempts)
	}
	mu.Unlock()

	pc := newSDKPullConsumer(t, c.nsAddr, uniqueName(t, "cg"))
	dlq := client.MessageQueue{Topic: "%DLQ%" + group, BrokerName: "broker-a", QueueID: 0}
	testutil.Eventually(t, 20*time.Second, func() bool {
		res, err := pc.Pull(ctx, dlq, client.TagSelector("*"), 0, 8)
		return err == nil && len(res.Messages) == 1 && string(res.Messages[0].Body) == "poison"
	}, "poison message not in %s", dlq.Topic)
}
