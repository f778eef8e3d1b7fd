package e2e

// Helpers of the broker end-to-end tests: a name server and a broker in
// this process on free loopback ports with a temp data dir (the standalone
// layout), and official rocketmq-client-go/v2 producers and consumers.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/namesrv"
	"github.com/apogeemq/apogee/internal/testutil/cluster"
)

// testCluster is a name server plus one broker (internal/testutil/cluster)
// under the field names the e2e tests use; startBroker and stopBroker keep
// the fields and the cluster in step, so a test may change cfg between a
// stop and a start.
type testCluster struct {
	t      testing.TB
	ns     *namesrv.Server
	nsAddr string
	cfg    broker.Config
	b      *broker.Broker // nil while stopped
	cl     *cluster.Cluster
}

// brokerTestConfig is a broker for dir with small store files.
func brokerTestConfig(dir string) broker.Config { return cluster.BrokerConfig(dir) }

func startCluster(t *testing.T, mutate func(*broker.Config)) *testCluster {
	t.Helper()
	return startClusterTB(t, mutate)
}

// startClusterTB is startCluster for tests and benchmarks.
func startClusterTB(t testing.TB, mutate func(*broker.Config)) *testCluster {
	t.Helper()
	rlog.SetLogLevel("error")
	cl := cluster.Start(t, testLogger(t), mutate)
	return &testCluster{t: t, ns: cl.NS, nsAddr: cl.NSAddr, cfg: cl.Cfg, b: cl.B, cl: cl}
}

func (c *testCluster) startBroker() {
	c.t.Helper()
	if c.cl == nil {
		c.cl = &cluster.Cluster{T: c.t, Logger: testLogger(c.t), NS: c.ns, NSAddr: c.nsAddr}
	}
	c.cl.Cfg = c.cfg
	c.cl.StartBroker()
	c.cfg, c.b = c.cl.Cfg, c.cl.B
}

func (c *testCluster) stopBroker() {
	if c.cl != nil {
		c.cl.B = c.b
		c.cl.StopBroker()
	}
	c.b = nil
}

// createTopic creates a topic on the broker and waits until the name server
// routes it, so clients find it without the TBW102 detour.
func (c *testCluster) createTopic(topic string, queues int32) {
	c.t.Helper()
	c.cl.B = c.b
	c.cl.CreateTopic(topic, queues)
}

func waitRoute(t testing.TB, ns *namesrv.Server, topic string) {
	t.Helper()
	cluster.WaitRoute(t, ns, topic)
}

// uniqueName makes client instance and group names unique per test and per
// process: the Go client keeps process-wide client instances keyed by
// instance name, and broadcasting consumers keep offsets in files under
// $HOME keyed by client id and group, which must not leak between runs.
var (
	nameSeq atomic.Int64
	nameRun = strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
)

func uniqueName(t testing.TB, prefix string) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	return fmt.Sprintf("%s_%s_%s%d", prefix, name, nameRun, nameSeq.Add(1))
}

func newProducer(t testing.TB, nsAddr string, opts ...producer.Option) rocketmq.Producer {
	t.Helper()
	all := append([]producer.Option{
		producer.WithNameServer([]string{nsAddr}),
		producer.WithGroupName(uniqueName(t, "pg")),
		producer.WithInstanceName(uniqueName(t, "pi")),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(5 * time.Second),
	}, opts...)
	p, err := rocketmq.NewProducer(all...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown() })
	return p
}

// newPushConsumer starts a push consumer of topic with expr that records
// into r. Shutdown is registered with t.Cleanup (and is idempotent).
func newPushConsumer(t testing.TB, nsAddr, group, topic, expr string, r *received, opts ...consumer.Option) rocketmq.PushConsumer {
	t.Helper()
	return startOfficialPushConsumer(t, nsAddr, group, topic, tagSelector(expr),
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			r.add(msgs...)
			return consumer.ConsumeSuccess, nil
		}, opts...)
}
