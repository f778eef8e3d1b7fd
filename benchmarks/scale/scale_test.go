package scalebench

import (
	"context"
	"flag"
	"fmt"
	"github.com/apogeemq/apogee/internal/testutil"
	"github.com/apogeemq/apogee/internal/testutil/procstat"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

var (
	topics1Flag = flag.Int("scale.topics1", 100000, "topics of 1 queue in the creation benchmarks")
	topics4Flag = flag.Int("scale.topics4", 10000, "topics of 4 queues in the creation benchmarks")
	queuesFlag  = flag.String("scale.queues", "1,1000,10000,100000", "queue counts of the publish benchmark")
	chunkFlag   = flag.Duration("scale.chunk", 2*time.Second, "publishing time per queue count per round")
	windowFlag  = flag.Int("scale.window", 128, "pipelined sends in flight")
	roundsFlag  = flag.Int("scale.rounds", 3, "publish rounds (every queue count once a round)")
	profileFlag = flag.String("scale.profile", "", "directory for broker CPU profiles of the last queue count's publish round and consume (metricsPprofEnable)")
)

// bin is the apogee binary these benchmarks start.
var bin testutil.ApogeeBinary

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	bin.Remove()
	os.Exit(code)
}

// apogeeBin builds cmd/apogee once per test binary.
func apogeeBin(tb testing.TB) string { return bin.Path(tb) }

func freePort(tb testing.TB) int { return testutil.FreePort(tb) }

// server is one `apogee standalone` child.
type server struct {
	child          *testutil.Child
	data           string
	nsPort, brPort int
	nsAddr, broker string
	started        time.Time
	pprofAddr      string // with -scale.profile
}

// startServer runs a standalone process on fixed free ports (a restart
// keeps them) with RocketMQ's defaults.
func startServer(tb testing.TB, data string, nsPort, brPort int) *server {
	tb.Helper()
	s := &server{data: data, nsPort: nsPort, brPort: brPort, started: time.Now(),
		nsAddr: fmt.Sprintf("127.0.0.1:%d", nsPort), broker: fmt.Sprintf("127.0.0.1:%d", brPort)}
	metrics := []string{"--set", "metricsPromExporterPort=0"}
	if *profileFlag != "" {
		port := freePort(tb)
		s.pprofAddr = fmt.Sprintf("127.0.0.1:%d", port)
		metrics = []string{"--set", fmt.Sprintf("metricsPromExporterPort=%d", port), "--set", "metricsPprofEnable=true"}
	}
	args := append([]string{"standalone", "--data", data, "--console-port", "-1",
		"--namesrv-port", strconv.Itoa(nsPort), "--broker-port", strconv.Itoa(brPort), "--grpc-port", "-1",
		"--log-level", "warn", "--set", "brokerIP1=127.0.0.1"}, metrics...)
	s.child = testutil.StartChild(tb, testutil.ChildOptions{
		Ready:   func(line string) bool { return strings.HasPrefix(line, "broker ") },
		Timeout: 10 * time.Minute,
		LogDir:  filepath.Dir(data),
	}, apogeeBin(tb), args...)
	return s
}

// profile records a CPU profile of the broker for d into
// -scale.profile/name.prof in the background; wait for the returned
// channel.
func (s *server) profile(tb testing.TB, name string, d time.Duration) <-chan struct{} {
	done := make(chan struct{})
	if s.pprofAddr == "" {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", s.pprofAddr, max(1, int(d.Seconds())))
		resp, err := http.Get(url)
		if err != nil {
			tb.Logf("profile %s: %v", name, err)
			return
		}
		defer resp.Body.Close()
		f, err := os.Create(filepath.Join(*profileFlag, name+".prof"))
		if err != nil {
			tb.Logf("profile %s: %v", name, err)
			return
		}
		defer f.Close()
		_, _ = io.Copy(f, resp.Body)
	}()
	return done
}

func (s *server) stop(tb testing.TB) {
	tb.Helper()
	if err := s.child.Stop(5 * time.Minute); err != nil {
		tb.Fatalf("apogee standalone after SIGTERM: %v", err)
	}
}

