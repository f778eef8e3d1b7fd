package natsbench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/testutil"
)

// The many-subjects comparison of issue 10 (benchmarks/scale has the
// Apogee-only figures): pipelined 1 KiB publishes spread round-robin over
// N Apogee topics of one queue and over N subjects of one JetStream stream,
// for each N of -subjects, the counts and the two systems interleaved in
// every round; then each system reads back every count's backlog.
//
//	go test -run '^$' -bench ManySubjects -benchtime 1x -timeout 60m ./ -args -subjects=1,1000,10000,100000

var (
	subjectsFlag     = flag.String("subjects", "1,1000,10000,100000", "ManySubjects: subject (= Apogee queue) counts")
	subjectRounds    = flag.Int("subject-rounds", 3, "ManySubjects: rounds (every count and system once a round)")
	subjectWindowFlg = flag.Int("subject-window", 128, "ManySubjects: publishes in flight")
)

// manyPublisher publishes one message to target i of a count, pipelined.
type manyPublisher interface {
	name() string
	// begin sets the callback every later send's outcome is reported to
	// (once per send).
	begin(done func(error))
	// send publishes to target i of the count-n set.
	send(n, i int)
}

// apogeeMany sends SEND_MESSAGE straight to the broker with an explicit
// topic and queue (the broker is measured, not a client's route cache).
type apogeeMany struct {
	c      *remoting.Client
	broker string
	body   []byte
	done   func(error)
}

func manyTopic(n, i int) string { return fmt.Sprintf("S%d-%06d", n, i) }

func (a *apogeeMany) name() string { return "apogee" }

func (a *apogeeMany) begin(done func(error)) { a.done = done }

func (a *apogeeMany) send(n, i int) {
	done := a.done
	h := protocol.SendMessageRequestHeader{ProducerGroup: "subjects", Topic: manyTopic(n, i), QueueID: 0,
		BornTimestamp: time.Now().UnixMilli(), Properties: "UNIQ_KEY\x01" + strconv.FormatInt(time.Now().UnixNano(), 16) + "\x02"}
	req := protocol.NewRequest(protocol.SendMessageV2, protocol.EncodeHeader(&h, true), a.body)
	var resend func()
	cb := func(resp *protocol.Command, err error) {
		if err == nil && resp.Code == int32(protocol.SystemBusy) {
			time.AfterFunc(50*time.Millisecond, resend) // the broker's flow control
			return
		}
		if err == nil && resp.Code != int32(protocol.Success) {
			err = fmt.Errorf("send %s: code %d %s", h.Topic, resp.Code, resp.Remark)
		}
		done(err)
	}
	resend = func() {
		if err := a.c.InvokeAsync(context.Background(), a.broker, req, cb); err != nil {
			done(err)
		}
	}
	resend()
}

// natsMany publishes to subject m.<n>.<i> of one stream with PublishAsync;
// the library's ack and error handlers report to done.
type natsMany struct {
	js   jetstream.JetStream
	done atomic.Pointer[func(error)]
}

func (s *natsMany) name() string { return "nats" }

func (s *natsMany) begin(done func(error)) { s.done.Store(&done) }

func (s *natsMany) send(n, i int) {
	if _, err := s.js.PublishAsync(fmt.Sprintf("m.%d.%d", n, i), benchBody1K); err != nil {
		(*s.done.Load())(err)
	}
}

var benchBody1K = make([]byte, 1024)

// publishMany sends round-robin over count n for d with window in flight
// and returns the acknowledged rate; cursor carries the round-robin.
func publishMany(tb testing.TB, p manyPublisher, n int, d time.Duration, window int, cursor *int) float64 {
	sem := make(chan struct{}, window)
	var wg sync.WaitGroup
	var acked atomic.Int64
	var fail firstError
	p.begin(func(err error) {
		if err != nil {
			fail.set(err)
		} else {
			acked.Add(1)
		}
		<-sem
		wg.Done()
	})
	t0 := time.Now()
	for time.Since(t0) < d {
		for k := 0; k < 64; k++ {
			sem <- struct{}{}
			wg.Add(1)
			p.send(n, *cursor%n)
			*cursor++
		}
	}
	wg.Wait()
	if err := fail.get(); err != nil {
		tb.Fatalf("%s, %d subjects: %v", p.name(), n, err)
	}
	return float64(acked.Load()) / time.Since(t0).Seconds()
}

