package broker

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/apogeemq/apogee/internal/ha"
	"github.com/apogeemq/apogee/internal/store"
	"github.com/apogeemq/apogee/internal/tlsconf"
)

// HAConfig holds the classic replication keys of broker.conf
// (docs/broker.md §2.1). RocketMQ keeps them in MessageStoreConfig;
// the store never replicates here, so the broker owns them. Config embeds
// it. slaveTimeout and brokerRole stay store keys (the store reads the
// role; both existed before HA).
type HAConfig struct {
	// HaMasterAddress is the master's HA address for a slave; empty = the
	// one the name server returns at registration.
	HaMasterAddress string `conf:"haMasterAddress"`
	// HaSendHeartbeatInterval: slave report / master heartbeat interval (5 s).
	HaSendHeartbeatInterval time.Duration `conf:"haSendHeartbeatInterval"`
	// HaHousekeepingInterval: idle HA connection timeout (20 s).
	HaHousekeepingInterval time.Duration `conf:"haHousekeepingInterval"`
	// HaTransferBatchSize: max bytes per transfer frame (32 KiB).
	HaTransferBatchSize int `conf:"haTransferBatchSize"`
	// HaMaxGapNotInSync: a slave further behind is not in sync (256 MiB).
	HaMaxGapNotInSync int64 `conf:"haMaxGapNotInSync"`
	// TotalReplicas / InSyncReplicas / MinInSyncReplicas: quorum-write
	// sizes (1/1/1). A SYNC_MASTER waits for InSyncReplicas-1 slaves.
	TotalReplicas     int `conf:"totalReplicas"`
	InSyncReplicas    int `conf:"inSyncReplicas"`
	MinInSyncReplicas int `conf:"minInSyncReplicas"`
	// EnableAutoInSyncReplicas is accepted for compatibility; it only acts
	// in acting-master mode, which Apogee does not implement.
	EnableAutoInSyncReplicas bool `conf:"enableAutoInSyncReplicas"`
	// HaFlowControlEnable / MaxHaTransferByteInSecond: replication rate
	// limit, all slaves together (off / 100 MiB/s).
	HaFlowControlEnable       bool  `conf:"haFlowControlEnable"`
	MaxHaTransferByteInSecond int64 `conf:"maxHaTransferByteInSecond"`
	// SlaveSyncPeriod is how often a slave copies topics, offsets, delay
	// offsets and subscription groups from its master (RocketMQ: 60 s). An
	// Apogee key.
	SlaveSyncPeriod time.Duration `conf:"slaveSyncPeriod"`
	// HaReconnectInterval is the slave's pause between connection
	// attempts (RocketMQ: 5 s). An Apogee key.
	HaReconnectInterval time.Duration `conf:"haReconnectInterval"`
}

// DefaultHAConfig returns RocketMQ's defaults.
func DefaultHAConfig() HAConfig {
	return HAConfig{
		HaSendHeartbeatInterval:   5 * time.Second,
		HaHousekeepingInterval:    20 * time.Second,
		HaTransferBatchSize:       32 << 10,
		HaMaxGapNotInSync:         256 << 20,
		TotalReplicas:             1,
		InSyncReplicas:            1,
		MinInSyncReplicas:         1,
		MaxHaTransferByteInSecond: 100 << 20,
		SlaveSyncPeriod:           60 * time.Second,
		HaReconnectInterval:       5 * time.Second,
	}
}

// isSlave: brokerRole=SLAVE.
func (c *Config) isSlave() bool { return c.Store.BrokerRole == store.RoleSlave }

// validateHA checks the HA keys and applies RocketMQ's start-up rule: a
// master's brokerId is forced to 0, a slave needs brokerId > 0.
func (c *Config) validateHA() error {
	if err := c.validateControllerMode(); err != nil {
		return err
	}
	if c.EnableControllerMode {
		// brokerRole and brokerId come from the controller (controller_mode.go).
	} else if c.isSlave() {
		if c.BrokerID <= 0 {
			return fmt.Errorf("broker: config brokerId=%d: a SLAVE needs brokerId > 0", c.BrokerID)
		}
	} else {
		c.BrokerID = 0
	}
	if c.InSyncReplicas < 1 || c.HaTransferBatchSize < 1 || c.HaTransferBatchSize > ha.MaxFrameBody {
		return fmt.Errorf("broker: config inSyncReplicas=%d haTransferBatchSize=%d: out of range", c.InSyncReplicas, c.HaTransferBatchSize)
	}
	if c.HaSendHeartbeatInterval <= 0 || c.HaHousekeepingInterval <= 0 || c.SlaveSyncPeriod <= 0 || c.HaReconnectInterval <= 0 {
		return fmt.Errorf("broker: config haSendHeartbeatInterval, haHousekeepingInterval, slaveSyncPeriod and haReconnectInterval must be > 0")
	}
	return nil
}

