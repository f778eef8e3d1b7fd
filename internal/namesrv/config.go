package namesrv

import (
	"errors"
	"fmt"
	"github.com/apogeemq/apogee/internal/auth"
	"github.com/apogeemq/apogee/internal/tlsconf"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DefaultBrokerChannelExpiredTime is how long a broker stays registered
// without a registration or heartbeat (RocketMQ's
// DEFAULT_BROKER_CHANNEL_EXPIRED_TIME).
const DefaultBrokerChannelExpiredTime = 120 * time.Second

// DefaultListenPort is the name server's RocketMQ port.
const DefaultListenPort = 9876

// Config is the name server's configuration. Field tags are the
// namesrv.conf keys of RocketMQ's NamesrvConfig and NettyServerConfig;
// keys Apogee accepts but does not act on say so.
type Config struct {
	// ListenPort is the remoting port (9876); 0 picks a free port.
	ListenPort int `conf:"listenPort"`
	// BindAddress is the interface to listen on; "" or 0.0.0.0 means all.
	BindAddress string `conf:"bindAddress"`
	// ServerChannelMaxIdleTimeSeconds closes connections idle this long
	// (120); an idle broker connection removes the broker at once.
	ServerChannelMaxIdleTimeSeconds int `conf:"serverChannelMaxIdleTimeSeconds"`

	RocketmqHome string `conf:"rocketmqHome"`
	// KVConfigPath is the KV config file ($HOME/namesrv/kvConfig.json);
	// "" keeps the KV config in memory only.
	KVConfigPath string `conf:"kvConfigPath"`
	// ConfigStorePath is accepted for compatibility; UPDATE_NAMESRV_CONFIG
	// changes are not persisted.
	ConfigStorePath string `conf:"configStorePath"`
	ProductEnvName  string `conf:"productEnvName"`
	ClusterTest     bool   `conf:"clusterTest"`

	// OrderMessageEnable serves orderTopicConf from the ORDER_TOPIC_CONFIG
	// KV namespace in routes.
	OrderMessageEnable bool `conf:"orderMessageEnable"`
	// ReturnOrderTopicConfigToBroker answers REGISTER_BROKER with the
	// ORDER_TOPIC_CONFIG namespace as a KVTable (true).
	ReturnOrderTopicConfigToBroker bool `conf:"returnOrderTopicConfigToBroker"`

	ClientRequestThreadPoolNums          int `conf:"clientRequestThreadPoolNums"`          // workers for GET_ROUTEINFO_BY_TOPIC (8)
	DefaultThreadPoolNums                int `conf:"defaultThreadPoolNums"`                // workers for everything else (16)
	ClientRequestThreadPoolQueueCapacity int `conf:"clientRequestThreadPoolQueueCapacity"` // (50000)
	DefaultThreadPoolQueueCapacity       int `conf:"defaultThreadPoolQueueCapacity"`       // (10000)

	// ScanNotActiveBrokerInterval is the expiry scan period (5 s; a bare
	// number in namesrv.conf is milliseconds).
	ScanNotActiveBrokerInterval time.Duration `conf:"scanNotActiveBrokerInterval"`
	// BrokerChannelExpiredTime is the default broker expiry (120 s). An
	// Apogee key: RocketMQ hard-codes it.
	BrokerChannelExpiredTime time.Duration `conf:"brokerChannelExpiredTime"`
	// UnRegisterBrokerQueueCapacity is accepted for compatibility;
	// Apogee unregisters synchronously.
	UnRegisterBrokerQueueCapacity int `conf:"unRegisterBrokerQueueCapacity"`

	SupportActingMaster bool `conf:"supportActingMaster"`
	EnableAllTopicList  bool `conf:"enableAllTopicList"` // GET_ALL_TOPIC_LIST_FROM_NAMESERVER (true)
	EnableTopicList     bool `conf:"enableTopicList"`    // GET_TOPICS_BY_CLUSTER (true)
	// NotifyMinBrokerIdChanged is accepted; Apogee does not notify.
	NotifyMinBrokerIdChanged bool `conf:"notifyMinBrokerIdChanged"`
	// NeedWaitForService answers routes with SYSTEM_ERROR "name server not
	// ready" for WaitSecondsForService after start-up.
	NeedWaitForService    bool `conf:"needWaitForService"`
	WaitSecondsForService int  `conf:"waitSecondsForService"`

	DeleteTopicWithBrokerRegistration bool `conf:"deleteTopicWithBrokerRegistration"`
	// ConfigBlackList lists keys UPDATE_NAMESRV_CONFIG refuses (';'-separated).
	ConfigBlackList string `conf:"configBlackList"`

	// AuthConfig: authenticationEnabled, initAuthenticationUser, ... (auth.go).
	auth.AuthConfig
	// Settings: tlsMode, tlsServerCertPath, ... (TLS on the remoting port).
	tlsconf.Settings
}

// DefaultConfig returns RocketMQ's defaults.
func DefaultConfig() Config {
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		home = "."
	}
	return Config{
		ListenPort:                           DefaultListenPort,
		ServerChannelMaxIdleTimeSeconds:      120,
		RocketmqHome:                         os.Getenv("ROCKETMQ_HOME"),
		KVConfigPath:                         filepath.Join(home, "namesrv", "kvConfig.json"),
		ConfigStorePath:                      filepath.Join(home, "namesrv", "namesrv.properties"),
		ProductEnvName:                       "center",
		ReturnOrderTopicConfigToBroker:       true,
		ClientRequestThreadPoolNums:          8,
		DefaultThreadPoolNums:                16,
		ClientRequestThreadPoolQueueCapacity: 50000,
		DefaultThreadPoolQueueCapacity:       10000,
		ScanNotActiveBrokerInterval:          5 * time.Second,
		BrokerChannelExpiredTime:             DefaultBrokerChannelExpiredTime,
		UnRegisterBrokerQueueCapacity:        3000,
		EnableAllTopicList:                   true,
		EnableTopicList:                      true,
		WaitSecondsForService:                45,
		ConfigBlackList:                      "configBlackList;configStorePath;kvConfigPath",
	}
}

