package e2e

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/testutil"
)

// advancedLong runs the soak variants of the advanced-messaging tests (for
// example 10,000 timers spread over a minute instead of ~20 s).
var advancedLong = flag.Bool("advanced.long", false, "run the long timer soak (10,000 timers over a minute instead of ~20 s)")

// timerArrivals records, per message id, when a push consumer saw it and
// what the broker stored.
type timerArrivals struct {
	mu   sync.Mutex
	msgs map[string]*primitive.MessageExt
	seen map[string]int
	n    atomic.Int64
}

func newTimerArrivals() *timerArrivals {
	return &timerArrivals{msgs: map[string]*primitive.MessageExt{}, seen: map[string]int{}}
}

func (a *timerArrivals) add(msgs ...*primitive.MessageExt) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, m := range msgs {
		id := m.GetProperty("ID")
		if a.seen[id] == 0 {
			a.msgs[id] = m
			a.n.Add(1)
		}
		a.seen[id]++
	}
}

func startTimerConsumer(t *testing.T, nsAddr, topic string, a *timerArrivals) {
	t.Helper()
	newPushConsumerSel(t, nsAddr, uniqueName(t, "cg"), topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(msgs ...*primitive.MessageExt) { a.add(msgs...) })
}

// newPushConsumerSel is startOfficialPushConsumer with a callback that
// always answers ConsumeSuccess.
func newPushConsumerSel(t testing.TB, nsAddr, group, topic string, sel consumer.MessageSelector, fn func(...*primitive.MessageExt), opts ...consumer.Option) rocketmq.PushConsumer {
	t.Helper()
	return startOfficialPushConsumer(t, nsAddr, group, topic, sel,
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			fn(msgs...)
			return consumer.ConsumeSuccess, nil
		}, opts...)
}

// TestTimerMessageWithinPrecision: messages sent by the official Go client
// with WithDelayTimestamp (TIMER_DELIVER_MS) are stored to their topic no
// earlier than the requested time and within the timer precision
// (timerPrecisionMs 1000, docs/broker.md §1.9).
func TestTimerMessageWithinPrecision(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 4)
	p := newProducer(t, c.nsAddr)
	a := newTimerArrivals()
	startTimerConsumer(t, c.nsAddr, topic, a)

	const n = 20
	base := time.Now().Add(2 * time.Second)
	want := map[string]int64{}
	ctx := testutil.Context(t, 30*time.Second)
	for i := range n {
		id := strconv.Itoa(i)
		at := base.Add(time.Duration(i) * 97 * time.Millisecond)
		m := primitive.NewMessage(topic, []byte("timer-"+id)).WithDelayTimestamp(at)
		m.WithProperty("ID", id)
		if _, err := p.SendSync(ctx, m); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		want[id] = at.UnixMilli()
	}
	testutil.Eventually(t, 30*time.Second, func() bool { return a.n.Load() == n }, "timer messages delivered")
	a.mu.Lock()
	defer a.mu.Unlock()
	var late []int64
	for id, m := range a.msgs {
		d := m.StoreTimestamp - want[id]
		if d < 0 {
			t.Errorf("message %s stored %d ms before its delivery time", id, -d)
		}
		late = append(late, d)
		if string(m.Body) != "timer-"+id || m.Topic != topic || m.GetProperty("TIMER_OUT_MS") == "" {
			t.Errorf("message %s: body %q topic %q props %v", id, m.Body, m.Topic, m.GetProperties())
		}
	}
	slices.Sort(late)
	t.Logf("lateness (store time - delivery time) ms: min %d median %d max %d", late[0], late[len(late)/2], late[len(late)-1])
	// One precision step plus generous slack for a loaded CI machine.
	if late[len(late)-1] > 1000+1500 {
		t.Errorf("max lateness %d ms exceeds the precision", late[len(late)-1])
	}
}

// TestTimerMessageTooFar: a delivery time beyond timerMaxDelaySec (3 days)
// is refused with MESSAGE_ILLEGAL (13).
func TestTimerMessageTooFar(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 1)
	p := newProducer(t, c.nsAddr, producer.WithRetry(0))
	m := primitive.NewMessage(topic, []byte("too far")).WithDelayTimestamp(time.Now().Add(4 * 24 * time.Hour))
	_, err := p.SendSync(testutil.Context(t, 10*time.Second), m)
	if err == nil || !strings.Contains(err.Error(), "13") {
		t.Fatalf("send 4 days ahead: err = %v, want MESSAGE_ILLEGAL (13)", err)
	}
}

