package e2e

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/namesrv"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

// BenchmarkProduceVsOfficial measures synchronous sends of 1 KiB messages
// from 4 goroutines, with an ASYNC_FLUSH broker in this process, by the
// Apogee SDK and by the official Go client v2 against the same cluster in
// the same run, alternating rounds, and reports both rates and their ratio
// (x-official; the target is >= 1.5). Run:
//
//	go test -run '^$' -bench ProduceVsOfficial -benchtime 1x ./e2e
func BenchmarkProduceVsOfficial(b *testing.B) {
	const (
		threads = 4
		size    = 1024
		round   = 2 * time.Second
		rounds  = 3
	)
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

	sendOurs := func(ctx context.Context) error {
		_, err := ours.Send(ctx, client.NewMessage(topic, body))
		return err
	}
	sendTheirs := func(ctx context.Context) error {
		_, err := theirs.SendSync(ctx, primitive.NewMessage(topic, body))
		return err
	}
	// Warm up both (routes, connections).
	for _, send := range []func(context.Context) error{sendOurs, sendTheirs} {
		for range 200 {
			if err := send(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
	}
	measure := func(send func(context.Context) error) float64 {
		var n, failed atomic.Int64
		deadline := time.Now().Add(round)
		var wg sync.WaitGroup
		start := time.Now()
		for range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(deadline) {
					if err := send(context.Background()); err != nil {
						failed.Add(1)
						continue
					}
					n.Add(1)
				}
			}()
		}
		wg.Wait()
		if failed.Load() > 0 {
			b.Errorf("%d sends failed", failed.Load())
		}
		return float64(n.Load()) / time.Since(start).Seconds()
	}
	var oursTPS, theirsTPS float64
	for b.Loop() {
		oursTPS, theirsTPS = 0, 0
		for range rounds {
			oursTPS += measure(sendOurs) / rounds
			theirsTPS += measure(sendTheirs) / rounds
		}
	}
	b.ReportMetric(oursTPS, "apogee-msg/s")
	b.ReportMetric(theirsTPS, "official-msg/s")
	b.ReportMetric(oursTPS/theirsTPS, "x-official")
	b.SetBytes(size)
}

// benchCluster is a name server and an ASYNC_FLUSH broker on loopback
// with a temp dir, for benchmarks (the test helpers take *testing.T).
type benchCluster struct {
	nsAddr string
	b      *broker.Broker
}

func startBenchCluster(b *testing.B) *benchCluster {
	b.Helper()
	nsCfg := namesrv.DefaultConfig()
	nsCfg.ListenPort, nsCfg.BindAddress = 0, "127.0.0.1"
	nsCfg.KVConfigPath = filepath.Join(b.TempDir(), "kvConfig.json")
	ns := namesrv.New(nsCfg, testutil.DiscardLogger())
	if err := ns.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ns.Close() })
	cfg := brokerTestConfig(b.TempDir())
	cfg.Store.MappedFileSizeCommitLog = 256 << 20
	cfg.Store.FlushDiskType = "ASYNC_FLUSH"
	cfg.SendMessageThreadPoolNums = 4
	cfg.NamesrvAddr = []string{ns.Addr().String()}
	br, err := broker.New(cfg, testutil.DiscardLogger())
	if err != nil {
		b.Fatal(err)
	}
	if err := br.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { br.Close() })
	return &benchCluster{nsAddr: ns.Addr().String(), b: br}
}

func (c *benchCluster) createTopic(tb testing.TB, topic string, queues int32) {
	tc := protocol.NewTopicConfig(topic)
	tc.ReadQueueNums, tc.WriteQueueNums = queues, queues
	if err := c.b.Topics.Update(tc); err != nil {
		tb.Fatal(err)
	}
	ctx := testutil.Context(tb, 10*time.Second)
	a, err := admin.New(admin.WithNameServers(c.nsAddr))
	if err != nil {
		tb.Fatal(err)
	}
	if err := a.Start(); err != nil {
		tb.Fatal(err)
	}
	defer a.Close()
	testutil.Eventually(tb, 10*time.Second, func() bool {
		_, err := a.TopicRoute(ctx, topic)
		return err == nil
	}, "topic %s never routed", topic)
}
