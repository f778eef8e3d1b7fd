package ha

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"
)

// ServerConfig configures the master side. RocketMQ key names are given
// for each field; the broker maps broker.conf onto it.
type ServerConfig struct {
	// ListenAddr is host:port of the HA port (haListenPort; port 0 picks a
	// free port, see Server.Addr).
	ListenAddr string
	// CommitLogFileSize is mappedFileSizeCommitLog: an empty slave starts
	// at the beginning of the master's last file.
	CommitLogFileSize int64
	// TransferBatchSize is haTransferBatchSize (32 KiB): max body per frame.
	TransferBatchSize int
	// HeartbeatInterval is haSendHeartbeatInterval (5 s): a header-only
	// frame after this much silence.
	HeartbeatInterval time.Duration
	// HousekeepingInterval is haHousekeepingInterval (20 s): a connection
	// without a report for this long is closed.
	HousekeepingInterval time.Duration
	// InSyncReplicas is inSyncReplicas (1): acks a SYNC put needs, the
	// master included. 1 means the put never waits for a slave.
	InSyncReplicas int
	// SlaveTimeout is slaveTimeout (3 s): how long a put waits for acks
	// before FLUSH_SLAVE_TIMEOUT.
	SlaveTimeout time.Duration
	// MaxGapNotInSync is haMaxGapNotInSync (256 MiB): a slave further behind
	// the master's max offset is reported as not in sync (Stats).
	MaxGapNotInSync int64
	// FlowControlEnable / MaxTransferBytesPerSecond are haFlowControlEnable
	// (false) and maxHaTransferByteInSecond (100 MiB/s), summed over slaves.
	FlowControlEnable         bool
	MaxTransferBytesPerSecond int64
	// SyncFromMinOffset makes an empty slave (report 0) start at the
	// master's first commit-log offset instead of its last file, so it gets
	// the whole history (controller mode; RocketMQ's syncFromLastFile=false).
	SyncFromMinOffset bool
	// AllAck makes SYNC puts wait for every replica of the SyncStateSet
	// (allAckInSyncStateSet; set with GroupTransfer.SetSyncStateSet) instead
	// of InSyncReplicas acknowledgements.
	AllAck bool
	// IdleWait is how long a writer with nothing to send waits for new
	// data before looking again (RocketMQ: 100 ms). Not a RocketMQ key.
	IdleWait time.Duration
	// Listen opens the HA port; default net.Listen. The broker wraps it for
	// TLS (tlsMode).
	Listen func(network, addr string) (net.Listener, error)
}

// DefaultServerConfig returns RocketMQ's defaults (docs/broker.md §2.1).
func DefaultServerConfig() ServerConfig {
	return ServerConfig{
		ListenAddr:                "127.0.0.1:10912",
		CommitLogFileSize:         1 << 30,
		TransferBatchSize:         32 << 10,
		HeartbeatInterval:         5 * time.Second,
		HousekeepingInterval:      20 * time.Second,
		InSyncReplicas:            1,
		SlaveTimeout:              3 * time.Second,
		MaxGapNotInSync:           256 << 20,
		MaxTransferBytesPerSecond: 100 << 20,
		IdleWait:                  100 * time.Millisecond,
	}
}

// Validate rejects values the server cannot run with.
func (c *ServerConfig) Validate() error {
	var errs []error
	if c.CommitLogFileSize <= 0 {
		errs = append(errs, fmt.Errorf("ha: mappedFileSizeCommitLog=%d: must be > 0", c.CommitLogFileSize))
	}
	if c.TransferBatchSize <= 0 || c.TransferBatchSize > MaxFrameBody {
		errs = append(errs, fmt.Errorf("ha: haTransferBatchSize=%d: must be 1..%d", c.TransferBatchSize, MaxFrameBody))
	}
	if c.HeartbeatInterval <= 0 || c.HousekeepingInterval <= 0 || c.SlaveTimeout <= 0 || c.IdleWait <= 0 {
		errs = append(errs, errors.New("ha: haSendHeartbeatInterval, haHousekeepingInterval and slaveTimeout must be > 0"))
	}
	if c.InSyncReplicas < 1 {
		errs = append(errs, fmt.Errorf("ha: inSyncReplicas=%d: must be >= 1", c.InSyncReplicas))
	}
	if c.FlowControlEnable && c.MaxTransferBytesPerSecond <= 0 {
		errs = append(errs, fmt.Errorf("ha: maxHaTransferByteInSecond=%d: must be > 0", c.MaxTransferBytesPerSecond))
	}
	return errors.Join(errs...)
}

// ClientConfig configures the slave side.
type ClientConfig struct {
	// MasterAddress is haMasterAddress: the master's HA address. Empty
	// until SetMasterAddress (the broker passes the name server's answer).
	MasterAddress string
	// HeartbeatInterval is haSendHeartbeatInterval (5 s): the slave reports
	// at least this often.
	HeartbeatInterval time.Duration
	// HousekeepingInterval is haHousekeepingInterval (20 s): the connection
	// is closed when nothing was read for this long.
	HousekeepingInterval time.Duration
	// ReconnectInterval is the pause after a failed or closed connection
	// (RocketMQ: 5 s). Not a RocketMQ key.
	ReconnectInterval time.Duration
	// DialTimeout bounds one connect (RocketMQ: 3 s). Not a RocketMQ key.
	DialTimeout time.Duration
	// BrokerID > 0 (controller mode) sends the handshake with this
	// controller-assigned id before the first report, so the master can
	// tell which SyncStateSet member acknowledges.
	BrokerID int64
	// Dial opens the connection to the master; default a net.Dialer. The
	// broker wraps it for TLS (tlsEnable).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// DefaultClientConfig returns RocketMQ's defaults.
func DefaultClientConfig() ClientConfig {
	return ClientConfig{
		HeartbeatInterval:    5 * time.Second,
		HousekeepingInterval: 20 * time.Second,
		ReconnectInterval:    5 * time.Second,
		DialTimeout:          3 * time.Second,
	}
}

// Validate rejects values the client cannot run with.
func (c *ClientConfig) Validate() error {
	if c.HeartbeatInterval <= 0 || c.HousekeepingInterval <= 0 || c.ReconnectInterval <= 0 || c.DialTimeout <= 0 {
		return errors.New("ha: client intervals must be > 0")
	}
	return nil
}
