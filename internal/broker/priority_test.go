package broker

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/testutil"
)

func createTypedTopic(t *testing.T, c *remoting.Client, b *Broker, topic string, queues int32, attrs string) {
	t.Helper()
	ct := protocol.CreateTopicRequestHeader{Topic: topic, ReadQueueNums: queues, WriteQueueNums: queues, Perm: 6,
		TopicFilterType: "SINGLE_TAG", Attributes: attrs}
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.UpdateAndCreateTopic, protocol.EncodeHeader(&ct, false), nil)), protocol.Success)
}

// sendPriority sends one message with the given priority (-1: none) to
// queue -1 and returns the queue the broker chose.
func sendPriority(t *testing.T, c *remoting.Client, b *Broker, topic string, prio int, body string) int32 {
	t.Helper()
	props := map[string]string{"UNIQ_KEY": body}
	if prio >= 0 {
		props[message.PropertyPriority] = strconv.Itoa(prio)
	}
	resp := invoke(t, c, b.Addr(), sendReq(topic, -1, []byte(body), props))
	mustCode(t, resp, protocol.Success)
	q, err := strconv.Atoi(resp.Ext("queueId"))
	if err != nil {
		t.Fatalf("queueId %q: %v", resp.Ext("queueId"), err)
	}
	return int32(q)
}

// TestPrioritySendRoutesToLevelQueue: a priority p goes to queue
// min(p, writeQueueNums-1); a message without one is spread over the
// queues; a priority on a delay message is not a priority message.
func TestPrioritySendRoutesToLevelQueue(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	c := newClient(t)
	createTypedTopic(t, c, b, "Prio", 4, "+message.type=PRIORITY")
	for _, tc := range []struct{ prio, want int }{{0, 0}, {2, 2}, {3, 3}, {9, 3}} {
		if got := sendPriority(t, c, b, "Prio", tc.prio, fmt.Sprint("p", tc.prio)); int(got) != tc.want {
			t.Errorf("priority %d: queue %d, want %d", tc.prio, got, tc.want)
		}
	}
	seen := map[int32]bool{}
	for i := range 40 {
		seen[sendPriority(t, c, b, "Prio", -1, fmt.Sprint("n", i))] = true
	}
	if len(seen) < 2 {
		t.Errorf("plain messages in a priority topic all went to %v, want round robin", seen)
	}
	// A FIFO topic refuses a priority message (the type check still runs).
	createTypedTopic(t, c, b, "Fifo", 2, "+message.type=FIFO")
	resp := invoke(t, c, b.Addr(), sendReq("Fifo", -1, []byte("x"), map[string]string{message.PropertyPriority: "1"}))
	mustCode(t, resp, protocol.MessageIllegal)
}

// TestPriorityPopHighestFirst: with a backlog on every level, pops drain the
// highest level first, then the next; a group with priority.factor=0 reads
// the queues in the ordinary rotating order; order is reversed with
// priorityOrderAsc=false.
func TestPriorityPopHighestFirst(t *testing.T) {
	cfg := popTestConfig(t, t.TempDir())
	b := startBroker(t, cfg)
	c := newClient(t)
	createTypedTopic(t, c, b, "Prio", 4, "+message.type=PRIORITY")
	// Interleaved: low levels were sent first.
	for i := range 5 {
		for p := range 4 {
			sendPriority(t, c, b, "Prio", p, fmt.Sprintf("p%d-%d", p, i))
		}
	}
	for q := range int32(4) {
		waitDispatched(t, b, "Prio", q, 5)
	}
	var levels []int32
	for len(levels) < 20 {
		resp := invoke(t, c, b.Addr(), popReq("g", "Prio", -1, 3, time.Minute, 0, false))
		got := decodePop(t, resp, "g", cfg.BrokerName)
		if len(got) == 0 {
			t.Fatalf("pop found nothing after %d messages", len(levels))
		}
		for _, m := range got {
			levels = append(levels, m.msg.QueueID)
		}
	}
	for i := 1; i < len(levels); i++ {
		if levels[i] > levels[i-1] {
			t.Fatalf("pop order %v: level %d after %d", levels, levels[i], levels[i-1])
		}
	}
	if levels[0] != 3 || levels[len(levels)-1] != 0 {
		t.Fatalf("pop order %v: want 3 first and 0 last", levels)
	}

	// priority.factor=0: the first pop of a fresh group does not always
	// start at the top level.
	gc := protocol.SubscriptionGroupConfig{GroupName: "fair", ConsumeEnable: true, RetryMaxTimes: 16,
		Attributes: map[string]string{attrPriorityFactor: "0"}}
	if err := b.Groups.Update(gc); err != nil {
		t.Fatal(err)
	}
	starts := map[int32]bool{}
	for range 40 {
		resp := invoke(t, c, b.Addr(), popReq("fair", "Prio", -1, 1, 10*time.Millisecond, 0, false))
		for _, m := range decodePop(t, resp, "fair", cfg.BrokerName) {
			starts[m.msg.QueueID] = true
		}
	}
	if len(starts) < 2 {
		t.Errorf("priority.factor=0 popped only from %v", starts)
	}
}

