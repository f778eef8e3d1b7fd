package main

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/apogeemq/apogee/internal/console"
)

func init() { register(newConsoleCmd) }

// defaultConsolePort is where `apogee standalone` serves the console.
const defaultConsolePort = 8080

func newConsoleCmd(g *globalFlags) *cobra.Command {
	var namesrv, listen string
	cmd := serverCommand(g, "console", "Run the web console (RocketMQ Dashboard's pages) against a cluster", func(cmd *cobra.Command, logger *slog.Logger) error {
		if namesrv == "" {
			namesrv = os.Getenv("NAMESRV_ADDR")
		}
		if namesrv == "" {
			return fmt.Errorf("console: give the name servers with -n host:port[;host:port]")
		}
		c, err := console.New(console.Config{Listen: listen, NameServers: strings.Split(namesrv, ";")}, logger)
		if err != nil {
			return err
		}
		if err := c.Start(); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "console listening on http://%s\n", c.Addr())
		return serveUntilDone(cmd.Context(), logger, c.Close)
	})
	fl := cmd.Flags()
	fl.StringVarP(&namesrv, "namesrv", "n", "", "name servers, host:port[;host:port] (default $NAMESRV_ADDR)")
	fl.StringVar(&listen, "listen", net.JoinHostPort("127.0.0.1", strconv.Itoa(defaultConsolePort)), "listen address host:port")
	return cmd
}

// startConsole starts the console of `apogee standalone` on host:port
// (port -1: none). A port that cannot be bound is logged, not fatal. The
// returned closer is never nil.
func startConsole(host string, port int, nsAddr string, logger *slog.Logger) (addr string, closer func() error) {
	none := func() error { return nil }
	if port < 0 {
		return "", none
	}
	c, err := console.New(console.Config{Listen: net.JoinHostPort(host, strconv.Itoa(port)), NameServers: []string{nsAddr}}, logger)
	if err == nil {
		err = c.Start()
	}
	if err != nil {
		logger.Error("console not started", "err", err)
		return "", none
	}
	return c.Addr(), c.Close
}