// TestTimerMessagesSurviveRestart: 10,000 timers spread over ~20 s (a
// minute with -advanced.long); the broker is restarted while most are
// pending; every message reaches its topic exactly once (counted in the
// broker's queues, so consumer redelivery does not hide a duplicate) and
// none before its time.
func TestTimerMessagesSurviveRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("20 s of timers")
	}
	spread := 20 * time.Second
	if *advancedLong {
		spread = time.Minute
	}
	const n = 10000
	c := startCluster(t, func(cfg *broker.Config) { cfg.Store.FlushDiskType = "ASYNC_FLUSH" })
	topic := uniqueName(t, "T")
	c.createTopic(topic, 4)
	p := newProducer(t, c.nsAddr)

	start := time.Now()
	base := start.Add(8 * time.Second) // sending must finish before the first is due
	step := spread / n
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	ctx := testutil.Context(t, 60*time.Second)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= n {
					return
				}
				m := primitive.NewMessage(topic, fmt.Appendf(nil, "timer-%d", i)).WithDelayTimestamp(base.Add(time.Duration(i) * step))
				m.WithProperty("ID", strconv.FormatInt(i, 10))
				if _, err := p.SendSync(ctx, m); err != nil {
					errs <- fmt.Errorf("send %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	sent := time.Since(start)
	t.Logf("sent %d timers in %v", n, sent)
	if sent > 8*time.Second {
		t.Logf("sending took longer than the head start; the first timers were already due")
	}

	delivered := func() int64 {
		var sum int64
		if c.b == nil {
			return -1
		}
		for q := int32(0); q < 4; q++ {
			sum += max(0, c.b.Store.MaxOffsetInQueue(topic, q))
		}
		return sum
	}
	// Restart once about a third has been delivered.
	testutil.Eventually(t, spread+30*time.Second, func() bool { return delivered() >= n/3 }, "first third delivered")
	t.Logf("restarting with %d of %d delivered", delivered(), n)
	b := c.b
	c.stopBroker()
	if s, ok := b.TimerStats(); ok {
		t.Logf("at close: timer %+v", s)
	}
	c.startBroker()
	t.Logf("after restart: delivered %d", delivered())
	waitRoute(t, c.ns, topic)

	a := newTimerArrivals()
	startTimerConsumer(t, c.nsAddr, topic, a)
	lastLog := time.Now()
	testutil.Eventually(t, spread+60*time.Second, func() bool {
		if time.Since(lastLog) > 5*time.Second {
			s, _ := c.b.TimerStats()
			t.Logf("delivered %d, timer %+v", delivered(), s)
			lastLog = time.Now()
		}
		return delivered() >= n
	}, "all timers delivered")
	testutil.Eventually(t, 60*time.Second, func() bool { return a.n.Load() == n }, "consumed %d of %d", a.n.Load(), n)
	// A second delivery would show as an extra message in the queues; give
	// the timer a chance to produce one before checking.
	testutil.Eventually(t, 10*time.Second, func() bool {
		s, ok := c.b.TimerStats()
		return ok && s.Pending == 0 && s.InFlight == 0 && s.QueueBehind == 0
	}, "timer drained")
	if got := delivered(); got != n {
		t.Fatalf("the topic holds %d messages, want exactly %d (a timer was delivered twice or lost)", got, n)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var late []int64
	for id, m := range a.msgs {
		i, _ := strconv.ParseInt(id, 10, 64)
		due := base.Add(time.Duration(i) * step).UnixMilli()
		if m.StoreTimestamp < due {
			t.Errorf("message %s stored %d ms early", id, due-m.StoreTimestamp)
		}
		late = append(late, m.StoreTimestamp-due)
	}
	slices.Sort(late)
	t.Logf("lateness ms: median %d p99 %d max %d (the restart delays some)", late[len(late)/2], late[len(late)*99/100], late[len(late)-1])
}

// TestTimerMessageApogeeSDK: the Apogee SDK's WithDelay and WithDeliverTime
// send timer messages that arrive after their time.
func TestTimerMessageApogeeSDK(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 1)
	p := newSDKProducer(t, c.nsAddr)
	a := newTimerArrivals()
	startTimerConsumer(t, c.nsAddr, topic, a)
	ctx := testutil.Context(t, 30*time.Second)
	sent := time.Now()
	want := map[string]time.Time{"relative": sent.Add(1500 * time.Millisecond), "absolute": sent.Add(2500 * time.Millisecond)}
	if _, err := p.Send(ctx, client.NewMessage(topic, []byte("r")).SetProperty("ID", "relative").WithDelay(1500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(ctx, client.NewMessage(topic, []byte("a")).SetProperty("ID", "absolute").WithDeliverTime(want["absolute"])); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() bool { return a.n.Load() == 2 }, "timer messages")
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, m := range a.msgs {
		if m.StoreTimestamp < want[id].UnixMilli() {
			t.Errorf("%s stored %d ms early", id, want[id].UnixMilli()-m.StoreTimestamp)
		}
	}
}
