package store

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Flush disk types (flushDiskType).
const (
	AsyncFlush = "ASYNC_FLUSH"
	SyncFlush  = "SYNC_FLUSH"
)

// Broker roles (brokerRole).
const (
	RoleAsyncMaster = "ASYNC_MASTER"
	RoleSyncMaster  = "SYNC_MASTER"
	RoleSlave       = "SLAVE"
)

// Config is the store part of RocketMQ's MessageStoreConfig. Field tags are
// RocketMQ's bean property names so broker.conf applies to it unchanged
// (internal/config.Apply). Durations given as bare integers in a properties
// file are milliseconds, as in RocketMQ.
type Config struct {
	StorePathRootDir   string `conf:"storePathRootDir"`
	StorePathCommitLog string `conf:"storePathCommitLog"` // "" = <root>/commitlog

	MappedFileSizeCommitLog    int64 `conf:"mappedFileSizeCommitLog"`
	MappedFileSizeConsumeQueue int64 `conf:"mappedFileSizeConsumeQueue"` // rounded up to a multiple of 20

	FlushDiskType                  string        `conf:"flushDiskType"`
	FlushIntervalCommitLog         time.Duration `conf:"flushIntervalCommitLog"`
	FlushCommitLogLeastPages       int           `conf:"flushCommitLogLeastPages"`
	FlushCommitLogThoroughInterval time.Duration `conf:"flushCommitLogThoroughInterval"`
	FlushCommitLogTimed            bool          `conf:"flushCommitLogTimed"`
	SyncFlushTimeout               time.Duration `conf:"syncFlushTimeout"`

	FlushIntervalConsumeQueue         time.Duration `conf:"flushIntervalConsumeQueue"`
	FlushConsumeQueueLeastPages       int           `conf:"flushConsumeQueueLeastPages"`
	FlushConsumeQueueThoroughInterval time.Duration `conf:"flushConsumeQueueThoroughInterval"`

	TransientStorePoolEnable        bool          `conf:"transientStorePoolEnable"`
	TransientStorePoolSize          int           `conf:"transientStorePoolSize"`
	FastFailIfNoBufferInStorePool   bool          `conf:"fastFailIfNoBufferInStorePool"`
	CommitIntervalCommitLog         time.Duration `conf:"commitIntervalCommitLog"`
	CommitCommitLogLeastPages       int           `conf:"commitCommitLogLeastPages"`
	CommitCommitLogThoroughInterval time.Duration `conf:"commitCommitLogThoroughInterval"`

	WarmMapedFileEnable              bool `conf:"warmMapedFileEnable"`
	FlushLeastPagesWhenWarmMapedFile int  `conf:"flushLeastPagesWhenWarmMapedFile"`

	MaxMessageSize              int           `conf:"maxMessageSize"`
	OSPageCacheBusyTimeOutMills time.Duration `conf:"osPageCacheBusyTimeOutMills"`
	CheckCRCOnRecover           bool          `conf:"checkCRCOnRecover"`
	BrokerRole                  string        `conf:"brokerRole"`
	MessageDelayLevel           string        `conf:"messageDelayLevel"`

	MessageIndexEnable bool `conf:"messageIndexEnable"`
	MessageIndexSafe   bool `conf:"messageIndexSafe"`
	MaxHashSlotNum     int  `conf:"maxHashSlotNum"`
	MaxIndexNum        int  `conf:"maxIndexNum"`
	MaxMsgsNumBatch    int  `conf:"maxMsgsNumBatch"`

	MaxTransferCountOnMessageInMemory int `conf:"maxTransferCountOnMessageInMemory"`
	MaxTransferBytesOnMessageInMemory int `conf:"maxTransferBytesOnMessageInMemory"`
	MaxTransferCountOnMessageInDisk   int `conf:"maxTransferCountOnMessageInDisk"`
	MaxTransferBytesOnMessageInDisk   int `conf:"maxTransferBytesOnMessageInDisk"`
	AccessMessageInMemoryMaxRatio     int `conf:"accessMessageInMemoryMaxRatio"`
	MaxFilterMessageSize              int `conf:"maxFilterMessageSize"`

	FileReservedTime                 int           `conf:"fileReservedTime"` // hours
	DeleteWhen                       string        `conf:"deleteWhen"`
	DiskMaxUsedSpaceRatio            int           `conf:"diskMaxUsedSpaceRatio"`
	DiskSpaceCleanForciblyRatio      int           `conf:"diskSpaceCleanForciblyRatio"`
	DiskSpaceWarningLevelRatio       int           `conf:"diskSpaceWarningLevelRatio"`
	CleanFileForciblyEnable          bool          `conf:"cleanFileForciblyEnable"`
	CleanResourceInterval            time.Duration `conf:"cleanResourceInterval"`
	DeleteCommitLogFilesInterval     time.Duration `conf:"deleteCommitLogFilesInterval"`
	DeleteConsumeQueueFilesInterval  time.Duration `conf:"deleteConsumeQueueFilesInterval"`
	DestroyMapedFileIntervalForcibly time.Duration `conf:"destroyMapedFileIntervalForcibly"`
	RedeleteHangedFileInterval       time.Duration `conf:"redeleteHangedFileInterval"`
	DeleteFileBatchMax               int           `conf:"deleteFileBatchMax"`

	// WriteWithoutMmap appends to the commit log with pwrite and syncs with
	// fdatasync instead of copying into the mapping and msync (readers
	// still use the mapping). It disables the transient pool and prefault.
	// Without the transient pool appends are staged and written with
	// pwrite whether or not it is set (see stagedAppends): under
	// SYNC_FLUSH the flusher writes each group with one pwrite before its
	// fdatasync, with no write-protect fault per put and no TLB shootdown
	// per sync.
	WriteWithoutMmap bool `conf:"writeWithoutMmap"`

	// Keys RocketMQ operators set that this store accepts with RocketMQ's
	// defaults but does not need: the append lock is always a sync.Mutex,
	// topics > 127 bytes always use the v2 magic, consume-queue units are
	// written through the mapping.
	UseReentrantLockWhenPutMessage   bool `conf:"useReentrantLockWhenPutMessage"`
	TopicQueueLockNum                int  `conf:"topicQueueLockNum"`
	AutoMessageVersionOnTopicLen     bool `conf:"autoMessageVersionOnTopicLen"`
	DataReadAheadEnable              bool `conf:"dataReadAheadEnable"`
	PutConsumeQueueDataByFileChannel bool `conf:"putConsumeQueueDataByFileChannel"`
	EnableConsumeQueueExt            bool `conf:"enableConsumeQueueExt"`
	MaxRecoveryCommitlogFiles        int  `conf:"maxRecoveryCommitlogFiles"`
	WakeCommitWhenPutMessage         bool `conf:"wakeCommitWhenPutMessage"`
	// WakeFlushWhenPutMessage wakes the ASYNC_FLUSH service on every put when
	// flushCommitLogTimed is false.
	WakeFlushWhenPutMessage bool `conf:"wakeFlushWhenPutMessage"`
	// PutMessageTimeout and SlaveTimeout are read by the broker and HA.
	PutMessageTimeout time.Duration `conf:"putMessageTimeout"`
	SlaveTimeout      time.Duration `conf:"slaveTimeout"`

	// StoreHost is written into every record's STOREHOST field and into
	// offset message ids: the broker sets it to brokerIP1:listenPort.
	StoreHost netip.AddrPort `conf:"-"`
	// TruncateOnStart / TruncateOffset make recovery cut the commit log
	// (and the consume queues) at TruncateOffset, a record boundary, when
	// it ends later: controller mode's rejoin at the last common epoch
	// boundary. Index entries beyond it stay (lookups of them find no
	// message). Not broker.conf keys.
	TruncateOnStart bool  `conf:"-"`
	TruncateOffset  int64 `conf:"-"`

	// Now is the clock (nil = time.Now). Tests inject one to exercise expiry.
	Now func() time.Time `conf:"-"`
	// DiskUsage returns the used fraction (0..1) of the partition holding
	// path (nil = statfs). Tests inject one to exercise disk-full handling.
	DiskUsage func(path string) (float64, error) `conf:"-"`
	// CleanupInitialDelay is the delay before the first cleanup run
	// (RocketMQ: 60 s). Not a RocketMQ key.
	CleanupInitialDelay time.Duration `conf:"-"`
	// PrefaultAheadBytes keeps this many bytes ahead of the commit-log
	// write position faulted in (0 disables; ignored with
	// warmMapedFileEnable, which warms whole files). Not a RocketMQ key.
	PrefaultAheadBytes int64 `conf:"storePrefaultAheadBytes"`
	// MaxMappedConsumeQueueFiles bounds how many consume-queue files are
	// mapped at once; colder ones are unmapped and mapped again on use
	// (0 = half of vm.max_map_count less 1024: 31741 with the default
	// 65530). Not a RocketMQ key.
	MaxMappedConsumeQueueFiles int `conf:"maxMappedConsumeQueueFiles"`
	// ConsumeQueueWriteBehindBytes bounds the memory of consume-queue units
	// kept back for queues that are not mapped past that limit, written
	// with one pwrite per queue (cq_behind.go; 0 disables: a pwrite per
	// unit). Not a RocketMQ key.
	ConsumeQueueWriteBehindBytes int64 `conf:"consumeQueueWriteBehindBytes"`
	// ConsumeQueueWriteBehindMaxAge is how long such a unit may stay in
	// memory (the checkpoint is held below it meanwhile). Not a RocketMQ
	// key.
	ConsumeQueueWriteBehindMaxAge time.Duration `conf:"consumeQueueWriteBehindMaxAge"`
}

