package broker

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
)

// SubscriptionGroupManager owns the consumer groups' broker-side settings
// and subscriptionGroup.json (docs/broker.md §1.6). Changes are durable
// before they return and cost the same whatever the number of groups
// (config_log.go).
type SubscriptionGroupManager struct {
	path   string
	logger *slog.Logger
	now    func() time.Time

	// cf persists the table: subscriptionGroup.json plus its change log;
	// its writeMu is held across every change.
	cf *configFile

	mu sync.RWMutex
	// groups, forbidden and version are guarded by mu; group values are
	// replaced, never mutated.
	groups    map[string]*protocol.SubscriptionGroupConfig
	forbidden map[string]map[string]int32
	version   protocol.DataVersion
	// anyForbidden is whether forbidden holds a set bit: pulls skip the
	// lock while it is false (the usual case).
	anyForbidden atomic.Bool
}

func newSubscriptionGroupManager(path string, logger *slog.Logger, now func() time.Time) *SubscriptionGroupManager {
	m := &SubscriptionGroupManager{
		path:      path,
		logger:    logger,
		now:       now,
		groups:    make(map[string]*protocol.SubscriptionGroupConfig),
		forbidden: make(map[string]map[string]int32),
	}
	m.cf = &configFile{path: path, logger: logger, encode: m.encode, value: m.jsonValue,
		size: func() int { m.mu.RLock(); defer m.mu.RUnlock(); return len(m.groups) }}
	return m
}

// jsonValue is one group's config as subscriptionGroup.json holds it.
func (m *SubscriptionGroupManager) jsonValue(group string) (json.RawMessage, bool) {
	m.mu.RLock()
	g, ok := m.groups[group]
	m.mu.RUnlock()
	if !ok {
		return nil, false
	}
	b, err := json.Marshal(g)
	return b, err == nil
}

func (m *SubscriptionGroupManager) encode() ([]byte, error) {
	data, err := json.MarshalIndent(m.Wrapper(), "", "\t")
	if err != nil {
		return nil, fmt.Errorf("broker: encode subscription groups: %w", err)
	}
	return data, nil
}

// replayLog applies subscriptionGroup.json.log (and a .old left by an
// interrupted compaction, which is then finished).
func (m *SubscriptionGroupManager) replayLog() error {
	n, err := m.cf.replayTable(&m.mu, &m.version, func(e configLogEntry) error {
		if e.Op == "delete" {
			delete(m.groups, e.Key)
			delete(m.forbidden, e.Key)
			return nil
		}
		var g protocol.SubscriptionGroupConfig
		if err := protocol.UnmarshalFastJSON(e.Value, &g); err != nil {
			return err
		}
		if g.GroupName == "" {
			g.GroupName = e.Key
		}
		if g.Attributes == nil {
			g.Attributes = map[string]string{}
		}
		m.groups[e.Key] = &g
		return nil
	})
	if n > 0 {
		m.logger.Info("subscription group changes replayed from the change log", "changes", n)
	}
	return err
}

