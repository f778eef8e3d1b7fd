package broker

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/apogeemq/apogee/internal/auth"
	"github.com/apogeemq/apogee/internal/config"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/store"
	"github.com/apogeemq/apogee/internal/tlsconf"
)

// Config is the broker's own configuration: the BrokerConfig and
// NettyServerConfig keys of broker.conf, under RocketMQ's names and defaults.
// Storage keys (storePathRootDir, flushDiskType, maxMessageSize, ...) live in
// Store, the store's own config; LoadConfig applies one broker.conf to both.
type Config struct {
	BrokerClusterName string `conf:"brokerClusterName"`
	BrokerName        string `conf:"brokerName"`
	// BrokerID is 0 for a master, > 0 for a slave.
	BrokerID int64 `conf:"brokerId"`
	// NamesrvAddr lists name servers as host:port (broker.conf separates them
	// with ';').
	NamesrvAddr []string `conf:"namesrvAddr"`
	// BrokerIP1 is the address advertised to name servers and clients and
	// written as STOREHOST into every message. We only serve loopback, so it
	// defaults to 127.0.0.1 rather than the first non-loopback address.
	BrokerIP1 string `conf:"brokerIP1"`
	BrokerIP2 string `conf:"brokerIP2"`
	// ListenPort is the main remoting port; 0 picks a free port (tests). The
	// VIP channel listens on ListenPort-2 (or also on a free port when 0).
	ListenPort int `conf:"listenPort"`
	// BindAddress is the address the remoting servers listen on (Java's
	// NettyServerConfig bindAddress, there 0.0.0.0; loopback here).
	BindAddress string `conf:"bindAddress"`
	// VIPChannelEnable opens the second ("fast") remoting port. An Apogee
	// key: Java brokers always open it.
	VIPChannelEnable bool `conf:"vipChannelEnable"`
	HAListenPort     int  `conf:"haListenPort"`

	BrokerPermission            int32  `conf:"brokerPermission"`
	AutoCreateTopicEnable       bool   `conf:"autoCreateTopicEnable"`
	AutoCreateSubscriptionGroup bool   `conf:"autoCreateSubscriptionGroup"`
	DefaultTopicQueueNums       int    `conf:"defaultTopicQueueNums"`
	ClusterTopicEnable          bool   `conf:"clusterTopicEnable"`
	BrokerTopicEnable           bool   `conf:"brokerTopicEnable"`
	TraceTopicEnable            bool   `conf:"traceTopicEnable"`
	MsgTraceTopicName           string `conf:"msgTraceTopicName"`
	RejectTransactionMessage    bool   `conf:"rejectTransactionMessage"`
	EnablePropertyFilter        bool   `conf:"enablePropertyFilter"`
	SlaveReadEnable             bool   `conf:"slaveReadEnable"`
	OffsetCheckInSlave          bool   `conf:"offsetCheckInSlave"`
	LitePullMessageEnable       bool   `conf:"litePullMessageEnable"` // false: LITE_PULL_MESSAGE is refused
	RegionID                    string `conf:"regionId"`
	TraceOn                     bool   `conf:"traceOn"`

	// Executors (docs/broker.md §1.17).
	SendMessageThreadPoolNums    int           `conf:"sendMessageThreadPoolNums"`
	PullMessageThreadPoolNums    int           `conf:"pullMessageThreadPoolNums"`
	QueryMessageThreadPoolNums   int           `conf:"queryMessageThreadPoolNums"`
	AdminBrokerThreadPoolNums    int           `conf:"adminBrokerThreadPoolNums"`
	ClientManageThreadPoolNums   int           `conf:"clientManageThreadPoolNums"`
	ConsumerManageThreadPoolNums int           `conf:"consumerManageThreadPoolNums"`
	HeartbeatThreadPoolNums      int           `conf:"heartbeatThreadPoolNums"`
	SendThreadPoolQueueCapacity  int           `conf:"sendThreadPoolQueueCapacity"`
	PullThreadPoolQueueCapacity  int           `conf:"pullThreadPoolQueueCapacity"`
	WaitTimeMillsInSendQueue     time.Duration `conf:"waitTimeMillsInSendQueue"`
	WaitTimeMillsInPullQueue     time.Duration `conf:"waitTimeMillsInPullQueue"`
	BrokerFastFailureEnable      bool          `conf:"brokerFastFailureEnable"`
	// The other queues' executors and fast failure (RocketMQ 5's
	// BrokerFastFailure): a request that waited longer is answered
	// SYSTEM_BUSY [TIMEOUT_CLEAN_QUEUE] (internal/remoting PoolConfig.MaxWait).
	LitePullMessageThreadPoolNums   int           `conf:"litePullMessageThreadPoolNums"`
	AckMessageThreadPoolNums        int           `conf:"ackMessageThreadPoolNums"`
	LitePullThreadPoolQueueCapacity int           `conf:"litePullThreadPoolQueueCapacity"`
	AckThreadPoolQueueCapacity      int           `conf:"ackThreadPoolQueueCapacity"`
	WaitTimeMillsInLitePullQueue    time.Duration `conf:"waitTimeMillsInLitePullQueue"`
	WaitTimeMillsInHeartbeatQueue   time.Duration `conf:"waitTimeMillsInHeartbeatQueue"`
	WaitTimeMillsInTransactionQueue time.Duration `conf:"waitTimeMillsInTransactionQueue"`
	WaitTimeMillsInAckQueue         time.Duration `conf:"waitTimeMillsInAckQueue"`
	WaitTimeMillsInAdminBrokerQueue time.Duration `conf:"waitTimeMillsInAdminBrokerQueue"`

	// Long polling (docs/broker.md §1.7).
	LongPollingEnable     bool          `conf:"longPollingEnable"`
	ShortPollingTimeMills time.Duration `conf:"shortPollingTimeMills"`

	// Name-server registration (docs/protocol.md §8.1).
	RegisterNameServerPeriod   time.Duration `conf:"registerNameServerPeriod"`
	RegisterBrokerTimeoutMills time.Duration `conf:"registerBrokerTimeoutMills"`
	ForceRegister              bool          `conf:"forceRegister"`
	// EnableSplitRegistration sends the full registration in chunks of
	// SplitRegistrationSize topics (RocketMQ's keys and defaults). A
	// table too large for one frame (registerSplitAbove topics) is split
	// whatever the key says.
	EnableSplitRegistration bool `conf:"enableSplitRegistration"`
	SplitRegistrationSize   int  `conf:"splitRegistrationSize"`
	// EnableSplitMetadata pages GET_ALL_TOPIC_CONFIG for requests that
	// carry topicSeq/maxTopicNum/dataVersion, SplitMetadataSize topics a
	// page at most (RocketMQ 5's keys and defaults; topic_config_pages.go).
	EnableSplitMetadata bool `conf:"enableSplitMetadata"`
	SplitMetadataSize   int  `conf:"splitMetadataSize"`

	// Persistence of metadata under <storePathRootDir>/config.
	FlushConsumerOffsetInterval     time.Duration `conf:"flushConsumerOffsetInterval"`
	FlushDelayOffsetInterval        time.Duration `conf:"flushDelayOffsetInterval"`
	ConsumerOffsetUpdateVersionStep int64         `conf:"consumerOffsetUpdateVersionStep"`

	// Clients.
	ChannelExpiredTimeout           time.Duration `conf:"channelExpiredTimeout"`
	ServerChannelMaxIdleTimeSeconds int           `conf:"serverChannelMaxIdleTimeSeconds"`
	NotifyConsumerIdsChangedEnable  bool          `conf:"notifyConsumerIdsChangedEnable"`
	// RebalanceLockMaxLiveTime is how long an ordered-consumption queue
	// lock lives without a refresh (RocketMQ's JVM property
	// rocketmq.broker.rebalance.lockMaxLiveTime, 60 s; an Apogee key here).
	RebalanceLockMaxLiveTime time.Duration `conf:"rebalanceLockMaxLiveTime"`

	// Transactions (used by the transaction processors).
	TransactionTimeOut       time.Duration `conf:"transactionTimeOut"`
	TransactionCheckMax      int           `conf:"transactionCheckMax"`
	TransactionCheckInterval time.Duration `conf:"transactionCheckInterval"`

	UseServerSideResetOffset bool `conf:"useServerSideResetOffset"`

	TimerConfig   // timerWheelEnable, timerMaxDelaySec, ... (config_timer.go)
	HAConfig      // haMasterAddress, inSyncReplicas, ... (ha_config.go)
	MetricsConfig // metricsExporterType, metricsPromExporterPort, ... (config_metrics.go)
	// AuthConfig: authenticationEnabled, authorizationEnabled, ... (auth.go)
	auth.AuthConfig
	// Settings: tlsMode, tlsServerCertPath, tlsServerKeyPath, ... (tls.go);
	// the gRPC endpoint uses the same certificate keys.
	tlsconf.Settings
	PopConfig            // enableRetryTopicV2, reviveInterval, ... (config_pop.go)
	PriorityConfig       // priorityOrderAsc, popPriorityMaxWaitMs, ... (priority.go)
	LiteConfig           // maxLmqConsumeQueueNum, liteTtlCheckInterval, ... (lite.go)
	GRPCConfig           // grpcServerPort, tlsServerCertPath, ... (config_grpc.go)
	ControllerModeConfig // enableControllerMode, controllerAddr, ... (controller_config.go)
	ActingMasterConfig   // enableSlaveActingMaster, ... (acting_master.go)

	// Store is the store's configuration; broker.conf keys reach it through
	// ApplyProperties. Its StoreHost is set by the broker at start.
	Store store.Config
}

