package e2e

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/testutil"
)

// recordListener records every message and succeeds.
func recordListener(r *sdkReceived) client.MessageListener {
	return func(_ context.Context, msgs []*client.MessageExt) (client.ConsumeResult, error) {
		r.add(msgs...)
		return client.ConsumeSuccess, nil
	}
}

// newSDKPushConsumer starts an Apogee push consumer of topic, closed by
// t.Cleanup. Rebalance runs every second so membership changes settle fast.
func newSDKPushConsumer(t *testing.T, nsAddr, group, topic string, sel client.Selector, l client.MessageListener, opts ...client.ConsumerOpt) *client.PushConsumer {
	t.Helper()
	all := append([]client.ConsumerOpt{
		client.WithNameServers(nsAddr),
		client.WithLogger(testutil.Logger(t)),
		client.WithInstanceName(uniqueName(t, "sci")),
		client.WithConsumeFromWhere(client.ConsumeFromFirstOffset),
		client.WithRebalanceInterval(time.Second),
		client.WithPersistConsumerOffsetInterval(500 * time.Millisecond),
		client.WithPullSuspend(2 * time.Second),
	}, opts...)
	c, err := client.NewPushConsumer(group, all...)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic, sel, l); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Logf("consumer close: %v", err)
		}
	})
	return c
}

// TestSDKPushConsumerFromOfficialProducer: messages sent by the official
// Go producer (plain, tagged with keys and user properties, a body over
// 4 KiB that it compresses, a batch) reach the Apogee push consumer with
// byte-identical bodies and properties (docs/protocol.md §6.5-§6.8).
func TestSDKPushConsumerFromOfficialProducer(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 4)
	p := newProducer(t, c.nsAddr)
	ctx := testutil.Context(t, 60*time.Second)

	want := map[string]wantMessage{}
	big := bytes.Repeat([]byte("apogee-compressible-"), 1000) // 20 KB: compressed by the producer
	for i, body := range [][]byte{[]byte("plain"), []byte("tagged"), big, {0, 1, 2, 255}} {
		m := primitive.NewMessage(topic, body)
		s := wantMessage{body: body}
		if i == 1 || i == 2 {
			s.tag, s.keys = fmt.Sprintf("tag%d", i), fmt.Sprintf("k%d k%d-b", i, i)
			s.props = map[string]string{"user": fmt.Sprintf("v%d", i), "ünïcode": "välue"}
			m.WithProperties(maps.Clone(s.props)) // replaces the map: first
			m.WithTag(s.tag)
			m.WithKeys(strings.Fields(s.keys))
		}
		res, err := p.SendSync(ctx, m)
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		want[res.MsgID] = s
	}
	var batch []*primitive.Message
	for i := range 5 {
		batch = append(batch, primitive.NewMessage(topic, []byte(fmt.Sprintf("batch-%d", i))))
	}
	res, err := p.SendSync(ctx, batch...)
	if err != nil {
		t.Fatalf("batch send: %v", err)
	}
	if res.Status != primitive.SendOK {
		t.Fatalf("batch send: %v", res)
	}
	for i := range batch {
		want[fmt.Sprintf("batch-%d", i)] = wantMessage{body: []byte(fmt.Sprintf("batch-%d", i))}
	}

	r := newSDKReceived()
	newSDKPushConsumer(t, c.nsAddr, uniqueName(t, "cg"), topic, client.TagSelector("*"), recordListener(r))
	testutil.Eventually(t, 30*time.Second, func() bool { return r.count.Load() >= int64(len(want)) },
		"consumed %d of %d", r.count.Load(), len(want))
	byBody := map[string]*client.MessageExt{}
	r.mu.Lock()
	for _, m := range r.msgs {
		byBody[string(m.Body)] = m
	}
	r.mu.Unlock()
	for id, s := range want {
		m, ok := r.get(id)
		if !ok {
			m, ok = byBody[string(s.body)]
		}
		if !ok {
			t.Fatalf("message %s not received", id)
		}
		checkSDKMessage(t, id, m, s)
		if m.Topic != topic {
			t.Errorf("%s: topic %q, want %q", id, m.Topic, topic)
		}
		if m.QueueOffset < 0 || m.StoreHost == "" || m.OffsetMsgID == "" || m.BrokerName != "broker-a" {
			t.Errorf("%s: broker fields not set: %+v", id, m)
		}
	}
}

