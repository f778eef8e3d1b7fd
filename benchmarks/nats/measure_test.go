package natsbench

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

var (
	chunkFlag      = flag.Duration("chunk", 2*time.Second, "measured time per system per round (rounds = b.N, e.g. -benchtime 3x)")
	warmupFlag     = flag.Duration("warmup", 500*time.Millisecond, "unmeasured publishing per system before the first round")
	drainFlag      = flag.Int64("drain-msgs", 100_000, "Consume: messages pre-published and drained by every fresh consumer")
	apogeeConfFlag = flag.String("apogee-conf", "", "extra broker.conf lines for apogee, separated by ';' (tuning experiments; default: RocketMQ defaults)")
	pullBatchFlag  = flag.Int("apogee-pull-batch", 32, "Consume: the LitePullConsumer's pull batch size (RocketMQ default 32; the broker caps it at maxTransferCountOnMessageInMemory)")
	perfFlag       = flag.String("perf", "", "directory: record each measured chunk's server with perf record -g into DIR/<case>.<system>.<n>.data")
)

// bodySize is the message body size of every case.
const bodySize = 1024

// body returns a 1 KiB body whose first 8 bytes hold i (big endian), the
// rest a fixed pattern.
func body(i int64) []byte {
	b := make([]byte, bodySize)
	for j := range b {
		b[j] = byte('a' + j%26)
	}
	binary.BigEndian.PutUint64(b, uint64(i))
	return b
}

// system is one side of the comparison, driven through its own client.
type system interface {
	name() string
	server() *proc
	// publish sends body and returns once the server acknowledged it
	// (stored; durable when the server is configured so).
	publish(ctx context.Context, body []byte) error
	// beginAsync sets the callback publishAsync's acknowledgements run;
	// called before the publishing goroutines start.
	beginAsync(done func(error))
	// publishAsync hands body to the client and returns; done runs once
	// with the outcome.
	publishAsync(ctx context.Context, body []byte) error
	// stored is the number of messages the server holds.
	stored(ctx context.Context) (int64, error)
	// drain reads every message from the start with a fresh consumer until n
	// arrived; see the implementations for what the clock covers.
	drain(ctx context.Context, n int64, seen func([]byte) error) (time.Duration, error)
}

// load is what publishLoad runs.
type load struct {
	workers int                  // client goroutines publishing
	window  int                  // 0: each worker publishes synchronously; else sends in flight over all workers
	dur     time.Duration        // stop issuing after this
	limit   int64                // stop after this many (0: no limit)
	body    func(i int64) []byte // nil: one shared 1 KiB body
	// latency, when not nil, receives the sum over the acknowledged
	// messages of (acknowledgement time - issue time): the sum of the
	// acknowledgement times minus the sum of the issue times, so no
	// message needs an identity in the callback (both clients have one
	// acknowledgement handler). Divided by the count: the mean latency.
	latency *time.Duration
}

// firstError keeps the first error reported.
type firstError struct {
	mu  sync.Mutex
	err error // guarded by mu
}

func (f *firstError) set(err error) {
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
}

func (f *firstError) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// publishLoad runs l against s and returns the acknowledged messages and
// the wall time from the first send to the last acknowledgement. Any
// failed send fails the whole load: a benchmark must not report a rate
// made of errors.
func publishLoad(ctx context.Context, s system, l load) (int64, time.Duration, error) {
	shared := body(0)
	var issued, acked atomic.Int64
	var issuedNs, ackedNs atomic.Int64 // sums of nanoseconds since start (latency)
	start := time.Now()
	var failed firstError
	var stop atomic.Bool
	fail := func(err error) { failed.set(fmt.Errorf("%s: %w", s.name(), err)); stop.Store(true) }
	var sem chan struct{}
	var inflight sync.WaitGroup
	if l.window > 0 {
		sem = make(chan struct{}, l.window)
		s.beginAsync(func(err error) {
			if err != nil {
				fail(err)
			} else {
				if l.latency != nil {
					ackedNs.Add(int64(time.Since(start)))
				}
				acked.Add(1)
			}
			<-sem
			inflight.Done()
		})
	}
	deadline := start.Add(l.dur)
	var wg sync.WaitGroup
	for range l.workers {
		wg.Go(func() {
			for !stop.Load() && ctx.Err() == nil && time.Now().Before(deadline) {
				i := issued.Add(1)
				if l.limit > 0 && i > l.limit {
					return
				}
				b := shared
				if l.body != nil {
					b = l.body(i - 1)
				}
				if sem == nil {
					at := time.Since(start)
					if err := s.publish(ctx, b); err != nil {
						fail(err)
						return
					}
					if l.latency != nil {
						issuedNs.Add(int64(at))
						ackedNs.Add(int64(time.Since(start)))
					}
					acked.Add(1)
					continue
				}
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					return
				}
				inflight.Add(1)
				if l.latency != nil {
					issuedNs.Add(int64(time.Since(start)))
				}
				if err := s.publishAsync(ctx, b); err != nil {
					<-sem
					inflight.Done()
					fail(err)
					return
				}
			}
		})
	}
	wg.Wait()
	drained := make(chan struct{})
	go func() { inflight.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-ctx.Done():
		return 0, 0, fmt.Errorf("%s: %d sends still unacknowledged: %w", s.name(), len(sem), ctx.Err())
	}
	wall := time.Since(start)
	if err := errors.Join(failed.get(), ctx.Err()); err != nil {
		return 0, 0, err
	}
	if l.latency != nil {
		*l.latency = time.Duration(ackedNs.Load() - issuedNs.Load())
	}
	return acked.Load(), wall, nil
}

