package broker

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"time"
)

// ControllerModeConfig holds the controller-mode keys of broker.conf
// (RocketMQ 5, docs/broker.md §2.2). Config embeds it. With
// enableControllerMode=true the broker.conf brokerRole and brokerId are
// ignored: the controller assigns the id and the role.
type ControllerModeConfig struct {
	EnableControllerMode bool `conf:"enableControllerMode"`
	// ControllerAddr lists the controllers' remoting addresses
	// (';'-separated in broker.conf).
	ControllerAddr []string `conf:"controllerAddr"`
	// BrokerElectionPriority: a lower value is preferred in elections
	// (Integer.MAX_VALUE).
	BrokerElectionPriority int32 `conf:"brokerElectionPriority"`
	// AllAckInSyncStateSet: a send is acknowledged only when every member
	// of the SyncStateSet has it (false: inSyncReplicas applies).
	AllAckInSyncStateSet bool `conf:"allAckInSyncStateSet"`
	// ControllerHeartBeatTimeoutMills: the controller declares the broker
	// dead after this long without a heartbeat (10 s). The master's write
	// lease is half of it (DESIGN.md, controller mode).
	ControllerHeartBeatTimeoutMills time.Duration `conf:"controllerHeartBeatTimeoutMills"`
	// BrokerHeartbeatInterval: heartbeat period to the controller (1 s).
	BrokerHeartbeatInterval time.Duration `conf:"brokerHeartbeatInterval"`
	// SyncBrokerMetadataPeriod: how often the broker re-reads its set's
	// master view from the controller besides heartbeats (5 s).
	SyncBrokerMetadataPeriod time.Duration `conf:"syncBrokerMetadataPeriod"`
	// SyncControllerMetadataPeriod: how often the controller leader is
	// looked up again (10 s).
	SyncControllerMetadataPeriod time.Duration `conf:"syncControllerMetadataPeriod"`
	// CheckSyncStateSetPeriod: how often the master shrinks or expands
	// the SyncStateSet (5 s).
	CheckSyncStateSetPeriod time.Duration `conf:"checkSyncStateSetPeriod"`
	// HaMaxTimeSlaveNotCatchup: a slave that has not caught up for this
	// long leaves the SyncStateSet (15 s).
	HaMaxTimeSlaveNotCatchup time.Duration `conf:"haMaxTimeSlaveNotCatchup"`
	// ForwardSendToMaster (Apogee): a slave relays sends to the master the
	// controller named, so producers with a stale route recover when the
	// old master's address serves again (controller_forward.go; true).
	ForwardSendToMaster bool `conf:"forwardSendToMaster"`
	// StorePathEpochFile is the epoch file (<storePathRootDir>/epochFileCheckpoint).
	StorePathEpochFile string `conf:"storePathEpochFile"`
	// StorePathBrokerIdentity holds the controller-assigned broker id
	// (<storePathRootDir>/brokerIdentity).
	StorePathBrokerIdentity string `conf:"storePathBrokerIdentity"`
}

// DefaultControllerModeConfig returns RocketMQ's defaults.
func DefaultControllerModeConfig() ControllerModeConfig {
	return ControllerModeConfig{
		BrokerElectionPriority:          math.MaxInt32,
		ControllerHeartBeatTimeoutMills: 10 * time.Second,
		BrokerHeartbeatInterval:         time.Second,
		SyncBrokerMetadataPeriod:        5 * time.Second,
		SyncControllerMetadataPeriod:    10 * time.Second,
		CheckSyncStateSetPeriod:         5 * time.Second,
		HaMaxTimeSlaveNotCatchup:        15 * time.Second,
		ForwardSendToMaster:             true,
	}
}

func (c *Config) epochFilePath() string {
	if c.StorePathEpochFile != "" {
		return c.StorePathEpochFile
	}
	return filepath.Join(c.Store.StorePathRootDir, "epochFileCheckpoint")
}

func (c *Config) identityPath() string {
	if c.StorePathBrokerIdentity != "" {
		return c.StorePathBrokerIdentity
	}
	return filepath.Join(c.Store.StorePathRootDir, "brokerIdentity")
}

// leaseDuration is how long a master may acknowledge writes after sending
// a heartbeat the controller answered: half the heartbeat timeout.
func (c *Config) leaseDuration() time.Duration { return c.ControllerHeartBeatTimeoutMills / 2 }

// validateControllerMode checks the controller-mode keys.
func (c *Config) validateControllerMode() error {
	if !c.EnableControllerMode {
		return nil
	}
	var errs []error
	if len(c.ControllerAddr) == 0 {
		errs = append(errs, errors.New("broker: config controllerAddr: required with enableControllerMode=true"))
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{
		{"controllerHeartBeatTimeoutMills", c.ControllerHeartBeatTimeoutMills},
		{"brokerHeartbeatInterval", c.BrokerHeartbeatInterval},
		{"syncBrokerMetadataPeriod", c.SyncBrokerMetadataPeriod},
		{"syncControllerMetadataPeriod", c.SyncControllerMetadataPeriod},
		{"checkSyncStateSetPeriod", c.CheckSyncStateSetPeriod},
		{"haMaxTimeSlaveNotCatchup", c.HaMaxTimeSlaveNotCatchup},
	} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("broker: config %s=%d: must be > 0", d.key, d.v.Milliseconds()))
		}
	}
	if c.BrokerHeartbeatInterval*2 >= c.ControllerHeartBeatTimeoutMills {
		errs = append(errs, fmt.Errorf("broker: config brokerHeartbeatInterval=%d: must be below half of controllerHeartBeatTimeoutMills=%d (the master's lease)",
			c.BrokerHeartbeatInterval.Milliseconds(), c.ControllerHeartBeatTimeoutMills.Milliseconds()))
	}
	if c.MinInSyncReplicas < 1 {
		errs = append(errs, fmt.Errorf("broker: config minInSyncReplicas=%d: must be >= 1", c.MinInSyncReplicas))
	}
	return errors.Join(errs...)
}