// DefaultConfig returns RocketMQ 5.x defaults (docs/defaults.md §2). The
// root dir defaults to $HOME/store.
func DefaultConfig() Config {
	return Config{
		StorePathRootDir:                  defaultRoot(),
		MappedFileSizeCommitLog:           1 << 30,
		MappedFileSizeConsumeQueue:        300000 * CQUnitSize,
		FlushDiskType:                     AsyncFlush,
		FlushIntervalCommitLog:            500 * time.Millisecond,
		FlushCommitLogLeastPages:          4,
		FlushCommitLogThoroughInterval:    10 * time.Second,
		FlushCommitLogTimed:               true,
		SyncFlushTimeout:                  5 * time.Second,
		FlushIntervalConsumeQueue:         time.Second,
		FlushConsumeQueueLeastPages:       2,
		FlushConsumeQueueThoroughInterval: 60 * time.Second,
		TransientStorePoolSize:            5,
		CommitIntervalCommitLog:           200 * time.Millisecond,
		CommitCommitLogLeastPages:         4,
		CommitCommitLogThoroughInterval:   200 * time.Millisecond,
		FlushLeastPagesWhenWarmMapedFile:  4096,
		MaxMessageSize:                    4 << 20,
		OSPageCacheBusyTimeOutMills:       time.Second,
		CheckCRCOnRecover:                 true,
		BrokerRole:                        RoleAsyncMaster,
		MessageDelayLevel:                 "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h",
		MessageIndexEnable:                true,
		MaxHashSlotNum:                    5000000,
		MaxIndexNum:                       20000000,
		MaxMsgsNumBatch:                   64,
		MaxTransferCountOnMessageInMemory: 32,
		MaxTransferBytesOnMessageInMemory: 256 << 10,
		MaxTransferCountOnMessageInDisk:   8,
		MaxTransferBytesOnMessageInDisk:   64 << 10,
		AccessMessageInMemoryMaxRatio:     40,
		MaxFilterMessageSize:              16000,
		FileReservedTime:                  72,
		DeleteWhen:                        "04",
		DiskMaxUsedSpaceRatio:             75,
		DiskSpaceCleanForciblyRatio:       85,
		DiskSpaceWarningLevelRatio:        90,
		CleanFileForciblyEnable:           true,
		CleanResourceInterval:             10 * time.Second,
		DeleteCommitLogFilesInterval:      100 * time.Millisecond,
		DeleteConsumeQueueFilesInterval:   100 * time.Millisecond,
		DestroyMapedFileIntervalForcibly:  120 * time.Second,
		RedeleteHangedFileInterval:        120 * time.Second,
		DeleteFileBatchMax:                10,
		StoreHost:                         netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 10911),
		CleanupInitialDelay:               60 * time.Second,
		PrefaultAheadBytes:                16 << 20,
		ConsumeQueueWriteBehindBytes:      64 << 20,
		ConsumeQueueWriteBehindMaxAge:     60 * time.Second,
		UseReentrantLockWhenPutMessage:    true,
		TopicQueueLockNum:                 32,
		AutoMessageVersionOnTopicLen:      true,
		DataReadAheadEnable:               true,
		PutConsumeQueueDataByFileChannel:  true,
		MaxRecoveryCommitlogFiles:         30,
		WakeCommitWhenPutMessage:          true,
		PutMessageTimeout:                 8 * time.Second,
		SlaveTimeout:                      3 * time.Second,
	}
}

