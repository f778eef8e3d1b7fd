package client

import (
	"crypto/tls"
	"fmt"
	"github.com/apogeemq/apogee/internal/auth"
	"log/slog"
	"strings"
	"time"
)

// clientConfig is what every client kind (producer, push, pull and lite
// pull consumers) needs: where the name servers are, how the client names
// itself and how often it talks to the cluster. Producer and consumer
// configs embed it as a field named clientConfig, which Opt fills.
type clientConfig struct {
	nameServers     []string
	namespace       string        // "" = none; topics and groups become ns%name on the wire
	instanceName    string        // "DEFAULT" = pid#nanotime, so clients in one process differ
	clientIP        string        // "" = first non-loopback IPv4 address
	logger          *slog.Logger  // never nil after defaults()
	vipChannel      bool          // sends go to the broker's port - 2 (VIP channel)
	dialTimeout     time.Duration // default 3 s
	pollNameServer  time.Duration // route refresh period, default 30 s
	heartbeatBroker time.Duration // heartbeat period, default 30 s
	tls             *tls.Config   // nil = plain TCP
	unitName        string        // appended to the client id when set
	credentials     *auth.Signer  // WithCredentials (credentials.go); nil = unsigned
}

func defaultClientConfig() clientConfig {
	return clientConfig{
		instanceName:    "DEFAULT",
		logger:          slog.New(slog.DiscardHandler),
		dialTimeout:     3 * time.Second,
		pollNameServer:  30 * time.Second,
		heartbeatBroker: 30 * time.Second,
	}
}

// validate rejects configurations no client can run with.
func (c *clientConfig) validate() error {
	if len(c.nameServers) == 0 {
		return fmt.Errorf("client: no name server address: use WithNameServers")
	}
	for _, a := range c.nameServers {
		if a == "" {
			return fmt.Errorf("client: empty name server address")
		}
	}
	if c.pollNameServer < 10*time.Millisecond || c.heartbeatBroker < 10*time.Millisecond {
		return fmt.Errorf("client: route refresh and heartbeat periods must be at least 10ms")
	}
	return nil
}

// Opt configures any client kind. NewProducer accepts it as a ProducerOpt;
// the consumers accept it as a ConsumerOpt.
type Opt struct{ fn func(*clientConfig) }

func (o Opt) applyProducer(c *producerConfig) {
	if o.fn != nil { // the zero Opt does nothing
		o.fn(&c.clientConfig)
	}
}

// WithNameServers sets the name server addresses ("host:port"). Required.
// Several may be given in one string separated by ';' as RocketMQ tools do.
func WithNameServers(addrs ...string) Opt {
	return Opt{func(c *clientConfig) { c.nameServers = splitAddrs(addrs) }}
}

// WithNamespace prefixes every topic and group with "namespace%" on the
// wire (RocketMQ namespaces); results and callbacks show the plain names.
// Default: none.
func WithNamespace(ns string) Opt { return Opt{func(c *clientConfig) { c.namespace = ns }} }

// WithInstanceName sets the instance part of the client id
// ("ip@instanceName"). Default "DEFAULT", replaced by pid#nanotime so that
// every client of a process has its own id.
func WithInstanceName(name string) Opt { return Opt{func(c *clientConfig) { c.instanceName = name }} }

// WithClientIP sets the IP reported in the client id and message ids.
// Default: the first non-loopback IPv4 address of the host.
func WithClientIP(ip string) Opt { return Opt{func(c *clientConfig) { c.clientIP = ip }} }

// WithLogger sets the logger; default discards. The client narrows it with
// component=client.
func WithLogger(l *slog.Logger) Opt {
	return Opt{func(c *clientConfig) {
		if l != nil {
			c.logger = l
		}
	}}
}

// WithVIPChannel sends messages to the broker's VIP port (listen port - 2)
// instead of its main port (RocketMQ sendMessageWithVIPChannel). Default off.
func WithVIPChannel(on bool) Opt { return Opt{func(c *clientConfig) { c.vipChannel = on }} }

// WithDialTimeout bounds connection set-up. Default 3 s.
func WithDialTimeout(d time.Duration) Opt { return Opt{func(c *clientConfig) { c.dialTimeout = d }} }

// WithPollNameServerInterval sets how often routes of used topics are
// refreshed (pollNameServerInterval). Default 30 s.
func WithPollNameServerInterval(d time.Duration) Opt {
	return Opt{func(c *clientConfig) { c.pollNameServer = d }}
}

// WithHeartbeatBrokerInterval sets how often the client heartbeats every
// broker (heartbeatBrokerInterval). Default 30 s.
func WithHeartbeatBrokerInterval(d time.Duration) Opt {
	return Opt{func(c *clientConfig) { c.heartbeatBroker = d }}
}

// WithTLS dials brokers and name servers over TLS.
func WithTLS(cfg *tls.Config) Opt { return Opt{func(c *clientConfig) { c.tls = cfg }} }

// WithUnitName appends "@unit" to the client id (RocketMQ unitName).
func WithUnitName(unit string) Opt { return Opt{func(c *clientConfig) { c.unitName = unit }} }

func splitAddrs(in []string) []string {
	var out []string
	for _, s := range in {
		start := 0
		for i := 0; i <= len(s); i++ {
			if i == len(s) || s[i] == ';' || s[i] == ',' {
				if part := strings.TrimSpace(s[start:i]); part != "" {
					out = append(out, part)
				}
				start = i + 1
			}
		}
	}
	return out
}
