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

	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/namesrv"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

// testCluster is a name server plus one broker.
type testCluster struct {
	t      testing.TB
	ns     *namesrv.Server
	nsAddr string
	cfg    broker.Config
	b      *broker.Broker // nil while stopped
}

// brokerTestConfig is a broker for dir with small store files.
func brokerTestConfig(dir string) broker.Config {
	cfg := broker.DefaultConfig()
	cfg.BrokerName = "broker-a"
	cfg.ListenPort = 0
	cfg.Store.StorePathRootDir = dir
	cfg.Store.MappedFileSizeCommitLog = 8 << 20
	cfg.Store.MappedFileSizeConsumeQueue = 20 * 10000
	cfg.Store.MaxMessageSize = 1 << 20
	cfg.SendMessageThreadPoolNums = 2
	cfg.PullMessageThreadPoolNums = 8
	// RocketMQ's 200 ms is tuned for a broker that has its cores to itself.
	// Under -race, with other test packages running on the same two cores,
	// a send can wait that long for a worker with the queue empty, and the
	// answer (SYSTEM_BUSY [TIMEOUT_CLEAN_QUEUE]) is not retried for ordered
	// sends. The fast-failure behaviour itself is tested in internal/broker.
	cfg.WaitTimeMillsInSendQueue = 3 * time.Second
	return cfg
}

func startCluster(t *testing.T, mutate func(*broker.Config)) *testCluster {
	t.Helper()
	return startClusterTB(t, mutate)
}

// startClusterTB is startCluster for tests and benchmarks.
func startClusterTB(t testing.TB, mutate func(*broker.Config)) *testCluster {
	t.Helper()
	ns := startNamesrv(t, nil)
	c := &testCluster{t: t, ns: ns, nsAddr: ns.Addr().String()}
	c.cfg = brokerTestConfig(t.TempDir())
	c.cfg.NamesrvAddr = []string{c.nsAddr}
	if mutate != nil {
		mutate(&c.cfg)
	}
	c.startBroker()
	t.Cleanup(func() { c.stopBroker() })
	return c
}

func (c *testCluster) startBroker() {
	c.t.Helper()
	b, err := broker.New(c.cfg, testLogger(c.t))
	if err != nil {
		c.t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		c.t.Fatal(err)
	}
	// Restarts keep the port so clients' routes stay valid.
	c.cfg.ListenPort = b.Config().ListenPort
	c.b = b
}

func (c *testCluster) stopBroker() {
	if c.b != nil {
		if err := c.b.Close(); err != nil {
			c.t.Errorf("broker close: %v", err)
		}
		c.b = nil
	}
}

// createTopic creates a topic on the broker and waits until the name server
// routes it, so clients find it without the TBW102 detour.
func (c *testCluster) createTopic(topic string, queues int32) {
	c.t.Helper()
	tc := protocol.NewTopicConfig(topic)
	tc.ReadQueueNums, tc.WriteQueueNums = queues, queues
	if err := c.b.Topics.Update(tc); err != nil {
		c.t.Fatal(err)
	}
	waitRoute(c.t, c.ns, topic)
}

func waitRoute(t testing.TB, ns *namesrv.Server, topic string) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() bool {
		r := ns.Routes().PickupTopicRouteData(topic)
		return r != nil && len(r.QueueDatas) > 0
	}, "topic %s never routed", topic)
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
