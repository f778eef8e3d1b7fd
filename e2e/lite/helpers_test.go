package litee2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/rlog"
	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"

	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/testutil"
)

// apogeeBin is the apogee binary TestMain builds from this tree;
// clientLog the official v5 client's log file.
var apogeeBin, clientLog string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "apogee-lite-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	apogeeBin = filepath.Join(dir, "apogee")
	// Built in the root module (two levels up), with its own go.sum.
	build := exec.Command("go", "build", "-o", apogeeBin, "./cmd/apogee")
	build.Dir = filepath.Join("..", "..")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build apogee:", err)
		os.Exit(1)
	}
	// The official client logs to $user.home/logs by default.
	os.Setenv("rocketmq.client.logRoot", dir)
	// Info: TestLitePushConsumer reads the client's "notifyUnsubscribeLite"
	// line from its log.
	os.Setenv("rocketmq.client.logLevel", "info")
	clientLog = filepath.Join(dir, "rocketmq_client_go.log")
	rmq.ResetLogger()
	rlog.SetLogLevel("error") // the v2 remoting client of the interop tests
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is a running `apogee standalone` child process.
type server struct {
	child   *testutil.Child
	namesrv string // name server address
	broker  string // broker remoting address
	grpc    string // gRPC endpoint address
	metrics string // http://host:port/metrics
	data    string
}

// startServer runs `apogee standalone` on free ports in a temp data
// directory (or data, when given, to restart on the same store) and waits
// for its listening lines. It is stopped (SIGTERM, then SIGKILL) at
// cleanup.
func startServer(t *testing.T, data string, extra ...string) *server {
	t.Helper()
	if data == "" {
		data = t.TempDir()
	}
	args := append([]string{"standalone", "--data", data, "--namesrv-port", "0", "--broker-port", "0", "--console-port", "-1",
		"--grpc-port", "0", "--log-level", "warn", "--set", "metricsPromExporterPort=0",
		// Short invisible times keep the redelivery tests short.
		"--set", "minInvisibleTimeMillsForRecv=1000"}, extra...)
	var a testutil.Addrs
	c := testutil.StartChild(t, testutil.ChildOptions{Ready: func(line string) bool {
		a.Scan(line)
		return a.GRPC != ""
	}}, apogeeBin, args...)
	s := &server{child: c, namesrv: a.Namesrv, broker: a.Broker, grpc: a.GRPC, metrics: a.Metrics, data: data}
	t.Cleanup(func() { s.stop(t) })
	return s
}

func (s *server) logs() string { return s.child.Logs() }

// stop terminates the process by its PID (SIGTERM, SIGKILL after 15 s)
// and waits for it.
func (s *server) stop(t *testing.T) {
	_ = s.child.Stop(15 * time.Second)
	if t.Failed() {
		t.Logf("apogee stderr:\n%s", s.logs())
	}
}

// createTopic creates topic on the cluster with the given attributes
// ("+message.type=PRIORITY"; "" for none).
func (s *server) createTopic(t *testing.T, topic, attrs string, queues int) {
	t.Helper()
	a, err := admin.New(admin.WithNameServers(s.namesrv))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	tc := admin.TopicConfig{Topic: topic, ReadQueues: queues, WriteQueues: queues}
	tc.Attributes = attrs
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.CreateTopic(ctx, tc, admin.Target{Cluster: "DefaultCluster"}); err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	// The broker registers the new topic with the name server right after
	// answering; a client that looks the route up before that falls back
	// to TBW102's queue count and sends to queues the topic lacks.
	for {
		r, err := a.TopicRoute(ctx, topic)
		if err == nil && len(r.Queues) > 0 && r.Queues[0].WriteQueues == queues {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("topic %s never routed with %d queues: %v", topic, queues, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func clientConfig(endpoint, group string) *rmq.Config {
	return &rmq.Config{Endpoint: endpoint, ConsumerGroup: group, Credentials: &credentials.SessionCredentials{}}
}

// eventually polls fn every 50 ms until it returns true or d passes.
func eventually(t *testing.T, d time.Duration, what string, fn func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !fn() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