func (m *SubscriptionGroupManager) load() error {
	_, err := loadFileWithBackup(m.path, func(b []byte) error {
		var w protocol.SubscriptionGroupWrapper
		if err := protocol.UnmarshalFastJSON(b, &w); err != nil {
			return err
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		m.groups = make(map[string]*protocol.SubscriptionGroupConfig, len(w.SubscriptionGroupTable))
		for name, g := range w.SubscriptionGroupTable {
			if g == nil {
				continue
			}
			if g.GroupName == "" {
				g.GroupName = name
			}
			if g.Attributes == nil {
				g.Attributes = map[string]string{}
			}
			m.groups[name] = g
		}
		m.forbidden = w.ForbiddenTable
		if m.forbidden == nil {
			m.forbidden = make(map[string]map[string]int32)
		}
		m.anyForbidden.Store(anyBitSet(m.forbidden))
		m.version = w.DataVersion
		return nil
	})
	if err != nil {
		return err
	}
	return m.replayLog()
}

// ensureSystemGroups creates the built-in groups (docs/broker.md §1.6).
func (m *SubscriptionGroupManager) ensureSystemGroups() error {
	created := false
	m.mu.Lock()
	for _, g := range []string{names.GroupToolsConsumer, names.GroupFilterSrv, names.GroupSelfTest, "CID_ONS-HTTP-PROXY",
		"CID_ONSAPI_PULL", "CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER", names.GroupTransCheck, names.GroupReviveConsumer} {
		if _, ok := m.groups[g]; !ok {
			c := protocol.NewSubscriptionGroupConfig(g)
			if g == names.GroupToolsConsumer || g == names.GroupFilterSrv || g == names.GroupSelfTest {
				c.ConsumeBroadcastEnable = true
			}
			m.groups[g] = &c
			created = true
		}
	}
	if created {
		m.version = nextDataVersion(m.version, m.now())
	}
	m.mu.Unlock()
	if !created {
		return nil
	}
	return m.persist()
}

// persist writes the whole table and empties the change log.
func (m *SubscriptionGroupManager) persist() error { return m.cf.compact() }

// commit makes the current state of groups durable.
// REQUIRES: m.cf.writeMu held.
func (m *SubscriptionGroupManager) commit(groups ...string) error {
	m.mu.RLock()
	v := m.version
	m.mu.RUnlock()
	return m.cf.commit(v, groups...)
}

// Wrapper returns a copy of the whole table: GET_ALL_SUBSCRIPTIONGROUP_CONFIG's body.
func (m *SubscriptionGroupManager) Wrapper() *protocol.SubscriptionGroupWrapper {
	m.mu.RLock()
	defer m.mu.RUnlock()
	w := &protocol.SubscriptionGroupWrapper{
		SubscriptionGroupTable: make(map[string]*protocol.SubscriptionGroupConfig, len(m.groups)),
		ForbiddenTable:         make(map[string]map[string]int32, len(m.forbidden)),
		DataVersion:            m.version,
	}
	for k, v := range m.groups {
		c := cloneGroupConfig(v)
		w.SubscriptionGroupTable[k] = &c
	}
	for k, v := range m.forbidden {
		w.ForbiddenTable[k] = maps.Clone(v)
	}
	return w
}

// Get returns a copy of the group's config.
func (m *SubscriptionGroupManager) Get(group string) (protocol.SubscriptionGroupConfig, bool) {
	m.mu.RLock()
	g, ok := m.groups[group]
	m.mu.RUnlock()
	if !ok {
		return protocol.SubscriptionGroupConfig{}, false
	}
	return cloneGroupConfig(g), true
}

// FindOrCreate returns the group's config, creating it with defaults when
// autoCreate is set (and the name is valid). ok is false when the group does
// not exist afterwards.
func (m *SubscriptionGroupManager) FindOrCreate(group string, autoCreate bool) (cfg protocol.SubscriptionGroupConfig, ok bool, err error) {
	if cfg, ok := m.Get(group); ok {
		return cfg, true, nil
	}
	if !autoCreate || names.ValidateGroup(group) != nil {
		return protocol.SubscriptionGroupConfig{}, false, nil
	}
	m.cf.writeMu.Lock()
	defer m.cf.writeMu.Unlock()
	m.mu.Lock()
	g, exists := m.groups[group]
	if !exists {
		c := protocol.NewSubscriptionGroupConfig(group)
		g = &c
		m.groups[group] = g
		m.version = nextDataVersion(m.version, m.now())
	}
	out := cloneGroupConfig(g)
	m.mu.Unlock()
	if exists {
		return out, true, nil
	}
	m.logger.Info("subscription group auto-created", "group", group)
	return out, true, m.commit(group)
}

// Update creates or replaces a group.
func (m *SubscriptionGroupManager) Update(cfg protocol.SubscriptionGroupConfig) error {
	if cfg.Attributes == nil {
		cfg.Attributes = map[string]string{}
	}
	c := cloneGroupConfig(&cfg)
	m.cf.writeMu.Lock()
	defer m.cf.writeMu.Unlock()
	m.mu.Lock()
	m.groups[cfg.GroupName] = &c
	m.version = nextDataVersion(m.version, m.now())
	m.mu.Unlock()
	m.logger.Info("subscription group updated", "group", cfg.GroupName)
	return m.commit(cfg.GroupName)
}

// Delete removes a group; it reports whether it existed.
func (m *SubscriptionGroupManager) Delete(group string) (bool, error) {
	m.cf.writeMu.Lock()
	defer m.cf.writeMu.Unlock()
	m.mu.Lock()
	_, ok := m.groups[group]
	if ok {
		delete(m.groups, group)
		delete(m.forbidden, group)
		m.version = nextDataVersion(m.version, m.now())
	}
	m.mu.Unlock()
	if !ok {
		return false, nil
	}
	m.logger.Info("subscription group deleted", "group", group)
	return true, m.commit(group)
}

// Names returns the group names.
func (m *SubscriptionGroupManager) Names() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Collect(maps.Keys(m.groups))
}

func cloneGroupConfig(g *protocol.SubscriptionGroupConfig) protocol.SubscriptionGroupConfig {
	c := *g
	c.Attributes = maps.Clone(g.Attributes)
	c.SubscriptionDataSet = slices.Clone(g.SubscriptionDataSet)
	if g.GroupRetryPolicy != nil {
		p := *g.GroupRetryPolicy
		c.GroupRetryPolicy = &p
	}
	return c
}

// permIndexRead is RocketMQ's PermName.INDEX_PERM_READ: the bit of the
// forbidden table that stops a group reading a topic.
const permIndexRead = 2

// Forbidden reports whether bit index of group's forbidden mask for topic is
// set (RocketMQ's forbiddenTable: per group and topic, bits by PermName
// index).
func (m *SubscriptionGroupManager) Forbidden(group, topic string, index int) bool {
	if !m.anyForbidden.Load() {
		return false
	}
	m.mu.RLock()
	v := m.forbidden[group][topic]
	m.mu.RUnlock()
	bit := int32(1) << index
	return v > 0 && v&bit == bit
}

// SetForbidden sets (on) or clears bit index of group's forbidden mask for
// topic, durably: the table is rewritten (it is not in the change log,
// which holds group configs; forbidding is a rare operator action).
func (m *SubscriptionGroupManager) SetForbidden(group, topic string, index int, on bool) error {
	m.cf.writeMu.Lock()
	defer m.cf.writeMu.Unlock()
	m.mu.Lock()
	topics := m.forbidden[group]
	if topics == nil {
		topics = make(map[string]int32)
		m.forbidden[group] = topics
	}
	v := max(topics[topic], 0)
	if on {
		v |= 1 << index
	} else {
		v &^= 1 << index
	}
	topics[topic] = v
	m.anyForbidden.Store(anyBitSet(m.forbidden))
	m.version = nextDataVersion(m.version, m.now())
	m.mu.Unlock()
	m.logger.Info("subscription group forbidden updated", "group", group, "topic", topic, "index", index, "on", on)
	return m.cf.compact()
}

// anyBitSet reports whether a forbidden table has a positive mask.
func anyBitSet(t map[string]map[string]int32) bool {
	for _, topics := range t {
		for _, v := range topics {
			if v > 0 {
				return true
			}
		}
	}
	return false
}