// tally is one system's measured chunks, summed.
type tally struct {
	msgs   int64
	wall   time.Duration
	srvCPU time.Duration // server process, user + system
	cliCPU time.Duration // this (client) process, user + system
	span   time.Duration // real time of the chunks (wall plus consumer set-up and close)
	others time.Duration // CPU other processes of the machine used during span
	anonKB int64         // largest anonymous RSS of the server seen after a chunk
	// latency sums (ack - issue) over the messages of the chunks that
	// measure it (publish cases); zero otherwise.
	latency time.Duration
	// flushes counts the cache-flush requests the disk under the servers'
	// temp dirs completed during the chunks (every fsync/msync/fdatasync
	// issues one on a write-back disk). Other processes only add to it.
	flushes int64
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measure runs one chunk of s and adds it to t; run returns messages and
// the wall time they took.
func measure(tb testing.TB, s system, t *tally, run func() (int64, time.Duration, error)) {
	tb.Helper()
	stopPerf := startPerf(tb, s)
	flushes0, _ := diskFlushes(os.TempDir())
	before, cli, busy, began := s.server().stats(tb), selfCPU(), machineBusy(), time.Now()
	n, wall, err := run()
	if err != nil {
		tb.Fatal(err)
	}
	span := time.Since(began)
	stopPerf()
	after, cliCPU := s.server().stats(tb), selfCPU()-cli
	flushes1, _ := diskFlushes(os.TempDir())
	srvCPU := after.cpu - before.cpu
	others := max(0, machineBusy()-busy-srvCPU-cliCPU)
	t.msgs += n
	t.wall += wall
	t.srvCPU += srvCPU
	t.cliCPU += cliCPU
	t.others += others
	t.flushes += flushes1 - flushes0
	t.span += span
	t.anonKB = max(t.anonKB, after.anonKB)
	s.server().alive(tb)
	if testing.Verbose() {
		tb.Logf("  chunk %-6s %8d msgs in %5.2fs = %8.0f msgs/s (CPU s: server %.2f, client %.2f, other processes %.2f in %.2fs)",
			s.name(), n, wall.Seconds(), rate(n, wall), srvCPU.Seconds(), cliCPU.Seconds(), others.Seconds(), span.Seconds())
	}
}

// machineBusy is the CPU time all processes of the machine have used
// (/proc/stat: user, nice, system, irq, softirq, steal), to tell how much
// of the machine other processes took during a chunk.
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += v
	}
	return time.Duration(ticks) * time.Second / clockTicks
}

// rounds runs chunk for both systems once per b.Loop iteration, swapping
// which goes first every round (so neither always inherits the other's
// dirty pages or a noisy neighbour's burst), then reports the totals.
// baseline, when not nil, runs first in every round (its own metric is
// the caller's business).
func rounds(b *testing.B, systems [2]system, baseline func(), chunk func(s system, t *tally)) [2]tally {
	var tallies [2]tally
	i := 0
	for b.Loop() {
		if baseline != nil {
			baseline()
		}
		order := []int{0, 1}
		if i%2 == 1 {
			order = []int{1, 0}
		}
		for _, k := range order {
			chunk(systems[k], &tallies[k])
		}
		i++
	}
	report(b, systems, tallies)
	return tallies
}

func rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// report publishes the metrics: throughput of each system and their ratio,
// messages per CPU-second of each server and of the client process, and
// each server's peak RSS over the whole benchmark.
func report(b *testing.B, systems [2]system, t [2]tally) {
	b.Helper()
	var ratePer [2]float64
	for k, s := range systems {
		n := s.name()
		ratePer[k] = rate(t[k].msgs, t[k].wall)
		st := s.server().stats(b)
		b.ReportMetric(ratePer[k], n+"-msgs/s")
		b.ReportMetric(rate(t[k].msgs, t[k].srvCPU), n+"-msgs/srv-cpu-s")
		b.ReportMetric(rate(t[k].msgs, t[k].cliCPU), n+"-msgs/cli-cpu-s")
		b.ReportMetric(float64(st.hwmKB)/1024, n+"-peak-rss-MiB")
		b.ReportMetric(float64(t[k].anonKB)/1024, n+"-anon-rss-MiB")
		if t[k].span > 0 {
			b.ReportMetric(t[k].others.Seconds()/t[k].span.Seconds(), n+"-other-cores")
		}
		if t[k].latency > 0 && t[k].msgs > 0 {
			mean := t[k].latency.Seconds() * 1000 / float64(t[k].msgs)
			b.ReportMetric(mean, n+"-mean-latency-ms")
			b.Logf("%-6s mean latency (issue to acknowledgement) %.3f ms", n, mean)
		}
		b.Logf("%-6s %9d msgs in %6.2fs = %9.0f msgs/s; server CPU %5.2fs (%.1f us/msg), client CPU %5.2fs (%.1f us/msg); server RSS peak %d MiB, anonymous %d MiB",
			n, t[k].msgs, t[k].wall.Seconds(), ratePer[k], t[k].srvCPU.Seconds(), usPer(t[k].srvCPU, t[k].msgs),
			t[k].cliCPU.Seconds(), usPer(t[k].cliCPU, t[k].msgs), st.hwmKB/1024, t[k].anonKB/1024)
	}
	if ratePer[1] > 0 {
		b.ReportMetric(ratePer[0]/ratePer[1], "x-nats")
		b.Logf("apogee / nats = %.2fx", ratePer[0]/ratePer[1])
	}
	// Messages per CPU-second of server and client together: what the
	// throughput ratio would be if both were CPU-bound on a machine of
	// their own (the shared test machine rarely is).
	a, n := rate(t[0].msgs, t[0].srvCPU+t[0].cliCPU), rate(t[1].msgs, t[1].srvCPU+t[1].cliCPU)
	if n > 0 {
		b.ReportMetric(a/n, "x-nats-cpu")
		b.Logf("msgs per CPU-second (server + client): apogee %.0f, nats %.0f = %.2fx", a, n, a/n)
	}
}

func usPer(d time.Duration, n int64) float64 {
	if n == 0 {
		return 0
	}
	return float64(d.Microseconds()) / float64(n)
}

// fsyncBaseline measures the cheapest durable write the disk under dir
// offers: a 1 KiB overwrite inside a preallocated, already synced file,
// then fdatasync (no metadata to commit, unlike an append). Runs
// accumulate; rate is the total. No honest server acknowledges one
// durable message at a time faster than this.
type fsyncBaseline struct {
	f    *os.File
	off  int64 // next write offset, cycling through the file
	n    int64
	wall time.Duration
}

const fsyncBaselineFile = 16 << 20

func newFsyncBaseline(tb testing.TB, dir string) *fsyncBaseline {
	tb.Helper()
	f, err := os.Create(filepath.Join(dir, "fsync-baseline"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = f.Close() })
	if _, err := f.Write(make([]byte, fsyncBaselineFile)); err != nil {
		tb.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		tb.Fatal(err)
	}
	return &fsyncBaseline{f: f}
}

func (fb *fsyncBaseline) run(tb testing.TB, d time.Duration) {
	tb.Helper()
	buf := body(0)
	start := time.Now()
	for time.Since(start) < d {
		if _, err := fb.f.WriteAt(buf, fb.off); err != nil {
			tb.Fatal(err)
		}
		if err := syscall.Fdatasync(int(fb.f.Fd())); err != nil {
			tb.Fatal(err)
		}
		fb.off = (fb.off + int64(len(buf))) % fsyncBaselineFile
		fb.n++
	}
	fb.wall += time.Since(start)
}

func (fb *fsyncBaseline) rate() float64 { return rate(fb.n, fb.wall) }

// startPerf starts `perf record` on s's server when -perf is set and
// returns the function that stops it (SIGINT, so perf writes its file).
func startPerf(tb testing.TB, s system) (stop func()) {
	tb.Helper()
	if *perfFlag == "" {
		return func() {}
	}
	if err := os.MkdirAll(*perfFlag, 0o755); err != nil {
		tb.Fatal(err)
	}
	name := strings.NewReplacer("/", "_", "=", "").Replace(tb.Name())
	var out string
	for i := 1; ; i++ {
		out = filepath.Join(*perfFlag, fmt.Sprintf("%s.%s.%d.data", name, s.name(), i))
		if _, err := os.Stat(out); os.IsNotExist(err) {
			break
		}
	}
	cmd := exec.Command("perf", "record", "-q", "-g", "-F", "999", "-p", strconv.Itoa(s.server().pid()), "-o", out)
	if err := cmd.Start(); err != nil {
		tb.Fatalf("perf: %v", err)
	}
	return func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		err := cmd.Wait() // perf re-raises SIGINT after writing its file
		if st, serr := os.Stat(out); serr != nil || st.Size() == 0 {
			tb.Logf("perf record %s: %v", out, errors.Join(err, serr))
		}
	}
}

// diskFlushes returns the flush requests completed by the block device
// holding dir (/sys/dev/block/MAJ:MIN/stat, field 16, Linux 5.5+); ok is
// false where that is not available.
func diskFlushes(dir string) (n int64, ok bool) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return 0, false
	}
	b, err := os.ReadFile(fmt.Sprintf("/sys/dev/block/%d:%d/stat", unix.Major(st.Dev), unix.Minor(st.Dev)))
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 16 {
		return 0, false
	}
	n, err = strconv.ParseInt(f[15], 10, 64)
	return n, err == nil
}
