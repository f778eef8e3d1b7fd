// Package testutil holds helpers shared by tests: polling instead of
// sleeping, loggers that write to t.Log, and temp data directories. Its
// subpackages hold the heavier shared pieces: cluster (a real name server
// and broker in the test's process) and fakebroker (the one fake broker of
// the SDK's tests, with request interception and injected latency).
//
// It is imported only from _test.go files and from e2e tests.
package testutil

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// Eventually polls fn every 10 ms until it returns true or timeout passes,
// then fails the test. Use it instead of time.Sleep.
func Eventually(t testing.TB, timeout time.Duration, fn func() bool, msgAndArgs ...any) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if fn() {
			return
		}
		if time.Now().After(deadline) {
			if len(msgAndArgs) > 0 {
				if f, ok := msgAndArgs[0].(string); ok {
					t.Fatalf("condition not met within %v: "+f, append([]any{timeout}, msgAndArgs[1:]...)...)
				}
			}
			t.Fatalf("condition not met within %v", timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Context returns a context cancelled when the test ends or after d.
func Context(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Logger returns a slog.Logger whose output goes to t.Log, so it is shown
// only when the test fails (or with -v).
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(&tWriter{t: t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// DiscardLogger drops everything; for benchmarks.
func DiscardLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

type tWriter struct{ t testing.TB }

func (w *tWriter) Write(p []byte) (int, error) {
	// t.Log after the test ended panics; a late goroutine must not crash the run.
	defer func() { _ = recover() }()
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