// TestSDKPushConsumerClusteringSplitsQueues: two Apogee consumers of one
// group divide the queues (rebalance, docs/broker.md §4.5); every
// message is consumed and both members consume some.
func TestSDKPushConsumerClusteringSplitsQueues(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 8)
	group := uniqueName(t, "cg")
	p := newProducer(t, c.nsAddr)

	r1, r2 := newSDKReceived(), newSDKReceived()
	c1 := newSDKPushConsumer(t, c.nsAddr, group, topic, client.TagSelector("*"), recordListener(r1))
	c2 := newSDKPushConsumer(t, c.nsAddr, group, topic, client.TagSelector("*"), recordListener(r2))
	testutil.Eventually(t, 15*time.Second, func() bool {
		s1, s2 := c1.Stats(), c2.Stats()
		// 8 topic queues + 1 retry queue shared by two members.
		return s1.Queues > 0 && s2.Queues > 0 && s1.Queues+s2.Queues == 9
	}, "queues never split")

	ids := sendN(t, p, topic, "", "m", 200)
	testutil.Eventually(t, 30*time.Second, func() bool {
		got := r1.ids()
		maps.Copy(got, r2.ids())
		for _, id := range ids {
			if !got[id] {
				return false
			}
		}
		return true
	}, "not every message consumed: %d + %d of %d", r1.count.Load(), r2.count.Load(), len(ids))
	if r1.count.Load() == 0 || r2.count.Load() == 0 {
		t.Fatalf("one member consumed nothing: %d / %d", r1.count.Load(), r2.count.Load())
	}
	// Offsets are committed to the broker.
	testutil.Eventually(t, 10*time.Second, func() bool {
		var total int64
		for _, off := range c1.Offsets() {
			total += off
		}
		for _, off := range c2.Offsets() {
			total += off
		}
		return total >= int64(len(ids))
	}, "offsets not advanced")
}

// TestSDKPushConsumerBroadcasting: every member of a broadcasting group
// receives every message; offsets are kept in a local file.
func TestSDKPushConsumerBroadcasting(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 4)
	group := uniqueName(t, "cg")
	p := newProducer(t, c.nsAddr)
	dir := t.TempDir()

	r1, r2 := newSDKReceived(), newSDKReceived()
	opts := []client.ConsumerOpt{client.WithMessageModel(client.Broadcasting), client.WithOffsetStoreDir(dir)}
	newSDKPushConsumer(t, c.nsAddr, group, topic, client.TagSelector("*"), recordListener(r1), opts...)
	newSDKPushConsumer(t, c.nsAddr, group, topic, client.TagSelector("*"), recordListener(r2), opts...)
	ids := sendN(t, p, topic, "", "b", 40)
	testutil.Eventually(t, 30*time.Second, func() bool {
		return r1.count.Load() == int64(len(ids)) && r2.count.Load() == int64(len(ids))
	}, "broadcast incomplete: %d / %d of %d", r1.count.Load(), r2.count.Load(), len(ids))
	testutil.Eventually(t, 10*time.Second, func() bool {
		files, _ := filepath.Glob(filepath.Join(dir, "*", "*", "offsets.json"))
		if len(files) != 2 {
			return false
		}
		data, err := os.ReadFile(files[0])
		return err == nil && bytes.Contains(data, []byte(topic))
	}, "local offset files not written")
}

// TestSDKPushConsumerTagFilter: a tag subscription receives only its tags
// (broker filters by hash code, the client by the tag string; docs/protocol.md
// §7.5).
func TestSDKPushConsumerTagFilter(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 2)
	p := newProducer(t, c.nsAddr)
	want := append(sendN(t, p, topic, "a", "a", 10), sendN(t, p, topic, "b", "b", 10)...)
	sendN(t, p, topic, "c", "c", 10)
	sendN(t, p, topic, "", "none", 10)
	r := newSDKReceived()
	newSDKPushConsumer(t, c.nsAddr, uniqueName(t, "cg"), topic, client.TagSelector("a || b"), recordListener(r))
	testutil.Eventually(t, 30*time.Second, func() bool { return r.count.Load() >= int64(len(want)) },
		"received %d of %d", r.count.Load(), len(want))
	// Wait a little longer for unwanted messages that would show up.
	last := sendN(t, p, topic, "a", "last", 1)
	testutil.Eventually(t, 30*time.Second, func() bool { _, ok := r.get(last[0]); return ok }, "last message missing")
	for _, m := range r.msgs {
		if tag := m.Tag(); tag != "a" && tag != "b" {
			t.Errorf("received tag %q (%s)", tag, m.Body)
		}
	}
}

