package broker

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apogeemq/apogee/internal/config"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// dynamicConfig holds the broker.conf keys UPDATE_BROKER_CONFIG changes at
// run time (runtimeKeys: what operators flip during maintenance or under
// load). Their readers load these atomics, never the Config fields, so a
// change takes effect on the next request. The rest of Config is fixed
// after New. It also carries the state of the admin request families
// that outlives one request (the config file updates are written to, the
// VIEW_BROKER_STATS_DATA sampler): Broker's only field for admin_*.go.
type dynamicConfig struct {
	brokerPermission  atomic.Int32
	autoCreateTopic   atomic.Bool
	autoCreateGroup   atomic.Bool
	rejectTransaction atomic.Bool
	slaveRead         atomic.Bool
	propertyFilter    atomic.Bool
	litePull          atomic.Bool
	shortPolling      atomic.Int64 // time.Duration
	// Fast failure: the switch and each queue's wait limit.
	fastFailure     atomic.Bool
	waitSend        atomic.Int64 // time.Duration, as the ones below
	waitPull        atomic.Int64
	waitLitePull    atomic.Int64
	waitHeartbeat   atomic.Int64
	waitTransaction atomic.Int64
	waitAck         atomic.Int64
	waitAdmin       atomic.Int64

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
	d.slaveRead.Store(c.SlaveReadEnable)
	d.propertyFilter.Store(c.EnablePropertyFilter)
	d.litePull.Store(c.LitePullMessageEnable)
	d.shortPolling.Store(int64(c.ShortPollingTimeMills))
	d.fastFailure.Store(c.BrokerFastFailureEnable)
	for _, w := range []struct {
		a *atomic.Int64
		v time.Duration
	}{
		{&d.waitSend, c.WaitTimeMillsInSendQueue}, {&d.waitPull, c.WaitTimeMillsInPullQueue},
		{&d.waitLitePull, c.WaitTimeMillsInLitePullQueue}, {&d.waitHeartbeat, c.WaitTimeMillsInHeartbeatQueue},
		{&d.waitTransaction, c.WaitTimeMillsInTransactionQueue}, {&d.waitAck, c.WaitTimeMillsInAckQueue},
		{&d.waitAdmin, c.WaitTimeMillsInAdminBrokerQueue},
	} {
		w.a.Store(int64(w.v))
	}
}

// maxWait is a pool's fast-failure limit (remoting.PoolConfig.MaxWait):
// the queue's wait while brokerFastFailureEnable, else 0 (off). As in
// RocketMQ (behind >= wait), a wait of 0 fails every queued request.
func (d *dynamicConfig) maxWait(wait *atomic.Int64) func() time.Duration {
	return func() time.Duration {
		if !d.fastFailure.Load() {
			return 0
		}
		return max(time.Duration(wait.Load()), time.Nanosecond)
	}
}

// runtimeKey is one key UPDATE_BROKER_CONFIG may change: parse checks a
// value and returns the change to apply (applied only once every key of
// the request parsed and the config file took them), get shows the value
// in effect.
type runtimeKey struct {
	parse func(v string) (apply func(), err error)
	get   func() string
}

func boolKey(a *atomic.Bool) runtimeKey {
	return runtimeKey{
		parse: func(v string) (func(), error) {
			on, err := strconv.ParseBool(v)
			return func() { a.Store(on) }, err
		},
		get: func() string { return strconv.FormatBool(a.Load()) },
	}
}

// millisKey is a duration key in milliseconds (>= 0), as broker.conf writes them.
func millisKey(a *atomic.Int64) runtimeKey {
	return runtimeKey{
		parse: func(v string) (func(), error) {
			ms, err := strconv.ParseInt(v, 10, 64)
			if err == nil && ms < 0 {
				err = errors.New("must be >= 0")
			}
			return func() { a.Store(ms * int64(time.Millisecond)) }, err
		},
		get: func() string { return strconv.FormatInt(time.Duration(a.Load()).Milliseconds(), 10) },
	}
}

