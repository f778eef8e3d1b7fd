package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/apogeemq/apogee/client"
)

func init() { register(newBenchCmd) }

// benchFlags are shared by `apogee bench produce` and `bench consume`.
type benchFlags struct {
	namesrv  string
	topic    string
	group    string
	size     int
	threads  int
	mode     string
	duration time.Duration
	count    int64
	json     bool
	inflight int
	from     string
}

func newBenchCmd(g *globalFlags) *cobra.Command {
	bf := &benchFlags{}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure produce or consume throughput and latency against a cluster",
	}
	pf := cmd.PersistentFlags()
	pf.StringVarP(&bf.namesrv, "namesrv", "n", defaultNamesrv(), "name server address(es)")
	pf.StringVarP(&bf.topic, "topic", "t", "BenchmarkTest", "topic")
	pf.IntVar(&bf.threads, "threads", 4, "goroutines sending (produce) or consuming (consume)")
	pf.DurationVar(&bf.duration, "duration", 10*time.Second, "run this long (ignored with --count)")
	pf.Int64Var(&bf.count, "count", 0, "stop after this many messages (0 = use --duration)")
	pf.BoolVar(&bf.json, "json", false, "print a one-line JSON summary as the last line of stdout")
	produce := &cobra.Command{
		Use:   "produce",
		Short: "Send messages as fast as possible",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchProduce(cmd.Context(), g, bf, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	produce.Flags().IntVar(&bf.size, "size", 1024, "message body size, bytes")
	produce.Flags().StringVar(&bf.mode, "mode", "sync", "sync, async or oneway")
	produce.Flags().StringVar(&bf.group, "group", "BENCH_PRODUCER", "producer group")
	produce.Flags().IntVar(&bf.inflight, "inflight", 256, "async mode: sends in flight per goroutine")
	consume := &cobra.Command{
		Use:   "consume",
		Short: "Consume messages as fast as possible (latency = store-to-consume)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchConsume(cmd.Context(), g, bf, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	consume.Flags().StringVar(&bf.group, "group", "BENCH_CONSUMER", "consumer group")
	consume.Flags().StringVar(&bf.from, "from", "last", "where a new group starts: first, last or timestamp (30 minutes ago)")
	cmd.AddCommand(produce, consume)
	return cmd
}

// benchSummary is the final result; its JSON is the last stdout line with
// --json.
type benchSummary struct {
	Mode     string  `json:"mode"`
	Seconds  float64 `json:"seconds"`
	Sent     int64   `json:"sent,omitempty"`
	Received int64   `json:"received,omitempty"`
	Failed   int64   `json:"failed"`
	TPS      float64 `json:"tps"`
	MBps     float64 `json:"mbps"`
	AvgMs    float64 `json:"avg_ms"`
	P50Ms    float64 `json:"p50_ms"`
	P99Ms    float64 `json:"p99_ms"`
	MaxMs    float64 `json:"max_ms"`
}

// meter counts messages and latencies and prints a progress line every
// second until stopped.
type meter struct {
	hist   histogram
	ok     atomic.Int64
	failed atomic.Int64
	bytes  atomic.Int64
	start  time.Time
}

func (m *meter) progress(ctx context.Context, w io.Writer, done <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	prev := m.hist.snapshot()
	prevOK, prevBytes, prevFail := int64(0), int64(0), int64(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case <-t.C:
		}
		cur := m.hist.snapshot()
		win := cur.sub(prev)
		ok, b, f := m.ok.Load(), m.bytes.Load(), m.failed.Load()
		fmt.Fprintf(w, "[%5.0fs] tps=%-9d mb/s=%-8.2f avg=%.3fms p99=%.3fms max=%.3fms failed=%d\n",
			time.Since(m.start).Seconds(), ok-prevOK, float64(b-prevBytes)/(1<<20), win.avgMs(), win.quantile(0.99), float64(win.max)/1000, f-prevFail)
		prev, prevOK, prevBytes, prevFail = cur, ok, b, f
	}
}

func (m *meter) summary(mode string) benchSummary {
	secs := time.Since(m.start).Seconds()
	s := m.hist.snapshot()
	return benchSummary{
		Mode: mode, Seconds: secs, Failed: m.failed.Load(),
		TPS:   float64(m.ok.Load()) / secs,
		MBps:  float64(m.bytes.Load()) / (1 << 20) / secs,
		AvgMs: s.avgMs(), P50Ms: s.quantile(0.5), P99Ms: s.quantile(0.99), MaxMs: float64(s.max) / 1000,
	}
}

func printSummary(w io.Writer, s benchSummary, asJSON bool) error {
	if asJSON {
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(b))
		return err
	}
	n := s.Sent
	what := "sent"
	if s.Mode == "consume" {
		n, what = s.Received, "received"
	}
	_, err := fmt.Fprintf(w, "%s: %d %s, %d failed in %.1fs: %.0f msg/s, %.2f MB/s, latency avg %.3fms p50 %.3fms p99 %.3fms max %.3fms\n",
		s.Mode, n, what, s.Failed, s.Seconds, s.TPS, s.MBps, s.AvgMs, s.P50Ms, s.P99Ms, s.MaxMs)
	return err
}

