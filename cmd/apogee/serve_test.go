package main

import (
	"bufio"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestServeUntilDoneBounded(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	tests := []struct {
		name    string
		limit   time.Duration
		closer  func(release <-chan struct{}) error
		wantErr string
	}{
		{"drains in time", time.Second, func(<-chan struct{}) error { return nil }, ""},
		{"closer error returned", time.Second, func(<-chan struct{}) error { return errors.New("flush failed") }, "flush failed"},
		{"hung closer bounded", 50 * time.Millisecond, func(r <-chan struct{}) error { <-r; return nil }, "--shutdown-timeout=50ms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			defer close(release) // lets a hung closer's goroutine end
			ctx, cancel := context.WithCancel(withShutdownTimeout(context.Background(), tc.limit))
			cancel()
			start := time.Now()
			err := serveUntilDone(ctx, logger, func() error { return tc.closer(release) })
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("serveUntilDone took %v with a %v bound", took, tc.limit)
			}
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
		})
	}
	if d := shutdownTimeout(context.Background()); d != defaultShutdownTimeout {
		t.Errorf("default bound %v, want %v", d, defaultShutdownTimeout)
	}
}

var buildOnce = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "apogee-cli-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "apogee")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", errors.New(string(out))
	}
	return bin, nil
})

// apogeeBinary builds this command once per test binary run (into a
// temporary directory that outlives the tests).
func apogeeBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin, err := buildOnce()
	if err != nil {
		t.Fatalf("build apogee: %v", err)
	}
	return bin
}

func TestBinaryVersionAndCheck(t *testing.T) {
	bin := apogeeBinary(t)
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "apogee version ") || !strings.Contains(string(out), "go1.") {
		t.Fatalf("--version: %v: %q", err, out)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "broker.conf")
	bad := filepath.Join(dir, "broker-bad.conf")
	for path, content := range map[string]string{good: "brokerName=broker-a\ntypoKey=1\n", bad: "listenPort=http\n"} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "check", "-c", good)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil || !strings.Contains(string(stdout), "valid broker.conf (2 keys, 1 unknown)") || !strings.Contains(stderr.String(), `"typoKey"`) {
		t.Errorf("check good: %v\nstdout %s\nstderr %s", err, stdout, stderr.String())
	}
	out, err = exec.Command(bin, "check", "--role", "broker", "-c", bad).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "listenPort") {
		t.Errorf("check bad: %v: %s", err, out)
	}
}

// TestBinarySIGTERMDrains runs standalone (name server + broker), sends
// SIGTERM and expects a clean exit, within the bound, that logged the
// drain's end.
func TestBinarySIGTERMDrains(t *testing.T) {
	bin := apogeeBinary(t)
	cmd := exec.Command(bin, "standalone", "--data", t.TempDir(), "--namesrv-port", "0", "--broker-port", "0",
		"--grpc-port", "-1", "--console-port", "-1", "--set", "metricsPromExporterPort=0", "--shutdown-timeout", "10s")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		signalled := false
		for sc.Scan() {
			if !signalled && strings.HasPrefix(sc.Text(), "broker ") {
				signalled = true
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatalf("standalone did not start; stderr:\n%s", stderr.String())
	}
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("no exit 20 s after SIGTERM; stderr:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "shut down") {
		t.Errorf("no drain log line; stderr:\n%s", stderr.String())
	}
	t.Logf("drained in %v", time.Since(start))
}
