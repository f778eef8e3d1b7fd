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

// serveUntilDone blocks until ctx ends (SIGINT or SIGTERM, see main), then
// closes the started components in the order given (startup in reverse)
// and returns their errors joined.
func serveUntilDone(ctx context.Context, logger *slog.Logger, closers ...func() error) error {
	<-ctx.Done()
	logger.Info("shutting down")
	var errs []error
	for _, c := range closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}
