package testutil

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Child is one process a test or benchmark started: its stderr goes to a
// file (Logs), its stdout is read line by line until the ready function
// says yes and drained after that, so the child never blocks on a full
// pipe. The process is SIGKILLed at cleanup if it is still running;
// stopping it is always by its PID.
type Child struct {
	Cmd     *exec.Cmd
	LogPath string // the child's stderr

	done chan struct{} // closed when Wait has returned
	err  error         // Wait's result, valid once done is closed
}

// ChildOptions says how StartChild waits for a child to be ready.
type ChildOptions struct {
	// Ready is called with each stdout line until it returns true. Nil
	// means the child is ready as soon as it has started.
	Ready func(line string) bool
	// Timeout bounds the wait for Ready (default 30 s).
	Timeout time.Duration
	// LogDir holds the stderr file (default tb.TempDir()).
	LogDir string
	// Stderr, when set, also receives the child's stderr as it comes.
	Stderr io.Writer
}

// StartChild runs bin with args and waits until opts.Ready accepts a line
// of its stdout. It fails tb, with the child's log, when the child exits
// first or the timeout passes.
func StartChild(tb testing.TB, opts ChildOptions, bin string, args ...string) *Child {
	tb.Helper()
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.LogDir == "" {
		opts.LogDir = tb.TempDir()
	}
	logf, err := os.CreateTemp(opts.LogDir, filepath.Base(bin)+"-*.log")
	if err != nil {
		tb.Fatal(err)
	}
	c := &Child{Cmd: exec.Command(bin, args...), LogPath: logf.Name(), done: make(chan struct{})}
	stdout, err := c.Cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	c.Cmd.Stderr = logf
	if opts.Stderr != nil {
		c.Cmd.Stderr = io.MultiWriter(logf, opts.Stderr)
	}
	if err := c.Cmd.Start(); err != nil {
		logf.Close()
		tb.Fatalf("start %s: %v", bin, err)
	}
	ready := make(chan struct{})
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		if opts.Ready == nil {
			close(ready)
		} else {
			for sc.Scan() {
				if opts.Ready(sc.Text()) {
					close(ready)
					break
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		<-scanned // Wait closes the pipe: read it all first
		c.err = c.Cmd.Wait()
		logf.Close()
		close(c.done)
	}()
	tb.Cleanup(c.Kill)
	select {
	case <-ready:
	case <-c.done:
		tb.Fatalf("%s exited before it was ready (%v):\n%s", filepath.Base(bin), c.err, c.Logs())
	case <-time.After(opts.Timeout):
		tb.Fatalf("%s was not ready within %v:\n%s", filepath.Base(bin), opts.Timeout, c.Logs())
	}
	return c
}

// Pid is the child's process id.
func (c *Child) Pid() int { return c.Cmd.Process.Pid }

// Done is closed when the child has exited.
func (c *Child) Done() <-chan struct{} { return c.done }

// Logs returns what the child wrote to stderr so far.
func (c *Child) Logs() string {
	b, _ := os.ReadFile(c.LogPath)
	return string(b)
}

// LogTail returns the last n lines of the child's stderr.
func (c *Child) LogTail(n int) string {
	lines := strings.Split(strings.TrimSpace(c.Logs()), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Kill SIGKILLs the child, if it still runs, and waits for it.
func (c *Child) Kill() {
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.Cmd.Process.Kill()
	<-c.done
}

// ErrStopTimeout is Stop's error when the child outlived its timeout
// after SIGTERM (it was SIGKILLed then).
var ErrStopTimeout = errors.New("did not exit after SIGTERM")

// Stop sends SIGTERM and waits up to timeout for the child to exit; past
// it the child is SIGKILLed and Stop returns ErrStopTimeout. Otherwise it
// returns the child's exit error (nil for a clean exit 0). A child that
// had already exited returns its exit error.
func (c *Child) Stop(timeout time.Duration) error {
	select {
	case <-c.done:
		return c.err
	default:
	}
	_ = c.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
		return c.err
	case <-time.After(timeout):
		c.Kill()
		return fmt.Errorf("%s: %w within %v", filepath.Base(c.Cmd.Path), ErrStopTimeout, timeout)
	}
}

// Addrs collects the addresses `apogee` prints on stdout as its servers
// listen ("name server listening on A" or "namesrv listening on A",
// "broker NAME listening on A", "grpc endpoint listening on A"); Metrics
// and Console are the URLs their lines print.
type Addrs struct {
	Namesrv, Broker, GRPC, Metrics, Console string
}

// Scan records the address a stdout line names, if any, and reports
// whether the line was one of apogee's listening lines.
func (a *Addrs) Scan(line string) bool {
	i := strings.Index(line, " listening on ")
	if i < 0 {
		return false
	}
	addr := line[i+len(" listening on "):]
	switch head := line[:i]; {
	case head == "name server" || head == "namesrv":
		a.Namesrv = addr
	case strings.HasPrefix(head, "broker "):
		a.Broker = addr
	case head == "grpc endpoint":
		a.GRPC = addr
	case head == "metrics":
		a.Metrics = addr
	case head == "console":
		a.Console = addr
	default:
		return false
	}
	return true
}