// TestSDKPushConsumerAtLeastOnceWhenClosedMidBatch: a member closed while
// its listener is still working commits nothing it did not finish; the
// group's next member receives every message the first did not consume
// (at-least-once, none lost).
func TestSDKPushConsumerAtLeastOnceWhenClosedMidBatch(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 4)
	group := uniqueName(t, "cg")
	p := newProducer(t, c.nsAddr)
	ids := sendN(t, p, topic, "", "m", 100)

	done1 := newSDKReceived()
	var seen atomic.Int64
	block := make(chan struct{})
	slow := func(ctx context.Context, msgs []*client.MessageExt) (client.ConsumeResult, error) {
		if seen.Add(int64(len(msgs))) > 30 {
			// The "crash": hang until the consumer goes away.
			select {
			case <-ctx.Done():
				return client.ConsumeRetryLater, ctx.Err()
			case <-block:
			}
		}
		done1.add(msgs...)
		return client.ConsumeSuccess, nil
	}
	c1 := newSDKPushConsumer(t, c.nsAddr, group, topic, client.TagSelector("*"), slow,
		client.WithConsumeGoroutines(2), client.WithConsumeMessageBatchMaxSize(4))
	testutil.Eventually(t, 30*time.Second, func() bool { return seen.Load() > 30 }, "first consumer stuck early")
	if err := c1.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	close(block)

	r2 := newSDKReceived()
	newSDKPushConsumer(t, c.nsAddr, group, topic, client.TagSelector("*"), recordListener(r2))
	testutil.Eventually(t, 30*time.Second, func() bool {
		got := r2.ids()
		maps.Copy(got, done1.ids())
		for _, id := range ids {
			if !got[id] {
				return false
			}
		}
		return true
	}, "lost messages: first %d, second %d of %d", done1.count.Load(), r2.count.Load(), len(ids))
	if done1.count.Load() >= int64(len(ids)) {
		t.Fatalf("first consumer finished everything (%d); the test did not interrupt it", done1.count.Load())
	}
}

// TestSDKPushConsumerBroadcastingResumesFromLocalOffsets: a restarted
// broadcasting consumer (default instance name) continues from the offsets
// in its local file instead of starting over (docs/broker.md §4.7).
func TestSDKPushConsumerBroadcastingResumesFromLocalOffsets(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 2)
	group := uniqueName(t, "cg")
	p := newProducer(t, c.nsAddr)
	dir := t.TempDir()
	first := sendN(t, p, topic, "", "first", 10)
	start := func(r *sdkReceived) *client.PushConsumer {
		pc, err := client.NewPushConsumer(group, client.WithNameServers(c.nsAddr), client.WithLogger(testutil.Logger(t)),
			client.WithMessageModel(client.Broadcasting), client.WithOffsetStoreDir(dir),
			client.WithConsumeFromWhere(client.ConsumeFromFirstOffset), client.WithPullSuspend(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if err := pc.Subscribe(topic, client.TagSelector("*"), recordListener(r)); err != nil {
			t.Fatal(err)
		}
		if err := pc.Start(); err != nil {
			t.Fatal(err)
		}
		return pc
	}
	r1 := newSDKReceived()
	c1 := start(r1)
	testutil.Eventually(t, 20*time.Second, func() bool { return r1.count.Load() == int64(len(first)) }, "first run incomplete")
	testutil.Eventually(t, 10*time.Second, func() bool {
		var sum int64
		for _, off := range c1.Offsets() {
			sum += off
		}
		return sum == int64(len(first))
	}, "offsets not advanced")
	if err := c1.Close(); err != nil {
		t.Fatal(err)
	}
	second := sendN(t, p, topic, "", "second", 5)
	r2 := newSDKReceived()
	c2 := start(r2)
	defer c2.Close()
	testutil.Eventually(t, 20*time.Second, func() bool { return r2.count.Load() >= int64(len(second)) }, "second run incomplete")
	for _, id := range first {
		if _, ok := r2.get(id); ok {
			t.Fatalf("restarted consumer received %s again", id)
		}
	}
}

// TestSDKPushConsumerChurnLosesNothing: while messages stream in, group
// members keep leaving (Close mid-stream) and joining; every message is
// consumed by some member (at-least-once through rebalance, offsets
// committed only after consumption).
func TestSDKPushConsumerChurnLosesNothing(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 8)
	group := uniqueName(t, "cg")
	p := newSDKProducer(t, c.nsAddr)
	ctx := testutil.Context(t, 120*time.Second)
	total, churns := 1500, 6
	if testing.Short() {
		total, churns = 400, 3
	}

	r := newSDKReceived()
	var members []*client.PushConsumer
	join := func() {
		members = append(members, newSDKPushConsumer(t, c.nsAddr, group, topic, client.TagSelector("*"), recordListener(r),
			client.WithConsumeGoroutines(4)))
	}
	join()
	join()

	var mu sync.Mutex
	var ids []string
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for i := range total {
			res, err := p.Send(ctx, client.NewMessage(topic, []byte(fmt.Sprintf("churn-%d", i))))
			if err != nil {
				t.Errorf("send %d: %v", i, err)
				return
			}
			mu.Lock()
			ids = append(ids, res.MsgID)
			mu.Unlock()
		}
	}()
	for i := range churns {
		// Let some traffic flow, then replace the oldest member.
		target := int64((i + 1) * total / (churns + 2))
		testutil.Eventually(t, 30*time.Second, func() bool { return r.count.Load() >= target }, "stalled at churn %d", i)
		if err := members[0].Close(); err != nil {
			t.Logf("close: %v", err)
		}
		members = members[1:]
		join()
	}
	select {
	case <-sent:
	case <-ctx.Done():
		t.Fatal("producer stuck")
	}
	mu.Lock()
	all := append([]string(nil), ids...)
	mu.Unlock()
	if len(all) != total {
		t.Fatalf("sent %d of %d", len(all), total)
	}
	testutil.Eventually(t, 60*time.Second, func() bool { return r.missing(all) == 0 }, "messages lost after churn: received %d of %d", r.count.Load(), total)
	r.mu.Lock()
	t.Logf("%d messages, %d redelivered duplicates across %d membership changes", total, r.dups, churns)
	r.mu.Unlock()
}

