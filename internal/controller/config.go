package controller

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apogeemq/apogee/internal/tlsconf"
)

// Config is controller.conf: RocketMQ 5.2's ControllerConfig keys for the
// jRaft controller, under their names and defaults. Apogee runs every
// controller type on hashicorp/raft; controllerType is accepted for
// compatibility ("jRaft" and "DLedger" both mean the raft controller).
type Config struct {
	ControllerType string `conf:"controllerType"`
	RocketmqHome   string `conf:"rocketmqHome"`
	// JRaftGroupID names the raft group (GET_METADATA_INFO's group).
	JRaftGroupID string `conf:"jRaftGroupId"`
	// JRaftServerID is this node's raft address, HOST:PORT; it must be one
	// of JRaftInitConf.
	JRaftServerID string `conf:"jRaftServerId"`
	// JRaftInitConf lists the raft addresses of all nodes (comma-separated
	// in controller.conf).
	JRaftInitConf []string `conf:"jRaftInitConf"`
	// JRaftControllerRPCAddr lists the remoting addresses in the order of
	// JRaftInitConf; this node listens on the one at its own index.
	JRaftControllerRPCAddr []string `conf:"jRaftControllerRPCAddr"`
	// JRaftSnapshotIntervalSecs is how often the state is snapshotted
	// (3600 s); raft also snapshots after SnapshotThreshold entries.
	JRaftSnapshotIntervalSecs int `conf:"jRaftSnapshotIntervalSecs"`
	// ControllerStorePath holds the raft log, stable store and snapshots
	// ($HOME/DledgerController).
	ControllerStorePath string `conf:"controllerStorePath"`
	// ScanNotActiveBrokerInterval is how often the leader looks for
	// brokers whose heartbeat timed out (5 s).
	ScanNotActiveBrokerInterval time.Duration `conf:"scanNotActiveBrokerInterval"`
	// EnableElectUncleanMaster lets an election pick a replica outside the
	// SyncStateSet when none inside is alive (false: never lose data).
	EnableElectUncleanMaster bool `conf:"enableElectUncleanMaster"`
	// NotifyBrokerRoleChanged pushes NOTIFY_BROKER_ROLE_CHANGED to the
	// brokers of a set whose master changed (true).
	NotifyBrokerRoleChanged bool `conf:"notifyBrokerRoleChanged"`
	// ElectMasterMaxRetryCount bounds election attempts per trigger (3).
	ElectMasterMaxRetryCount int `conf:"electMasterMaxRetryCount"`
	// ConfigBlackList lists (';'-separated) keys UPDATE_CONTROLLER_CONFIG
	// must refuse, besides configBlackList, configStorePath and
	// rocketmqHome ("configBlackList;configStorePath").
	ConfigBlackList string `conf:"configBlackList"`
	// ControllerThreadPoolNums / ControllerRequestThreadPoolQueueCapacity
	// size the request pool (16 / 50000).
	ControllerThreadPoolNums                 int `conf:"controllerThreadPoolNums"`
	ControllerRequestThreadPoolQueueCapacity int `conf:"controllerRequestThreadPoolQueueCapacity"`

	// RaftHeartbeatTimeout / RaftElectionTimeout / RaftLeaderLeaseTimeout
	// are hashicorp/raft's timeouts (1000 / 1000 / 500 ms). Apogee keys.
	RaftHeartbeatTimeout   time.Duration `conf:"raftHeartbeatTimeout"`
	RaftElectionTimeout    time.Duration `conf:"raftElectionTimeout"`
	RaftLeaderLeaseTimeout time.Duration `conf:"raftLeaderLeaseTimeout"`
	// SnapshotThreshold is how many log entries trigger a snapshot (8192).
	// An Apogee key.
	SnapshotThreshold uint64 `conf:"raftSnapshotThreshold"`

	// Settings: tlsMode, tlsServerCertPath, ... on the remoting port; its
	// own calls to brokers dial TLS with tlsEnable or tlsMode=enforcing.
	tlsconf.Settings
}

