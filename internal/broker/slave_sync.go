package broker

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/ha"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/tlsconf"
)

// haState is the broker's replication state (Broker.ha).
type haState struct {
	server *ha.Server // master; nil on a slave
	client *ha.Client // slave; nil on a master

	mu sync.Mutex
	// masterAddr is the master's remoting address from the last
	// registration answer, for metadata sync; guarded by mu.
	masterAddr string
	// masterWake (capacity 1) tells the sync loop the master address changed.
	masterWake chan struct{}
}

// startSlave starts the HA client (towards haMasterAddress, or the address
// the name servers return) and the metadata sync loop.
func (b *Broker) startSlave() error {
	cfg := ha.DefaultClientConfig()
	cfg.MasterAddress = b.cfg.HaMasterAddress
	cfg.HeartbeatInterval = b.cfg.HaSendHeartbeatInterval
	cfg.HousekeepingInterval = b.cfg.HaHousekeepingInterval
	cfg.ReconnectInterval = b.cfg.HaReconnectInterval
	cfg.Dial = tlsconf.Dial(nil, b.tls.client) // tls.go
	cfg = b.haClientConfig(cfg)                // controller_mode.go: handshake with the broker id
	c, err := ha.NewClient(cfg, b.Store, b.logger)
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	if err := c.Start(); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	b.ha.client = c
	b.ha.masterWake = make(chan struct{}, 1)
	if b.MasterAddr() != "" {
		b.ha.masterWake <- struct{}{} // controller mode knows the master already
	}
	b.goFunc("slave-sync", b.slaveSyncLoop)
	return nil
}

// onRegisterResult takes a slave's master addresses from a REGISTER_BROKER
// answer (set only while the master is registered). An empty answer keeps
// the last known addresses: the HA client keeps retrying them.
func (b *Broker) onRegisterResult(resp *protocol.Command) {
	if b.ha.client == nil || b.cfg.EnableControllerMode { // controller mode: the controller names the master
		return
	}
	var h protocol.RegisterBrokerResponseHeader
	if err := protocol.DecodeHeader(resp.ExtFields, &h, false); err != nil {
		return
	}
	if h.HaServerAddr != "" && b.cfg.HaMasterAddress == "" {
		b.ha.client.SetMasterAddress(h.HaServerAddr)
	}
	if h.MasterAddr != "" {
		b.ha.mu.Lock()
		changed := h.MasterAddr != b.ha.masterAddr
		b.ha.masterAddr = h.MasterAddr
		b.ha.mu.Unlock()
		if changed {
			select {
			case b.ha.masterWake <- struct{}{}:
			default:
			}
		}
	}
}

// MasterAddr is a slave's view of its master's remoting address ("" until
// a name server answered).
func (b *Broker) MasterAddr() string {
	b.ha.mu.Lock()
	defer b.ha.mu.Unlock()
	return b.ha.masterAddr
}

// slaveSyncLoop is SlaveSynchronize: copy the master's metadata as soon as
// its address is known or changes, then every slaveSyncPeriod.
func (b *Broker) slaveSyncLoop() {
	period := b.cfg.SlaveSyncPeriod
	if b.cfg.EnableControllerMode || b.cfg.EnableSlaveActingMaster {
		// A slave may become (or act as) master at any time: topics and
		// groups created on the master must reach it promptly.
		period = min(period, time.Second)
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-b.quit:
			return
		case <-b.ha.masterWake:
		case <-t.C:
		}
		if addr := b.MasterAddr(); addr != "" {
			ctx, cancel := context.WithTimeout(b.baseCtx, 10*time.Second)
			if err := b.SyncFromMaster(ctx, addr); err != nil {
				b.logger.Warn("slave metadata sync failed", "addr", addr, "err", err)
			}
			cancel()
		}
	}
}

