package litebench

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/testutil"
	"github.com/apogeemq/apogee/internal/testutil/procstat"
)

// brokerSetFlag adds broker.conf settings to every server these
// benchmarks start (after their own, so it wins): for profiling,
// "metricsPromExporterPort=5557;metricsPprofEnable=true".
var brokerSetFlag = flag.String("lite.broker.set", "", "extra broker settings, 'key=value;key=value'")

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
	cmd            *exec.Cmd
	data           string
	nsPort, brPort int
	nsAddr, broker string
	started        time.Time
	logPath        string
}

// startServer runs a standalone process on fixed free ports (a restart
// keeps them) with RocketMQ's defaults.
func startServer(tb testing.TB, data string, nsPort, brPort int, extra ...string) *server {
	tb.Helper()
	s := &server{data: data, nsPort: nsPort, brPort: brPort, started: time.Now(),
		nsAddr: fmt.Sprintf("127.0.0.1:%d", nsPort), broker: fmt.Sprintf("127.0.0.1:%d", brPort)}
	args := append([]string{"standalone", "--data", data, "--console-port", "-1",
		"--namesrv-port", strconv.Itoa(nsPort), "--broker-port", strconv.Itoa(brPort), "--grpc-port", "-1",
		"--log-level", "warn", "--set", "metricsPromExporterPort=0", "--set", "brokerIP1=127.0.0.1",
		// A clean stop flushes every consume queue: with 10^5..10^6 lite
		// topics that takes longer than the default 30 s.
		"--shutdown-timeout", "20m"}, extra...)
	for _, kv := range strings.Split(*brokerSetFlag, ";") {
		if kv = strings.TrimSpace(kv); kv != "" {
			args = append(args, "--set", kv)
		}
	}
	s.cmd = exec.Command(apogeeBin(tb), args...)
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	s.logPath = filepath.Join(filepath.Dir(data), fmt.Sprintf("apogee-%d.log", time.Now().UnixNano()))
	logf, err := os.Create(s.logPath)
	if err != nil {
		tb.Fatal(err)
	}
	s.cmd.Stderr = logf
	if err := s.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.cmd.Process.Kill(); _ = s.cmd.Wait(); logf.Close() })
	ready, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited) // stdout closes when the process exits
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "broker ") {
				close(ready)
				break
			}
		}
		for sc.Scan() {
		}
	}()
	select {
	case <-ready:
	case <-exited:
		b, _ := os.ReadFile(s.logPath)
		tb.Fatalf("apogee standalone exited before it listened; its log:\n%s", b)
	case <-time.After(10 * time.Minute):
		tb.Fatal("apogee standalone did not start")
	}
	return s
}

func (s *server) stop(tb testing.TB) {
	tb.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			b, _ := os.ReadFile(s.logPath)
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			tb.Fatalf("apogee exited with %v after SIGTERM; its log ends:\n%s", err, strings.Join(lines[max(0, len(lines)-15):], "\n"))
		}
	case <-time.After(5 * time.Minute):
		tb.Fatal("apogee did not stop")
	}
}

// resources is what the broker process holds and its data dir occupies.
func (s *server) resources(tb testing.TB) procstat.Resources {
	tb.Helper()
	return procstat.Read(s.cmd.Process.Pid, s.data)
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

// sender pipelines SEND_MESSAGE requests straight to the broker, with an
// explicit topic and queue per message (the broker, not a client's route
// cache, is what is measured).
type sender struct {
	c      *remoting.Client
	broker string
	body   []byte
	sem    chan struct{}
	failed atomic.Int64
	acked  atomic.Int64
	busy   atomic.Int64 // SYSTEM_BUSY answers (flow control), resent
	errMu  sync.Mutex
	err    error
}

func newSender(tb testing.TB, broker string, window int) *sender {
	c := remoting.NewClient(remoting.ClientConfig{})
	if err := c.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return &sender{c: c, broker: broker, body: make([]byte, 1024), sem: make(chan struct{}, window)}
}

func (s *sender) send(ctx context.Context, topic, lite string, q int32, wg *sync.WaitGroup) {
	s.sem <- struct{}{}
	s.sendHeld(ctx, topic, lite, q, wg)
}

// sendHeld sends with a window slot already taken.
func (s *sender) sendHeld(ctx context.Context, topic, lite string, q int32, wg *sync.WaitGroup) {
	h := protocol.SendMessageRequestHeader{ProducerGroup: "litebench", Topic: topic, QueueID: q,
		BornTimestamp: time.Now().UnixMilli(), Properties: "UNIQ_KEY\x01" + strconv.FormatInt(time.Now().UnixNano(), 16) + "\x02"}
	if lite != "" {
		h.Properties += "__LITE_TOPIC\x01" + lite + "\x02"
	}
	req := protocol.NewRequest(protocol.SendMessageV2, protocol.EncodeHeader(&h, true), s.body)
	wg.Add(1)
	err := s.c.InvokeAsync(ctx, s.broker, req, func(resp *protocol.Command, err error) {
		if err == nil && resp.Code == int32(protocol.SystemBusy) {
			s.busy.Add(1) // the broker's flow control: back off and resend
			go func() {
				time.Sleep(50 * time.Millisecond) // a 10 ms resend fed the overload it answered
				s.sendHeld(ctx, topic, lite, q, wg)
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