// firstAll publishes one message to every target of count n.
func firstAll(tb testing.TB, p manyPublisher, n, window int) time.Duration {
	t0 := time.Now()
	cursor := 0
	sem := make(chan struct{}, window)
	var wg sync.WaitGroup
	var fail firstError
	p.begin(func(err error) {
		if err != nil {
			fail.set(err)
		}
		<-sem
		wg.Done()
	})
	for cursor < n {
		sem <- struct{}{}
		wg.Add(1)
		p.send(n, cursor)
		cursor++
	}
	wg.Wait()
	if err := fail.get(); err != nil {
		tb.Fatalf("%s first messages: %v", p.name(), err)
	}
	return time.Since(t0)
}

// pullApogee reads every queue of count n with pipelined PULL_MESSAGE.
func pullApogee(tb testing.TB, c *remoting.Client, broker string, n, window int) (int64, time.Duration) {
	var got atomic.Int64
	sem := make(chan struct{}, window)
	var wg sync.WaitGroup
	var fail firstError
	var pull func(i int, off int64)
	pull = func(i int, off int64) {
		h := protocol.PullMessageRequestHeader{ConsumerGroup: "subjects-c", Topic: manyTopic(n, i), QueueID: 0,
			QueueOffset: off, MaxMsgNums: 32, SysFlag: protocol.PullFlagSubscription, Subscription: "*", ExpressionType: "TAG"}
		req := protocol.NewRequest(protocol.PullMessage, protocol.EncodeHeader(&h, false), nil)
		sem <- struct{}{}
		wg.Add(1)
		err := c.InvokeAsync(context.Background(), broker, req, func(resp *protocol.Command, err error) {
			defer wg.Done()
			<-sem
			if err != nil {
				fail.set(err)
				return
			}
			if resp.Code != int32(protocol.Success) {
				if resp.Code != int32(protocol.PullNotFound) {
					fail.set(fmt.Errorf("pull: code %d %s", resp.Code, resp.Remark))
				}
				return
			}
			next, _ := strconv.ParseInt(resp.ExtFields["nextBeginOffset"], 10, 64)
			if next > off {
				got.Add(next - off)
				wg.Add(1) // before this callback's Done: Wait must not return in between
				go func() { defer wg.Done(); pull(i, next) }()
			}
		})
		if err != nil {
			wg.Done()
			<-sem
			fail.set(err)
		}
	}
	t0 := time.Now()
	for i := 0; i < n; i++ {
		pull(i, 0)
	}
	wg.Wait()
	if err := fail.get(); err != nil {
		tb.Fatal(err)
	}
	return got.Load(), time.Since(t0)
}

// pullNATS reads the subjects m.<n>.> with a fresh ephemeral pull consumer
// (AckNone), until want messages arrived.
func pullNATS(tb testing.TB, js jetstream.JetStream, n int, want int64) time.Duration {
	ctx := testutil.Context(tb, 10*time.Minute)
	t0 := time.Now()
	cons, err := js.CreateConsumer(ctx, "MANY", jetstream.ConsumerConfig{
		AckPolicy: jetstream.AckNonePolicy, DeliverPolicy: jetstream.DeliverAllPolicy, FilterSubject: fmt.Sprintf("m.%d.>", n),
	})
	if err != nil {
		tb.Fatal(err)
	}
	it, err := cons.Messages()
	if err != nil {
		tb.Fatal(err)
	}
	defer it.Stop()
	for got := int64(0); got < want; got++ {
		if _, err := it.Next(); err != nil {
			tb.Fatalf("nats: next after %d of %d: %v", got, want, err)
		}
	}
	return time.Since(t0)
}

func medianOf(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// procFDsRSS reads a process's open files and RSS (MiB).
func procFDsRSS(pid int) (int, float64) {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	var rss float64
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				rss = kb / 1024
			}
		}
	}
	return len(ents), rss
}

