package litee2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/rlog"
	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"

	"github.com/apogeemq/apogee/client/admin"
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
	cmd     *exec.Cmd
	namesrv string // name server address
	broker  string // broker remoting address
	grpc    string // gRPC endpoint address
	metrics string // http://host:port/metrics (set before grpc)
	data    string
	stderr  *os.File
	done    chan struct{}
}

// startServer runs `apogee standalone` on free ports in a temp data
// directory (or data, when given, to restart on the same store) and waits
// for its three listening lines. It is stopped (SIGTERM, then SIGKILL) at
// cleanup.
func startServer(t *testing.T, data string, extra ...string) *server {
	t.Helper()
	if data == "" {
		data = t.TempDir()
	}
	args := append([]string{"standalone", "--data", data, "--namesrv-port", "0", "--broker-port", "0", "--console-port", "-1",
		"--grpc-port", "0", "--console-port", "-1", "--log-level", "warn", "--set", "metricsPromExporterPort=0",
		// Short invisible times keep the redelivery tests short.
		"--set", "minInvisibleTimeMillsForRecv=1000"}, extra...)
	cmd := exec.Command(apogeeBin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errFile, err := os.CreateTemp(t.TempDir(), "stderr-")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = errFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, data: data, stderr: errFile, done: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "name server listening on "):
				s.namesrv = strings.TrimPrefix(line, "name server listening on ")
			case strings.HasPrefix(line, "broker ") && strings.Contains(line, " listening on "):
				s.broker = line[strings.LastIndex(line, " ")+1:]
			case strings.HasPrefix(line, "metrics listening on "):
				s.metrics = strings.TrimPrefix(line, "metrics listening on ")
			case strings.HasPrefix(line, "grpc endpoint listening on "):
				s.grpc = strings.TrimPrefix(line, "grpc endpoint listening on ")
				close(ready)
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		_ = cmd.Wait()
		close(s.done)
	}()
	select {
	case <-ready:
	case <-s.done:
		t.Fatalf("apogee exited early:\n%s", s.logs())
	case <-time.After(30 * time.Second):
		t.Fatalf("apogee did not print its addresses within 30 s:\n%s", s.logs())
	}
	t.Cleanup(func() { s.stop(t) })
	return s
}

func (s *server) logs() string {
	b, _ := os.ReadFile(s.stderr.Name())
	return string(b)
}

// stop terminates the process by its PID and waits for it.
func (s *server) stop(t *testing.T) {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
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