func defaultRoot() string {
	home, err := osUserHome()
	if err != nil || home == "" {
		return "store"
	}
	return filepath.Join(home, "store")
}

// Validate rejects nonsense and normalises derived values (the consume-queue
// file size is rounded up to a multiple of 20). It names the offending key.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key string, v any, why string) {
		errs = append(errs, fmt.Errorf("store: config %s=%v: %s", key, v, why))
	}
	if c.StorePathRootDir == "" {
		bad("storePathRootDir", c.StorePathRootDir, "must not be empty")
	}
	if c.MappedFileSizeCommitLog < 64<<10 || c.MappedFileSizeCommitLog > 1<<40 {
		bad("mappedFileSizeCommitLog", c.MappedFileSizeCommitLog, "must be between 64 KiB and 1 TiB")
	} else if c.MappedFileSizeCommitLog%pageSize != 0 {
		bad("mappedFileSizeCommitLog", c.MappedFileSizeCommitLog, "must be a multiple of 4096")
	}
	if c.MappedFileSizeConsumeQueue < CQUnitSize*2 {
		bad("mappedFileSizeConsumeQueue", c.MappedFileSizeConsumeQueue, "too small")
	} else if r := c.MappedFileSizeConsumeQueue % CQUnitSize; r != 0 {
		c.MappedFileSizeConsumeQueue += CQUnitSize - r
	}
	switch c.FlushDiskType {
	case AsyncFlush, SyncFlush:
	default:
		bad("flushDiskType", c.FlushDiskType, "must be ASYNC_FLUSH or SYNC_FLUSH")
	}
	switch c.BrokerRole {
	case RoleAsyncMaster, RoleSyncMaster, RoleSlave:
	default:
		bad("brokerRole", c.BrokerRole, "must be ASYNC_MASTER, SYNC_MASTER or SLAVE")
	}
	if c.MaxMessageSize <= 0 {
		bad("maxMessageSize", c.MaxMessageSize, "must be positive")
	} else if int64(c.MaxMessageSize)+1024 > c.MappedFileSizeCommitLog {
		bad("maxMessageSize", c.MaxMessageSize, "a maximal body must fit into one commit-log file")
	}
	if c.SyncFlushTimeout <= 0 {
		bad("syncFlushTimeout", c.SyncFlushTimeout, "must be positive")
	}
	if c.FlushIntervalCommitLog <= 0 {
		bad("flushIntervalCommitLog", c.FlushIntervalCommitLog, "must be positive")
	}
	if c.ConsumeQueueWriteBehindBytes > 0 && c.ConsumeQueueWriteBehindMaxAge <= 0 {
		bad("consumeQueueWriteBehindMaxAge", c.ConsumeQueueWriteBehindMaxAge, "must be positive with write-behind")
	}
	if c.FlushIntervalConsumeQueue <= 0 {
		bad("flushIntervalConsumeQueue", c.FlushIntervalConsumeQueue, "must be positive")
	}
	if c.CommitIntervalCommitLog <= 0 {
		bad("commitIntervalCommitLog", c.CommitIntervalCommitLog, "must be positive")
	}
	if c.TransientStorePoolEnable && c.TransientStorePoolSize <= 0 {
		bad("transientStorePoolSize", c.TransientStorePoolSize, "must be positive when the pool is enabled")
	}
	if c.MessageIndexEnable && (c.MaxHashSlotNum <= 0 || c.MaxIndexNum <= 1) {
		bad("maxHashSlotNum/maxIndexNum", fmt.Sprintf("%d/%d", c.MaxHashSlotNum, c.MaxIndexNum), "must be positive")
	}
	if c.FileReservedTime <= 0 {
		bad("fileReservedTime", c.FileReservedTime, "must be positive")
	}
	if _, err := parseDeleteWhen(c.DeleteWhen); err != nil {
		bad("deleteWhen", c.DeleteWhen, err.Error())
	}
	if _, err := ParseDelayLevels(c.MessageDelayLevel); err != nil {
		bad("messageDelayLevel", c.MessageDelayLevel, err.Error())
	}
	if c.CleanResourceInterval <= 0 {
		bad("cleanResourceInterval", c.CleanResourceInterval, "must be positive")
	}
	if c.MaxTransferCountOnMessageInMemory <= 0 || c.MaxTransferBytesOnMessageInMemory <= 0 {
		bad("maxTransferCountOnMessageInMemory/BytesOnMessageInMemory", c.MaxTransferCountOnMessageInMemory, "must be positive")
	}
	if c.MaxTransferCountOnMessageInDisk <= 0 || c.MaxTransferBytesOnMessageInDisk <= 0 {
		bad("maxTransferCountOnMessageInDisk/BytesOnMessageInDisk", c.MaxTransferCountOnMessageInDisk, "must be positive")
	}
	if !c.StoreHost.IsValid() {
		bad("storeHost", c.StoreHost, "must be a valid ip:port")
	}
	return errors.Join(errs...)
}