// resources is what the broker process holds and its data dir occupies.
func (s *server) resources(tb testing.TB) procstat.Resources {
	tb.Helper()
	return procstat.Read(s.child.Pid(), s.data)
}

func newAdmin(tb testing.TB, nsAddr string) *admin.Admin {
	tb.Helper()
	a, err := admin.New(admin.WithNameServers(nsAddr), admin.WithTimeout(60*time.Second))
	if err == nil {
		err = a.Start()
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { a.Close() })
	return a
}

func topicName(prefix string, i int) string { return fmt.Sprintf("%s%06d", prefix, i) }

// createTopics creates n topics of q queues, in batches of 1000 or one
// request each, and returns the time of every thousand creates.
func createTopics(tb testing.TB, a *admin.Admin, broker, prefix string, n, q int, batch bool) []time.Duration {
	tb.Helper()
	ctx := context.Background()
	var per []time.Duration
	for from := 0; from < n; from += 1000 {
		to := min(from+1000, n)
		t0 := time.Now()
		if batch {
			tcs := make([]admin.TopicConfig, 0, to-from)
			for i := from; i < to; i++ {
				tcs = append(tcs, admin.TopicConfig{Topic: topicName(prefix, i), ReadQueues: q, WriteQueues: q})
			}
			if err := a.CreateTopics(ctx, tcs, admin.Target{BrokerAddr: broker}); err != nil {
				tb.Fatal(err)
			}
		} else {
			for i := from; i < to; i++ {
				tc := admin.TopicConfig{Topic: topicName(prefix, i), ReadQueues: q, WriteQueues: q}
				if err := a.CreateTopic(ctx, tc, admin.Target{BrokerAddr: broker}); err != nil {
					tb.Fatal(err)
				}
			}
		}
		per = append(per, time.Since(t0))
	}
	return per
}

// BenchmarkCreateTopics: time per create from the first to the last
// thousand (batch: UPDATE_AND_CREATE_TOPIC_LIST of 1000; one by one:
// UPDATE_AND_CREATE_TOPIC each), and what the broker holds afterwards.
func BenchmarkCreateTopics(b *testing.B) {
	cases := []struct {
		name   string
		n, q   int
		batch  bool
		prefix string
	}{
		{"batch/1queue", *topics1Flag, 1, true, "B1T"},
		{"batch/4queues", *topics4Flag, 4, true, "B4T"},
		{"onebyone/1queue", *topics1Flag, 1, false, "O1T"},
		{"onebyone/4queues", *topics4Flag, 4, false, "O4T"},
	}
	for _, c := range cases {
		b.Run(fmt.Sprintf("%s/%d", c.name, c.n), func(b *testing.B) {
			for range b.N {
				dir := b.TempDir()
				s := startServer(b, filepath.Join(dir, "data"), freePort(b), freePort(b))
				a := newAdmin(b, s.nsAddr)
				t0 := time.Now()
				per := createTopics(b, a, s.broker, c.prefix, c.n, c.q, c.batch)
				total := time.Since(t0)
				first, last := per[0], per[len(per)-1]
				b.ReportMetric(float64(first.Microseconds())/1000/float64(min(1000, c.n)), "ms/create-first1k")
				b.ReportMetric(float64(last.Microseconds())/1000/float64(min(1000, c.n)), "ms/create-last1k")
				b.ReportMetric(float64(last)/float64(first), "last/first")
				b.ReportMetric(total.Seconds(), "s-total")
				b.Logf("%d topics x %d queues (%s): %v total, first thousand %v, last %v (x%.2f)",
					c.n, c.q, c.name, total.Round(time.Millisecond), first.Round(time.Millisecond), last.Round(time.Millisecond), float64(last)/float64(first))
				s.resources(b).Report(b, "")
				s.stop(b)
			}
		})
	}
}

// sender pipelines SEND_MESSAGE requests straight to the broker, with an
// explicit topic and queue per message (the broker, not a client's route
// cache, is what is measured).
type sender struct {
	c       *remoting.Client
	broker  string
	body    []byte
	sem     chan struct{}
	failed  atomic.Int64
	acked   atomic.Int64
	busy    atomic.Int64 // SYSTEM_BUSY answers (flow control), resent
	retried atomic.Int64 // transport errors resent
	errMu   sync.Mutex
	err     error
}

