package main

// Shared by the server subcommands (namesrv, broker, standalone): the
// properties file and --set overrides, the effective-config log line, and
// the run-until-signalled lifecycle.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/apogeemq/apogee/internal/config"
)

// applyConfFile loads the properties file path (kind names it in messages,
// e.g. "broker.conf") into a config through apply, which returns the keys
// it does not know. Unknown keys are warned about by name; a bad value is
// an error naming the file.
func applyConfFile(logger *slog.Logger, kind, path string, apply func(*config.Properties) ([]string, error)) error {
	if path == "" {
		return nil
	}
	props, err := config.LoadFile(path)
	if err != nil {
		return err
	}
	unknown, err := apply(props)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, k := range unknown {
		logger.Warn("unknown "+kind+" key ignored", "key", k, "file", path)
	}
	return nil
}

// applySets applies repeated --set key=value flags through setKey, which
// reports whether it knows the key; an unknown key is an error (a typo on
// the command line is never silently ignored).
func applySets(kind string, sets []string, setKey func(key, value string) (bool, error)) error {
	for _, kv := range sets {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("--set %q: want key=value", kv)
		}
		known, err := setKey(strings.TrimSpace(k), strings.TrimSpace(v))
		if err != nil {
			return err
		}
		if !known {
			return fmt.Errorf("--set %q: unknown %s key", k, kind)
		}
	}
	return nil
}

// logEffectiveConfig logs every key once at start-up, sorted; what names
// the component ("broker", "namesrv").
func logEffectiveConfig(logger *slog.Logger, what string, m map[string]string) {
	attrs := make([]any, 0, 2*len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		attrs = append(attrs, k, m[k])
	}
	logger.Info("effective "+what+" config", attrs...)
}

// serverCommand is a server subcommand (no arguments) whose run function
// gets the process logger built from the global flags.
func serverCommand(g *globalFlags, use, short string, run func(cmd *cobra.Command, logger *slog.Logger) error) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := g.logger(os.Stderr)
			if err != nil {
				return err
			}
			return run(cmd, logger)
		},
	}
}

// defaultShutdownTimeout is --shutdown-timeout's default: below the 45 s
// systemd and the 60 s Kubernetes grace periods of deploy/, so the process
// reports an unfinished drain itself before it is killed.
const defaultShutdownTimeout = 30 * time.Second

type shutdownTimeoutKey struct{}

// withShutdownTimeout records the drain bound in ctx (d <= 0: unbounded).
func withShutdownTimeout(ctx context.Context, d time.Duration) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithValue(ctx, shutdownTimeoutKey{}, d)
}

// shutdownTimeout is the bound withShutdownTimeout recorded in ctx, else
// defaultShutdownTimeout (a command run without the root command).
func shutdownTimeout(ctx context.Context) time.Duration {
	if d, ok := ctx.Value(shutdownTimeoutKey{}).(time.Duration); ok {
		return d
	}
	return defaultShutdownTimeout
}

// serveUntilDone blocks until ctx ends (SIGINT or SIGTERM, see main), then
// closes the started components in the order given (startup in reverse:
// a broker stops accepting, finishes its in-flight requests, flushes and
// unregisters in its Close) and returns their errors joined.
//
// The drain is bounded by the context's shutdown timeout: past it,
// serveUntilDone returns an error naming the bound and the process exits
// non-zero without waiting further. The closing goroutine is then left
// running; it is owned by a process that is about to exit.
func serveUntilDone(ctx context.Context, logger *slog.Logger, closers ...func() error) error {
	<-ctx.Done()
	limit := shutdownTimeout(ctx)
	logger.Info("shutting down", "timeout", limit)
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		var errs []error
		for _, c := range closers {
			errs = append(errs, c())
		}
		done <- errors.Join(errs...)
	}()
	var bound <-chan time.Time
	if limit > 0 {
		t := time.NewTimer(limit)
		defer t.Stop()
		bound = t.C
	}
	select {
	case err := <-done:
		logger.Info("shut down", "took", time.Since(start).Round(time.Millisecond))
		return err
	case <-bound:
		return fmt.Errorf("shutdown did not finish within --shutdown-timeout=%s", limit)
	}
}
