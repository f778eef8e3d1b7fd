package broker

import (
	"bytes"
	"context"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/apogeemq/apogee/internal/config"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// dynamicConfig holds the broker.conf keys UPDATE_BROKER_CONFIG changes at
// run time (what operators flip during maintenance). The rest of Config is
// fixed after New. It also carries the state of the admin request families
// that outlives one request (the config file updates are written to, the
// VIEW_BROKER_STATS_DATA sampler): Broker's only field for admin_*.go.
type dynamicConfig struct {
	brokerPermission  atomic.Int32
	autoCreateTopic   atomic.Bool
	autoCreateGroup   atomic.Bool
	rejectTransaction atomic.Bool

	// configFile is the broker.conf the broker was started with ("" =
	// none: updates last until restart); set before Start.
	configFile string
	// updateMu serialises UPDATE_BROKER_CONFIG: file write and apply
	// happen together, so the file and memory agree.
	updateMu sync.Mutex

	statsData statsSampler // admin_statsdata.go
}

// SetConfigFile names the broker.conf file the broker was started with;
// UPDATE_BROKER_CONFIG then writes changed keys back to it so they survive
// a restart (RocketMQ persists to its -c file the same way). Call before
// Start; "" (the default) keeps updates in memory only.
func (b *Broker) SetConfigFile(path string) { b.dyn.configFile = path }

func (d *dynamicConfig) init(c *Config) {
	d.brokerPermission.Store(c.BrokerPermission)
	d.autoCreateTopic.Store(c.AutoCreateTopicEnable)
	d.autoCreateGroup.Store(c.AutoCreateSubscriptionGroup)
	d.rejectTransaction.Store(c.RejectTransactionMessage)
}

// processUpdateBrokerConfig serves UPDATE_BROKER_CONFIG (25; body: Java
// properties text). Only the run-time keys brokerPermission,
// autoCreateTopicEnable, autoCreateSubscriptionGroup and
// rejectTransactionMessage are accepted; they apply at once (a permission
// change re-registers with the name servers). When the broker was started
// with a config file (SetConfigFile) the keys are first written back to it
// (persistConfigKeys) so they survive a restart; if that write fails the
// update is refused with SYSTEM_ERROR and nothing changes. Without a file
// they last until restart. Other keys are refused with NO_PERMISSION
// naming them.
func (b *Broker) processUpdateBrokerConfig(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	props, err := config.Parse(bytes.NewReader(req.Body))
	if err != nil {
		return nil, protocol.Errorf(protocol.InvalidParameter, "%v", err)
	}
	var changes []func()
	for _, k := range props.Keys() {
		v, _ := props.Get(k)
		switch k {
		case "brokerPermission":
			n, err := strconv.ParseInt(v, 10, 32)
			if err != nil || n < 0 || n > 7 {
				return nil, protocol.Errorf(protocol.InvalidParameter, "bad value %q for brokerPermission", v)
			}
			changes = append(changes, func() { b.dyn.brokerPermission.Store(int32(n)) })
		case "autoCreateTopicEnable", "autoCreateSubscriptionGroup", "rejectTransactionMessage":
			on, err := strconv.ParseBool(v)
			if err != nil {
				return nil, protocol.Errorf(protocol.InvalidParameter, "bad value %q for %s", v, k)
			}
			flag := map[string]*atomic.Bool{
				"autoCreateTopicEnable":       &b.dyn.autoCreateTopic,
				"autoCreateSubscriptionGroup": &b.dyn.autoCreateGroup,
				"rejectTransactionMessage":    &b.dyn.rejectTransaction,
			}[k]
			changes = append(changes, func() { flag.Store(on) })
		default:
			return nil, protocol.Errorf(protocol.NoPermission, "Can not update config in black list: %s (only brokerPermission, autoCreateTopicEnable, autoCreateSubscriptionGroup, rejectTransactionMessage change at run time)", k)
		}
	}
	b.dyn.updateMu.Lock()
	defer b.dyn.updateMu.Unlock()
	if b.dyn.configFile != "" && props.Len() > 0 {
		updates := make(map[string]string, props.Len())
		for _, k := range props.Keys() {
			updates[k], _ = props.Get(k)
		}
		if err := persistConfigKeys(b.dyn.configFile, updates); err != nil {
			b.logger.Error("broker config update not persisted", "file", b.dyn.configFile, "err", err)
			return nil, protocol.Errorf(protocol.SystemError, "persist broker config: %v", err)
		}
	}
	for _, apply := range changes {
		apply()
	}
	b.logger.Info("broker config updated at run time", "keys", props.Keys(), "file", b.dyn.configFile)
	b.requestRegister()
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

// effectiveConfig is Config with the run-time values applied.
func (b *Broker) effectiveConfig() map[string]string {
	m := b.cfg.ToMap()
	m["brokerPermission"] = strconv.Itoa(int(b.dyn.brokerPermission.Load()))
	m["autoCreateTopicEnable"] = strconv.FormatBool(b.dyn.autoCreateTopic.Load())
	m["autoCreateSubscriptionGroup"] = strconv.FormatBool(b.dyn.autoCreateGroup.Load())
	m["rejectTransactionMessage"] = strconv.FormatBool(b.dyn.rejectTransaction.Load())
	return m
}
