// Command apogee is the single Apogee binary: name server, broker,
// standalone mode, admin tool, quick producer/consumer and benchmarks, each a
// subcommand. This package only wires flags, config files, logging and
// signals to the internal packages.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd()
	root.SetArgs(rewriteAdminArgs(os.Args[1:])) // admin_compat.go: mqadmin's -bn
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "apogee:", err)
		os.Exit(1)
	}
}

// globalFlags are shared by every subcommand.
type globalFlags struct {
	logFormat string
	logLevel  string
	// shutdownTimeout bounds the drain after SIGTERM (serve.go).
	shutdownTimeout time.Duration
}

func newRootCmd() *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:           "apogee",
		Short:         "Apogee: a RocketMQ-compatible message queue in one binary",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       versionString(), // version.go; --version prints it
		// The drain bound reaches serveUntilDone through the context.
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			cmd.SetContext(withShutdownTimeout(cmd.Context(), g.shutdownTimeout))
		},
	}
	root.PersistentFlags().StringVar(&g.logFormat, "log-format", "text", "log format: text or json")
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	root.PersistentFlags().DurationVar(&g.shutdownTimeout, "shutdown-timeout", defaultShutdownTimeout,
		"servers: after SIGTERM, exit non-zero if draining takes longer than this")
	for _, add := range subcommands {
		root.AddCommand(add(g))
	}
	return root
}

// subcommands is filled by the init functions of the subcommand files, so
// each subcommand lives in its own file and adding one touches no other.
var subcommands []func(*globalFlags) *cobra.Command

func register(f func(*globalFlags) *cobra.Command) { subcommands = append(subcommands, f) }

// logger builds the process logger from the global flags.
func (g *globalFlags) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(g.logLevel)); err != nil {
		return nil, fmt.Errorf("bad --log-level %q: %w", g.logLevel, err)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch g.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("bad --log-format %q: want text or json", g.logFormat)
	}
}