// Validate rejects settings the name server cannot run with, naming the key.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key string, v any, why string) {
		errs = append(errs, fmt.Errorf("namesrv: %s=%v: %s", key, v, why))
	}
	if c.ListenPort < 0 || c.ListenPort > 65535 {
		bad("listenPort", c.ListenPort, "want 0..65535")
	}
	if c.BindAddress != "" && net.ParseIP(c.BindAddress) == nil && c.BindAddress != "localhost" {
		bad("bindAddress", c.BindAddress, "want an IP address")
	}
	if c.ServerChannelMaxIdleTimeSeconds < 0 {
		bad("serverChannelMaxIdleTimeSeconds", c.ServerChannelMaxIdleTimeSeconds, "want >= 0 (0 disables)")
	}
	for _, p := range []struct {
		key string
		v   int
	}{
		{"clientRequestThreadPoolNums", c.ClientRequestThreadPoolNums},
		{"defaultThreadPoolNums", c.DefaultThreadPoolNums},
		{"clientRequestThreadPoolQueueCapacity", c.ClientRequestThreadPoolQueueCapacity},
		{"defaultThreadPoolQueueCapacity", c.DefaultThreadPoolQueueCapacity},
	} {
		if p.v <= 0 {
			bad(p.key, p.v, "want > 0")
		}
	}
	if c.ScanNotActiveBrokerInterval <= 0 {
		bad("scanNotActiveBrokerInterval", c.ScanNotActiveBrokerInterval.Milliseconds(), "want > 0 ms")
	}
	if c.BrokerChannelExpiredTime <= 0 {
		bad("brokerChannelExpiredTime", c.BrokerChannelExpiredTime.Milliseconds(), "want > 0 ms")
	}
	if c.WaitSecondsForService < 0 {
		bad("waitSecondsForService", c.WaitSecondsForService, "want >= 0")
	}
	return errors.Join(errs...)
}

// ListenAddr is the host:port the server listens on.
func (c *Config) ListenAddr() string {
	return net.JoinHostPort(c.BindAddress, strconv.Itoa(c.ListenPort))
}

func (c *Config) routeOptions() RouteOptions {
	return RouteOptions{
		BrokerChannelExpiredTime:          c.BrokerChannelExpiredTime,
		DeleteTopicWithBrokerRegistration: c.DeleteTopicWithBrokerRegistration,
		SupportActingMaster:               c.SupportActingMaster,
	}
}

// blackListed reports whether UPDATE_NAMESRV_CONFIG may not change key.
func (c *Config) blackListed(key string) bool {
	for _, k := range strings.FieldsFunc(c.ConfigBlackList, func(r rune) bool { return r == ';' || r == ',' }) {
		if strings.TrimSpace(k) == key {
			return true
		}
	}
	return false
}

// restartOnly reports whether key cannot take effect without a restart;
// UPDATE_NAMESRV_CONFIG refuses such keys rather than pretending.
func restartOnly(key string) bool {
	switch key {
	case "listenPort", "bindAddress", "serverChannelMaxIdleTimeSeconds",
		"clientRequestThreadPoolNums", "defaultThreadPoolNums",
		"clientRequestThreadPoolQueueCapacity", "defaultThreadPoolQueueCapacity",
		"scanNotActiveBrokerInterval", "kvConfigPath", "rocketmqHome":
		return true
	}
	return false
}
