package e2e

// TLS on every listener (tlsMode): the official rocketmq-client-go/v2 with
// WithTls(true) and our SDK with client.WithTLS against a name server and a
// broker in enforcing mode (plaintext refused) and permissive mode (both
// accepted); a slave replicating from its master over TLS.

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/namesrv"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/store"
	"github.com/apogeemq/apogee/internal/testutil"
	"github.com/apogeemq/apogee/internal/tlsconf"
)

func tlsSettings(t *testing.T, mode string) tlsconf.Settings {
	f := testutil.WriteTLSFiles(t)
	return tlsconf.Settings{TLSMode: mode, TLSServerCertPath: f.ServerCert, TLSServerKeyPath: f.ServerKey}
}

// startTLSCluster is a name server and a broker with the same TLS settings.
func startTLSCluster(t *testing.T, s tlsconf.Settings, mutate func(*broker.Config)) *testCluster {
	t.Helper()
	ns := startNamesrv(t, func(c *namesrv.Config) { c.Settings = s })
	nsAddr := ns.Addr().String()
	cfg := brokerTestConfig(t.TempDir())
	cfg.NamesrvAddr = []string{nsAddr}
	cfg.Settings = s
	if mutate != nil {
		mutate(&cfg)
	}
	c := &testCluster{t: t, ns: ns, nsAddr: nsAddr, cfg: cfg}
	c.startBroker()
	t.Cleanup(c.stopBroker)
	return c
}

// plainInvoke sends one request over plaintext and reports whether it was
// answered.
func plainInvoke(t *testing.T, addr string) error {
	rc := remoting.NewClient(remoting.ClientConfig{Logger: testLogger(t)})
	if err := rc.Start(); err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	_, err := rc.InvokeSync(testutil.Context(t, 3*time.Second), addr, protocol.NewRequest(protocol.GetBrokerClusterInfo, nil, nil))
	return err
}