// DefaultConfig returns RocketMQ's defaults.
func DefaultConfig() Config {
	home, _ := os.UserHomeDir()
	return Config{
		ControllerType:                           "jRaft",
		JRaftGroupID:                             "jRaft-Controller",
		JRaftServerID:                            "localhost:9880",
		JRaftInitConf:                            []string{"localhost:9880", "localhost:9881", "localhost:9882"},
		JRaftControllerRPCAddr:                   []string{"localhost:9770", "localhost:9771", "localhost:9772"},
		JRaftSnapshotIntervalSecs:                3600,
		ControllerStorePath:                      filepath.Join(home, "DledgerController"),
		ScanNotActiveBrokerInterval:              5 * time.Second,
		NotifyBrokerRoleChanged:                  true,
		ElectMasterMaxRetryCount:                 3,
		ConfigBlackList:                          "configBlackList;configStorePath",
		ControllerThreadPoolNums:                 16,
		ControllerRequestThreadPoolQueueCapacity: 50000,
		RaftHeartbeatTimeout:                     time.Second,
		RaftElectionTimeout:                      time.Second,
		RaftLeaderLeaseTimeout:                   500 * time.Millisecond,
		SnapshotThreshold:                        8192,
	}
}

// Validate rejects values the controller cannot run with; every error
// names the key.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key string, v any, why string) {
		errs = append(errs, fmt.Errorf("controller: config %s=%v: %s", key, v, why))
	}
	switch strings.ToLower(c.ControllerType) {
	case "jraft", "dledger", "":
	default:
		bad("controllerType", c.ControllerType, "want jRaft")
	}
	if c.JRaftGroupID == "" {
		bad("jRaftGroupId", c.JRaftGroupID, "must not be empty")
	}
	for _, a := range c.JRaftInitConf {
		if _, _, err := net.SplitHostPort(a); err != nil {
			bad("jRaftInitConf", strings.Join(c.JRaftInitConf, ","), "want host:port,host:port,...")
			break
		}
	}
	if len(c.JRaftInitConf) == 0 {
		bad("jRaftInitConf", "", "must list at least one raft address")
	}
	if len(c.JRaftControllerRPCAddr) != len(c.JRaftInitConf) {
		bad("jRaftControllerRPCAddr", strings.Join(c.JRaftControllerRPCAddr, ","), "needs one address per jRaftInitConf entry, in the same order")
	}
	if c.selfIndex() < 0 {
		bad("jRaftServerId", c.JRaftServerID, "must be one of jRaftInitConf")
	}
	if c.ControllerStorePath == "" {
		bad("controllerStorePath", "", "must not be empty")
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{
		{"scanNotActiveBrokerInterval", c.ScanNotActiveBrokerInterval},
		{"raftHeartbeatTimeout", c.RaftHeartbeatTimeout},
		{"raftElectionTimeout", c.RaftElectionTimeout},
		{"raftLeaderLeaseTimeout", c.RaftLeaderLeaseTimeout},
	} {
		if d.v <= 0 {
			bad(d.key, d.v.Milliseconds(), "must be > 0")
		}
	}
	if c.RaftLeaderLeaseTimeout > c.RaftHeartbeatTimeout {
		bad("raftLeaderLeaseTimeout", c.RaftLeaderLeaseTimeout.Milliseconds(), "must not exceed raftHeartbeatTimeout")
	}
	if c.ControllerThreadPoolNums < 1 || c.ControllerRequestThreadPoolQueueCapacity < 1 {
		bad("controllerThreadPoolNums", c.ControllerThreadPoolNums, "pool sizes must be >= 1")
	}
	if c.ElectMasterMaxRetryCount < 1 {
		bad("electMasterMaxRetryCount", c.ElectMasterMaxRetryCount, "must be >= 1")
	}
	if c.JRaftSnapshotIntervalSecs < 1 {
		bad("jRaftSnapshotIntervalSecs", c.JRaftSnapshotIntervalSecs, "must be >= 1")
	}
	return errors.Join(errs...)
}

// selfIndex is this node's position in JRaftInitConf (-1: absent).
func (c *Config) selfIndex() int {
	for i, a := range c.JRaftInitConf {
		if a == c.JRaftServerID {
			return i
		}
	}
	return -1
}

// RPCAddr is this node's remoting address.
func (c *Config) RPCAddr() string {
	if i := c.selfIndex(); i >= 0 && i < len(c.JRaftControllerRPCAddr) {
		return c.JRaftControllerRPCAddr[i]
	}
	return ""
}

// rpcAddrOf maps a raft address to its remoting address ("" if unknown).
func (c *Config) rpcAddrOf(raftAddr string) string {
	for i, a := range c.JRaftInitConf {
		if a == raftAddr && i < len(c.JRaftControllerRPCAddr) {
			return c.JRaftControllerRPCAddr[i]
		}
	}
	return ""
}