func newSender(tb testing.TB, broker string, window int) *sender {
	c := remoting.NewClient(remoting.ClientConfig{})
	if err := c.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return &sender{c: c, broker: broker, body: make([]byte, 1024), sem: make(chan struct{}, window)}
}

func (s *sender) send(ctx context.Context, topic string, q int32, wg *sync.WaitGroup) {
	s.sem <- struct{}{}
	s.sendHeld(ctx, topic, q, wg)
}

// sendHeld sends with a window slot already taken.
func (s *sender) sendHeld(ctx context.Context, topic string, q int32, wg *sync.WaitGroup) {
	h := protocol.SendMessageRequestHeader{ProducerGroup: "scalebench", Topic: topic, QueueID: q,
		BornTimestamp: time.Now().UnixMilli(), Properties: "UNIQ_KEY\x01" + strconv.FormatInt(time.Now().UnixNano(), 16) + "\x02"}
	req := protocol.NewRequest(protocol.SendMessageV2, protocol.EncodeHeader(&h, true), s.body)
	wg.Add(1)
	err := s.c.InvokeAsync(ctx, s.broker, req, func(resp *protocol.Command, err error) {
		if (err == nil && resp.Code == int32(protocol.SystemBusy)) || (err != nil && s.retried.Add(1) < 100000) {
			if err == nil {
				s.busy.Add(1) // the broker's flow control: back off and resend
			}
			// A transport error (a timeout on the loaded machine) is resent
			// too, boundedly; the message may then be stored twice.
			go func() {
				time.Sleep(50 * time.Millisecond) // a 10 ms resend fed the overload it answered
				s.sendHeld(ctx, topic, q, wg)
				wg.Done()
			}()
			return
		}
		defer wg.Done()
		<-s.sem
		if err == nil && resp.Code != int32(protocol.Success) {
			err = fmt.Errorf("send %s-%d: code %d %s", topic, q, resp.Code, resp.Remark)
		}
		if err != nil {
			s.failed.Add(1)
			s.errMu.Lock()
			if s.err == nil {
				s.err = err
			}
			s.errMu.Unlock()
			return
		}
		s.acked.Add(1)
	})
	if err != nil {
		wg.Done()
		<-s.sem
		s.failed.Add(1)
	}
}

// publishFor sends round-robin over the n topics named prefix... for d and
// returns the acknowledged rate and count; next is the round-robin cursor.
func (s *sender) publishFor(tb testing.TB, prefix string, n int, d time.Duration, next *int) (float64, int64) {
	ctx := context.Background()
	var wg sync.WaitGroup
	a0 := s.acked.Load()
	t0 := time.Now()
	for time.Since(t0) < d {
		for k := 0; k < 64; k++ {
			s.send(ctx, topicName(prefix, *next%n), 0, &wg)
			*next++
		}
	}
	wg.Wait()
	el := time.Since(t0)
	if s.failed.Load() > 0 {
		tb.Fatalf("%d sends failed: %v", s.failed.Load(), s.err)
	}
	return float64(s.acked.Load()-a0) / el.Seconds(), s.acked.Load() - a0
}

// cpuTime is the CPU time (user + system) process pid has used, from
// /proc/<pid>/stat (clock ticks of 10 ms); 0 where it cannot be read.
func cpuTime(pid int) time.Duration { return procstat.CPU(pid) }

// writeBehind reads the broker's consume-queue write-behind figures
// (GET_BROKER_RUNTIME_INFO); absent keys read as 0.
func writeBehind(tb testing.TB, a *admin.Admin, broker string) (bytes, peak, writes, units int64) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	info, err := a.BrokerRuntimeInfo(ctx, broker)
	if err != nil {
		tb.Logf("runtime info: %v", err)
		return
	}
	v := func(k string) int64 { n, _ := strconv.ParseInt(info[k], 10, 64); return n }
	return v("consumeQueueWriteBehindBytes"), v("consumeQueueWriteBehindPeakBytes"),
		v("consumeQueueWriteBehindWrites"), v("consumeQueueWriteBehindUnits")
}

