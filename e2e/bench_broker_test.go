package e2e

import (
	"context"
	"flag"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

var brokerBenchDuration = flag.Duration("e2e.brokerbench.duration", 5*time.Second,
	"how long BenchmarkBrokerWithOfficialClient produces (the Broker issue's figure uses 30s)")

// BenchmarkBrokerWithOfficialClient is the Broker issue's baseline: the
// official Go client v2 sends 1 KiB messages with SendSync from 4 goroutines
// to one ASYNC_FLUSH broker in this process for -e2e.brokerbench.duration,
// recording each send's latency; then an official push consumer drains
// everything that was acknowledged, and its rate is reported too. Run:
//
//	go test -run '^$' -bench BrokerWithOfficialClient -benchtime 1x ./e2e -e2e.brokerbench.duration 30s
func BenchmarkBrokerWithOfficialClient(b *testing.B) {
	rlog.SetLogLevel("error")
	const (
		size    = 1024
		threads = 4
	)
	c := startBenchCluster(b)
	body := make([]byte, size)
	for i := range body {
		body[i] = byte('A' + i%26)
	}
	round := 0
	for b.Loop() {
		round++
		topic := "BenchBrokerOfficial" + string(rune('A'+round%26))
		c.createTopic(b, topic, 8)
		p, err := rocketmq.NewProducer(producer.WithNameServer([]string{c.nsAddr}),
			producer.WithGroupName("bench_broker_p"), producer.WithInstanceName(topic+"_p"),
			producer.WithRetry(2), producer.WithSendMsgTimeout(3*time.Second))
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Start(); err != nil {
			b.Fatal(err)
		}
		// Warm up route and connection.
		if _, err := p.SendSync(context.Background(), primitive.NewMessage(topic, body)); err != nil {
			b.Fatal(err)
		}

		var sent, failed atomic.Int64
		lat := make([][]time.Duration, threads)
		deadline := time.Now().Add(*brokerBenchDuration)
		start := time.Now()
		var wg sync.WaitGroup
		for g := range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				mine := make([]time.Duration, 0, 1<<16)
				for time.Now().Before(deadline) {
					t0 := time.Now()
					_, err := p.SendSync(context.Background(), primitive.NewMessage(topic, body))
					if err != nil {
						failed.Add(1)
						continue
					}
					mine = append(mine, time.Since(t0))
					sent.Add(1)
				}
				lat[g] = mine
			}()
		}
		wg.Wait()
		sendElapsed := time.Since(start)
		p.Shutdown()
		all := slices.Concat(lat...)
		slices.Sort(all)
		pct := func(q float64) float64 {
			if len(all) == 0 {
				return 0
			}
			return float64(all[int(q*float64(len(all)-1))].Microseconds()) / 1000
		}
		total := sent.Load() + 1 // the warm-up message

		var received atomic.Int64
		doneCh := make(chan struct{})
		var once sync.Once
		cons, err := rocketmq.NewPushConsumer(consumer.WithNameServer([]string{c.nsAddr}),
			consumer.WithGroupName(topic+"_c"), consumer.WithInstance(topic+"_c"),
			consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
			consumer.WithConsumeMessageBatchMaxSize(32), consumer.WithPullBatchSize(32))
		if err != nil {
			b.Fatal(err)
		}
		err = cons.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			if received.Add(int64(len(msgs))) >= total {
				once.Do(func() { close(doneCh) })
			}
			return consumer.ConsumeSuccess, nil
		})
		if err != nil {
			b.Fatal(err)
		}
		consumeStart := time.Now()
		if err := cons.Start(); err != nil {
			b.Fatal(err)
		}
		select {
		case <-doneCh:
		case <-time.After(*brokerBenchDuration + 2*time.Minute):
			b.Fatalf("consumer received %d of %d acknowledged messages", received.Load(), total)
		}
		consumeElapsed := time.Since(consumeStart)
		cons.Shutdown()

		b.ReportMetric(float64(sent.Load())/sendElapsed.Seconds(), "send-msg/s")
		b.ReportMetric(pct(0.50), "p50-ms")
		b.ReportMetric(pct(0.99), "p99-ms")
		b.ReportMetric(float64(failed.Load()), "send-failed")
		b.ReportMetric(float64(received.Load())/consumeElapsed.Seconds(), "consume-msg/s")
	}
}
