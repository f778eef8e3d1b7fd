package e2e

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/testutil"
)

// limitedStandalone is `apogee standalone` run under `ulimit -n`.
type limitedStandalone struct {
	child          *testutil.Child
	nsAddr, broker string
}

func (p *limitedStandalone) log() string { return p.child.Logs() }

func startLimitedStandalone(t *testing.T, bin, data string, nofile int) *limitedStandalone {
	t.Helper()
	script := fmt.Sprintf("ulimit -n %d && exec %s standalone --data %s --namesrv-port 0 --broker-port 0 --grpc-port -1 --console-port -1 --log-level info --set metricsPromExporterPort=0",
		nofile, bin, data)
	var a testutil.Addrs
	c := testutil.StartChild(t, testutil.ChildOptions{Ready: func(line string) bool {
		a.Scan(line)
		return a.Namesrv != "" && a.Broker != ""
	}}, "/bin/sh", "-c", script)
	return &limitedStandalone{child: c, nsAddr: a.Namesrv, broker: a.Broker}
}

// stop sends SIGTERM and requires a clean exit.
func (p *limitedStandalone) stop(t *testing.T) {
	t.Helper()
	if err := p.child.Stop(20 * time.Second); err != nil {
		t.Fatalf("standalone after SIGTERM: %v\n%s", err, p.log())
	}
}

// TestDescriptorLimit runs a standalone process under `ulimit -n 256` with
// 1,200 queues holding messages (far more queues than descriptors: no file
// descriptor is kept per queue), then floods its broker port with
// connections: the broker refuses those past its headroom with a log
// line, while the name server keeps answering, an established producer
// keeps sending and an established consumer keeps reading; a restart under
// the same limit succeeds and serves the same queues.
func TestDescriptorLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the apogee binary")
	}
	const nofile = 256
	t0 := time.Now()
	bin := buildApogee(t)
	data := t.TempDir()
	p := startLimitedStandalone(t, bin, data, nofile)
	rlog.SetLogLevel("error")
	ctx := testutil.Context(t, 90*time.Second)

	a, err := admin.New(admin.WithNameServers(p.nsAddr), admin.WithLogger(testutil.Logger(t)))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	const topics, queues = 300, 4
	var tcs []admin.TopicConfig
	for i := 0; i < topics; i++ {
		tcs = append(tcs, admin.TopicConfig{Topic: fmt.Sprintf("Lim%03d", i), ReadQueues: queues, WriteQueues: queues})
	}
	if err := a.CreateTopics(ctx, tcs, admin.Target{BrokerAddr: p.broker}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*time.Second, func() bool {
		_, err := a.TopicRoute(ctx, tcs[len(tcs)-1].Topic)
		return err == nil
	}, "batch-created topics never routed")

	prod := newProducer(t, p.nsAddr)
	var sendWG sync.WaitGroup
	errs := make(chan error, topics*queues)
	for w := 0; w < 8; w++ {
		sendWG.Add(1)
		go func() {
			defer sendWG.Done()
			for i := w; i < topics; i += 8 {
				for q := 0; q < queues; q++ { // round-robin: every queue of the topic
					if _, err := prod.SendSync(ctx, primitive.NewMessage(tcs[i].Topic, []byte("m"))); err != nil {
						errs <- fmt.Errorf("%s: %w", tcs[i].Topic, err)
						return
					}
				}
			}
		}()
	}
	sendWG.Wait()
	close(errs)
	t.Logf("%d sends done at %v", topics*queues, time.Since(t0))
	for err := range errs {
		t.Fatalf("send with %d queues under ulimit -n %d: %v\n%s", topics*queues, nofile, err, p.log())
	}

	pc, err := client.NewPullConsumer(uniqueName(t, "cg"), client.WithNameServers(p.nsAddr), client.WithLogger(testutil.Logger(t)))
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	mqs, err := pc.FetchQueues(ctx, tcs[0].Topic)
	if err != nil || len(mqs) != queues {
		t.Fatalf("fetch queues: %v %v", mqs, err)
	}
	pull := func(when string) {
		t.Helper()
		res, err := pc.Pull(ctx, mqs[0], client.TagSelector("*"), 0, 8)
		if err != nil || res.Status != client.PullFound {
			t.Fatalf("pull %s: %+v %v", when, res, err)
		}
	}
	pull("before the flood")

	// Flood: connections beyond the headroom are closed by the broker at
	// once.
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	refused := 0
	for i := 0; i < nofile; i++ {
		c, err := net.DialTimeout("tcp", p.broker, 2*time.Second)
		if err != nil {
			refused++
			continue
		}
		conns = append(conns, c)
	}
	time.Sleep(300 * time.Millisecond) // the broker's closes arrive
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil && !isTimeout(err) {
			refused++ // closed by the broker
		}
	}
	if refused == 0 {
		t.Fatalf("%d connections under ulimit -n %d, none refused", len(conns), nofile)
	}
	testutil.Eventually(t, 5*time.Second, func() bool {
		return strings.Contains(p.log(), "refusing client connection: open files limit")
	}, "no log line for the refused connections")

	// At the limit: the name server answers a new connection, the
	// established producer sends, the established consumer reads.
	a2, err := admin.New(admin.WithNameServers(p.nsAddr), admin.WithLogger(testutil.Logger(t)))
	if err != nil {
		t.Fatal(err)
	}
	if err := a2.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := a2.TopicRoute(ctx, tcs[1].Topic); err != nil {
		t.Fatalf("name server at the descriptor limit: %v", err)
	}
	a2.Close()
	if _, err := prod.SendSync(ctx, primitive.NewMessage(tcs[2].Topic, []byte("at the limit"))); err != nil {
		t.Fatalf("send on an established connection at the limit: %v", err)
	}
	pull("at the limit")

	for _, c := range conns {
		c.Close()
	}
	conns = nil
	prod.Shutdown()
	pc.Close()
	p.stop(t)
	t.Logf("stopped at %v", time.Since(t0))
	t1 := time.Now()

	// A restart under the same limit recovers every queue and serves.
	p2 := startLimitedStandalone(t, bin, data, nofile)
	t.Logf("restarted in %v", time.Since(t1))
	if !strings.Contains(p2.log(), "broker ready") {
		testutil.Eventually(t, 5*time.Second, func() bool { return strings.Contains(p2.log(), "broker ready") }, "no readiness line after restart")
	}
	prod2 := newProducer(t, p2.nsAddr)
	for _, tc := range []admin.TopicConfig{tcs[0], tcs[topics-1]} {
		if _, err := prod2.SendSync(ctx, primitive.NewMessage(tc.Topic, []byte("after restart"))); err != nil {
			t.Fatalf("send after restart: %v\n%s", err, p2.log())
		}
	}
	p2.stop(t)
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