func sdkTLSProducer(t *testing.T, nsAddr string) *client.Producer {
	t.Helper()
	p, err := client.NewProducer(uniqueName(t, "pg"), client.WithNameServers(nsAddr),
		client.WithTLS(&tls.Config{InsecureSkipVerify: true}))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func TestTLSEnforcing(t *testing.T) {
	t.Cleanup(resetOfficialTLS)
	c := startTLSCluster(t, tlsSettings(t, "enforcing"), nil)
	c.createTopic("secure", 4) // the broker registered over TLS
	if err := plainInvoke(t, c.nsAddr); err == nil {
		t.Fatal("the name server answered a plaintext request in enforcing mode")
	}
	if err := plainInvoke(t, c.b.Addr()); err == nil {
		t.Fatal("the broker answered a plaintext request in enforcing mode")
	}
	if vip := c.b.VIPAddr(); vip != "" {
		if err := plainInvoke(t, vip); err == nil {
			t.Fatal("the VIP port answered a plaintext request in enforcing mode")
		}
	}
	plain := newProducer(t, c.nsAddr)
	pctx, pcancel := context.WithTimeout(context.Background(), time.Second)
	if _, err := plain.SendSync(pctx, primitive.NewMessage("secure", []byte("plain"))); err == nil {
		t.Fatal("a plaintext official producer sent in enforcing mode")
	}
	pcancel()

	official := newProducer(t, c.nsAddr, producer.WithTls(true))
	if err := sendOne(official, "secure"); err != nil {
		t.Fatalf("official producer over TLS: %v", err)
	}
	// The CLI: --tls works, plaintext does not.
	bin := buildApogee(t)
	if out, errOut, code := runApogee(t, bin, "admin", "clusterList", "-n", c.nsAddr, "--tls"); code != 0 || !strings.Contains(out, c.cfg.BrokerName) {
		t.Fatalf("apogee admin clusterList --tls: exit %d: %s %s", code, out, errOut)
	}
	if _, _, code := runApogee(t, bin, "admin", "clusterList", "-n", c.nsAddr, "--timeout", "2s"); code == 0 {
		t.Fatal("plaintext apogee admin clusterList succeeded in enforcing mode")
	}
	sdk := sdkTLSProducer(t, c.nsAddr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := sdk.Send(ctx, client.NewMessage("secure", []byte("sdk over tls"))); err != nil {
		t.Fatalf("SDK producer over TLS: %v", err)
	}
	group := uniqueName(t, "cg")
	quietGroup(t, c, group)
	got := newReceived()
	newPushConsumer(t, c.nsAddr, group, "secure", "*", got, consumer.WithTls(true))
	testutil.Eventually(t, 20*time.Second, func() bool { return got.count.Load() >= 2 },
		"official consumer over TLS got %d of 2", got.count.Load())
}

func TestTLSPermissive(t *testing.T) {
	t.Cleanup(resetOfficialTLS)
	c := startTLSCluster(t, tlsSettings(t, "permissive"), nil)
	c.createTopic("mixed", 4)
	plain := newProducer(t, c.nsAddr)
	if err := sendOne(plain, "mixed"); err != nil {
		t.Fatalf("plaintext producer in permissive mode: %v", err)
	}
	secure := newProducer(t, c.nsAddr, producer.WithTls(true))
	if err := sendOne(secure, "mixed"); err != nil {
		t.Fatalf("TLS producer in permissive mode: %v", err)
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return queueTotal(c, "mixed") == 2 },
		"stored %d messages, want 2", queueTotal(c, "mixed"))
}

// TestTLSSlaveReplicates: master and slave in enforcing mode; the slave's
// HA link, its registration and its metadata sync all run over TLS, and a
// plaintext connection to the HA port is closed without data.
func TestTLSSlaveReplicates(t *testing.T) {
	t.Cleanup(resetOfficialTLS)
	s := tlsSettings(t, "enforcing")
	ns := startNamesrv(t, func(c *namesrv.Config) { c.Settings = s })
	nsAddr := ns.Addr().String()
	mcfg := brokerTestConfig(t.TempDir())
	mcfg.NamesrvAddr, mcfg.Settings = []string{nsAddr}, s
	mcfg.Store.BrokerRole = store.RoleAsyncMaster
	master := haBroker(t, mcfg)
	scfg := brokerTestConfig(t.TempDir())
	scfg.NamesrvAddr, scfg.Settings = []string{nsAddr}, s
	scfg.BrokerID = 1
	scfg.Store.BrokerRole = store.RoleSlave
	scfg.HaReconnectInterval = 100 * time.Millisecond
	scfg.SlaveSyncPeriod = 300 * time.Millisecond
	slave := haBroker(t, scfg)

	tc := protocol.NewTopicConfig("replicated")
	tc.ReadQueueNums, tc.WriteQueueNums = 2, 2
	if err := master.Topics.Update(tc); err != nil {
		t.Fatal(err)
	}
	waitRoute(t, ns, "replicated")
	p := newProducer(t, nsAddr, producer.WithTls(true))
	ctx := testutil.Context(t, 30*time.Second)
	for i := range 20 {
		if res, err := p.SendSync(ctx, primitive.NewMessage("replicated", []byte{byte(i)})); err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %d: %v %v", i, res, err)
		}
	}
	waitReplicated(t, master, slave)
	testutil.Eventually(t, 10*time.Second, func() bool { return slave.Topics.Contains("replicated") },
		"slave never copied the topic over TLS")

	nc, err := net.Dial("tcp", master.HAServer().Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	_, _ = nc.Write(make([]byte, 8)) // a plaintext slave's offset report
	if n, err := nc.Read(make([]byte, 64)); err == nil || n > 0 {
		t.Fatalf("plaintext HA connection got %d bytes, %v", n, err)
	}
}

// resetOfficialTLS turns the official client's TLS back off for the tests
// that follow. Its producer and consumer options write WithTls into one
// process-wide default remoting config (remote.DefaultRemotingClientConfig,
// shared by every client built without its own), so a WithTls(true) of one
// test made every later official client in the process dial TLS to plain
// servers ("frame too large" on the server: a ClientHello read as a frame).
func resetOfficialTLS() {
	_, _ = rocketmq.NewProducer(producer.WithTls(false))
}