// runtimeKeys are the keys UPDATE_BROKER_CONFIG changes, each read by its
// users on every request (docs/broker.md §1.16).
func (d *dynamicConfig) runtimeKeys() map[string]runtimeKey {
	return map[string]runtimeKey{
		"brokerPermission": {
			parse: func(v string) (func(), error) {
				n, err := strconv.ParseInt(v, 10, 32)
				if err == nil && (n < 0 || n > 7) {
					err = errors.New("must be 0..7")
				}
				return func() { d.brokerPermission.Store(int32(n)) }, err
			},
			get: func() string { return strconv.Itoa(int(d.brokerPermission.Load())) },
		},
		"autoCreateTopicEnable":           boolKey(&d.autoCreateTopic),
		"autoCreateSubscriptionGroup":     boolKey(&d.autoCreateGroup),
		"rejectTransactionMessage":        boolKey(&d.rejectTransaction),
		"slaveReadEnable":                 boolKey(&d.slaveRead),
		"enablePropertyFilter":            boolKey(&d.propertyFilter),
		"litePullMessageEnable":           boolKey(&d.litePull),
		"shortPollingTimeMills":           millisKey(&d.shortPolling),
		"brokerFastFailureEnable":         boolKey(&d.fastFailure),
		"waitTimeMillsInSendQueue":        millisKey(&d.waitSend),
		"waitTimeMillsInPullQueue":        millisKey(&d.waitPull),
		"waitTimeMillsInLitePullQueue":    millisKey(&d.waitLitePull),
		"waitTimeMillsInHeartbeatQueue":   millisKey(&d.waitHeartbeat),
		"waitTimeMillsInTransactionQueue": millisKey(&d.waitTransaction),
		"waitTimeMillsInAckQueue":         millisKey(&d.waitAck),
		"waitTimeMillsInAdminBrokerQueue": millisKey(&d.waitAdmin),
	}
}

// configBlackList is RocketMQ's default configBlackList: keys no update may
// touch.
var configBlackList = []string{"configBlackList", "brokerConfigPath"}

// processUpdateBrokerConfig serves UPDATE_BROKER_CONFIG (25; body: Java
// properties text). The keys of runtimeKeys are accepted and apply at once
// (a permission change re-registers with the name servers); a key of
// RocketMQ's configBlackList is refused NO_PERMISSION "Can not update
// config in black list."; any other key is refused NO_PERMISSION naming it
// (it would not take effect before a restart; RocketMQ stores it and leaves
// it without effect). A bad value is INVALID_PARAMETER; nothing is applied
// unless every key is good. When the broker was started with a config file
// (SetConfigFile) the keys are first written back to it (persistConfigKeys)
// so they survive a restart; if that write fails the update is refused with
// SYSTEM_ERROR and nothing changes. Without a file they last until restart.
func (b *Broker) processUpdateBrokerConfig(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	props, err := config.Parse(bytes.NewReader(req.Body))
	if err != nil {
		return nil, protocol.Errorf(protocol.InvalidParameter, "%v", err)
	}
	for _, k := range props.Keys() {
		if slices.Contains(configBlackList, k) {
			return nil, protocol.Errorf(protocol.NoPermission, "Can not update config in black list.")
		}
	}
	keys := b.dyn.runtimeKeys()
	var changes []func()
	for _, k := range props.Keys() {
		v, _ := props.Get(k)
		rk, ok := keys[k]
		if !ok {
			return nil, protocol.Errorf(protocol.NoPermission, "Can not update config at run time: %s (changeable: %s)",
				k, strings.Join(slices.Sorted(maps.Keys(keys)), ", "))
		}
		apply, err := rk.parse(strings.TrimSpace(v))
		if err != nil {
			return nil, protocol.Errorf(protocol.InvalidParameter, "bad value %q for %s: %v", v, k, err)
		}
		changes = append(changes, apply)
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
	for k, rk := range b.dyn.runtimeKeys() {
		m[k] = rk.get()
	}
	return m
}