// BenchmarkManySubjects: see the comment at the top of this file. Rates
// are medians over the rounds; ratios compare each system with its own
// 1-subject rate and NATS with Apogee at the same count, within this run.
func BenchmarkManySubjects(b *testing.B) {
	var counts []int
	for _, f := range strings.Split(*subjectsFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("bad -subjects %q", *subjectsFlag)
		}
		counts = append(counts, n)
	}
	window := *subjectWindowFlg
	ctx := testutil.Context(b, 30*time.Minute)

	asrv := startApogee(b, false)
	adm, err := admin.New(admin.WithNameServers(asrv.namesrv), admin.WithTimeout(60*time.Second))
	if err == nil {
		err = adm.Start()
	}
	if err != nil {
		b.Fatal(err)
	}
	defer adm.Close()
	for _, n := range counts {
		for from := 0; from < n; from += 1000 {
			var tcs []admin.TopicConfig
			for i := from; i < min(from+1000, n); i++ {
				tcs = append(tcs, admin.TopicConfig{Topic: manyTopic(n, i), ReadQueues: 1, WriteQueues: 1})
			}
			if err := adm.CreateTopics(ctx, tcs, admin.Target{BrokerAddr: asrv.broker}); err != nil {
				b.Fatal(err)
			}
		}
	}
	rc := remoting.NewClient(remoting.ClientConfig{})
	if err := rc.Start(); err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	ap := &apogeeMany{c: rc, broker: asrv.broker, body: benchBody1K}

	nsrv := startNATS(b, false)
	nc, err := nats.Connect(nsrv.url)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	np := &natsMany{}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(2*window+16),
		jetstream.WithPublishAsyncAckHandler(func(jetstream.JetStream, *nats.Msg, *jetstream.PubAck) { (*np.done.Load())(nil) }),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, _ *nats.Msg, err error) { (*np.done.Load())(err) }))
	if err != nil {
		b.Fatal(err)
	}
	np.js = js
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "MANY", Subjects: []string{"m.>"},
		Storage: jetstream.FileStorage, Replicas: 1}); err != nil {
		b.Fatal(err)
	}
	systems := []manyPublisher{ap, np}
	published := map[string]map[int]int64{"apogee": {}, "nats": {}}
	for _, n := range counts {
		for _, p := range systems {
			d := firstAll(b, p, n, window)
			published[p.name()][n] += int64(n)
			b.Logf("%s, %d subjects: first message to each at %.0f msgs/s", p.name(), n, float64(n)/d.Seconds())
		}
	}
	rates := map[string]map[int][]float64{"apogee": {}, "nats": {}}
	cursors := map[string]map[int]*int{"apogee": {}, "nats": {}}
	for _, p := range systems {
		for _, n := range counts {
			cursors[p.name()][n] = new(int)
		}
	}
	b.ResetTimer()
	for r := 0; r < *subjectRounds; r++ {
		for _, n := range counts {
			order := systems
			if r%2 == 1 {
				order = []manyPublisher{np, ap}
			}
			for _, p := range order {
				before := *cursors[p.name()][n]
				rate := publishMany(b, p, n, *chunkFlag, window, cursors[p.name()][n])
				published[p.name()][n] += int64(*cursors[p.name()][n] - before)
				rates[p.name()][n] = append(rates[p.name()][n], rate)
			}
		}
	}
	b.StopTimer()
	for _, n := range counts {
		am, nm := medianOf(rates["apogee"][n]), medianOf(rates["nats"][n])
		a1, n1 := medianOf(rates["apogee"][counts[0]]), medianOf(rates["nats"][counts[0]])
		b.ReportMetric(am, fmt.Sprintf("apogee-msgs/s-%d", n))
		b.ReportMetric(nm, fmt.Sprintf("nats-msgs/s-%d", n))
		b.Logf("%6d subjects: apogee %.0f msgs/s (x%.2f of %d) rounds %.0f; nats %.0f msgs/s (x%.2f of %d) rounds %.0f; nats/apogee %.2f",
			n, am, am/a1, counts[0], rates["apogee"][n], nm, nm/n1, counts[0], rates["nats"][n], nm/am)
	}
	afd, arss := procFDsRSS(asrv.pid())
	nfd, nrss := procFDsRSS(nsrv.pid())
	b.Logf("after publishing: apogee %d open files, RSS %.0f MiB; nats-server %d open files, RSS %.0f MiB", afd, arss, nfd, nrss)

	for _, n := range counts {
		if n > 1 {
			readOneOfMany(b, rc, asrv.broker, js, n, *cursors["apogee"][n], *cursors["nats"][n])
		}
	}

	for _, n := range counts {
		got, d := pullApogee(b, rc, asrv.broker, n, window)
		want := published["apogee"][n]
		if got < want {
			b.Fatalf("apogee %d subjects: read %d of %d", n, got, want)
		}
		nd := pullNATS(b, js, n, published["nats"][n])
		ar, nr := float64(got)/d.Seconds(), float64(published["nats"][n])/nd.Seconds()
		b.ReportMetric(ar, fmt.Sprintf("apogee-consume-msgs/s-%d", n))
		b.ReportMetric(nr, fmt.Sprintf("nats-consume-msgs/s-%d", n))
		b.Logf("%6d subjects: consumed apogee %d at %.0f msgs/s, nats %d at %.0f msgs/s (nats/apogee %.2f)",
			n, got, ar, published["nats"][n], nr, nr/ar)
	}
}

// oneOfManyReads is how many subjects of a count readOneOfMany reads.
const oneOfManyReads = 10