// haListenAddr is where the master's HA server listens: haListenPort, else
// listenPort+1, else (an ephemeral main port) an ephemeral port.
func (b *Broker) haListenAddr(configuredListenPort int) string {
	port := b.cfg.HAListenPort
	if port == 0 && configuredListenPort > 0 {
		port = configuredListenPort + 1
	}
	return net.JoinHostPort(b.cfg.BindAddress, strconv.Itoa(port))
}

// startHA starts the master's HA server (and the sync replication stage
// for a SYNC_MASTER with inSyncReplicas > 1), or a slave's HA client and
// metadata sync. Called once the store is open.
func (b *Broker) startHA(configuredListenPort int) error {
	if b.cfg.isSlave() {
		return b.startSlave()
	}
	cfg := ha.DefaultServerConfig()
	cfg.ListenAddr = b.haListenAddr(configuredListenPort)
	cfg.CommitLogFileSize = b.cfg.Store.MappedFileSizeCommitLog
	cfg.TransferBatchSize = b.cfg.HaTransferBatchSize
	cfg.HeartbeatInterval = b.cfg.HaSendHeartbeatInterval
	cfg.HousekeepingInterval = b.cfg.HaHousekeepingInterval
	cfg.InSyncReplicas = b.cfg.InSyncReplicas
	if b.cfg.Store.SlaveTimeout > 0 {
		cfg.SlaveTimeout = b.cfg.Store.SlaveTimeout
	}
	cfg.MaxGapNotInSync = b.cfg.HaMaxGapNotInSync
	cfg.FlowControlEnable = b.cfg.HaFlowControlEnable
	cfg.MaxTransferBytesPerSecond = b.cfg.MaxHaTransferByteInSecond
	cfg.SyncFromMinOffset = b.cfg.EnableControllerMode
	cfg.AllAck = b.cfg.EnableControllerMode && b.cfg.AllAckInSyncStateSet
	cfg.Listen = tlsconf.Listen(nil, b.tls.server, b.tls.enforce) // tls.go
	srv, err := ha.NewServer(cfg, b.Store, b.logger)
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	if err := srv.Start(); err != nil {
		if b.cfg.HAListenPort != 0 {
			return fmt.Errorf("broker: %w", err)
		}
		// A derived port (listenPort+1) may be taken; the registered HA
		// address is the real one, so any port serves slaves that find the
		// master through the name server (as the VIP channel falls back).
		b.logger.Warn("HA port listenPort+1 busy; listening on a free port", "addr", cfg.ListenAddr, "err", err)
		cfg.ListenAddr = net.JoinHostPort(b.cfg.BindAddress, "0")
		if srv, err = ha.NewServer(cfg, b.Store, b.logger); err != nil {
			return fmt.Errorf("broker: %w", err)
		}
		if err := srv.Start(); err != nil {
			return fmt.Errorf("broker: %w", err)
		}
	}
	b.ha.server = srv
	if b.cfg.Store.BrokerRole == store.RoleSyncMaster && b.cfg.InSyncReplicas > 1 {
		b.Store.SetReplicator(srv.Replicator())
	}
	return nil
}

// closeHA stops replication before the store closes (pending sync puts are
// answered FLUSH_SLAVE_TIMEOUT).
func (b *Broker) closeHA() {
	if b.ha.server != nil {
		if b.Store != nil {
			b.Store.SetReplicator(nil)
		}
		if err := b.ha.server.Close(); err != nil {
			b.logger.Warn("close HA server", "err", err)
		}
	}
	if b.ha.client != nil {
		b.ha.client.Close()
	}
}

// HAServer is the master's HA server (nil on a slave or before Start).
func (b *Broker) HAServer() *ha.Server { return b.ha.server }

// HAClient is the slave's HA client (nil on a master or before Start).
func (b *Broker) HAClient() *ha.Client { return b.ha.client }

// haAdvertisedPort is the HA port registered with the name servers: the
// server's real port on a master, else the configured rule.
func (b *Broker) haAdvertisedPort() int {
	if b.ha.server != nil {
		if a, ok := b.ha.server.Addr().(*net.TCPAddr); ok {
			return a.Port
		}
	}
	if b.cfg.HAListenPort != 0 {
		return b.cfg.HAListenPort
	}
	return b.cfg.ListenPort + 1
}
