package litebench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apogeemq/apogee/client/admin"
)

var (
	topicsFlag = flag.Int("lite.topics", 100000, "lite topics to create, one message each")
	spreadFlag = flag.Int("lite.spread", 100000, "lite topics the throughput comparison sends over")
	chunkFlag  = flag.Duration("lite.chunk", 3*time.Second, "sending time per side per round")
	roundsFlag = flag.Int("lite.rounds", 3, "throughput rounds (lite and plain once each per round)")
	windowFlag = flag.Int("lite.window", 128, "pipelined sends in flight")
)

const parent, plain = "LiteBenchParent", "LiteBenchPlain"

func liteName(i int) string { return fmt.Sprintf("session-%07d", i) }

// BenchmarkLiteTopics: creation of -lite.topics lite topics by their first
// send (pipelined 1 KiB sends, one per lite topic), then send throughput
// over -lite.spread existing lite topics against one plain topic of one
// queue (interleaved rounds), then a restart on the same data directory.
func BenchmarkLiteTopics(b *testing.B) {
	n, window := *topicsFlag, *windowFlag
	for range b.N {
		dir := b.TempDir()
		data := filepath.Join(dir, "data")
		nsPort, brPort := freePort(b), freePort(b)
		quota := fmt.Sprintf("maxLmqConsumeQueueNum=%d", n+1000)
		s := startServer(b, data, nsPort, brPort, "--set", quota, "--log-level", "info")
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
		before := s.resources(b)
		snd := newSender(b, s.broker, window)

		var wg sync.WaitGroup
		t0 := time.Now()
		for i := range n {
			snd.send(ctx, parent, liteName(i), 0, &wg)
			if (i+1)%200000 == 0 {
				b.Logf("%d lite topics after %v", i+1, time.Since(t0).Round(time.Millisecond))
			}
		}
		wg.Wait()
		el := time.Since(t0)
		if snd.failed.Load() > 0 {
			b.Fatalf("%d sends failed: %v", snd.failed.Load(), snd.err)
		}
		after := s.resources(b)
		b.ReportMetric(float64(n)/el.Seconds(), "creates/s")
		b.ReportMetric((after.RSSMB-before.RSSMB)*(1<<20)/float64(n), "rssB/litetopic")
		b.Logf("%d lite topics created by their first send in %v (%.0f/s); broker busy answers %d",
			n, el.Round(time.Millisecond), float64(n)/el.Seconds(), snd.busy.Load())
		after.Report(b, "after-")

		// Throughput: lite spread over m lite topics vs one plain topic.
		m := min(n, *spreadFlag)
		var liteRates, plainRates []float64
		next := 0
		for range *roundsFlag {
			liteRates = append(liteRates, sendFor(b, snd, func() (string, string) {
				next++
				return parent, liteName(next % m)
			}))
			plainRates = append(plainRates, sendFor(b, snd, func() (string, string) { return plain, "" }))
		}
		lr, pr := median(liteRates), median(plainRates)
		b.ReportMetric(lr, "lite-msgs/s")
		b.ReportMetric(pr, "plain-msgs/s")
		b.ReportMetric(lr/pr, "lite/plain")
		b.Logf("send over %d lite topics %.0f msg/s vs one plain topic %.0f msg/s: x%.2f (medians of %d rounds: %v vs %v)",
			m, lr, pr, lr/pr, *roundsFlag, roundAll(liteRates), roundAll(plainRates))

		// Restart with every lite topic on disk.
		t1 := time.Now()
		s.stop(b)
		stopTook := time.Since(t1)
		b.ReportMetric(stopTook.Seconds(), "stop-s")
		b.Logf("clean stop with %d lite topics: %v", n, stopTook.Round(time.Millisecond))
		t1 = time.Now()
		s2 := startServer(b, data, nsPort, brPort, "--set", quota, "--log-level", "info")
		restart := time.Since(t1)
		snd2 := newSender(b, s2.broker, 1)
		snd2.send(ctx, parent, liteName(n-1), 0, &wg)
		wg.Wait()
		firstSend := time.Since(t1)
		if snd2.failed.Load() > 0 {
			b.Fatalf("send after restart: %v", snd2.err)
		}
		b.ReportMetric(restart.Seconds(), "restart-s")
		b.Logf("restart with %d lite topics: listening after %v, first send answered after %v",
			n, restart.Round(time.Millisecond), firstSend.Round(time.Millisecond))
		logLines(b, dir, "lite topics restored", "recover", "snapshot", "store stopped", "broker stopped", "store started")
		r := s2.resources(b)
		r.Report(b, "restarted-")
		// After the clean stop every consume queue is flushed: its blocks
		// (file and directories) are what a lite topic costs on disk.
		b.ReportMetric((r.CQMB-before.CQMB)*(1<<20)/float64(n), "diskB/litetopic")
		b.ReportMetric((r.RSSMB-before.RSSMB)*(1<<20)/float64(n), "restarted-rssB/litetopic")
		s2.stop(b)
	}
}

// sendFor sends for -lite.chunk to the (topic, lite topic) pairs next
// yields and returns the acknowledged rate.
func sendFor(tb testing.TB, snd *sender, next func() (string, string)) float64 {
	ctx := context.Background()
	var wg sync.WaitGroup
	a0 := snd.acked.Load()
	t0 := time.Now()
	for time.Since(t0) < *chunkFlag {
		for range 64 {
			topic, lite := next()
			snd.send(ctx, topic, lite, 0, &wg)
		}
	}
	wg.Wait()
	el := time.Since(t0)
	if snd.failed.Load() > 0 {
		tb.Fatalf("%d sends failed: %v", snd.failed.Load(), snd.err)
	}
	return float64(snd.acked.Load()-a0) / el.Seconds()
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func roundAll(v []float64) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

// logLines logs the lines of the broker logs in dir that contain one of
// the words (the store's and the lite registry's restart figures).
func logLines(tb testing.TB, dir string, words ...string) {
	logs, _ := filepath.Glob(filepath.Join(dir, "apogee-*.log"))
	for _, f := range logs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			for _, w := range words {
				if strings.Contains(l, w) {
					tb.Logf("%s", l)
					break
				}
			}
		}
	}
}
