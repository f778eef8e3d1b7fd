package main

import (
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/apogeemq/apogee/internal/config"
	"github.com/apogeemq/apogee/internal/namesrv"
)

func init() { register(newNamesrvCmd) }

// namesrvFlags are the command-line overrides of namesrv.conf keys.
type namesrvFlags struct {
	confFile     string
	listen       string
	kvConfigPath string
	set          []string
}

func (f *namesrvFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVarP(&f.confFile, "config", "c", "", "namesrv.conf properties file")
	fl.StringVar(&f.listen, "listen", "", "listen address host:port (bindAddress, listenPort; default :9876)")
	fl.StringVar(&f.kvConfigPath, "kv-config-path", "", "KV config file (kvConfigPath)")
	fl.StringArrayVar(&f.set, "set", nil, "any namesrv.conf key, key=value (repeatable)")
}

// load builds the config: defaults -> file -> flags. Unknown file keys are
// warned about by name; a bad value is an error naming key and value.
func (f *namesrvFlags) load(cmd *cobra.Command, logger *slog.Logger) (namesrv.Config, error) {
	cfg := namesrv.DefaultConfig()
	if f.confFile != "" {
		props, err := config.LoadFile(f.confFile)
		if err != nil {
			return cfg, err
		}
		unknown, err := config.Apply(props, &cfg)
		if err != nil {
			return cfg, fmt.Errorf("%s: %w", f.confFile, err)
		}
		for _, k := range unknown {
			logger.Warn("unknown namesrv.conf key ignored", "key", k, "file", f.confFile)
		}
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
	for _, kv := range f.set {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return cfg, fmt.Errorf("--set %q: want key=value", kv)
		}
		known, err := config.SetKey(&cfg, strings.TrimSpace(k), strings.TrimSpace(v))
		if err != nil {
			return cfg, err
		}
		if !known {
			return cfg, fmt.Errorf("--set %q: unknown namesrv.conf key", k)
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func newNamesrvCmd(g *globalFlags) *cobra.Command {
	f := &namesrvFlags{}
	cmd := &cobra.Command{
		Use:   "namesrv",
		Short: "Run a name server (route registry for brokers and clients)",
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
			m := config.ToMap(&cfg)
			attrs := make([]any, 0, 2*len(m))
			for _, k := range slices.Sorted(maps.Keys(m)) {
				attrs = append(attrs, k, m[k])
			}
			logger.Info("effective namesrv config", attrs...)

			ns := namesrv.New(cfg, logger)
			if err := ns.Start(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "namesrv listening on %s\n", ns.Addr())
			<-cmd.Context().Done()
			logger.Info("shutting down")
			return ns.Close()
		},
	}
	f.register(cmd)
	return cmd
}
