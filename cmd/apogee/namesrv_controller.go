package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/apogeemq/apogee/internal/config"
	"github.com/apogeemq/apogee/internal/controller"
)

// embeddedController is RocketMQ's enableControllerInNamesrv: namesrv.conf
// may carry the controller's keys (jRaftGroupId, jRaftServerId, ...), and
// with enableControllerInNamesrv=true the name server process also runs a
// controller node.
type embeddedController struct {
	keys controllerInNamesrv
}

type controllerInNamesrv struct {
	EnableControllerInNamesrv bool `conf:"enableControllerInNamesrv"`
	controller.Config
}

// apply reads the controller keys from namesrv.conf and returns the keys
// neither the name server nor the controller knows.
func (e *embeddedController) apply(p *config.Properties, unknownToNamesrv []string) ([]string, error) {
	e.keys.Config = controller.DefaultConfig()
	unknownToCtl, err := config.Apply(p, &e.keys)
	if err != nil {
		return nil, err
	}
	ctl := make(map[string]bool, len(unknownToCtl))
	for _, k := range unknownToCtl {
		ctl[k] = true
	}
	var unknown []string
	for _, k := range unknownToNamesrv {
		if ctl[k] {
			unknown = append(unknown, k)
		}
	}
	return unknown, nil
}

// start runs the controller when enabled; the returned func closes it.
// UPDATE_CONTROLLER_CONFIG writes its keys back to confFile (namesrv.conf).
func (e *embeddedController) start(cmd *cobra.Command, logger *slog.Logger, confFile string) (func() error, error) {
	if !e.keys.EnableControllerInNamesrv {
		return func() error { return nil }, nil
	}
	cfg := e.keys.Config
	c, err := controller.New(cfg, logger)
	if err != nil {
		return nil, err
	}
	c.SetConfigFile(confFile)
	if err := c.Start(); err != nil {
		return nil, err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "controller %s listening on %s (raft %s, in the name server)\n", cfg.JRaftGroupID, c.Addr(), cfg.JRaftServerID)
	return c.Close, nil
}
