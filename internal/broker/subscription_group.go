package broker

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
)

// SubscriptionGroupManager owns the consumer groups' broker-side settings
// and subscriptionGroup.json (docs/broker.md §1.6). Changes are
// persisted at once.
type SubscriptionGroupManager struct {
	path   string
	logger *slog.Logger
	now    func() time.Time

	persistMu sync.Mutex // serialises file writes

	mu sync.RWMutex
	// groups, forbidden and version are guarded by mu; group values are
	// replaced, never mutated.
	groups    map[string]*protocol.SubscriptionGroupConfig
	forbidden map[string]map[string]int32
	version   protocol.DataVersion
}

func newSubscriptionGroupManager(path string, logger *slog.Logger, now func() time.Time) *SubscriptionGroupManager {
	m := &SubscriptionGroupManager{
		path:      path,
		logger:    logger,
		now:       now,
		groups:    make(map[string]*protocol.SubscriptionGroupConfig),
		forbidden: make(map[string]map[string]int32),
	}
	return m
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
		m.version = w.DataVersion
		return nil
	})
	return err
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

func (m *SubscriptionGroupManager) persist() error {
	m.persistMu.Lock()
	defer m.persistMu.Unlock()
	data, err := json.MarshalIndent(m.Wrapper(), "", "\t")
	if err != nil {
		return fmt.Errorf("broker: encode subscription groups: %w", err)
	}
	return writeFileAtomic(m.path, data)
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
	return out, true, m.persist()
}

// Update creates or replaces a group.
func (m *SubscriptionGroupManager) Update(cfg protocol.SubscriptionGroupConfig) error {
	if cfg.Attributes == nil {
		cfg.Attributes = map[string]string{}
	}
	c := cloneGroupConfig(&cfg)
	m.mu.Lock()
	m.groups[cfg.GroupName] = &c
	m.version = nextDataVersion(m.version, m.now())
	m.mu.Unlock()
	m.logger.Info("subscription group updated", "group", cfg.GroupName)
	return m.persist()
}

// Delete removes a group; it reports whether it existed.
func (m *SubscriptionGroupManager) Delete(group string) (bool, error) {
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
	return true, m.persist()
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
