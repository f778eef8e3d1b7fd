package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/apogeemq/apogee/internal/broker"
)

func init() { register(newBrokerCmd) }

// brokerFlags are the command-line overrides of broker.conf keys.
type brokerFlags struct {
	confFile      string
	namesrv       string
	listenPort    int
	storeDir      string
	brokerName    string
	clusterName   string
	brokerIP      string
	brokerIPFile  string
	flushDiskType string
	grpcPort      int
	set           []string
	// defaultBrokerName replaces the host-name default (standalone uses
	// broker-a); the file and --broker-name still override it.
	defaultBrokerName string
}

func (f *brokerFlags) register(cmd *cobra.Command) {
	f.registerCommon(cmd, "")
	fl := cmd.Flags()
	fl.StringVarP(&f.namesrv, "namesrv", "n", "", "name servers, host:port[;host:port] (namesrvAddr)")
	fl.IntVar(&f.listenPort, "listen-port", 0, "remoting port (listenPort; 0 in a flag means any free port)")
	fl.StringVar(&f.storeDir, "store-dir", "", "store root directory (storePathRootDir)")
	fl.StringVar(&f.brokerIP, "broker-ip", "", "advertised address (brokerIP1)")
	fl.StringVar(&f.brokerIPFile, "broker-ip-file", "", "read brokerIP1 from this file (applied last; the Helm chart's per-pod external address)")
}

// registerCommon registers the flags `broker` and `standalone` share;
// brokerName is the --broker-name default shown in the help.
func (f *brokerFlags) registerCommon(cmd *cobra.Command, brokerName string) {
	fl := cmd.Flags()
	fl.StringVarP(&f.confFile, "config", "c", "", "broker.conf properties file")
	fl.StringVar(&f.brokerName, "broker-name", brokerName, "broker name (brokerName)")
	fl.StringVar(&f.clusterName, "cluster", "", "cluster name (brokerClusterName)")
	fl.StringVar(&f.flushDiskType, "flush-disk-type", "", "ASYNC_FLUSH or SYNC_FLUSH (flushDiskType)")
	fl.IntVar(&f.grpcPort, "grpc-port", 8081, "gRPC endpoint port for RocketMQ 5 clients (grpcServerPort; 0 = any free port, -1 = off)")
	fl.StringArrayVar(&f.set, "set", nil, "any broker.conf key, key=value (repeatable)")
}

// load builds the broker config: defaults -> NAMESRV_ADDR -> file -> flags.
// Unknown file keys are warned about by name; a bad value is an error.
func (f *brokerFlags) load(cmd *cobra.Command, logger *slog.Logger) (broker.Config, error) {
	cfg := broker.DefaultConfig()
	if f.defaultBrokerName != "" {
		cfg.BrokerName = f.defaultBrokerName
	}
	if env := os.Getenv("NAMESRV_ADDR"); env != "" {
		if _, err := cfg.SetKey("namesrvAddr", env); err != nil {
			return cfg, err
		}
	}
	if err := applyConfFile(logger, "broker.conf", f.confFile, cfg.ApplyProperties); err != nil {
		return cfg, err
	}
	set := func(flag, key, value string) error {
		if !cmd.Flags().Changed(flag) {
			return nil
		}
		_, err := cfg.SetKey(key, value)
		return err
	}
	for _, s := range []struct{ flag, key, value string }{
		{"namesrv", "namesrvAddr", f.namesrv},
		{"listen-port", "listenPort", fmt.Sprint(f.listenPort)},
		{"store-dir", "storePathRootDir", f.storeDir},
		{"broker-name", "brokerName", f.brokerName},
		{"cluster", "brokerClusterName", f.clusterName},
		{"broker-ip", "brokerIP1", f.brokerIP},
		{"flush-disk-type", "flushDiskType", f.flushDiskType},
		{"grpc-port", "grpcServerPort", fmt.Sprint(f.grpcPort)},
	} {
		if err := set(s.flag, s.key, s.value); err != nil {
			return cfg, err
		}
	}
	if err := applySets("broker.conf", f.set, cfg.SetKey); err != nil {
		return cfg, err
	}
	if f.brokerIPFile != "" {
		b, err := os.ReadFile(f.brokerIPFile)
		if err != nil {
			return cfg, fmt.Errorf("--broker-ip-file: %w", err)
		}
		if _, err := cfg.SetKey("brokerIP1", strings.TrimSpace(string(b))); err != nil {
			return cfg, fmt.Errorf("--broker-ip-file %s: %w", f.brokerIPFile, err)
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func newBrokerCmd(g *globalFlags) *cobra.Command {
	f := &brokerFlags{}
	cmd := serverCommand(g, "broker", "Run a broker (registers with the name servers of namesrvAddr)", func(cmd *cobra.Command, logger *slog.Logger) error {
		cfg, err := f.load(cmd, logger)
		if err != nil {
			return err
		}
		logEffectiveConfig(logger, "broker", cfg.ToMap())
		if cfg.EnableControllerMode {
			// The controller assigns the role; a role change replaces the
			// broker in process (broker.Node).
			n, err := broker.NewNode(cfg, logger)
			if err != nil {
				return err
			}
			n.SetConfigFile(f.confFile)
			if err := n.Start(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "broker %s listening on %s\n", cfg.BrokerName, n.Broker().Addr())
			return serveUntilDone(cmd.Context(), logger, n.Close)
		}
		b, err := broker.New(cfg, logger)
		if err != nil {
			return err
		}
		b.SetConfigFile(f.confFile) // UPDATE_BROKER_CONFIG writes back to -c
		if err := b.Start(); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "broker %s listening on %s\n", cfg.BrokerName, b.Addr())
		closeMetrics := startBrokerMetrics(b, logger, cmd.OutOrStdout()) // metrics.go
		closeGRPC, err := startLocalGRPC(cfg, b, logger, cmd.OutOrStdout())
		if err != nil {
			closeMetrics()
			b.Close()
			return err
		}
		return serveUntilDone(cmd.Context(), logger, closeGRPC, closeMetrics, b.Close)
	})
	f.register(cmd)
	return cmd
}
