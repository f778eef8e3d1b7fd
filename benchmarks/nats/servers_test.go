package natsbench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// binaries are the two server executables, built once by TestMain into a
// temp directory. Read-only after TestMain.
type binaries struct {
	apogee string
	nats   string
}

var bins binaries // set once in TestMain before any test runs; never written after

func TestMain(m *testing.M) {
	flag.Parse()
	code := func() int {
		if testing.Short() && flag.Lookup("test.bench").Value.String() == "" {
			return m.Run() // nothing here runs without the binaries
		}
		dir, err := os.MkdirTemp("", "natsbench-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		bins, err = build(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

// build compiles apogee from this repository (../../cmd/apogee, through the
// replace directive) and nats-server at the version go.mod pins (a tool
// dependency), both with the same Go toolchain and default flags.
func build(dir string) (binaries, error) {
	b := binaries{apogee: filepath.Join(dir, "apogee"), nats: filepath.Join(dir, "nats-server")}
	for _, c := range [][2]string{
		{b.apogee, "github.com/apogeemq/apogee/cmd/apogee"},
		{b.nats, "github.com/nats-io/nats-server/v2"},
	} {
		out, err := exec.Command("go", "build", "-o", c[0], c[1]).CombinedOutput()
		if err != nil {
			return b, fmt.Errorf("natsbench: go build %s: %w\n%s", c[1], err, out)
		}
	}
	return b, nil
}

// proc is one running server process.
type proc struct {
	name   string
	cmd    *exec.Cmd
	stderr string // file holding the process's stderr
	exited chan struct{}
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// startProc starts bin with args, stderr to a file in dir, and kills it at
// cleanup. stdout, when wanted, is returned as a pipe the caller must drain.
func startProc(tb testing.TB, name, dir, bin string, wantStdout bool, args ...string) (*proc, io.Reader) {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	errPath := filepath.Join(dir, name+".stderr")
	ef, err := os.Create(errPath)
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = ef
	var stdout io.Reader
	if wantStdout {
		if stdout, err = cmd.StdoutPipe(); err != nil {
			tb.Fatal(err)
		}
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, stderr: errPath, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); _ = ef.Close(); close(p.exited) }()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			tb.Errorf("%s (pid %d) did not exit 10 s after SIGKILL", name, p.pid())
		}
	})
	return p, stdout
}

// alive fails the benchmark if the process has exited.
func (p *proc) alive(tb testing.TB) {
	tb.Helper()
	select {
	case <-p.exited:
		tail, _ := os.ReadFile(p.stderr)
		if len(tail) > 4000 {
			tail = tail[len(tail)-4000:]
		}
		tb.Fatalf("%s exited: %v\n%s", p.name, p.cmd.ProcessState, tail)
	default:
	}
}

// procStats is what /proc says about a process.
type procStats struct {
	cpu    time.Duration // user + system time so far
	hwmKB  int64         // peak resident set (VmHWM), file-backed (mmap) pages included
	anonKB int64         // current anonymous resident set (RssAnon): heap, stacks
}

// clockTicks is USER_HZ, the unit of utime/stime in /proc/PID/stat; 100 on
// every Linux architecture Go supports (sysconf(_SC_CLK_TCK) needs cgo).
const clockTicks = 100

func readProcStats(pid int) (procStats, error) {
	var s procStats
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// fields are counted after the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return s, fmt.Errorf("natsbench: odd /proc/%d/stat", pid)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return s, fmt.Errorf("natsbench: short /proc/%d/stat", pid)
	}
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return s, err
	}
	s.cpu = time.Duration(ut+st) * time.Second / clockTicks
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for line := range strings.Lines(string(status)) {
		key, v, ok := strings.Cut(line, ":")
		if !ok || (key != "VmHWM" && key != "RssAnon") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return s, fmt.Errorf("natsbench: /proc/%d/status %s: %w", pid, key, err)
		}
		if key == "VmHWM" {
			s.hwmKB = kb
		} else {
			s.anonKB = kb
		}
	}
	return s, nil
}

func (p *proc) stats(tb testing.TB) procStats {
	tb.Helper()
	s, err := readProcStats(p.pid())
	if err != nil {
		tb.Fatalf("%s: %v", p.name, err)
	}
	return s
}

// apogeeServer is `apogee standalone`: name server and broker in one process.
type apogeeServer struct {
	*proc
	namesrv string
	broker  string
}

