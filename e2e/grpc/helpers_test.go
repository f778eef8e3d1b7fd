package grpce2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/rlog"
	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"

	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/testutil"
)

// apogeeBin is the apogee binary TestMain builds from this tree.
var apogeeBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "apogee-grpc-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	apogeeBin = filepath.Join(dir, "apogee")
	if bin := os.Getenv("APOGEE_BIN"); bin != "" {
		apogeeBin = bin // a given build (benchmark A/B)
	} else {
		// Built in the root module (two levels up), with its own go.sum.
		build := exec.Command("go", "build", "-o", apogeeBin, "./cmd/apogee")
		build.Dir = filepath.Join("..", "..")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build apogee:", err)
			os.Exit(1)
		}
	}
	// The official client logs to $user.home/logs by default.
	os.Setenv("rocketmq.client.logRoot", dir)
	os.Setenv("rocketmq.client.logLevel", "error")
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
	data    string
}

// startServer runs `apogee standalone` on free ports in a temp data
// directory (or data, when given, to restart on the same store) and waits
// for its listening lines. It is stopped (SIGTERM, then SIGKILL) at
// cleanup.
func startServer(t testing.TB, data string, extra ...string) *server {
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
	s := &server{child: c, namesrv: a.Namesrv, broker: a.Broker, grpc: a.GRPC, data: data}
	t.Cleanup(func() { s.stop(t) })
	return s
}

func (s *server) logs() string { return s.child.Logs() }

// stop terminates the process by its PID (SIGTERM, SIGKILL after 15 s)
// and waits for it.
func (s *server) stop(t testing.TB) {
	_ = s.child.Stop(15 * time.Second)
	if t.Failed() {
		t.Logf("apogee stderr:\n%s", s.logs())
	}
}

// kill SIGKILLs the process and waits for it.
func (s *server) kill() { s.child.Kill() }

// createTopic creates topic on the cluster with the given message.type
// ("" leaves the attribute unset).
func (s *server) createTopic(t testing.TB, topic, messageType string, queues int) {
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
	if messageType != "" {
		tc.Attributes = "+message.type=" + messageType
	}
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

// sslMu serializes tests that flip the client's process-wide EnableSsl.
var sslMu sync.Mutex

// withSSL sets the official client's TLS switch for the duration of the
// test (it is a package variable read when a connection is dialled).
func withSSL(t testing.TB, on bool) {
	t.Helper()
	sslMu.Lock()
	old := rmq.EnableSsl
	rmq.EnableSsl = on
	t.Cleanup(func() {
		rmq.EnableSsl = old
		sslMu.Unlock()
	})
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

// process is a running apogee child process other than standalone.
type process struct {
	cmd    *exec.Cmd
	stderr *os.File
	done   chan struct{}
}

// startProcess runs apogee with args and waits for a stdout line starting
// with prefix; it returns the rest of that line. The process is stopped by
// its PID at cleanup.
func startProcess(t *testing.T, prefix string, args ...string) (*process, string) {
	t.Helper()
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
	p := &process{cmd: cmd, stderr: errFile, done: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), prefix); ok {
				select {
				case found <- rest:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			b, _ := os.ReadFile(errFile.Name())
			t.Logf("apogee %s stderr:\n%s", args[0], b)
		}
	})
	select {
	case line := <-found:
		return p, strings.TrimSpace(line)
	case <-p.done:
		b, _ := os.ReadFile(errFile.Name())
		t.Fatalf("apogee %v exited early:\n%s", args, b)
	case <-time.After(30 * time.Second):
		t.Fatalf("apogee %v did not print %q within 30 s", args, prefix)
	}
	return nil, ""
}
