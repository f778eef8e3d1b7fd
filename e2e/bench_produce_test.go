package e2e

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/broker"
)

// BenchmarkProduceVsOfficial measures 1 KiB sends from 4 goroutines, with
// an ASYNC_FLUSH broker in this process, by the Apogee SDK and by the
// official Go client v2 against the same cluster in the same run
// (alternating rounds), and reports both rates and their ratio
// (x-official; the target is >= 1.5). mode=sync uses Send/SendSync;
// mode=async SendAsync with at most 64 sends in flight per goroutine. Run:
//
//	go test -run '^$' -bench ProduceVsOfficial -benchtime 1x ./e2e
func BenchmarkProduceVsOfficial(b *testing.B) {
	const size = 1024
	c := startBenchCluster(b)
	topic := "BenchProduceVsOfficial"
	c.createTopic(b, topic, 8)
	body := make([]byte, size)
	for i := range body {
		body[i] = byte('a' + i%26)
	}

	ours, err := client.NewProducer("bench_apogee", client.WithNameServers(c.nsAddr))
	if err != nil {
		b.Fatal(err)
	}
	if err := ours.Start(); err != nil {
		b.Fatal(err)
	}
	defer ours.Close()
	theirs, err := rocketmq.NewProducer(producer.WithNameServer([]string{c.nsAddr}), producer.WithGroupName("bench_official"),
		producer.WithInstanceName("bench_official"), producer.WithRetry(2), producer.WithSendMsgTimeout(3*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	if err := theirs.Start(); err != nil {
		b.Fatal(err)
	}
	defer theirs.Shutdown()

	// Each send function calls done exactly once, maybe later.
	oursSync := func(done func(error)) {
		_, err := ours.Send(context.Background(), client.NewMessage(topic, body))
		done(err)
	}
	theirsSync := func(done func(error)) {
		_, err := theirs.SendSync(context.Background(), primitive.NewMessage(topic, body))
		done(err)
	}
	oursAsync := func(done func(error)) {
		if err := ours.SendAsync(context.Background(), client.NewMessage(topic, body), func(_ *client.SendResult, err error) { done(err) }); err != nil {
			done(err)
		}
	}
	theirsAsync := func(done func(error)) {
		err := theirs.SendAsync(context.Background(), func(_ context.Context, _ *primitive.SendResult, err error) { done(err) },
			primitive.NewMessage(topic, body))
		if err != nil {
			done(err)
		}
	}
	// Warm up both (routes, connections).
	for _, send := range []func(func(error)){oursSync, theirsSync} {
		for range 200 {
			send(func(err error) {
				if err != nil {
					b.Fatal(err)
				}
			})
		}
	}
	for _, mode := range []struct {
		name           string
		ours, theirs   func(func(error))
		inflightPerGor int
	}{
		{"sync", oursSync, theirsSync, 1},
		{"async", oursAsync, theirsAsync, 64},
	} {
		b.Run("mode="+mode.name, func(b *testing.B) {
			var oursTPS, theirsTPS float64
			var oursFailed, theirsFailed int64
			for b.Loop() {
				oursTPS, theirsTPS, oursFailed, theirsFailed = 0, 0, 0, 0
				const rounds = 3
				for range rounds {
					tps, failed := measureSends(b, "apogee", mode.ours, mode.inflightPerGor)
					oursTPS, oursFailed = oursTPS+tps/rounds, oursFailed+failed
					tps, failed = measureSends(b, "official", mode.theirs, mode.inflightPerGor)
					theirsTPS, theirsFailed = theirsTPS+tps/rounds, theirsFailed+failed
				}
			}
			b.ReportMetric(oursTPS, "apogee-msg/s")
			b.ReportMetric(theirsTPS, "official-msg/s")
			b.ReportMetric(oursTPS/theirsTPS, "x-official")
			b.ReportMetric(float64(oursFailed), "apogee-failed")
			b.ReportMetric(float64(theirsFailed), "official-failed")
		})
	}
}

// measureSends runs send from 4 goroutines for 2 s, each keeping up to
// inflight sends outstanding, and returns completed sends per second and
// the failures (logged with the first error).
func measureSends(b *testing.B, who string, send func(func(error)), inflight int) (float64, int64) {
	const (
		threads = 4
		round   = 2 * time.Second
	)
	var n, failed atomic.Int64
	var firstErr atomic.Pointer[error]
	deadline := time.Now().Add(round)
	var wg sync.WaitGroup
	start := time.Now()
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem := make(chan struct{}, inflight)
			var pending sync.WaitGroup
			for time.Now().Before(deadline) {
				sem <- struct{}{}
				pending.Add(1)
				send(func(err error) {
					defer pending.Done()
					<-sem
					if err != nil {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, &err)
						return
					}
					n.Add(1)
				})
			}
			pending.Wait()
		}()
	}
	wg.Wait()
	if failed.Load() > 0 {
		b.Logf("%s: %d sends failed, first: %v", who, failed.Load(), *firstErr.Load())
	}
	return float64(n.Load()) / time.Since(start).Seconds(), failed.Load()
}

// benchCluster is startCluster's name server and broker tuned for
// benchmarks: ASYNC_FLUSH, 256 MiB commit-log files, 4 send threads, logs
// discarded (see testLogger).
type benchCluster struct{ *testCluster }

func startBenchCluster(b *testing.B) *benchCluster {
	b.Helper()
	return &benchCluster{startClusterTB(b, func(cfg *broker.Config) {
		cfg.Store.MappedFileSizeCommitLog = 256 << 20
		cfg.Store.FlushDiskType = "ASYNC_FLUSH"
		cfg.SendMessageThreadPoolNums = 4
	})}
}

// createTopic is testCluster.createTopic with the caller's testing.TB.
func (c *benchCluster) createTopic(tb testing.TB, topic string, queues int32) {
	tb.Helper()
	c.testCluster.createTopic(topic, queues)
}
