package main

import (
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/config"
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
	flushDiskType string
	set           []string
	// defaultBrokerName replaces the host-name default (standalone uses
	// broker-a); the file and --broker-name still override it.
	defaultBrokerName string
}

func (f *brokerFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVarP(&f.confFile, "config", "c", "", "broker.conf properties file")
	fl.StringVarP(&f.namesrv, "namesrv", "n", "", "name servers, host:port[;host:port] (namesrvAddr)")
	fl.IntVar(&f.listenPort, "listen-port", 0, "remoting port (listenPort; 0 in a flag means any free port)")
	fl.StringVar(&f.storeDir, "store-dir", "", "store root directory (storePathRootDir)")
	fl.StringVar(&f.brokerName, "broker-name", "", "broker name (brokerName)")
	fl.StringVar(&f.clusterName, "cluster", "", "cluster name (brokerClusterName)")
	fl.StringVar(&f.brokerIP, "broker-ip", "", "advertised address (brokerIP1)")
	fl.StringVar(&f.flushDiskType, "flush-disk-type", "", "ASYNC_FLUSH or SYNC_FLUSH (flushDiskType)")
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
	if f.confFile != "" {
		props, err := config.LoadFile(f.confFile)
		if err != nil {
			return cfg, err
		}
		unknown, err := cfg.ApplyProperties(props)
		if err != nil {
			return cfg, err
		}
		for _, k := range unknown {
			logger.Warn("unknown broker.conf key ignored", "key", k, "file", f.confFile)
		}
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
	} {
		if err := set(s.flag, s.key, s.value); err != nil {
			return cfg, err
		}
	}
	for _, kv := range f.set {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return cfg, fmt.Errorf("--set %q: want key=value", kv)
		}
		known, err := cfg.SetKey(strings.TrimSpace(k), strings.TrimSpace(v))
		if err != nil {
			return cfg, err
		}
		if !known {
			return cfg, fmt.Errorf("--set %q: unknown broker.conf key", k)
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// logEffectiveConfig logs every key once at start-up, sorted.
func logEffectiveConfig(logger *slog.Logger, m map[string]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	attrs := make([]any, 0, 2*len(keys))
	for _, k := range keys {
		attrs = append(attrs, k, m[k])
	}
	logger.Info("effective broker config", attrs...)
}

func newBrokerCmd(g *globalFlags) *cobra.Command {
	f := &brokerFlags{}
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Run a broker (registers with the name servers of namesrvAddr)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := g.logger(os.Stderr)
			if err != nil {
				return err
			}
			cfg, err := f.load(cmd, logger)
			if err != nil {
				return err
			}
			logEffectiveConfig(logger, cfg.ToMap())
			b, err := broker.New(cfg, logger)
			if err != nil {
				return err
			}
			if err := b.Start(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "broker %s listening on %s\n", cfg.BrokerName, b.Addr())
			<-cmd.Context().Done()
			logger.Info("shutting down")
			return b.Close()
		},
	}
	f.register(cmd)
	return cmd
}
