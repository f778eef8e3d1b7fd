package e2e

import (
	"context"
	"flag"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/metrics"
)

var metricsBenchRound = flag.Duration("e2e.metricsbench.round", 2*time.Second,
	"how long each BenchmarkSendMetricsOnOff round sends to each broker")

// BenchmarkSendMetricsOnOff measures the cost of metrics on the send path
// in one run: two ASYNC_FLUSH brokers in this process, one with
// metricsExporterType=PROM (per-topic meters, rpc-latency hook, and a
// /metrics endpoint scraped every 500 ms) and one with DISABLE. Each
// round sends 1 KiB messages with the SDK's sync Send from 8 goroutines for
// -e2e.metricsbench.round to each broker in turn (order alternating), and
// the totals give msgs/s for both and their ratio (x-metrics-off; the
// target is >= 0.97). The machine is shared: compare the ratio, not the
// rates, and use several rounds:
//
//	go test -run '^$' -bench SendMetricsOnOff -benchtime 6x ./e2e
func BenchmarkSendMetricsOnOff(b *testing.B) {
	cfg := func(enabled bool) func(*broker.Config) {
		return func(c *broker.Config) {
			c.Store.MappedFileSizeCommitLog = 256 << 20
			c.Store.FlushDiskType = "ASYNC_FLUSH"
			c.SendMessageThreadPoolNums = 4
			if !enabled {
				c.MetricsExporterType = broker.MetricsExporterDisable
			}
		}
	}
	on, off := startClusterTB(b, cfg(true)), startClusterTB(b, cfg(false))
	srv, err := metrics.NewServer(metrics.Config{Addr: "127.0.0.1:0"}, testLogger(b), metrics.NewBrokerCollector(on.b))
	if err != nil {
		b.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	scrapeCtx, stopScrape := context.WithCancel(context.Background())
	var scrapes sync.WaitGroup
	scrapes.Add(1)
	go func() { // a Prometheus server's load, stopped by the cleanup
		defer scrapes.Done()
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-scrapeCtx.Done():
				return
			case <-t.C:
				if resp, err := http.Get("http://" + srv.Addr() + "/metrics"); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}
	}()
	b.Cleanup(func() { stopScrape(); scrapes.Wait() })

	type side struct {
		c    *testCluster
		p    *client.Producer
		sent int64
		took time.Duration
	}
	body := make([]byte, 1024)
	sides := []*side{{c: on}, {c: off}}
	for i, s := range sides {
		topic := "BenchMetrics" + string(rune('A'+i))
		s.c.createTopic(topic, 8)
		p, err := client.NewProducer("bench_metrics_"+string(rune('a'+i)), client.WithNameServers(s.c.nsAddr))
		if err != nil {
			b.Fatal(err)
		}
		if err := p.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { p.Close() })
		if _, err := p.Send(context.Background(), client.NewMessage(topic, body)); err != nil {
			b.Fatal(err)
		}
		s.p = p
	}
	run := func(s *side, topic string) {
		var n atomic.Int64
		deadline := time.Now().Add(*metricsBenchRound)
		start := time.Now()
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(deadline) {
					if _, err := s.p.Send(context.Background(), client.NewMessage(topic, body)); err == nil {
						n.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		s.sent += n.Load()
		s.took += time.Since(start)
	}
	round := 0
	for b.Loop() {
		order := []int{0, 1}
		if round%2 == 1 {
			order = []int{1, 0}
		}
		for _, i := range order {
			run(sides[i], "BenchMetrics"+string(rune('A'+i)))
		}
		round++
	}
	rateOn := float64(sides[0].sent) / sides[0].took.Seconds()
	rateOff := float64(sides[1].sent) / sides[1].took.Seconds()
	b.ReportMetric(rateOn, "msgs/s-metrics-on")
	b.ReportMetric(rateOff, "msgs/s-metrics-off")
	b.ReportMetric(rateOn/rateOff, "x-metrics-off")
}
