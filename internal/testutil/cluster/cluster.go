// Package cluster starts a real name server and a real broker inside a
// test's process, on free loopback ports with temp data directories (the
// standalone layout), for tests that drive them over real sockets: the
// end-to-end tests with the official clients and the command tests.
//
// It lives apart from internal/testutil because it imports the broker and
// the name server, which import the packages testutil serves.
package cluster

import (
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/namesrv"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

// Cluster is a name server and one broker named "broker-a". The test's
// cleanup stops both.
type Cluster struct {
	T      testing.TB
	Logger *slog.Logger
	NS     *namesrv.Server
	NSAddr string
	// Cfg is the broker's configuration: StartBroker starts a broker from
	// it, so a test may change it between StopBroker and StartBroker. After
	// a start ListenPort holds the real port (restarts keep it, so clients'
	// routes stay valid).
	Cfg broker.Config
	// B is the running broker; nil while stopped.
	B *broker.Broker
	// BeforeStart, if set, runs on every new broker before its Start (for
	// example SetConfigFile).
	BeforeStart func(*broker.Broker)
}

// BrokerConfig is a broker for dir with small store files and room for a
// loaded test machine.
func BrokerConfig(dir string) broker.Config {
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

// StartNamesrv runs a name server on 127.0.0.1:0 with its KV config in a
// temp dir; mutate, if not nil, adjusts the config first.
func StartNamesrv(t testing.TB, logger *slog.Logger, mutate func(*namesrv.Config)) *namesrv.Server {
	t.Helper()
	cfg := namesrv.DefaultConfig()
	cfg.ListenPort, cfg.BindAddress = 0, "127.0.0.1"
	cfg.KVConfigPath = filepath.Join(t.TempDir(), "kvConfig.json")
	if mutate != nil {
		mutate(&cfg)
	}
	s := namesrv.New(cfg, logger)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Start runs a name server and a broker registered with it (BrokerConfig
// in a temp dir, adjusted by mutate when not nil). A nil logger logs to
// t.Log.
func Start(t testing.TB, logger *slog.Logger, mutate func(*broker.Config)) *Cluster {
	t.Helper()
	c := New(t, logger, mutate)
	c.StartBroker()
	return c
}

// New is Start without starting the broker: the caller may set
// BeforeStart, then calls StartBroker.
func New(t testing.TB, logger *slog.Logger, mutate func(*broker.Config)) *Cluster {
	t.Helper()
	if logger == nil {
		logger = testutil.Logger(t)
	}
	ns := StartNamesrv(t, logger, nil)
	c := &Cluster{T: t, Logger: logger, NS: ns, NSAddr: ns.Addr().String()}
	c.Cfg = BrokerConfig(t.TempDir())
	c.Cfg.NamesrvAddr = []string{c.NSAddr}
	if mutate != nil {
		mutate(&c.Cfg)
	}
	t.Cleanup(c.StopBroker)
	return c
}

// StartBroker starts a broker from Cfg.
func (c *Cluster) StartBroker() {
	c.T.Helper()
	b, err := broker.New(c.Cfg, c.Logger)
	if err != nil {
		c.T.Fatal(err)
	}
	if c.BeforeStart != nil {
		c.BeforeStart(b)
	}
	if err := b.Start(); err != nil {
		c.T.Fatal(err)
	}
	c.Cfg.ListenPort = b.Config().ListenPort
	c.B = b
}

// StopBroker closes the broker, if running.
func (c *Cluster) StopBroker() {
	if c.B != nil {
		if err := c.B.Close(); err != nil {
			c.T.Errorf("broker close: %v", err)
		}
		c.B = nil
	}
}

// CreateTopic creates topic on the broker with queues read and write
// queues and waits until the name server routes it, so clients find it
// without the TBW102 detour.
func (c *Cluster) CreateTopic(topic string, queues int32) {
	c.T.Helper()
	tc := protocol.NewTopicConfig(topic)
	tc.ReadQueueNums, tc.WriteQueueNums = queues, queues
	if err := c.B.Topics.Update(tc); err != nil {
		c.T.Fatal(err)
	}
	WaitRoute(c.T, c.NS, topic)
}

// WaitRoute waits until ns routes topic.
func WaitRoute(t testing.TB, ns *namesrv.Server, topic string) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() bool {
		r := ns.Routes().PickupTopicRouteData(topic)
		return r != nil && len(r.QueueDatas) > 0
	}, "topic %s never routed", topic)
}