// pullAll reads every queue's backlog with pipelined PULL_MESSAGE requests
// and returns messages per second.
func pullAll(tb testing.TB, c *remoting.Client, broker, prefix string, n int, window int) (float64, int64) {
	ctx := context.Background()
	var got atomic.Int64
	sem := make(chan struct{}, window)
	var wg sync.WaitGroup
	var failed atomic.Int64
	var firstErr atomic.Pointer[string]
	var pullQueue func(i int, off int64)
	var retries, moved atomic.Int64
	pullQueue = func(i int, off int64) {
		h := protocol.PullMessageRequestHeader{ConsumerGroup: "scalebench-c", Topic: topicName(prefix, i), QueueID: 0,
			QueueOffset: off, MaxMsgNums: 32, SysFlag: protocol.PullFlagSubscription, Subscription: "*", ExpressionType: "TAG"}
		req := protocol.NewRequest(protocol.PullMessage, protocol.EncodeHeader(&h, false), nil)
		sem <- struct{}{}
		wg.Add(1)
		err := c.InvokeAsync(ctx, broker, req, func(resp *protocol.Command, err error) {
			defer wg.Done()
			<-sem
			if err != nil && retries.Add(1) <= int64(n)+1000 {
				// A timeout on the loaded machine: ask again (bounded).
				wg.Add(1)
				go func() { defer wg.Done(); time.Sleep(100 * time.Millisecond); pullQueue(i, off) }()
				return
			}
			if err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, ptr(err.Error()))
				return
			}
			if resp.Code == int32(protocol.PullOffsetMoved) {
				// The broker's disk-space cleanup deleted the oldest
				// commit-log files (the shared disk above
				// diskMaxUsedSpaceRatio): go on from where the queue
				// starts now, as a consumer does.
				if next, _ := strconv.ParseInt(resp.ExtFields["nextBeginOffset"], 10, 64); next > off {
					moved.Add(1)
					wg.Add(1)
					go func() { defer wg.Done(); pullQueue(i, next) }()
					return
				}
			}
			if resp.Code != int32(protocol.Success) {
				if resp.Code != int32(protocol.PullNotFound) {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, &resp.Remark)
				}
				return // no (more) messages
			}
			next, _ := strconv.ParseInt(resp.ExtFields["nextBeginOffset"], 10, 64)
			if next > off {
				got.Add(next - off)
				wg.Add(1) // before this callback's Done: Wait must not return in between
				go func() { defer wg.Done(); pullQueue(i, next) }()
			}
		})
		if err != nil {
			wg.Done()
			<-sem
			failed.Add(1)
		}
	}
	t0 := time.Now()
	for i := 0; i < n; i++ {
		pullQueue(i, 0)
	}
	wg.Wait()
	el := time.Since(t0)
	if failed.Load() > 0 {
		why := ""
		if p := firstErr.Load(); p != nil {
			why = *p
		}
		tb.Fatalf("%d pulls failed: %s", failed.Load(), why)
	}
	if m := moved.Load(); m > 0 {
		tb.Logf("%d queues: %d pulls moved past messages the disk cleanup deleted", n, m)
	}
	if r := retries.Load(); r > 0 {
		tb.Logf("%d queues: %d pulls asked again after an error", n, r)
	}
	return float64(got.Load()) / el.Seconds(), got.Load()
}

// waitDispatched waits until queue 0 of topic has a message (dispatch
// is in commit-log order: every earlier message is dispatched too).
func waitDispatched(tb testing.TB, c *remoting.Client, broker, topic string) {
	for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		req := protocol.NewRequest(protocol.GetMaxOffset, map[string]string{"topic": topic, "queueId": "0"}, nil)
		resp, err := c.InvokeSync(context.Background(), broker, req)
		if err == nil && resp.Code == int32(protocol.Success) && resp.ExtFields["offset"] != "0" {
			return
		}
	}
	tb.Fatalf("%s never dispatched", topic)
}

