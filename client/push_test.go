package client

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/testutil"
)

// TestPushConsumerFlowControlPausesPulls checks docs/broker.md
// §4.6: while a queue caches more than pullThresholdForQueue messages the
// consumer stops pulling it; nothing is dropped, and once the listener
// catches up every message is consumed exactly once and the offset reaches
// the end.
func TestPushConsumerFlowControlPausesPulls(t *testing.T) {
	env := newFakeBrokerEnv(t, "c1")
	env.put("T", 1, 500, "m")
	c, err := newFakePushConsumer(env, WithPullThresholdForQueue(50), WithPullBatchSize(10),
		WithConsumeGoroutines(2), WithPersistConsumerOffsetInterval(20*time.Millisecond),
		WithConsumeFromWhere(ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var mu sync.Mutex
	seen := map[string]int{}
	var total atomic.Int64
	err = c.Subscribe("T", TagSelector("*"), func(ctx context.Context, msgs []*MessageExt) (ConsumeResult, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return ConsumeRetryLater, ctx.Err()
		}
		mu.Lock()
		for _, m := range msgs {
			seen[string(m.Body)]++
		}
		mu.Unlock()
		total.Add(int64(len(msgs)))
		return ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mq := MessageQueue{Topic: "T", BrokerName: fakeBrokerName, QueueID: 0}
	var qs *queueState
	testutil.Eventually(t, 5*time.Second, func() bool {
		c.queuesMu.Lock()
		defer c.queuesMu.Unlock()
		qs = c.queues[mq]
		return qs != nil && qs.pq.count.Load() >= 50
	}, "queue never filled")
	// Paused: the pull count stops growing while the cache is full.
	pulls := env.broker.Pulls()
	for range 20 {
		if n := qs.pq.count.Load(); n > 60 {
			t.Fatalf("cached %d messages, threshold 50 + one batch", n)
		}
		time.Sleep(5 * time.Millisecond) // observation window, not a wait for a condition
	}
	if got := env.broker.Pulls(); got > pulls+1 {
		t.Fatalf("pulled %d more times while over the threshold", got-pulls)
	}
	close(release)
	testutil.Eventually(t, 10*time.Second, func() bool { return total.Load() == 500 }, "consumed %d", total.Load())
	mu.Lock()
	for body, n := range seen {
		if n != 1 {
			t.Errorf("%s consumed %d times", body, n)
		}
	}
	mu.Unlock()
	testutil.Eventually(t, 5*time.Second, func() bool {
		return env.offset(mq) == 500
	}, "offset not persisted to 500")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if !env.released.Load() {
		t.Fatal("instance not released on Close")
	}
}

// TestPushConsumerRebalanceDropsQueues: when a second member appears the
// consumer gives up the queues the strategy hands to it, persisting their
// offsets first.
func TestPushConsumerRebalanceDropsQueues(t *testing.T) {
	env := newFakeBrokerEnv(t, "a")
	env.put("T", 4, 40, "m")
	var members atomic.Value
	members.Store([]string{"a"})
	env.members = func() []string { return members.Load().([]string) }
	var total atomic.Int64
	c, err := newFakePushConsumer(env, WithConsumeFromWhere(ConsumeFromFirstOffset), WithRebalanceInterval(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Subscribe("T", TagSelector("*"), func(_ context.Context, msgs []*MessageExt) (ConsumeResult, error) {
		total.Add(int64(len(msgs)))
		return ConsumeSuccess, nil
	})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Broadcast-free clustering: the retry topic has no route in the fake.
	if got := c.Stats().Queues; got != 4 {
		t.Fatalf("queues after start: %d", got)
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return total.Load() == 40 }, "not consumed")
	members.Store([]string{"a", "b"})
	c.rebalanceNow()
	testutil.Eventually(t, 5*time.Second, func() bool { return c.Stats().Queues == 2 }, "queues not dropped")
	for q := 2; q < 4; q++ {
		if off := env.offset(MessageQueue{Topic: "T", BrokerName: fakeBrokerName, QueueID: q}); off != 10 {
			t.Errorf("queue %d offset persisted as %d, want 10", q, off)
		}
	}
}

func TestPushConsumerLifecycleErrors(t *testing.T) {
	if _, err := NewPushConsumer(""); err == nil {
		t.Fatal("empty group accepted")
	}
	if _, err := NewPushConsumer("g"); err == nil {
		t.Fatal("missing name servers accepted")
	}
	if _, err := NewPushConsumer("g", WithNameServers("x:1"), WithPullBatchSize(0)); err == nil {
		t.Fatal("bad batch size accepted")
	}
	env := newFakeBrokerEnv(t, "a")
	c, err := newFakePushConsumer(env)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err == nil {
		t.Fatal("start without subscription")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal("second close:", err)
	}
	if err := c.Start(); err == nil {
		t.Fatal("start after close")
	}
}

type countingHook struct{ before, after, failed atomic.Int64 }

func (h *countingHook) BeforeConsume(_ string, msgs []*MessageExt) { h.before.Add(int64(len(msgs))) }
func (h *countingHook) AfterConsume(_ string, msgs []*MessageExt, res ConsumeResult, err error) {
	h.after.Add(int64(len(msgs)))
	if res != ConsumeSuccess || err != nil {
		h.failed.Add(1)
	}
}

// TestPushConsumerHooksAndPanics: hooks see every batch; a panicking
// listener counts as a failure (RECONSUME_LATER) instead of killing the
// worker (broadcasting drops failed messages, so nothing is retried).
func TestPushConsumerHooksAndPanics(t *testing.T) {
	env := newFakeBrokerEnv(t, "a")
	env.put("T", 1, 5, "m")
	h := &countingHook{}
	c, err := newFakePushConsumer(env, WithConsumeFromWhere(ConsumeFromFirstOffset), WithConsumeHook(h),
		WithMessageModel(Broadcasting), WithOffsetStoreDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	_ = c.Subscribe("T", TagSelector("*"), func(_ context.Context, msgs []*MessageExt) (ConsumeResult, error) {
		if calls.Add(1) == 1 {
			panic("boom")
		}
		return ConsumeSuccess, nil
	})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	testutil.Eventually(t, 5*time.Second, func() bool { return h.after.Load() == 5 }, "hooks saw %d", h.after.Load())
	if h.before.Load() != 5 || h.failed.Load() != 1 {
		t.Fatalf("before %d failed %d", h.before.Load(), h.failed.Load())
	}
	if s := c.Stats(); s.Failed != 1 || s.Consumed != 4 {
		t.Fatalf("stats %+v", s)
	}
}

// TestPushConsumerConsumeDirectly: CONSUME_MESSAGE_DIRECTLY runs the
// listener on the given stored message and reports the outcome with
// Java's result names.
func TestPushConsumerConsumeDirectly(t *testing.T) {
	env := newFakeBrokerEnv(t, "a")
	env.put("T", 1, 1, "m")
	c, err := newFakePushConsumer(env, WithMessageModel(Broadcasting), WithOffsetStoreDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	var got atomic.Value
	_ = c.Subscribe("T", TagSelector("*"), func(_ context.Context, msgs []*MessageExt) (ConsumeResult, error) {
		got.Store(string(msgs[0].Body))
		if string(msgs[0].Body) == "m-0" {
			return ConsumeSuccess, nil
		}
		return ConsumeRetryLater, nil
	})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rec := env.record(MessageQueue{Topic: "T", BrokerName: fakeBrokerName}, 0)
	res := c.consumeDirectly(context.Background(), rec, fakeBrokerName)
	if res.ConsumeResult != "CR_SUCCESS" || got.Load() != "m-0" {
		t.Fatalf("result %+v, listener saw %v", res, got.Load())
	}
	if res := c.consumeDirectly(context.Background(), []byte{1, 2, 3}, fakeBrokerName); res.ConsumeResult != "CR_THROW_EXCEPTION" {
		t.Fatalf("garbage body: %+v", res)
	}
}

// TestPushConsumerTopicThreshold: pullThresholdForTopic is divided among
// the topic's queues.
func TestPushConsumerTopicThreshold(t *testing.T) {
	env := newFakeBrokerEnv(t, "a")
	env.put("T", 4, 400, "m")
	c, err := newFakePushConsumer(env, WithPullThresholdForTopic(40), WithPullBatchSize(5),
		WithConsumeFromWhere(ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	_ = c.Subscribe("T", TagSelector("*"), func(ctx context.Context, _ []*MessageExt) (ConsumeResult, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return ConsumeSuccess, nil
	})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	defer close(release)
	if n, _ := c.queueLimits("T"); n != 10 {
		t.Fatalf("per-queue limit %d, want 40/4", n)
	}
	testutil.Eventually(t, 5*time.Second, func() bool {
		var total int64
		for _, qs := range c.queueList() {
			total += qs.pq.count.Load()
		}
		return total >= 40
	}, "cache never filled")
	for _, qs := range c.queueList() {
		if n := qs.pq.count.Load(); n > 15 {
			t.Fatalf("queue %d caches %d, limit 10 + one batch", qs.mq.QueueID, n)
		}
	}
}

// TestPushConsumerSuspendResume: a suspended consumer keeps its queues
// but does not pull; Resume continues.
func TestPushConsumerSuspendResume(t *testing.T) {
	env := newFakeBrokerEnv(t, "a")
	env.put("T", 2, 10, "m")
	c, err := newFakePushConsumer(env, WithConsumeFromWhere(ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	var total atomic.Int64
	_ = c.Subscribe("T", TagSelector("*"), func(_ context.Context, msgs []*MessageExt) (ConsumeResult, error) {
		total.Add(int64(len(msgs)))
		return ConsumeSuccess, nil
	})
	c.Suspend()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Stats().Queues != 2 {
		t.Fatalf("suspended consumer holds %d queues", c.Stats().Queues)
	}
	time.Sleep(50 * time.Millisecond) // observation window, not a wait for a condition
	if n := env.broker.Pulls(); n != 0 {
		t.Fatalf("%d pulls while suspended", n)
	}
	c.Resume()
	testutil.Eventually(t, 5*time.Second, func() bool { return total.Load() == 10 }, "consumed %d after resume", total.Load())
}

// TestPushConsumerConsumeTimeout: a message whose listener runs past
// consumeTimeout is sent back (delay level 3) and stops holding back the
// queue's offset (docs/broker.md §4.6).
func TestPushConsumerConsumeTimeout(t *testing.T) {
	env := newFakeBrokerEnv(t, "a")
	env.put("T", 1, 5, "m")
	c, err := newFakePushConsumer(env, WithConsumeFromWhere(ConsumeFromFirstOffset), WithConsumeTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Subscribe("T", TagSelector("*"), func(ctx context.Context, msgs []*MessageExt) (ConsumeResult, error) {
		if msgs[0].QueueOffset == 0 {
			<-ctx.Done() // stuck until Close
		}
		return ConsumeSuccess, nil
	})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mq := MessageQueue{Topic: "T", BrokerName: fakeBrokerName}
	testutil.Eventually(t, 5*time.Second, func() bool {
		off, _ := c.store.read(context.Background(), mq, false)
		return off == 5
	}, "offset held back by the stuck message")
	if sentBack := env.broker.SentBack(); len(sentBack) != 1 || sentBack[0] != 0 {
		t.Fatalf("sent back %v, want the stuck message (commit-log offset 0)", sentBack)
	}
}

// TestPushConsumerPullsFromSuggestedSlave: when the broker suggests a
// slave (suggestWhichBrokerId), the next pulls go there, without the
// commit-offset bit (docs/protocol.md §7.2, §7.3).
func TestPushConsumerPullsFromSuggestedSlave(t *testing.T) {
	env := newFakeBrokerEnv(t, "a")
	env.setSlave()
	env.put("T", 1, 20, "m")
	c, err := newFakePushConsumer(env, WithConsumeFromWhere(ConsumeFromFirstOffset), WithPullBatchSize(4),
		WithPersistConsumerOffsetInterval(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var total atomic.Int64
	_ = c.Subscribe("T", TagSelector("*"), func(_ context.Context, msgs []*MessageExt) (ConsumeResult, error) {
		total.Add(int64(len(msgs)))
		return ConsumeSuccess, nil
	})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	defer func() {
		t.Logf("consumed %d, slave pulls %d, pulls %d", total.Load(), env.slavePulls.Load(), env.broker.Pulls())
	}()
	testutil.Eventually(t, 5*time.Second, func() bool { return total.Load() == 20 && env.slavePulls.Load() > 2 },
		"not consumed through the slave")
	if n := env.slaveCommit.Load(); n != 0 {
		t.Fatalf("%d pulls to the slave carried the commit-offset bit", n)
	}
}
