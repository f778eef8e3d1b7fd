package litebench

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/client/litepop"
	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/testutil/procstat"
)

var (
	consTopicsFlag = flag.Int("lite.cons.topics", 1000, "lite topics of the consume backlog, one message each")
	consConcFlag   = flag.Int("lite.cons.conc", 4, "pops in flight per side")
	consBatchFlag  = flag.Int("lite.cons.batch", 32, "messages per pop (both sides)")
)

// BenchmarkLiteConsume: a backlog of one message on each of
// -lite.cons.topics lite topics under one LITE parent, consumed by one
// remoting lite consumer (POP_LITE_MESSAGE over all its subscriptions,
// ACK_MESSAGE per message), against the same number of messages on one
// plain topic of one queue consumed with POP_MESSAGE + ACK_MESSAGE. Both
// sides use the same pops in flight, batch size and ack mode; each round
// consumes both backlogs afresh with new groups; a
// side ends when every message was seen (distinct count), so a broken
// setup cannot report fast. Each side starts on an idle broker (settle),
// and the order of the two sides alternates between rounds. Broker CPU is the child's utime+stime.
func BenchmarkLiteConsume(b *testing.B) {
	n, conc, batch := *consTopicsFlag, *consConcFlag, *consBatchFlag
	for range b.N {
		dir := b.TempDir()
		s := startServer(b, dir+"/data", freePort(b), freePort(b),
			"--set", fmt.Sprintf("maxLmqConsumeQueueNum=%d", n+1000),
			"--set", fmt.Sprintf("maxLiteSubscriptionCount=%d", n+1000),
			// A client's lite event queue (RocketMQ's maxClientEventCount,
			// default 100) holds every lite topic of the backlog: with the
			// default the rest waits for full dispatches 10 s apart
			// (liteEventFullDispatchDelayTime), which measures that delay.
			"--set", fmt.Sprintf("maxClientEventCount=%d", n+1000))
		a := newAdmin(b, s.nsAddr)
		ctx := context.Background()
		for _, tc := range []admin.TopicConfig{
			{Topic: parent, ReadQueues: 1, WriteQueues: 1, Attributes: "+message.type=LITE"},
			{Topic: plain, ReadQueues: 1, WriteQueues: 1},
		} {
			if err := a.CreateTopic(ctx, tc, admin.Target{BrokerAddr: s.broker}); err != nil {
				b.Fatal(err)
			}
		}
		snd := newSender(b, s.broker, *windowFlag)
		var wg sync.WaitGroup
		for i := range n {
			snd.send(ctx, parent, liteName(i), 0, &wg)
			snd.send(ctx, plain, "", 0, &wg)
		}
		wg.Wait()
		if snd.failed.Load() > 0 {
			b.Fatalf("%d sends failed: %v", snd.failed.Load(), snd.err)
		}
		names := make([]string, n)
		for i := range names {
			names[i] = liteName(i)
		}
		var liteRates, plainRates, liteCPU, plainCPU []float64
		for r := range *roundsFlag {
			lite := func() {
				settle(b, s)
				rate, cpu := consumeLite(b, s, fmt.Sprintf("LiteConsGroup%d", r), names, conc, batch)
				liteRates, liteCPU = append(liteRates, rate), append(liteCPU, cpu)
			}
			plain := func() {
				settle(b, s)
				rate, cpu := consumePlain(b, s, fmt.Sprintf("PlainConsGroup%d", r), n, conc, batch)
				plainRates, plainCPU = append(plainRates, rate), append(plainCPU, cpu)
			}
			if r%2 == 0 {
				lite()
				plain()
			} else {
				plain()
				lite()
			}
		}
		lr, pr := median(liteRates), median(plainRates)
		lc, pc := median(liteCPU), median(plainCPU)
		b.ReportMetric(lr, "lite-msgs/s")
		b.ReportMetric(pr, "plain-msgs/s")
		b.ReportMetric(lr/pr, "lite/plain")
		b.ReportMetric(lc, "lite-cpuus/msg")
		b.ReportMetric(pc, "plain-cpuus/msg")
		b.Logf("consume of %d messages over %d lite topics %.0f msg/s (%.1f broker cpu-us/msg) vs one plain topic %.0f msg/s (%.1f): x%.2f (medians of %d rounds: %v vs %v; %d pops in flight of %d)",
			n, n, lr, lc, pr, pc, lr/pr, *roundsFlag, roundAll(liteRates), roundAll(plainRates), conc, batch)
		s.stop(b)
	}
}

// consumeLite subscribes a new lite consumer of group to every name from
// the queues' start, then pops and acks until each message was seen once;
// it returns msgs/s and broker CPU microseconds per message of the
// pop+ack phase (subscription excluded).
func consumeLite(tb testing.TB, s *server, group string, names []string, conc, batch int) (float64, float64) {
	ctx := context.Background()
	c, err := litepop.New(litepop.Config{BrokerAddr: s.broker, ClientID: "litecons-" + group, Group: group, Topic: parent})
	if err == nil {
		err = c.Start()
	}
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < len(names); i += 1000 {
		if err := c.Subscribe(ctx, litepop.FromMin, names[i:min(i+1000, len(names))]...); err != nil {
			tb.Fatal(err)
		}
	}
	var seen sync.Map
	var distinct atomic.Int64
	return drain(tb, s, len(names), conc, &distinct, func() (int, error) {
		ms, err := c.Receive(ctx, batch, 60*time.Second, time.Second)
		for _, m := range ms {
			if _, dup := seen.LoadOrStore(m.LiteTopic+"/"+strconv.FormatInt(m.QueueOffset, 10), true); !dup {
				distinct.Add(1)
			}
			if err := c.Ack(ctx, m); err != nil {
				return 0, err
			}
		}
		return len(ms), err
	})
}

