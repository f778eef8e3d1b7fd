package natsbench

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/bits"
	"os"
	"testing"
	"time"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/testutil"
)

// chunkContext bounds one measured chunk: its planned time plus a generous
// margin for the last acknowledgements.
func chunkContext(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d+time.Minute)
}

// checkStored fails unless each system stores at least the messages it
// acknowledged; NATS, whose client never retries a publish, exactly as many.
func checkStored(tb testing.TB, systems [2]system, acked [2]int64) {
	tb.Helper()
	ctx := testutil.Context(tb, time.Minute)
	for k, s := range systems {
		var got int64
		var err error
		ok := func() bool {
			got, err = s.stored(ctx)
			return err == nil && got >= acked[k]
		}
		deadline := time.Now().Add(30 * time.Second)
		for !ok() && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond) // the broker indexes asynchronously; bounded by deadline
		}
		switch {
		case err != nil:
			tb.Fatalf("%s: stored count: %v", s.name(), err)
		case got < acked[k]:
			tb.Fatalf("%s stores %d messages but acknowledged %d", s.name(), got, acked[k])
		case got > acked[k] && s.name() == "nats":
			tb.Fatalf("nats stores %d messages but acknowledged %d", got, acked[k])
		case got > acked[k]:
			tb.Logf("%s stores %d messages for %d acknowledged (client retries)", s.name(), got, acked[k])
		}
	}
}

// benchPublish compares publishing with workers goroutines, synchronously
// (window 0) or with window sends in flight in total. Each system first
// publishes unmeasured for -warmup.
func benchPublish(b *testing.B, durable bool, workers, window int, baseline func(), apogeeOpts ...client.ProducerOpt) ([2]system, [2]tally) {
	systems := [2]system{newApogee(b, durable, apogeeOpts...), newNATS(b, durable, window)}
	var acked [2]int64
	for k, s := range systems {
		ctx, cancel := chunkContext(*warmupFlag)
		n, _, err := publishLoad(ctx, s, load{workers: workers, window: window, dur: *warmupFlag})
		cancel()
		if err != nil {
			b.Fatalf("warm-up: %v", err)
		}
		acked[k] += n
	}
	tallies := rounds(b, systems, baseline, func(s system, t *tally) {
		measure(b, s, t, func() (int64, time.Duration, error) {
			ctx, cancel := chunkContext(*chunkFlag)
			defer cancel()
			var lat time.Duration
			n, wall, err := publishLoad(ctx, s, load{workers: workers, window: window, dur: *chunkFlag, latency: &lat})
			t.latency += lat
			return n, wall, err
		})
	})
	for k := range systems {
		acked[k] += tallies[k].msgs
	}
	checkStored(b, systems, acked)
	return systems, tallies
}

// BenchmarkPublishSync: 4 goroutines each send a 1 KiB message and wait for
// its acknowledgement (Producer.Send vs jetstream.Publish), on each
// server's default (asynchronous) flushing.
func BenchmarkPublishSync(b *testing.B) {
	b.Run("workers=4", func(b *testing.B) { benchPublish(b, false, 4, 0, nil) })
}

// BenchmarkPublishPipelined: 4 goroutines keep 1024 sends in flight in
// total (Producer.SendAsync vs jetstream.PublishAsync), default flushing.
func BenchmarkPublishPipelined(b *testing.B) {
	b.Run("workers=4/window=1024", func(b *testing.B) { benchPublish(b, false, 4, 1024, nil) })
}

// BenchmarkPublishAutoBatch: the pipelined case with the Apogee producer's
// auto-batching on (WithAutoBatch, RocketMQ's defaults: batchMaxDelayMs 10,
// batchMaxBytes 32 KiB), reported beside the default rows, never instead.
// NATS runs as in the pipelined case (its client has no batching option).
// window=1: one send in flight at a time, so each message waits the batch
// delay alone: the latency auto-batching adds at low load
// (*-mean-latency-ms).
func BenchmarkPublishAutoBatch(b *testing.B) {
	for _, c := range []struct{ workers, window int }{{4, 1024}, {1, 1}} {
		b.Run(fmt.Sprintf("workers=%d/window=%d", c.workers, c.window), func(b *testing.B) {
			benchPublish(b, false, c.workers, c.window, nil, client.WithAutoBatch(true))
		})
	}
}

// BenchmarkPublishDurable: synchronous publishers whose acknowledgement
// means "on disk": Apogee with flushDiskType=SYNC_FLUSH (group commit) vs
// JetStream with sync_interval: always (fsync after every write). The raw
// disk rate (1 KiB overwrite + fdatasync in a loop, see fsyncBaseline) is
// measured in the same run, for a quarter of -chunk at the start of every
// round. The disk's completed flush requests are counted per message
// (*-disk-flushes/msg: about 1 without group commit, well under 1 with
// it); with one publisher each server must show one per message.
func BenchmarkPublishDurable(b *testing.B) {
	for _, publishers := range []int{1, 64} {
		b.Run(fmt.Sprintf("publishers=%d", publishers), func(b *testing.B) {
			fb := newFsyncBaseline(b, b.TempDir())
			systems, t := benchPublish(b, true, publishers, 0, func() { fb.run(b, *chunkFlag/4) })
			disk := fb.rate()
			b.ReportMetric(disk, "disk-fsync/s")
			b.Logf("baseline: %.0f overwrite+fdatasync/s on this disk", disk)
			if _, ok := diskFlushes(os.TempDir()); !ok {
				return
			}
			for k, s := range systems {
				perMsg := float64(t[k].flushes) / float64(max(t[k].msgs, 1))
				b.ReportMetric(perMsg, s.name()+"-disk-flushes/msg")
				// One synchronous publisher: every acknowledged message
				// needs its own flush. Other processes' flushes only add, so
				// this fails only if the server does not sync.
				if publishers == 1 && perMsg < 0.5 {
					b.Fatalf("%s: %.2f disk flushes per durable message with one publisher: not syncing", s.name(), perMsg)
				}
			}
		})
	}
}

