package controller

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apogeemq/apogee/internal/config"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// runtimeKeys are the controller.conf keys UPDATE_CONTROLLER_CONFIG (1009)
// changes at run time; they are read where they are used, so a change
// applies to the next election, notification or scan.
var runtimeKeys = []string{"enableElectUncleanMaster", "notifyBrokerRoleChanged", "electMasterMaxRetryCount", "scanNotActiveBrokerInterval"}

// fixedBlackList is always refused, whatever configBlackList says
// (RocketMQ's ControllerRequestProcessor adds the same three).
var fixedBlackList = []string{"configBlackList", "configStorePath", "rocketmqHome"}

// dynamicConfig is the run-time part of Config. The values the running
// controller uses are the atomics; cfg (Controller.cfg) holds the same
// values for GET_CONTROLLER_CONFIG, written under mu.
type dynamicConfig struct {
	// mu serialises updates and guards the runtime fields of
	// Controller.cfg (ConfigText reads them under it).
	mu sync.Mutex

	unclean  atomic.Bool
	notify   atomic.Bool
	retries  atomic.Int32
	scanNano atomic.Int64

	// file is the controller.conf updates are written back to ("":
	// none, updates last until restart); set before Start.
	file string
}

func (d *dynamicConfig) init(c *Config) {
	d.unclean.Store(c.EnableElectUncleanMaster)
	d.notify.Store(c.NotifyBrokerRoleChanged)
	d.retries.Store(int32(c.ElectMasterMaxRetryCount))
	d.scanNano.Store(int64(c.ScanNotActiveBrokerInterval))
}

func (d *dynamicConfig) scanInterval() time.Duration { return time.Duration(d.scanNano.Load()) }

// SetConfigFile names the controller.conf the controller was started with:
// UPDATE_CONTROLLER_CONFIG writes changed keys back to it, so they survive
// a restart (RocketMQ persists its configuration the same way). Call
// before Start; "" keeps updates in memory only.
func (c *Controller) SetConfigFile(path string) { c.dyn.file = path }

// updateControllerConfig serves UPDATE_CONTROLLER_CONFIG (1009; body: Java
// properties text) on every node, for that node only, as RocketMQ does
// (tools send it to each controller). A key of the black list
// (configBlackList, configStorePath, rocketmqHome and the configured
// configBlackList entries) is refused with NO_PERMISSION "Can not update
// config in black list.", as are keys that only take effect at start; the
// run-time keys (runtimeKeys) are checked like controller.conf values,
// written back to the config file when there is one (a failed write
// refuses the update with SYSTEM_ERROR and changes nothing), then applied.
func (c *Controller) updateControllerConfig(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	props, err := config.Parse(bytes.NewReader(req.Body))
	if err != nil {
		return nil, protocol.Errorf(protocol.InvalidParameter, "%v", err)
	}
	c.dyn.mu.Lock()
	defer c.dyn.mu.Unlock()
	black := append(slices.Clone(fixedBlackList), strings.Split(c.cfg.ConfigBlackList, ";")...)
	next := c.cfg // a copy: checked whole, applied field by field
	updates := make(map[string]string, props.Len())
	for _, k := range props.Keys() {
		v, _ := props.Get(k)
		if slices.Contains(black, k) {
			return nil, protocol.Errorf(protocol.NoPermission, "Can not update config in black list.")
		}
		if !slices.Contains(runtimeKeys, k) {
			return nil, protocol.Errorf(protocol.NoPermission, "Can not update config %s at run time (run-time keys: %s)", k, strings.Join(runtimeKeys, ", "))
		}
		if _, err := config.SetKey(&next, k, v); err != nil {
			return nil, protocol.Errorf(protocol.InvalidParameter, "%v", err)
		}
		updates[k] = v
	}
	if err := next.Validate(); err != nil {
		return nil, protocol.Errorf(protocol.InvalidParameter, "%v", err)
	}
	if c.dyn.file != "" && len(updates) > 0 {
		if err := config.PersistKeys(c.dyn.file, updates); err != nil {
			c.logger.Error("controller config update not persisted", "file", c.dyn.file, "err", err)
			return nil, protocol.Errorf(protocol.SystemError, "persist controller config: %v", err)
		}
	}
	// Only the run-time fields change: other goroutines read the rest of
	// cfg without the lock.
	c.cfg.EnableElectUncleanMaster = next.EnableElectUncleanMaster
	c.cfg.NotifyBrokerRoleChanged = next.NotifyBrokerRoleChanged
	c.cfg.ElectMasterMaxRetryCount = next.ElectMasterMaxRetryCount
	c.cfg.ScanNotActiveBrokerInterval = next.ScanNotActiveBrokerInterval
	c.dyn.init(&c.cfg)
	if len(updates) > 0 {
		c.logger.Info("controller config updated at run time", "keys", props.Keys(), "file", c.dyn.file)
	}
	return ok(req, nil, nil), nil
}