// DefaultConfig returns the broker defaults of docs/defaults.md §4 and
// docs/protocol.md §8 (brokerIP1 is loopback; see the field).
func DefaultConfig() Config {
	cores := runtime.NumCPU()
	name, err := os.Hostname()
	if err != nil || name == "" || names.ValidateTopic(name) != nil {
		name = "DEFAULT_BROKER"
	}
	return Config{
		BrokerClusterName:           "DefaultCluster",
		BrokerName:                  name,
		BrokerIP1:                   "127.0.0.1",
		BrokerIP2:                   "127.0.0.1",
		ListenPort:                  10911,
		BindAddress:                 "127.0.0.1",
		VIPChannelEnable:            true,
		BrokerPermission:            protocol.PermRead | protocol.PermWrite,
		AutoCreateTopicEnable:       true,
		AutoCreateSubscriptionGroup: true,
		DefaultTopicQueueNums:       8,
		ClusterTopicEnable:          true,
		BrokerTopicEnable:           true,
		MsgTraceTopicName:           "RMQ_SYS_TRACE_TOPIC",
		RegionID:                    "DefaultRegion",
		TraceOn:                     true,

		SendMessageThreadPoolNums:    min(cores, 4),
		PullMessageThreadPoolNums:    16 + 2*cores,
		QueryMessageThreadPoolNums:   8 + cores,
		AdminBrokerThreadPoolNums:    16,
		ClientManageThreadPoolNums:   32,
		ConsumerManageThreadPoolNums: 32,
		HeartbeatThreadPoolNums:      min(32, cores),
		SendThreadPoolQueueCapacity:  10000,
		PullThreadPoolQueueCapacity:  100000,
		WaitTimeMillsInSendQueue:     200 * time.Millisecond,
		WaitTimeMillsInPullQueue:     5 * time.Second,
		BrokerFastFailureEnable:      true,

		LitePullMessageThreadPoolNums:   16 + 2*cores,
		AckMessageThreadPoolNums:        16,
		LitePullThreadPoolQueueCapacity: 100000,
		AckThreadPoolQueueCapacity:      100000,
		WaitTimeMillsInLitePullQueue:    5 * time.Second,
		WaitTimeMillsInHeartbeatQueue:   31 * time.Second,
		WaitTimeMillsInTransactionQueue: 3 * time.Second,
		WaitTimeMillsInAckQueue:         3 * time.Second,
		WaitTimeMillsInAdminBrokerQueue: 5 * time.Second,

		LongPollingEnable:     true,
		ShortPollingTimeMills: time.Second,

		RegisterNameServerPeriod:   30 * time.Second,
		RegisterBrokerTimeoutMills: 24 * time.Second,
		ForceRegister:              true,
		SplitRegistrationSize:      800,
		EnableSplitMetadata:        true,
		SplitMetadataSize:          2000,

		FlushConsumerOffsetInterval:     5 * time.Second,
		FlushDelayOffsetInterval:        10 * time.Second,
		ConsumerOffsetUpdateVersionStep: 500,

		ChannelExpiredTimeout:           120 * time.Second,
		ServerChannelMaxIdleTimeSeconds: 120,
		NotifyConsumerIdsChangedEnable:  true,
		RebalanceLockMaxLiveTime:        60 * time.Second,

		TransactionTimeOut:       6 * time.Second,
		TransactionCheckMax:      15,
		TransactionCheckInterval: 30 * time.Second,

		UseServerSideResetOffset: true,
		LitePullMessageEnable:    true,

		TimerConfig:          DefaultTimerConfig(),
		HAConfig:             DefaultHAConfig(),
		MetricsConfig:        DefaultMetricsConfig(),
		PopConfig:            DefaultPopConfig(),
		PriorityConfig:       DefaultPriorityConfig(),
		LiteConfig:           DefaultLiteConfig(),
		GRPCConfig:           DefaultGRPCConfig(),
		ControllerModeConfig: DefaultControllerModeConfig(),
		ActingMasterConfig:   DefaultActingMasterConfig(),

		Store: store.DefaultConfig(),
	}
}

