package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/apogeemq/apogee/internal/testutil"
)

func sendN(t *testing.T, p rocketmq.Producer, topic, tag, prefix string, n int) []string {
	t.Helper()
	ctx := testutil.Context(t, 60*time.Second)
	ids := make([]string, 0, n)
	for i := range n {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("%s-%d", prefix, i)))
		if tag != "" {
			m.WithTag(tag)
		}
		res, err := p.SendSync(ctx, m)
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		ids = append(ids, res.MsgID)
	}
	return ids
}

// settleSplit waits until two members of one group have split the topic's
// queues: it sends rounds of 16 probe messages until a round is consumed
// with none delivered to both (a member rebalances on the broker's
// NOTIFY_CONSUMER_IDS_CHANGED, which under load can come after the other
// member's first pulls). inA and inB report whether a member consumed a
// message id. It fails after 60 s of rounds with duplicates.
func settleSplit(t *testing.T, p rocketmq.Producer, topic string, inA, inB func(id string) bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for round := 0; ; round++ {
		probe := sendN(t, p, topic, "", fmt.Sprintf("probe%d", round), 16)
		testutil.Eventually(t, 30*time.Second, func() bool {
			for _, id := range probe {
				if !inA(id) && !inB(id) {
					return false
				}
			}
			return true
		}, "probes not consumed")
		time.Sleep(200 * time.Millisecond) // a duplicate delivery comes just after
		both := 0
		for _, id := range probe {
			if inA(id) && inB(id) {
				both++
			}
		}
		if both == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("probe round %d: %d of %d messages still consumed by both members", round, both, len(probe))
		}
		t.Logf("probe round %d: %d messages consumed by both members; the group is still rebalancing", round, both)
	}
}

// TestClusteringSplitsQueues: two push consumers of one group share the
// topic's queues (docs/protocol.md Appendix B; rebalance after
// NOTIFY_CONSUMER_IDS_CHANGED, docs/broker.md §1.6): every message is consumed,
// by exactly one of them once both are running, and both get some.
func TestClusteringSplitsQueues(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 8)
	group := uniqueName(t, "cg")
	p := newProducer(t, c.nsAddr)

	r1, r2 := newReceived(), newReceived()
	newPushConsumer(t, c.nsAddr, group, topic, "*", r1)
	newPushConsumer(t, c.nsAddr, group, topic, "*", r2)
	// Both members known to the broker and each holding queues.
	testutil.Eventually(t, 15*time.Second, func() bool {
		return len(c.b.Clients.ConsumerIDs(group)) == 2
	}, "second consumer never registered")
	// Let both finish rebalancing before the measured run starts.
	settleSplit(t, p, topic, func(id string) bool { _, ok := r1.get(id); return ok },
		func(id string) bool { _, ok := r2.get(id); return ok })

	base1, base2 := r1.count.Load(), r2.count.Load()
	ids := sendN(t, p, topic, "", "steady", 200)
	testutil.Eventually(t, 30*time.Second, func() bool {
		n := 0
		for _, id := range ids {
			_, a := r1.get(id)
			_, b := r2.get(id)
			if a || b {
				n++
			}
		}
		return n == len(ids)
	}, "not every message consumed")
	both := 0
	for _, id := range ids {
		_, a := r1.get(id)
		_, b := r2.get(id)
		if a && b {
			both++
		}
	}
	if both != 0 {
		t.Errorf("%d messages consumed by both members in steady state", both)
	}
	if r1.count.Load() == base1 || r2.count.Load() == base2 {
		t.Errorf("queues not split: consumer1 got %d, consumer2 got %d", r1.count.Load()-base1, r2.count.Load()-base2)
	}
}

// TestBroadcasting: every consumer of a broadcasting group gets every
// message.
func TestBroadcasting(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 4)
	group := uniqueName(t, "bg")
	r1, r2 := newReceived(), newReceived()
	opts := []consumer.Option{consumer.WithConsumerModel(consumer.BroadCasting)}
	newPushConsumer(t, c.nsAddr, group, topic, "*", r1, opts...)
	newPushConsumer(t, c.nsAddr, group, topic, "*", r2, opts...)
	p := newProducer(t, c.nsAddr)
	ids := sendN(t, p, topic, "", "bc", 40)
	testutil.Eventually(t, 30*time.Second, func() bool { return r1.missing(ids) == 0 && r2.missing(ids) == 0 },
		"broadcast not delivered to both: %d and %d of %d", r1.count.Load(), r2.count.Load(), len(ids))
}

// TestTagSubscription: the broker filters by tag hash (docs/protocol.md §7.5); a consumer of
// "TagA || TagC" gets exactly those messages.
func TestTagSubscription(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 2)
	p := newProducer(t, c.nsAddr)
	want := map[string]bool{}
	for _, tag := range []string{"TagA", "TagB", "TagC", ""} {
		ids := sendN(t, p, topic, tag, "tag"+tag, 10)
		for _, id := range ids {
			want[id] = tag == "TagA" || tag == "TagC"
		}
	}
	r := newReceived()
	newPushConsumer(t, c.nsAddr, uniqueName(t, "cg"), topic, "TagA || TagC", r)
	testutil.Eventually(t, 30*time.Second, func() bool { return r.count.Load() >= 20 }, "received %d of 20", r.count.Load())
	// Give stray deliveries a chance to show up: the queues' ends are known.
	sentinel := sendN(t, p, topic, "TagA", "sentinel", 2)
	testutil.Eventually(t, 30*time.Second, func() bool {
		_, a := r.get(sentinel[0])
		_, b := r.get(sentinel[1])
		return a && b
	}, "sentinels not received")
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, m := range r.msgs {
		if w, known := want[id]; known && !w {
			t.Errorf("received message with tag %q", m.GetTags())
		}
	}
	if r.count.Load() != 22 {
		t.Errorf("received %d messages, want 22", r.count.Load())
	}
}

// TestOffsetsSurviveConsumerRestart: offsets committed by a consumer (piggy-
// backed on pulls and UPDATE_CONSUMER_OFFSET) make its successor in the same
// group start after what was consumed (docs/broker.md §1.5, §4.7).
func TestOffsetsSurviveConsumerRestart(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 4)
	group := uniqueName(t, "cg")
	p := newProducer(t, c.nsAddr)
	first := sendN(t, p, topic, "", "first", 40)

	r1 := newReceived()
	c1 := newPushConsumer(t, c.nsAddr, group, topic, "*", r1)
	testutil.Eventually(t, 30*time.Second, func() bool { return r1.count.Load() >= int64(len(first)) }, "first batch not consumed")
	// Wait until the broker holds the committed offsets of all 40.
	testutil.Eventually(t, 30*time.Second, func() bool {
		var sum int64
		for q := int32(0); q < 4; q++ {
			off, _ := c.b.Offsets.Query(group, topic, q)
			sum += off
		}
		return sum == int64(len(first))
	}, "offsets not committed")
	if err := c1.Shutdown(); err != nil {
		t.Fatal(err)
	}

	second := sendN(t, p, topic, "", "second", 20)
	r2 := newReceived()
	newPushConsumer(t, c.nsAddr, group, topic, "*", r2)
	testutil.Eventually(t, 30*time.Second, func() bool { return r2.count.Load() >= int64(len(second)) }, "second batch not consumed")
	for _, id := range first {
		if _, ok := r2.get(id); ok {
			t.Fatalf("restarted consumer re-received %s from before its restart", id)
		}
	}
}