// drainCheck returns the per-message check of a drain of n messages whose
// bodies carry their index: right size, index in range, no duplicate. With
// the drain stopping at exactly n messages, that proves every message came.
func drainCheck(n int64) (seen func([]byte) error, complete func() bool) {
	words := make([]uint64, (n+63)/64)
	seen = func(b []byte) error {
		if len(b) != bodySize {
			return fmt.Errorf("body of %d bytes, want %d", len(b), bodySize)
		}
		i := binary.BigEndian.Uint64(b)
		if i >= uint64(n) {
			return fmt.Errorf("message index %d out of range [0,%d)", i, n)
		}
		w, bit := i/64, uint64(1)<<(i%64)
		if words[w]&bit != 0 {
			return fmt.Errorf("message %d delivered twice", i)
		}
		words[w] |= bit
		return nil
	}
	complete = func() bool {
		var c int64
		for _, w := range words {
			c += int64(bits.OnesCount64(w))
		}
		return c == n
	}
	return seen, complete
}

// BenchmarkConsume: -drain-msgs messages are published (unmeasured) to
// each system; every round then drains all of them from the start with
// fresh consumers (a new group / a new ephemeral consumer each time), one
// application goroutine polling (LitePullConsumer.Poll vs Messages().Next),
// each client with its default prefetch, until -chunk is used up.
func BenchmarkConsume(b *testing.B) {
	n := *drainFlag
	b.Run(fmt.Sprintf("msgs=%d", n), func(b *testing.B) {
		systems := [2]system{newApogee(b, false), newNATS(b, false, 256)}
		for _, s := range systems {
			ctx, cancel := chunkContext(5 * time.Minute)
			got, _, err := publishLoad(ctx, s, load{workers: 4, window: 256, dur: 5 * time.Minute, limit: n, body: body})
			cancel()
			if err != nil {
				b.Fatalf("pre-publish: %v", err)
			}
			if got != n {
				b.Fatalf("%s: pre-published %d of %d", s.name(), got, n)
			}
		}
		checkStored(b, systems, [2]int64{n, n})
		rounds(b, systems, nil, func(s system, t *tally) {
			measure(b, s, t, func() (int64, time.Duration, error) {
				var msgs int64
				var wall time.Duration
				for wall < *chunkFlag {
					ctx, cancel := chunkContext(*chunkFlag)
					seen, complete := drainCheck(n)
					d, err := s.drain(ctx, n, seen)
					cancel()
					if err != nil {
						return 0, 0, fmt.Errorf("%s drain: %w", s.name(), err)
					}
					if !complete() {
						return 0, 0, fmt.Errorf("%s drain: not every message arrived", s.name())
					}
					msgs += n
					wall += d
				}
				return msgs, wall, nil
			})
		})
	})
}

// TestHarness runs every case in miniature against both servers, so that a
// plain `go test` proves the harness works (and fails on a broken setup)
// without the cost of a benchmark run.
func TestHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs apogee and nats-server")
	}
	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprintf("durable=%v", durable), func(t *testing.T) {
			systems := [2]system{newApogee(t, durable), newNATS(t, durable, 64)}
			var acked [2]int64
			for k, s := range systems {
				for _, l := range []load{
					{workers: 2, dur: 200 * time.Millisecond},
					{workers: 2, window: 64, dur: 200 * time.Millisecond},
				} {
					var tl tally
					measure(t, s, &tl, func() (int64, time.Duration, error) {
						ctx, cancel := chunkContext(l.dur)
						defer cancel()
						return publishLoad(ctx, s, l)
					})
					if tl.msgs == 0 || tl.wall <= 0 {
						t.Fatalf("%s %+v: %d messages in %v", s.name(), l, tl.msgs, tl.wall)
					}
					acked[k] += tl.msgs
				}
			}
			checkStored(t, systems, acked)
			if durable {
				return
			}
			for k, s := range systems {
				ctx := testutil.Context(t, time.Minute)
				count := int64(0) // the bodies published here all carry index 0
				d, err := s.drain(ctx, acked[k], func(b []byte) error {
					if len(b) != bodySize {
						return fmt.Errorf("body of %d bytes", len(b))
					}
					count++
					return nil
				})
				if err != nil || d <= 0 || count != acked[k] {
					t.Fatalf("%s drain: %v after %v, %d of %d", s.name(), err, d, count, acked[k])
				}
			}
		})
	}
}

// TestDrainCheck: the consume check rejects duplicates, foreign bodies and
// incomplete drains.
func TestDrainCheck(t *testing.T) {
	seen, complete := drainCheck(3)
	for i := range int64(3) {
		if err := seen(body(i)); err != nil {
			t.Fatal(err)
		}
	}
	if !complete() {
		t.Fatal("3 of 3 not complete")
	}
	if seen(body(1)) == nil {
		t.Fatal("duplicate accepted")
	}
	if seen(body(3)) == nil {
		t.Fatal("out-of-range index accepted")
	}
	if seen(make([]byte, 10)) == nil {
		t.Fatal("short body accepted")
	}
	_, complete = drainCheck(2)
	if complete() {
		t.Fatal("empty drain complete")
	}
}