// SyncFromMaster copies topics, consumer offsets, delay offsets and
// subscription groups from the master at addr (GET_ALL_TOPIC_CONFIG 21,
// GET_ALL_CONSUMER_OFFSET 43, GET_ALL_DELAY_OFFSET 45,
// GET_ALL_SUBSCRIPTIONGROUP_CONFIG 201), as SlaveSynchronize.syncAll.
// Each part is independent; the first error is returned after all ran.
func (b *Broker) SyncFromMaster(ctx context.Context, addr string) error {
	var first error
	// Topics in pages (topic_config_pages.go): 100,000 topics exceed one frame.
	w, err := b.fetchAllTopicConfig(ctx, addr)
	if err == nil {
		err = b.applyMasterTopicWrapper(w)
	}
	if err != nil {
		first = fmt.Errorf("broker: slave sync %s: %w", protocol.GetAllTopicConfig, err)
	}
	type syncStep struct {
		code  protocol.RequestCode
		apply func([]byte) error
	}
	steps := []syncStep{
		{protocol.GetAllConsumerOffset, b.applyMasterOffsets},
		{protocol.GetAllDelayOffset, b.applyMasterDelayOffsets},
		{protocol.GetAllSubscriptionGroupConfig, b.applyMasterGroups},
	}
	if b.auth.inner != nil { // users and ACLs need the inner credentials (auth.go)
		steps = append(steps, syncStep{AuthExportCode, b.applyMasterAuth})
	}
	for _, step := range steps {
		resp, err := b.nsClient.InvokeSync(ctx, addr, protocol.NewRequest(step.code, nil, nil))
		if err == nil && resp.Code != int32(protocol.Success) {
			err = fmt.Errorf("code %d: %s", resp.Code, resp.Remark)
		}
		if err == nil {
			err = step.apply(resp.Body)
		}
		if err != nil && first == nil {
			first = fmt.Errorf("broker: slave sync %s: %w", step.code, err)
		}
	}
	return first
}

// applyMasterTopicWrapper replaces the topic table when the master's data
// version differs, persists it and re-registers.
func (b *Broker) applyMasterTopicWrapper(w *protocol.TopicConfigSerializeWrapper) error {
	m := b.Topics
	m.mu.Lock()
	if m.version == w.DataVersion {
		m.mu.Unlock()
		return nil
	}
	topics := make(map[string]*protocol.TopicConfig, len(w.TopicConfigTable))
	for name, tc := range w.TopicConfigTable {
		tc.TopicName = name
		normalizeTopicConfig(&tc)
		c := cloneTopicConfig(&tc)
		topics[name] = &c
	}
	m.topics, m.version = topics, w.DataVersion
	m.mu.Unlock()
	b.logger.Info("topics copied from master", "topics", len(topics))
	b.requestRegister()
	return m.persist()
}

// applyMasterOffsets merges the master's consumer offsets (putAll).
func (b *Broker) applyMasterOffsets(body []byte) error {
	var w protocol.ConsumerOffsetWrapper
	if err := protocol.UnmarshalFastJSON(body, &w); err != nil {
		return err
	}
	m := b.Offsets
	m.mu.Lock()
	for key, queues := range w.OffsetTable {
		m.setLocked(key, maps.Clone(queues))
	}
	if w.DataVersion != nil {
		m.version = *w.DataVersion
	}
	m.dirty = true
	m.mu.Unlock()
	return m.persist(false)
}

// applyMasterDelayOffsets replaces the delay-level offsets.
func (b *Broker) applyMasterDelayOffsets(body []byte) error {
	var w protocol.DelayOffsetWrapper
	if err := protocol.UnmarshalFastJSON(body, &w); err != nil {
		return err
	}
	d := b.DelayOffsets
	d.mu.Lock()
	d.offsets = maps.Clone(w.OffsetTable)
	if d.offsets == nil {
		d.offsets = make(map[int32]int64)
	}
	if w.DataVersion != nil {
		d.version = *w.DataVersion
	}
	d.mu.Unlock()
	return d.persist()
}

// applyMasterGroups replaces the subscription groups when the master's data
// version differs.
func (b *Broker) applyMasterGroups(body []byte) error {
	var w protocol.SubscriptionGroupWrapper
	if err := protocol.UnmarshalFastJSON(body, &w); err != nil {
		return err
	}
	m := b.Groups
	m.mu.Lock()
	if m.version == w.DataVersion {
		m.mu.Unlock()
		return nil
	}
	groups := make(map[string]*protocol.SubscriptionGroupConfig, len(w.SubscriptionGroupTable))
	for name, g := range w.SubscriptionGroupTable {
		if g == nil {
			continue
		}
		c := cloneGroupConfig(g)
		c.GroupName = name
		if c.Attributes == nil {
			c.Attributes = map[string]string{}
		}
		groups[name] = &c
	}
	forbidden := make(map[string]map[string]int32, len(w.ForbiddenTable))
	for k, v := range w.ForbiddenTable {
		forbidden[k] = maps.Clone(v)
	}
	m.groups, m.forbidden, m.version = groups, forbidden, w.DataVersion
	m.mu.Unlock()
	return m.persist()
}