// readOneOfMany measures what a consumer of one topic among n pays: the
// whole backlog of one subject, read from its start, for oneOfManyReads
// subjects spread over the count, the systems alternating. Apogee reads the
// topic's own consume queue; JetStream creates a consumer filtered to the
// subject over the shared stream (its idiomatic way to read one subject).
// Each read must return exactly the messages published to that subject
// (one from firstAll plus its share of the round-robin: cursor counts the
// round-robin sends of that system).
func readOneOfMany(b *testing.B, c *remoting.Client, broker string, js jetstream.JetStream, n, aCursor, nCursor int) {
	perSubject := func(cursor, i int) int64 {
		k := int64(1 + cursor/n)
		if i < cursor%n {
			k++
		}
		return k
	}
	var at, nt []float64
	var amsgs, nmsgs int64
	for j := 0; j < oneOfManyReads; j++ {
		i := j * n / oneOfManyReads
		readA := func() {
			want := perSubject(aCursor, i)
			got, d := readOneApogee(b, c, broker, manyTopic(n, i))
			if got != want {
				b.Fatalf("apogee %s: read %d messages, %d were published", manyTopic(n, i), got, want)
			}
			at, amsgs = append(at, d.Seconds()*1000), amsgs+got
		}
		readN := func() {
			want := perSubject(nCursor, i)
			d := readOneNATS(b, js, fmt.Sprintf("m.%d.%d", n, i), want)
			nt, nmsgs = append(nt, d.Seconds()*1000), nmsgs+want
		}
		if j%2 == 0 {
			readA()
			readN()
		} else {
			readN()
			readA()
		}
	}
	am, nm := medianOf(at), medianOf(nt)
	b.ReportMetric(am, fmt.Sprintf("apogee-read-one-ms-%d", n))
	b.ReportMetric(nm, fmt.Sprintf("nats-read-one-ms-%d", n))
	b.Logf("%6d subjects: one subject's backlog read from its start, median of %d: apogee %.3f ms (%.1f msgs each), nats %.3f ms (%.1f msgs each); nats/apogee %.1f",
		n, oneOfManyReads, am, float64(amsgs)/oneOfManyReads, nm, float64(nmsgs)/oneOfManyReads, nm/am)
}

// readOneApogee reads topic's queue 0 from offset 0 to its end with
// sequential PULL_MESSAGE requests (batch 32), as the topic's one consumer
// would, and returns the messages read and the time taken.
func readOneApogee(tb testing.TB, c *remoting.Client, broker, topic string) (int64, time.Duration) {
	ctx := testutil.Context(tb, time.Minute)
	t0 := time.Now()
	var off int64
	for {
		h := protocol.PullMessageRequestHeader{ConsumerGroup: "subjects-one", Topic: topic, QueueID: 0,
			QueueOffset: off, MaxMsgNums: 32, SysFlag: protocol.PullFlagSubscription, Subscription: "*", ExpressionType: "TAG"}
		resp, err := c.InvokeSync(ctx, broker, protocol.NewRequest(protocol.PullMessage, protocol.EncodeHeader(&h, false), nil))
		if err != nil {
			tb.Fatalf("pull %s at %d: %v", topic, off, err)
		}
		if resp.Code == int32(protocol.PullNotFound) {
			return off, time.Since(t0)
		}
		if resp.Code != int32(protocol.Success) {
			tb.Fatalf("pull %s at %d: code %d %s", topic, off, resp.Code, resp.Remark)
		}
		next, _ := strconv.ParseInt(resp.ExtFields["nextBeginOffset"], 10, 64)
		if next <= off || len(resp.Body) == 0 {
			tb.Fatalf("pull %s at %d: next offset %d, %d body bytes", topic, off, next, len(resp.Body))
		}
		off = next
	}
}

// readOneNATS reads the want messages of one subject from the stream's
// start with a fresh ephemeral consumer filtered to it (AckNone) and
// returns the time taken, consumer creation included; the consumer is
// deleted afterwards, outside the time.
func readOneNATS(tb testing.TB, js jetstream.JetStream, subject string, want int64) time.Duration {
	ctx := testutil.Context(tb, time.Minute)
	t0 := time.Now()
	cons, err := js.CreateConsumer(ctx, "MANY", jetstream.ConsumerConfig{
		AckPolicy: jetstream.AckNonePolicy, DeliverPolicy: jetstream.DeliverAllPolicy, FilterSubject: subject,
	})
	if err != nil {
		tb.Fatal(err)
	}
	batch, err := cons.Fetch(int(want), jetstream.FetchMaxWait(30*time.Second))
	if err != nil {
		tb.Fatal(err)
	}
	var got int64
	for range batch.Messages() {
		got++
	}
	d := time.Since(t0)
	if err := batch.Error(); err != nil || got != want {
		tb.Fatalf("nats %s: read %d of %d: %v", subject, got, want, err)
	}
	if err := js.DeleteConsumer(ctx, "MANY", cons.CachedInfo().Name); err != nil {
		tb.Fatal(err)
	}
	return d
}