// ApplyProperties applies broker.conf to the broker keys and to the store
// keys (a key may be known to both, e.g. none today, and is then set in
// both). It returns the keys neither knows, for a named warning; a bad value
// is an error naming key and value.
func (c *Config) ApplyProperties(p *config.Properties) (unknown []string, err error) {
	unknownBroker, err := config.Apply(p, c)
	if err != nil {
		return nil, err
	}
	unknownStore, err := config.Apply(p, &c.Store)
	if err != nil {
		return nil, err
	}
	inStore := make(map[string]bool, len(unknownStore))
	for _, k := range unknownStore {
		inStore[k] = true
	}
	for _, k := range unknownBroker {
		if inStore[k] {
			unknown = append(unknown, k)
		}
	}
	return unknown, nil
}

// SetKey sets one broker.conf key (flags and UPDATE_BROKER_CONFIG); it
// reports whether any part of the configuration knows the key.
func (c *Config) SetKey(key, value string) (bool, error) {
	okBroker, err := config.SetKey(c, key, value)
	if err != nil {
		return okBroker, err
	}
	okStore, err := config.SetKey(&c.Store, key, value)
	return okBroker || okStore, err
}

// ToMap renders every key (broker and store) as broker.conf strings, for the
// start-up log and GET_BROKER_CONFIG. Secrets (the init user's password,
// the inner credentials) are masked.
func (c *Config) ToMap() map[string]string {
	out := config.ToMap(&c.Store)
	maps.Copy(out, config.ToMap(c))
	auth.MaskSecrets(out)
	return out
}

