package main

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/apogeemq/apogee/internal/config"
	"github.com/apogeemq/apogee/internal/metrics"
	"github.com/apogeemq/apogee/internal/namesrv"
)

func init() { register(newNamesrvCmd) }

// namesrvFlags are the command-line overrides of namesrv.conf keys.
type namesrvFlags struct {
	confFile     string
	listen       string
	kvConfigPath string
	set          []string
	// metricsListen is where GET /metrics listens ("" = no endpoint).
	metricsListen string
	// embedded is the controller inside the name server
	// (enableControllerInNamesrv, namesrv_controller.go).
	embedded embeddedController
}

func (f *namesrvFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVarP(&f.confFile, "config", "c", "", "namesrv.conf properties file")
	fl.StringVar(&f.listen, "listen", "", "listen address host:port (bindAddress, listenPort; default :9876)")
	fl.StringVar(&f.kvConfigPath, "kv-config-path", "", "KV config file (kvConfigPath)")
	fl.StringArrayVar(&f.set, "set", nil, "any namesrv.conf key, key=value (repeatable)")
	fl.StringVar(&f.metricsListen, "metrics-listen", "", "serve GET /metrics on host:port (default: no endpoint)")
}

// load builds the config: defaults -> file -> flags. Unknown file keys are
// warned about by name; a bad value is an error naming key and value.
func (f *namesrvFlags) load(cmd *cobra.Command, logger *slog.Logger) (namesrv.Config, error) {
	cfg := namesrv.DefaultConfig()
	err := applyConfFile(logger, "namesrv.conf", f.confFile, func(p *config.Properties) ([]string, error) {
		unknown, err := config.Apply(p, &cfg)
		if err != nil {
			return nil, err
		}
		return f.embedded.apply(p, unknown) // namesrv_controller.go
	})
	if err != nil {
		return cfg, err
	}
	if cmd.Flags().Changed("listen") {
		host, port, err := net.SplitHostPort(f.listen)
		if err != nil {
			return cfg, fmt.Errorf("--listen %q: %w", f.listen, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return cfg, fmt.Errorf("--listen %q: bad port: %w", f.listen, err)
		}
		cfg.BindAddress, cfg.ListenPort = host, p
	}
	if cmd.Flags().Changed("kv-config-path") {
		cfg.KVConfigPath = f.kvConfigPath
	}
	err = applySets("namesrv.conf", f.set, func(k, v string) (bool, error) { return config.SetKey(&cfg, k, v) })
	if err != nil {
		return cfg, err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func newNamesrvCmd(g *globalFlags) *cobra.Command {
	f := &namesrvFlags{}
	cmd := serverCommand(g, "namesrv", "Run a name server (route registry for brokers and clients)", func(cmd *cobra.Command, logger *slog.Logger) error {
		cfg, err := f.load(cmd, logger)
		if err != nil {
			return err
		}
		logEffectiveConfig(logger, "namesrv", maskedConfig(config.ToMap(&cfg)))

		ns := namesrv.New(cfg, logger)
		if err := ns.Start(); err != nil {
			return err
		}
		closeController, err := f.embedded.start(cmd, logger, f.confFile) // namesrv_controller.go
		if err != nil {
			ns.Close()
			return err
		}
		closeMetrics := startMetrics(f.metricsListen, false, logger, metrics.NewNamesrvCollector(ns)) // metrics.go
		fmt.Fprintf(cmd.OutOrStdout(), "namesrv listening on %s\n", ns.Addr())
		return serveUntilDone(cmd.Context(), logger, closeMetrics, closeController, ns.Close)
	})
	f.register(cmd)
	return cmd
}
