package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/apogeemq/apogee/internal/config"
	"github.com/apogeemq/apogee/internal/controller"
	"github.com/apogeemq/apogee/internal/metrics"
)

func init() { register(newControllerCmd) }

// controllerFlags are the command-line overrides of controller.conf keys.
type controllerFlags struct {
	confFile string
	set      []string
	// metricsListen is where GET /metrics listens ("" = no endpoint).
	metricsListen string
}

// load builds the config: defaults -> file -> --set. Unknown file keys are
// warned about by name.
func (f *controllerFlags) load(logger *slog.Logger) (controller.Config, error) {
	cfg := controller.DefaultConfig()
	err := applyConfFile(logger, "controller.conf", f.confFile, func(p *config.Properties) ([]string, error) {
		return config.Apply(p, &cfg)
	})
	if err != nil {
		return cfg, err
	}
	if err := applySets("controller.conf", f.set, func(k, v string) (bool, error) { return config.SetKey(&cfg, k, v) }); err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

func newControllerCmd(g *globalFlags) *cobra.Command {
	f := &controllerFlags{}
	cmd := serverCommand(g, "controller", "Run a controller (raft-replicated broker-set metadata and master election)", func(cmd *cobra.Command, logger *slog.Logger) error {
		cfg, err := f.load(logger)
		if err != nil {
			return err
		}
		logEffectiveConfig(logger, "controller", config.ToMap(&cfg))
		c, err := controller.New(cfg, logger)
		if err != nil {
			return err
		}
		c.SetConfigFile(f.confFile) // UPDATE_CONTROLLER_CONFIG writes back to it
		if err := c.Start(); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "controller %s listening on %s (raft %s)\n", cfg.JRaftGroupID, c.Addr(), cfg.JRaftServerID)
		closeMetrics := startMetrics(f.metricsListen, false, logger, metrics.NewControllerCollector(c)) // metrics.go
		return serveUntilDone(cmd.Context(), logger, closeMetrics, c.Close)
	})
	fl := cmd.Flags()
	fl.StringVarP(&f.confFile, "config", "c", "", "controller.conf properties file")
	fl.StringArrayVar(&f.set, "set", nil, "any controller.conf key, key=value (repeatable)")
	fl.StringVar(&f.metricsListen, "metrics-listen", "", "serve GET /metrics on host:port (default: no endpoint)")
	return cmd
}