// TestSDKPushConsumerNamespace: with a namespace, the consumer's group and
// topic are "ns%name" on the wire and users see plain names.
func TestSDKPushConsumerNamespace(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic("apogee%"+topic, 2)
	ctx := testutil.Context(t, 60*time.Second)
	p := newSDKProducer(t, c.nsAddr, client.WithNamespace("apogee"))
	res, err := p.Send(ctx, client.NewMessage(topic, []byte("ns")))
	if err != nil {
		t.Fatal(err)
	}
	group := uniqueName(t, "cg")
	var mu sync.Mutex
	var topics []string
	l := func(_ context.Context, msgs []*client.MessageExt) (client.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			if m.MsgID == res.MsgID {
				topics = append(topics, m.Topic)
			}
		}
		return client.ConsumeSuccess, nil
	}
	newSDKPushConsumer(t, c.nsAddr, group, topic, client.TagSelector("*"), l, client.WithNamespace("apogee"))
	testutil.Eventually(t, 20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(topics) == 1
	}, "namespaced message not consumed")
	if topics[0] != topic {
		t.Fatalf("listener saw topic %q, want %q", topics[0], topic)
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		return len(c.b.Clients.ConsumerIDs("apogee%"+group)) == 1
	}, "group not registered as apogee%%%s", group)
}

// TestSDKPushConsumerFlowControl: with a slow listener, a queue caches at
// most pullThresholdForQueue messages plus one pull batch; pulls pause
// rather than drop, so every message is consumed once the listener speeds
// up (docs/broker.md §4.6).
func TestSDKPushConsumerFlowControl(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 1)
	p := newProducer(t, c.nsAddr)
	ids := sendN(t, p, topic, "", "fc", 300)
	release := make(chan struct{})
	r := newSDKReceived()
	l := func(ctx context.Context, msgs []*client.MessageExt) (client.ConsumeResult, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return client.ConsumeRetryLater, ctx.Err()
		}
		r.add(msgs...)
		return client.ConsumeSuccess, nil
	}
	pc := newSDKPushConsumer(t, c.nsAddr, uniqueName(t, "cg"), topic, client.TagSelector("*"), l,
		client.WithPullThresholdForQueue(50), client.WithPullBatchSize(16))
	testutil.Eventually(t, 20*time.Second, func() bool { return pc.Stats().CachedMessages >= 50 }, "cache never filled")
	pulled := pc.Stats().Pulled
	for range 10 {
		if s := pc.Stats(); s.CachedMessages > 50+16 || s.Pulled > pulled+16 {
			t.Fatalf("kept pulling over the threshold: cached %d, pulled %d (was %d)", s.CachedMessages, s.Pulled, pulled)
		}
		time.Sleep(20 * time.Millisecond) // observation window, not a wait for a condition
	}
	close(release)
	testutil.Eventually(t, 30*time.Second, func() bool { return r.count.Load() == int64(len(ids)) },
		"consumed %d of %d", r.count.Load(), len(ids))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dups != 0 {
		t.Fatalf("%d duplicates", r.dups)
	}
}
