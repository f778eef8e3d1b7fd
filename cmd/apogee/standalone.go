package main

import (
	"fmt"
	"log/slog"
	"net"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/metrics"
	"github.com/apogeemq/apogee/internal/namesrv"
)

func init() { register(newStandaloneCmd) }

func newStandaloneCmd(g *globalFlags) *cobra.Command {
	f := &brokerFlags{defaultBrokerName: "broker-a"}
	var dataDir, consoleHost string
	var namesrvPort, brokerPort, consolePort int
	cmd := serverCommand(g, "standalone", "Run a name server and a broker in one process (data under --data)", func(cmd *cobra.Command, logger *slog.Logger) error {
		cfg, err := f.load(cmd, logger)
		if err != nil {
			return err
		}
		abs, err := filepath.Abs(dataDir)
		if err != nil {
			return err
		}

		nsCfg := namesrv.DefaultConfig()
		nsCfg.ListenPort = namesrvPort
		nsCfg.BindAddress = cfg.BindAddress
		nsCfg.KVConfigPath = filepath.Join(abs, "namesrv", "kvConfig.json")
		nsCfg.Settings = cfg.Settings // the same tlsMode on both ports
		if cfg.InnerClientAuthenticationCredentials != "" {
			// The broker registers with its inner credentials, so the name
			// server can check its admin writes too (admin_auth.go).
			nsCfg.AuthConfig = cfg.AuthConfig
		}
		ns := namesrv.New(nsCfg, logger)
		if err := ns.Start(); err != nil {
			return fmt.Errorf("name server: %w", err)
		}
		nsAddr := net.JoinHostPort(cfg.BrokerIP1, fmt.Sprint(ns.Addr().(*net.TCPAddr).Port))

		cfg.NamesrvAddr = []string{nsAddr}
		cfg.ListenPort = brokerPort
		cfg.Store.StorePathRootDir = filepath.Join(abs, "broker")
		if err := cfg.Validate(); err != nil {
			ns.Close()
			return err
		}
		logEffectiveConfig(logger, "broker", cfg.ToMap())
		b, err := broker.New(cfg, logger)
		if err == nil {
			b.SetConfigFile(f.confFile) // UPDATE_BROKER_CONFIG writes back to -c
			err = b.Start()
		}
		if err != nil {
			ns.Close()
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "name server listening on %s\nbroker %s listening on %s\n", nsAddr, cfg.BrokerName, b.Addr())
		closeMetrics := startBrokerMetrics(b, logger, cmd.OutOrStdout(), metrics.NewNamesrvCollector(ns))            // metrics.go
		consoleAddr, closeConsole := startConsole(consoleListenHost(consoleHost, &cfg), consolePort, nsAddr, logger) // console.go
		if consoleAddr != "" {
			fmt.Fprintf(cmd.OutOrStdout(), "console listening on http://%s\n", consoleAddr)
		}
		closeGRPC, err := startLocalGRPC(cfg, b, logger, cmd.OutOrStdout())
		if err != nil {
			closeConsole()
			closeMetrics()
			b.Close()
			ns.Close()
			return err
		}
		// Startup in reverse: the broker unregisters from the name server first.
		return serveUntilDone(cmd.Context(), logger, closeGRPC, closeConsole, closeMetrics, b.Close, ns.Close)
	})
	f.registerCommon(cmd, f.defaultBrokerName)
	fl := cmd.Flags()
	fl.StringVar(&dataDir, "data", "./data", "data directory (broker store and name-server KV config)")
	fl.IntVar(&namesrvPort, "namesrv-port", namesrv.DefaultListenPort, "name-server port (0 = any free port)")
	fl.IntVar(&brokerPort, "broker-port", 10911, "broker port (0 = any free port)")
	fl.IntVar(&consolePort, "console-port", defaultConsolePort, "web console port (0 = any free port, -1 = no console)")
	fl.StringVar(&consoleHost, "console-host", "", "web console address (default: the broker's bindAddress when set, else brokerIP1)")
	return cmd
}

// consoleListenHost is where standalone's console listens: the flag, else
// the broker's bindAddress (so a container that binds 0.0.0.0 publishes its
// console as it publishes its ports), else brokerIP1.
func consoleListenHost(flag string, cfg *broker.Config) string {
	switch {
	case flag != "":
		return flag
	case cfg.BindAddress != "":
		return cfg.BindAddress
	}
	return cfg.BrokerIP1
}