// waitQueueDirs waits until the broker's store has n consume-queue
// directories of topics named prefix... (bounded: 15 minutes).
func waitQueueDirs(tb testing.TB, data, prefix string, n int) {
	tb.Helper()
	dir := filepath.Join(data, "broker", "consumequeue")
	for deadline := time.Now().Add(15 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		d, err := os.Open(dir)
		if err != nil {
			continue
		}
		names, _ := d.Readdirnames(-1)
		d.Close()
		got := 0
		for _, name := range names {
			if strings.HasPrefix(name, prefix) {
				got++
			}
		}
		if got >= n {
			return
		}
	}
	tb.Fatalf("the broker never made the %d queue directories %s*", n, prefix)
}

func queueCounts(tb testing.TB) []int {
	var out []int
	for _, f := range strings.Split(*queuesFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			tb.Fatalf("bad -scale.queues %q", *queuesFlag)
		}
		out = append(out, n)
	}
	return out
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// BenchmarkPublishQueues: pipelined 1 KiB sends spread round-robin over 1,
// 1,000, 10,000 and 100,000 queues (topics of one queue), the queue counts
// interleaved in every round (rounds = b.N) so each ratio compares rates
// measured minutes apart at most; then every queue's backlog is consumed;
// then the broker is restarted with all those queues and the time to the
// first successful send is measured.
func BenchmarkPublishQueues(b *testing.B) {
	counts := queueCounts(b)
	dir := b.TempDir()
	s := startServer(b, filepath.Join(dir, "data"), freePort(b), freePort(b))
	a := newAdmin(b, s.nsAddr)
	for _, n := range counts {
		t0 := time.Now()
		createTopics(b, a, s.broker, fmt.Sprintf("P%d-", n), n, 1, true)
		b.Logf("created %d topics in %v", n, time.Since(t0).Round(time.Millisecond))
	}
	snd := newSender(b, s.broker, *windowFlag)
	cursor := make(map[int]*int)
	for _, n := range counts {
		cursor[n] = new(int)
		// First writes: one message to every queue (creates its files).
		t0 := time.Now()
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			snd.send(context.Background(), topicName(fmt.Sprintf("P%d-", n), i), 0, &wg)
		}
		wg.Wait()
		acked := time.Since(t0)
		waitDispatched(b, snd.c, s.broker, topicName(fmt.Sprintf("P%d-", n), n-1))
		dispatched := time.Since(t0)
		// The broker makes new queues' files in the background (a few
		// journaled namespace operations each); the rounds measure
		// publishing to existing queues, so wait for them.
		waitQueueDirs(b, s.data, fmt.Sprintf("P%d-", n), n)
		b.Logf("%d queues: first message to each acknowledged at %.0f msgs/s, dispatched at %.0f msgs/s, files made at %.0f queues/s",
			n, float64(n)/acked.Seconds(), float64(n)/dispatched.Seconds(), float64(n)/time.Since(t0).Seconds())
	}
	rates := make(map[int][]float64)
	cpu := make(map[int]time.Duration) // broker CPU during each count's rounds
	msgs := make(map[int]int64)
	pid := s.child.Pid()
	cpu0 := cpuTime(pid)
	b.ResetTimer()
	for r := 0; r < *roundsFlag; r++ {
		for _, n := range counts {
			var prof <-chan struct{}
			if r == *roundsFlag-1 && n == counts[len(counts)-1] {
				prof = s.profile(b, fmt.Sprintf("publish-%d", n), *chunkFlag)
			}
			c0 := cpuTime(pid)
			rate, got := snd.publishFor(b, fmt.Sprintf("P%d-", n), n, *chunkFlag, cursor[n])
			cpu[n] += cpuTime(pid) - c0
			msgs[n] += got
			rates[n] = append(rates[n], rate)
			if prof != nil {
				<-prof
			}
		}
	}
	b.StopTimer()
	cpuAll := cpuTime(pid) - cpu0
	base := median(rates[counts[0]])
	perMsg := func(n int) float64 { return float64(cpu[n].Microseconds()) / float64(max(msgs[n], 1)) }
	var msgsAll int64
	for _, n := range counts {
		m := median(rates[n])
		msgsAll += msgs[n]
		b.ReportMetric(m, fmt.Sprintf("msgs/s-%dq", n))
		b.ReportMetric(m/base, fmt.Sprintf("x%dq/%dq", n, counts[0]))
		// Broker CPU (user + system) during this count's rounds over the
		// messages acknowledged in them; background work (flushes, the
		// write-behind's timed writes) counts in whichever round it runs.
		b.ReportMetric(perMsg(n), fmt.Sprintf("cpu-us/msg-%dq", n))
		b.Logf("%6d queues: %.0f msgs/s median of %d rounds %v, x%.2f of %d queue(s); broker CPU %.1f us/msg (x%.2f)",
			n, m, len(rates[n]), rates[n], m/base, counts[0], perMsg(n), perMsg(n)/perMsg(counts[0]))
	}
	b.ReportMetric(float64(cpuAll.Microseconds())/float64(max(msgsAll, 1)), "cpu-us/msg-all")
	wbBytes, wbPeak, wbWrites, wbUnits := writeBehind(b, a, s.broker)
	b.ReportMetric(float64(wbPeak)/(1<<20), "writebehind-peak-MiB")
	b.Logf("consume-queue write-behind: %.1f MiB buffered now, %.1f MiB at most, %d writes of %d units (%.1f a write)",
		float64(wbBytes)/(1<<20), float64(wbPeak)/(1<<20), wbWrites, wbUnits, float64(wbUnits)/float64(max(wbWrites, 1)))
	b.ReportMetric(float64(snd.busy.Load()), "busy-resends")
	b.ReportMetric(float64(snd.retried.Load()), "error-resends")
	s.resources(b).Report(b, "after-publish-")

	c := remoting.NewClient(remoting.ClientConfig{})
	if err := c.Start(); err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var crates []float64
	for _, n := range counts {
		var prof <-chan struct{}
		if n >= 10000 || n == counts[len(counts)-1] {
			prof = s.profile(b, fmt.Sprintf("consume-%d", n), 5*time.Second)
		}
		rate, got := pullAll(b, c, s.broker, fmt.Sprintf("P%d-", n), n, *windowFlag)
		if prof != nil {
			<-prof
		}
		crates = append(crates, rate)
		b.ReportMetric(rate, fmt.Sprintf("consume-msgs/s-%dq", n))
		b.Logf("%6d queues: consumed %d messages at %.0f msgs/s, x%.2f of %d queue(s)", n, got, rate, rate/crates[0], counts[0])
	}
	s.resources(b).Report(b, "after-consume-")

	// Restart with every queue: time from exec to the first acknowledged send.
	t1 := time.Now()
	s.stop(b)
	b.ReportMetric(time.Since(t1).Seconds(), "stop-s")
	b.Logf("clean stop with %d queues: %v", sum(counts), time.Since(t1).Round(time.Millisecond))
	t0 := time.Now()
	firstSend := make(chan time.Duration, 1)
	go func() {
		cl := remoting.NewClient(remoting.ClientConfig{})
		if cl.Start() != nil {
			return
		}
		defer cl.Close()
		for time.Since(t0) < 5*time.Minute {
			h := protocol.SendMessageRequestHeader{ProducerGroup: "scalebench", Topic: topicName(fmt.Sprintf("P%d-", counts[len(counts)-1]), 0),
				BornTimestamp: time.Now().UnixMilli()}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			resp, err := cl.InvokeSync(ctx, s.broker, protocol.NewRequest(protocol.SendMessageV2, protocol.EncodeHeader(&h, true), []byte("x")))
			cancel()
			if err == nil && resp.Code == int32(protocol.Success) {
				firstSend <- time.Since(t0)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	s2 := startServer(b, s.data, s.nsPort, s.brPort)
	select {
	case d := <-firstSend:
		b.ReportMetric(d.Seconds(), "restart-s-to-first-send")
		b.Logf("restart with %d queues: first successful send %v after exec", sum(counts), d.Round(time.Millisecond))
	case <-time.After(5 * time.Minute):
		b.Fatal("no successful send within 5 minutes of the restart")
	}
	s2.resources(b).Report(b, "after-restart-")
	s2.stop(b)
}

func ptr(s string) *string { return &s }

func sum(v []int) int {
	n := 0
	for _, x := range v {
		n += x
	}
	return n
}