// commitLogDir is storePathCommitLog or <root>/commitlog.
func (c *Config) commitLogDir() string {
	if c.StorePathCommitLog != "" {
		return c.StorePathCommitLog
	}
	return filepath.Join(c.StorePathRootDir, "commitlog")
}

func (c *Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Config) syncFlush() bool { return c.FlushDiskType == SyncFlush }

// poolActive reports whether the transient store pool is in effect
// (RocketMQ: enabled, and the broker is a master).
func (c *Config) poolActive() bool {
	return c.TransientStorePoolEnable && c.BrokerRole != RoleSlave && !c.WriteWithoutMmap
}

// stagedAppends reports whether commit-log appends are staged in memory and
// written to the file with pwrite (mappedFile.stage) rather than copied into
// the mapping: unless the transient pool is in effect. A full-page pwrite
// into a fresh page does not zero it; the first write fault on a fresh page
// of the mapping does (with readahead, a whole large folio at a time), and
// under SYNC_FLUSH every msync write-protects the page being filled again,
// so the next put into the mapping takes a fault under the append lock.
func (c *Config) stagedAppends() bool {
	return !c.poolActive()
}

// parseDeleteWhen parses "04;16" into hours.
func parseDeleteWhen(s string) ([]int, error) {
	var hours []int
	for _, p := range strings.Split(s, ";") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		h, err := strconv.Atoi(p)
		if err != nil || h < 0 || h > 23 {
			return nil, fmt.Errorf("hour %q is not 0..23", p)
		}
		hours = append(hours, h)
	}
	return hours, nil
}

// ParseDelayLevels parses messageDelayLevel ("1s 5s 10s 30s 1m ... 2h"; units
// s, m, h, d) into the delay of each level; level i (1-based) is index i-1.
func ParseDelayLevels(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, f := range strings.Fields(s) {
		if len(f) < 2 {
			return nil, fmt.Errorf("bad delay level %q", f)
		}
		unit := map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}[f[len(f)-1]]
		n, err := strconv.ParseInt(f[:len(f)-1], 10, 64)
		if unit == 0 || err != nil || n < 0 {
			return nil, fmt.Errorf("bad delay level %q", f)
		}
		out = append(out, time.Duration(n)*unit)
	}
	return out, nil
}