// consumePlain pops the plain topic's queue 0 for a new group from its
// start (initMode MIN) and acks each message with ACK_MESSAGE.
func consumePlain(tb testing.TB, s *server, group string, n, conc, batch int) (float64, float64) {
	ctx := context.Background()
	rc := remoting.NewClient(remoting.ClientConfig{})
	if err := rc.Start(); err != nil {
		tb.Fatal(err)
	}
	defer rc.Close()
	var seen sync.Map
	var distinct atomic.Int64
	return drain(tb, s, n, conc, &distinct, func() (int, error) {
		h := protocol.PopMessageRequestHeader{ConsumerGroup: group, Topic: plain, QueueID: 0, MaxMsgNums: int32(batch),
			InvisibleTime: 60000, PollTime: 1000, BornTime: time.Now().UnixMilli(), InitMode: 0}
		resp, err := rc.InvokeSync(ctx, s.broker, protocol.NewRequest(protocol.PopMessage, protocol.EncodeHeader(&h, false), nil))
		if err != nil {
			return 0, err
		}
		if resp.Code == int32(protocol.PollingTimeout) || resp.Code == int32(protocol.PullNotFound) {
			return 0, nil
		}
		if resp.Code != int32(protocol.Success) {
			return 0, fmt.Errorf("pop: code %d %s", resp.Code, resp.Remark)
		}
		var rh protocol.PopMessageResponseHeader
		if err := protocol.DecodeHeader(resp.ExtFields, &rh, false); err != nil {
			return 0, err
		}
		exts, err := message.DecodeStoredAll(resp.Body, message.DecodeOptions{Decompress: true})
		if err != nil {
			return 0, err
		}
		for _, m := range exts {
			if _, dup := seen.LoadOrStore(m.QueueOffset, true); !dup {
				distinct.Add(1)
			}
			hd := protocol.ReceiptHandle{CkQueueOffset: m.QueueOffset, PopTime: rh.PopTime, InvisibleTime: rh.InvisibleTime,
				ReviveQueueID: rh.ReviveQid, BrokerName: "broker", QueueID: m.QueueID, QueueOffset: m.QueueOffset}
			ah := protocol.AckMessageRequestHeader{ConsumerGroup: group, Topic: plain, QueueID: m.QueueID,
				ExtraInfo: hd.ExtraInfo(), Offset: m.QueueOffset}
			ar, err := rc.InvokeSync(ctx, s.broker, protocol.NewRequest(protocol.AckMessage, protocol.EncodeHeader(&ah, false), nil))
			if err == nil && ar.Code != int32(protocol.Success) {
				err = fmt.Errorf("ack: code %d %s", ar.Code, ar.Remark)
			}
			if err != nil {
				return 0, err
			}
		}
		return len(exts), nil
	})
}

// drain runs conc loops of pop (and its acks) until distinct reaches n
// (bounded: 10 minutes) and returns msgs/s and broker cpu-us/msg.
func drain(tb testing.TB, s *server, n, conc int, distinct *atomic.Int64, pop func() (int, error)) (float64, float64) {
	var wg sync.WaitGroup
	var got, pops, empty atomic.Int64
	var errOnce sync.Once
	var firstErr error
	cpu0, t0 := cpuSeconds(s.cmd.Process.Pid), time.Now()
	deadline := t0.Add(10 * time.Minute)
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for distinct.Load() < int64(n) && time.Now().Before(deadline) {
				k, err := pop()
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				got.Add(int64(k))
				if pops.Add(1); k == 0 {
					empty.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	el, cpu := time.Since(t0), cpuSeconds(s.cmd.Process.Pid)-cpu0
	if firstErr != nil {
		tb.Fatal(firstErr)
	}
	if d := distinct.Load(); d != int64(n) {
		tb.Fatalf("consumed %d distinct messages of %d (%d deliveries)", d, n, got.Load())
	}
	tb.Logf("%d messages in %v: %d pops (%d empty), %d deliveries", n, el.Round(time.Millisecond), pops.Load(), empty.Load(), got.Load())
	return float64(n) / el.Seconds(), cpu * 1e6 / float64(n)
}

// settle waits (at most 10 minutes) until the broker is back at its idle
// floor: below a quarter of a core for a second. The sends that built the
// backlog leave work behind them (the background creator makes the first
// consume-queue file of each new lite topic, about a thousand a second),
// and a consume round measured while it runs would be charged for it. The
// floor is not zero: with 10^5 queues the store's periodic consume-queue
// flush and the POP watermark scan visit every queue once a second, and
// both sides of the comparison pay that alike.
func settle(tb testing.TB, s *server) {
	tb.Helper()
	pid := s.cmd.Process.Pid
	t0 := time.Now()
	for time.Since(t0) < 10*time.Minute {
		c0 := cpuSeconds(pid)
		time.Sleep(time.Second)
		if busy := cpuSeconds(pid) - c0; busy < 0.25 {
			tb.Logf("broker idle after %v (%.0f %% of a core)", time.Since(t0).Round(time.Second), busy*100)
			return
		}
	}
	tb.Logf("broker still busy after 10 minutes; measuring anyway")
}

// cpuSeconds is process pid's CPU time in seconds.
func cpuSeconds(pid int) float64 { return procstat.CPU(pid).Seconds() }