// TestPriorityAgingServesStarvedLevel: a low level whose next message waited
// longer than popPriorityMaxWaitMs is popped before the higher levels. The
// broker's clock runs ahead of the store's to age the backlog.
func TestPriorityAgingServesStarvedLevel(t *testing.T) {
	cfg := popTestConfig(t, t.TempDir())
	var skew atomic.Int64
	b, err := New(cfg, testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	b.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	c := newClient(t)
	createTypedTopic(t, c, b, "Prio", 3, "+message.type=PRIORITY")
	sendPriority(t, c, b, "Prio", 0, "old-low")
	waitDispatched(t, b, "Prio", 0, 1)
	for i := range 3 {
		sendPriority(t, c, b, "Prio", 2, fmt.Sprint("high-", i))
	}
	waitDispatched(t, b, "Prio", 2, 3)
	// Strict while nothing waited too long: the high level first.
	resp := invoke(t, c, b.Addr(), popReq("strict", "Prio", -1, 1, time.Minute, 0, false))
	if got := decodePop(t, resp, "strict", cfg.BrokerName); len(got) != 1 || got[0].msg.QueueID != 2 {
		t.Fatalf("pop without aging %+v, want the high level", got)
	}
	skew.Store(int64(time.Duration(cfg.PopPriorityMaxWaitMs)*time.Millisecond + time.Minute))
	resp = invoke(t, c, b.Addr(), popReq("g", "Prio", -1, 1, time.Minute, 0, false))
	got := decodePop(t, resp, "g", cfg.BrokerName)
	if len(got) != 1 || string(got[0].msg.Body) != "old-low" {
		var bodies []string
		for _, m := range got {
			bodies = append(bodies, string(m.msg.Body))
		}
		t.Fatalf("first pop %v, want the starved old-low", bodies)
	}
	resp = invoke(t, c, b.Addr(), popReq("g", "Prio", -1, 1, time.Minute, 0, false))
	if got := decodePop(t, resp, "g", cfg.BrokerName); len(got) != 1 || got[0].msg.QueueID != 2 {
		t.Fatalf("second pop %+v, want the high level", got)
	}
}

// TestPrioritySeparateRetryQueue: with useSeparateRetryQueue a group's pop
// retry topic gets the PRIORITY topic's queue count and a revived message
// goes to the retry queue of its level, so redeliveries come back highest
// level first; without it every redelivery shares retry queue 0.
func TestPrioritySeparateRetryQueue(t *testing.T) {
	for _, separate := range []bool{true, false} {
		t.Run(fmt.Sprint("separate=", separate), func(t *testing.T) {
			cfg := popTestConfig(t, t.TempDir())
			cfg.UseSeparateRetryQueue = separate
			cfg.PopPriorityMaxWaitMs = 0
			b := startBroker(t, cfg)
			c := newClient(t)
			createTypedTopic(t, c, b, "PrioR", 4, "+message.type=PRIORITY")
			for p := range 4 {
				sendPriority(t, c, b, "PrioR", p, fmt.Sprint("p", p))
			}
			for q := range int32(4) {
				waitDispatched(t, b, "PrioR", q, 1)
			}
			if got := popAll(t, c, b, "g", "PrioR", time.Second); len(got) != 4 {
				t.Fatalf("first pop got %d of 4", len(got))
			}
			// Not acked: the revive loop moves them to the retry topic.
			rt := protocol.PopRetryTopic("PrioR", "g", cfg.EnableRetryTopicV2)
			testutil.Eventually(t, 20*time.Second, func() bool {
				n := int64(0)
				for q := range int32(4) {
					n += max(b.Store.MaxOffsetInQueue(rt, q), 0)
				}
				return n == 4
			}, "4 messages revived to %s", rt)
			tc, _ := b.Topics.Get(rt)
			wantQueues := int32(1)
			if separate {
				wantQueues = 4
			}
			if tc.WriteQueueNums != wantQueues || tc.ReadQueueNums != wantQueues {
				t.Fatalf("retry topic has %d/%d queues, want %d", tc.ReadQueueNums, tc.WriteQueueNums, wantQueues)
			}
			for q := range wantQueues {
				want := int64(1)
				if !separate {
					want = 4
				}
				if n := b.Store.MaxOffsetInQueue(rt, q); n != want {
					t.Fatalf("retry queue %d holds %d, want %d", q, n, want)
				}
			}
			if !separate {
				return
			}
			var order []string
			for len(order) < 4 {
				resp := invoke(t, c, b.Addr(), popReq("g", "PrioR", -1, 1, time.Minute, 0, false))
				got := decodePop(t, resp, "g", cfg.BrokerName)
				if len(got) == 0 {
					t.Fatalf("retry pop found nothing after %v", order)
				}
				order = append(order, string(got[0].msg.Body))
			}
			if fmt.Sprint(order) != "[p3 p2 p1 p0]" {
				t.Fatalf("redeliveries in order %v, want p3 p2 p1 p0", order)
			}
		})
	}
}