// startApogee runs `apogee standalone` on free ports with a broker.conf
// setting flushDiskType (SYNC_FLUSH when durable, else RocketMQ's default
// ASYNC_FLUSH), and checks in its effective-config log line that the
// setting took.
func startApogee(tb testing.TB, durable bool) *apogeeServer {
	tb.Helper()
	dir := tb.TempDir()
	flush := "ASYNC_FLUSH"
	if durable {
		flush = "SYNC_FLUSH"
	}
	conf := filepath.Join(dir, "broker.conf")
	// The metrics exporter takes a free port (its default, 5557, may be
	// another broker's on a shared machine); -apogee-conf lines come after
	// and may override it.
	lines := "flushDiskType=" + flush + "\nmetricsPromExporterPort=0\n"
	for kv := range strings.SplitSeq(*apogeeConfFlag, ";") {
		if kv = strings.TrimSpace(kv); kv != "" {
			lines += kv + "\n"
		}
	}
	if err := os.WriteFile(conf, []byte(lines), 0o644); err != nil {
		tb.Fatal(err)
	}
	p, stdout := startProc(tb, "apogee", dir, bins.apogee, true,
		"standalone", "--data", filepath.Join(dir, "data"), "--namesrv-port", "0", "--broker-port", "0", "--grpc-port", "-1",
		"--console-port", "-1", "-c", conf, "--log-format", "json", "--log-level", "info")
	s := &apogeeServer{proc: p}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if a, ok := strings.CutPrefix(line, "name server listening on "); ok {
				s.namesrv = a
			}
			if i := strings.Index(line, " listening on "); strings.HasPrefix(line, "broker ") && i > 0 {
				s.broker = line[i+len(" listening on "):]
				close(ready)
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case <-ready:
	case <-p.exited:
		p.alive(tb)
	case <-time.After(30 * time.Second):
		tb.Fatal("apogee did not print its addresses within 30 s")
	}
	errLog, err := os.ReadFile(p.stderr)
	if err != nil {
		tb.Fatal(err)
	}
	if want := `"flushDiskType":"` + flush + `"`; !bytes.Contains(errLog, []byte(want)) {
		tb.Fatalf("apogee's effective config lacks %s:\n%s", want, errLog)
	}
	return s
}

// natsServer is nats-server with JetStream on.
type natsServer struct {
	*proc
	url     string // nats://127.0.0.1:port
	monitor string // http://127.0.0.1:port
}

// startNATS runs nats-server on free loopback ports (-1) with JetStream's
// file store in a temp directory; durable sets `sync_interval: always`
// (fsync after every write), otherwise the default applies (background
// sync every 2 minutes). The ports come from the ports file the server
// writes; /varz then confirms the JetStream sync setting.
func startNATS(tb testing.TB, durable bool) *natsServer {
	tb.Helper()
	dir := tb.TempDir()
	syncLine := ""
	if durable {
		syncLine = "  sync_interval: always\n"
	}
	conf := fmt.Sprintf("listen: \"127.0.0.1:-1\"\nhttp: \"127.0.0.1:-1\"\nports_file_dir: %q\n"+
		"jetstream {\n  store_dir: %q\n%s}\n", dir, filepath.Join(dir, "js"), syncLine)
	confPath := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		tb.Fatal(err)
	}
	p, _ := startProc(tb, "nats", dir, bins.nats, false, "-c", confPath)
	s := &natsServer{proc: p}
	portsFile := filepath.Join(dir, fmt.Sprintf("nats-server_%d.ports", p.pid()))
	deadline := time.Now().Add(30 * time.Second)
	for s.url == "" {
		p.alive(tb)
		if b, err := os.ReadFile(portsFile); err == nil {
			var ports struct {
				Nats       []string `json:"nats"`
				Monitoring []string `json:"monitoring"`
			}
			if json.Unmarshal(b, &ports) == nil && len(ports.Nats) > 0 && len(ports.Monitoring) > 0 {
				s.url, s.monitor = ports.Nats[0], ports.Monitoring[0]
				break
			}
		}
		if time.Now().After(deadline) {
			tb.Fatal("nats-server wrote no ports file within 30 s")
		}
		time.Sleep(20 * time.Millisecond) // polling a file the child writes; bounded by deadline
	}
	resp, err := http.Get(s.monitor + "/varz")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var varz struct {
		JetStream struct {
			Config struct {
				SyncAlways bool `json:"sync_always"`
			} `json:"config"`
		} `json:"jetstream"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&varz); err != nil {
		tb.Fatalf("nats /varz: %v", err)
	}
	if varz.JetStream.Config.SyncAlways != durable {
		tb.Fatalf("nats /varz says sync_always=%v, want %v", varz.JetStream.Config.SyncAlways, durable)
	}
	return s
}