// Validate rejects values the broker cannot run with; every error names the
// broker.conf key.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key string, v any, why string) {
		errs = append(errs, fmt.Errorf("broker: config %s=%v: %s", key, v, why))
	}
	if err := names.ValidateTopic(c.BrokerClusterName); err != nil {
		bad("brokerClusterName", c.BrokerClusterName, err.Error())
	}
	if err := names.ValidateTopic(c.BrokerName); err != nil {
		bad("brokerName", c.BrokerName, err.Error())
	}
	if c.BrokerID < 0 {
		bad("brokerId", c.BrokerID, "must be >= 0")
	}
	if _, err := netip.ParseAddr(c.BrokerIP1); err != nil {
		bad("brokerIP1", c.BrokerIP1, "not an IP address")
	}
	if c.ListenPort < 0 || c.ListenPort > 65535 || (c.ListenPort != 0 && c.VIPChannelEnable && c.ListenPort < 3) {
		bad("listenPort", c.ListenPort, "must be 0 (any) or a port number above 2")
	}
	if c.GRPCServerPort < -1 || c.GRPCServerPort > 65535 {
		bad("grpcServerPort", c.GRPCServerPort, "must be -1 (off), 0 (any) or a port number")
	}
	for _, a := range c.NamesrvAddr {
		if _, err := netip.ParseAddrPort(a); err != nil && !strings.Contains(a, ":") {
			bad("namesrvAddr", strings.Join(c.NamesrvAddr, ";"), "want host:port[;host:port]")
			break
		}
	}
	if c.BrokerPermission < 0 || c.BrokerPermission > 7 {
		bad("brokerPermission", c.BrokerPermission, "must be 0..7")
	}
	if c.DefaultTopicQueueNums < 1 || c.DefaultTopicQueueNums > 1024 {
		bad("defaultTopicQueueNums", c.DefaultTopicQueueNums, "must be 1..1024")
	}
	pos := []struct {
		key string
		v   int
	}{
		{"sendMessageThreadPoolNums", c.SendMessageThreadPoolNums},
		{"pullMessageThreadPoolNums", c.PullMessageThreadPoolNums},
		{"queryMessageThreadPoolNums", c.QueryMessageThreadPoolNums},
		{"adminBrokerThreadPoolNums", c.AdminBrokerThreadPoolNums},
		{"clientManageThreadPoolNums", c.ClientManageThreadPoolNums},
		{"consumerManageThreadPoolNums", c.ConsumerManageThreadPoolNums},
		{"heartbeatThreadPoolNums", c.HeartbeatThreadPoolNums},
		{"sendThreadPoolQueueCapacity", c.SendThreadPoolQueueCapacity},
		{"pullThreadPoolQueueCapacity", c.PullThreadPoolQueueCapacity},
		{"litePullMessageThreadPoolNums", c.LitePullMessageThreadPoolNums},
		{"ackMessageThreadPoolNums", c.AckMessageThreadPoolNums},
		{"litePullThreadPoolQueueCapacity", c.LitePullThreadPoolQueueCapacity},
		{"ackThreadPoolQueueCapacity", c.AckThreadPoolQueueCapacity},
	}
	for _, p := range pos {
		if p.v < 1 {
			bad(p.key, p.v, "must be >= 1")
		}
	}
	durs := []struct {
		key string
		v   time.Duration
	}{
		{"waitTimeMillsInSendQueue", c.WaitTimeMillsInSendQueue},
		{"shortPollingTimeMills", c.ShortPollingTimeMills},
		{"registerNameServerPeriod", c.RegisterNameServerPeriod},
		{"registerBrokerTimeoutMills", c.RegisterBrokerTimeoutMills},
		{"flushConsumerOffsetInterval", c.FlushConsumerOffsetInterval},
		{"channelExpiredTimeout", c.ChannelExpiredTimeout},
	}
	for _, d := range durs {
		if d.v <= 0 {
			bad(d.key, d.v.Milliseconds(), "must be > 0")
		}
	}
	if err := c.Store.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.validateMetrics(); err != nil { // config_metrics.go
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// registerPeriod clamps registerNameServerPeriod to 10..60 s as RocketMQ does.
func (c *Config) registerPeriod() time.Duration {
	return min(max(c.RegisterNameServerPeriod, 10*time.Second), 60*time.Second)
}

func parseStoreDelayLevels(c *Config) ([]time.Duration, error) {
	return store.ParseDelayLevels(c.Store.MessageDelayLevel)
}