// benchContext ends after --duration (without --count) or with the parent.
func benchContext(ctx context.Context, bf *benchFlags) (context.Context, context.CancelFunc) {
	if bf.count > 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, bf.duration)
}

func runBenchProduce(parent context.Context, g *globalFlags, bf *benchFlags, stdout, stderr io.Writer) error {
	if bf.size <= 0 || bf.threads <= 0 {
		return fmt.Errorf("--size and --threads must be positive")
	}
	if bf.mode != "sync" && bf.mode != "async" && bf.mode != "oneway" {
		return fmt.Errorf("--mode %q: want sync, async or oneway", bf.mode)
	}
	logger, err := g.logger(stderr)
	if err != nil {
		return err
	}
	p, err := client.NewProducer(bf.group, client.WithNameServers(bf.namesrv), client.WithLogger(logger),
		client.WithCompressOver(0))
	if err != nil {
		return err
	}
	if err := p.Start(); err != nil {
		return err
	}
	defer p.Close()
	body := make([]byte, bf.size)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	// Resolve the route (and auto-create the topic) before timing.
	wctx, wcancel := context.WithTimeout(parent, 10*time.Second)
	_, err = p.Send(wctx, client.NewMessage(bf.topic, body))
	wcancel()
	if err != nil {
		return oneLine(fmt.Errorf("warm-up send: %w", err))
	}

	ctx, cancel := benchContext(parent, bf)
	defer cancel()
	m := &meter{start: time.Now()}
	done := make(chan struct{})
	var pwg sync.WaitGroup
	pwg.Add(1)
	go func() { defer pwg.Done(); m.progress(ctx, stderr, done) }()

	var issued atomic.Int64
	take := func() bool {
		if bf.count > 0 {
			return issued.Add(1) <= bf.count
		}
		return true
	}
	var wg sync.WaitGroup
	for range bf.threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem := make(chan struct{}, bf.inflight)
			var inflight sync.WaitGroup
			defer inflight.Wait()
			// Sends run under their own send timeout, not ctx, so the end
			// of the run does not count in-flight sends as failures.
			sctx := context.WithoutCancel(ctx)
			for ctx.Err() == nil && take() {
				msg := client.NewMessage(bf.topic, body)
				start := time.Now()
				switch bf.mode {
				case "sync":
					if _, err := p.Send(sctx, msg); err != nil {
						m.failed.Add(1)
						continue
					}
				case "oneway":
					if err := p.SendOneway(sctx, msg); err != nil {
						m.failed.Add(1)
						continue
					}
				case "async":
					select {
					case sem <- struct{}{}:
					case <-ctx.Done():
						return
					}
					inflight.Add(1)
					err := p.SendAsync(sctx, msg, func(_ *client.SendResult, err error) {
						defer inflight.Done()
						<-sem
						if err != nil {
							m.failed.Add(1)
							return
						}
						m.hist.record(time.Since(start))
						m.ok.Add(1)
						m.bytes.Add(int64(len(body)))
					})
					if err != nil {
						inflight.Done()
						<-sem
						m.failed.Add(1)
					}
					continue
				}
				m.hist.record(time.Since(start))
				m.ok.Add(1)
				m.bytes.Add(int64(len(body)))
			}
		}()
	}
	wg.Wait()
	close(done)
	pwg.Wait()
	s := m.summary("produce-" + bf.mode)
	s.Sent = m.ok.Load()
	return printSummary(stdout, s, bf.json)
}

func runBenchConsume(parent context.Context, g *globalFlags, bf *benchFlags, stdout, stderr io.Writer) error {
	logger, err := g.logger(stderr)
	if err != nil {
		return err
	}
	from, err := consumeFromOpts(bf.from, "")
	if err != nil {
		return err
	}
	c, err := client.NewPushConsumer(bf.group, append(from, client.WithNameServers(bf.namesrv), client.WithLogger(logger),
		client.WithConsumeGoroutines(bf.threads))...)
	if err != nil {
		return err
	}
	ctx, cancel := benchContext(parent, bf)
	defer cancel()
	m := &meter{}
	err = c.Subscribe(bf.topic, client.TagSelector("*"), func(_ context.Context, msgs []*client.MessageExt) (client.ConsumeResult, error) {
		now := time.Now()
		for _, msg := range msgs {
			m.hist.record(now.Sub(msg.StoreTime))
			m.bytes.Add(int64(len(msg.Body)))
			if n := m.ok.Add(1); bf.count > 0 && n >= bf.count {
				cancel()
			}
		}
		return client.ConsumeSuccess, nil
	})
	if err != nil {
		return err
	}
	m.start = time.Now()
	if err := c.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	var pwg sync.WaitGroup
	pwg.Add(1)
	go func() { defer pwg.Done(); m.progress(ctx, stderr, done) }()
	<-ctx.Done()
	close(done)
	pwg.Wait()
	s := m.summary("consume")
	s.Received = m.ok.Load()
	if err := c.Close(); err != nil {
		logger.Warn("consumer close", "err", err)
	}
	if errors.Is(parent.Err(), context.Canceled) {
		fmt.Fprintln(os.Stderr, "interrupted")
	}
	return printSummary(stdout, s, bf.json)
}
