package broker

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
)

// topicsFile is topics.json: the RocketMQ layout of docs/storage.md §8.
type topicsFile struct {
	DataVersion      protocol.DataVersion             `json:"dataVersion"`
	TopicConfigTable map[string]*protocol.TopicConfig `json:"topicConfigTable"`
}

// TopicConfigManager owns the broker's topic table and topics.json. Every
// change is durable before it returns and bumps the data version, so the
// next name-server registration ships it (docs/broker.md §1.1,
// docs/storage.md §8); a change costs the same with 10 or 100,000 topics
// (config_log.go).
//
// Configs handed out are copies; callers may keep and modify them.
type TopicConfigManager struct {
	path   string
	logger *slog.Logger
	now    func() time.Time
	// onChange is called, outside every lock, with the topics just created or
	// updated (the broker re-registers them with the name servers).
	onChange func(changed []protocol.TopicConfig)
	// virtual answers Get for topics the table does not hold (lite topics'
	// queues, lite.go); set once in New before any use, nil-safe.
	virtual func(topic string) (protocol.TopicConfig, bool)

	// cf persists the table: topics.json plus its change log. Its writeMu
	// is held across every change (table update, then commit).
	cf *configFile

	mu sync.RWMutex
	// topics and version are guarded by mu; the *TopicConfig values are
	// never modified after insertion (replace, do not mutate).
	topics  map[string]*protocol.TopicConfig
	version protocol.DataVersion

	// sorted caches the sorted topic names of one data version for paged
	// GET_ALL_TOPIC_CONFIG (topic_config_pages.go).
	sorted sortedNames
}

func newTopicConfigManager(path string, logger *slog.Logger, now func() time.Time) *TopicConfigManager {
	m := &TopicConfigManager{
		path:   path,
		logger: logger,
		now:    now,
		topics: make(map[string]*protocol.TopicConfig),
	}
	m.cf = &configFile{path: path, logger: logger, encode: m.encode, value: m.jsonValue, size: m.Len}
	return m
}

// jsonValue is one topic's config as topics.json holds it.
func (m *TopicConfigManager) jsonValue(topic string) (json.RawMessage, bool) {
	m.mu.RLock()
	tc, ok := m.topics[topic]
	m.mu.RUnlock()
	if !ok {
		return nil, false
	}
	b, err := json.Marshal(tc)
	return b, err == nil
}

// load reads topics.json (or its .bak).
func (m *TopicConfigManager) load() error {
	_, err := loadFileWithBackup(m.path, func(b []byte) error {
		var f topicsFile
		if err := protocol.UnmarshalFastJSON(b, &f); err != nil {
			return err
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		m.topics = make(map[string]*protocol.TopicConfig, len(f.TopicConfigTable))
		for name, tc := range f.TopicConfigTable {
			if tc == nil {
				continue
			}
			if tc.TopicName == "" {
				tc.TopicName = name
			}
			normalizeTopicConfig(tc)
			m.topics[name] = tc
		}
		m.version = f.DataVersion
		return nil
	})
	if err != nil {
		return err
	}
	return m.replayLog()
}

// replayLog applies topics.json.log (and a .old left by an interrupted
// compaction, which is then finished).
func (m *TopicConfigManager) replayLog() error {
	n, err := m.cf.replayTable(&m.mu, &m.version, func(e configLogEntry) error {
		if e.Op == "delete" {
			delete(m.topics, e.Key)
			return nil
		}
		var tc protocol.TopicConfig
		if err := protocol.UnmarshalFastJSON(e.Value, &tc); err != nil {
			return err
		}
		if tc.TopicName == "" {
			tc.TopicName = e.Key
		}
		normalizeTopicConfig(&tc)
		m.topics[e.Key] = &tc
		return nil
	})
	if n > 0 {
		m.logger.Info("topic changes replayed from the change log", "changes", n, "topics", m.Len())
	}
	return err
}

func normalizeTopicConfig(tc *protocol.TopicConfig) {
	if tc.TopicFilterType == "" {
		tc.TopicFilterType = protocol.TopicFilterSingleTag
	}
	if tc.Attributes == nil {
		tc.Attributes = map[string]string{}
	}
}

// persist writes the whole table to topics.json and empties the change
// log (after the table was replaced, and by compaction).
func (m *TopicConfigManager) persist() error { return m.cf.compact() }

// commit makes the current state of topics durable.
// REQUIRES: m.cf.writeMu held.
func (m *TopicConfigManager) commit(topics ...string) error {
	return m.cf.commit(m.DataVersion(), topics...)
}

func (m *TopicConfigManager) encode() ([]byte, error) {
	m.mu.RLock()
	f := topicsFile{DataVersion: m.version, TopicConfigTable: maps.Clone(m.topics)}
	m.mu.RUnlock()
	data, err := json.MarshalIndent(&f, "", "\t")
	if err != nil {
		return nil, fmt.Errorf("broker: encode topics: %w", err)
	}
	return data, nil
}

// Get returns a copy of the topic's config.
func (m *TopicConfigManager) Get(topic string) (protocol.TopicConfig, bool) {
	m.mu.RLock()
	tc, ok := m.topics[topic]
	m.mu.RUnlock()
	if !ok {
		if m.virtual != nil {
			return m.virtual(topic)
		}
		return protocol.TopicConfig{}, false
	}
	return cloneTopicConfig(tc), true
}

// getShared is Get without copying the attributes: the result shares its
// Attributes map with the table, so the caller must only read it. Safe
// because table entries are never changed in place (every update stores a
// new config). The send path uses it: two allocations per send less.
func (m *TopicConfigManager) getShared(topic string) (protocol.TopicConfig, bool) {
	m.mu.RLock()
	tc, ok := m.topics[topic]
	m.mu.RUnlock()
	if !ok {
		if m.virtual != nil {
			return m.virtual(topic)
		}
		return protocol.TopicConfig{}, false
	}
	return *tc, true
}

// Contains reports whether the topic exists.
func (m *TopicConfigManager) Contains(topic string) bool {
	m.mu.RLock()
	_, ok := m.topics[topic]
	m.mu.RUnlock()
	return ok
}

// Len reports the number of topics.
func (m *TopicConfigManager) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.topics)
}

// Snapshot returns a copy of the table and its data version, the body of
// GET_ALL_TOPIC_CONFIG and REGISTER_BROKER.
func (m *TopicConfigManager) Snapshot() (map[string]*protocol.TopicConfig, protocol.DataVersion) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[string]*protocol.TopicConfig, len(m.topics))
	for k, v := range m.topics {
		c := cloneTopicConfig(v)
		out[k] = &c
	}
	return out, m.version
}

// DataVersion returns the current data version.
func (m *TopicConfigManager) DataVersion() protocol.DataVersion {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.version
}

// Names returns every topic name.
func (m *TopicConfigManager) Names() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]string, 0, len(m.topics))
	for k := range m.topics {
		out = append(out, k)
	}
	return out
}

// Update creates or replaces a topic, persists and notifies. Unchanged
// configs are a no-op (UPDATE_AND_CREATE_TOPIC is idempotent).
func (m *TopicConfigManager) Update(tc protocol.TopicConfig) error {
	return m.UpdateMany([]protocol.TopicConfig{tc})
}

// UpdateMany creates or replaces several topics with one durable write and
// one notification (UPDATE_AND_CREATE_TOPIC_LIST). Unchanged configs are
// skipped.
func (m *TopicConfigManager) UpdateMany(tcs []protocol.TopicConfig) error {
	m.cf.writeMu.Lock()
	defer m.cf.writeMu.Unlock()
	var changed []protocol.TopicConfig
	var names []string
	m.mu.Lock()
	for _, tc := range tcs {
		normalizeTopicConfig(&tc)
		c := cloneTopicConfig(&tc)
		if old, ok := m.topics[tc.TopicName]; ok && topicConfigEqual(old, &c) {
			continue
		}
		m.topics[tc.TopicName] = &c
		changed = append(changed, cloneTopicConfig(&c))
		names = append(names, tc.TopicName)
	}
	if len(changed) > 0 {
		m.nextVersionLocked()
	}
	m.mu.Unlock()
	if len(changed) == 0 {
		return nil
	}
	if len(changed) == 1 {
		tc := changed[0]
		m.logger.Info("topic config updated", "topic", tc.TopicName, "readQueueNums", tc.ReadQueueNums,
			"writeQueueNums", tc.WriteQueueNums, "perm", tc.Perm)
	} else {
		m.logger.Info("topic configs updated", "topics", len(changed), "first", changed[0].TopicName)
	}
	err := m.commit(names...)
	m.notify(changed...)
	return err
}

// Delete removes a topic; it reports whether the topic existed.
func (m *TopicConfigManager) Delete(topic string) (bool, error) {
	m.cf.writeMu.Lock()
	defer m.cf.writeMu.Unlock()
	m.mu.Lock()
	_, ok := m.topics[topic]
	if ok {
		delete(m.topics, topic)
		m.nextVersionLocked()
	}
	m.mu.Unlock()
	if !ok {
		return false, nil
	}
	m.logger.Info("topic deleted", "topic", topic)
	return true, m.commit(topic)
}

// putIfAbsent adds tc unless the topic exists; it returns the config in the
// table and whether it was created. It does not persist or notify.
func (m *TopicConfigManager) putIfAbsentLocked(tc *protocol.TopicConfig) (*protocol.TopicConfig, bool) {
	if old, ok := m.topics[tc.TopicName]; ok {
		return old, false
	}
	normalizeTopicConfig(tc)
	m.topics[tc.TopicName] = tc
	m.nextVersionLocked()
	return tc, true
}

// CreateInSendMessage implements topic auto-creation from a template topic
// (normally TBW102) as docs/broker.md §1.2 describes. It returns the
// topic's config and whether it exists now; a missing or non-inheritable
// template leaves the topic absent.
func (m *TopicConfigManager) CreateInSendMessage(topic, defaultTopic string, clientQueueNums, topicSysFlag int32, autoCreateEnable bool) (protocol.TopicConfig, bool, error) {
	if tc, ok := m.Get(topic); ok {
		return tc, true, nil
	}
	m.cf.writeMu.Lock()
	defer m.cf.writeMu.Unlock()
	m.mu.Lock()
	if tc, ok := m.topics[topic]; ok {
		m.mu.Unlock()
		return cloneTopicConfig(tc), true, nil
	}
	tmpl, ok := m.topics[defaultTopic]
	if !ok || (defaultTopic == names.TopicAutoCreate && !autoCreateEnable) || tmpl.Perm&protocol.PermInherit == 0 {
		m.mu.Unlock()
		return protocol.TopicConfig{}, false, nil
	}
	queues := min(clientQueueNums, tmpl.WriteQueueNums)
	if queues <= 0 {
		queues = tmpl.WriteQueueNums
	}
	tc := &protocol.TopicConfig{
		TopicName:       topic,
		ReadQueueNums:   queues,
		WriteQueueNums:  queues,
		Perm:            tmpl.Perm &^ protocol.PermInherit,
		TopicFilterType: tmpl.TopicFilterType,
		TopicSysFlag:    topicSysFlag,
	}
	tc, created := m.putIfAbsentLocked(tc)
	out := cloneTopicConfig(tc)
	m.mu.Unlock()
	if !created {
		return out, true, nil
	}
	m.logger.Info("topic auto-created", "topic", topic, "template", defaultTopic, "queues", queues)
	err := m.commit(topic)
	m.notify(out)
	return out, true, err
}

// CreateIfAbsent creates a topic with the given shape unless it exists
// (retry, DLQ and system topics). It persists and notifies on creation.
func (m *TopicConfigManager) CreateIfAbsent(topic string, queueNums, perm, topicSysFlag int32) (protocol.TopicConfig, error) {
	if tc, ok := m.Get(topic); ok {
		return tc, nil
	}
	m.cf.writeMu.Lock()
	defer m.cf.writeMu.Unlock()
	m.mu.Lock()
	tc, created := m.putIfAbsentLocked(&protocol.TopicConfig{
		TopicName: topic, ReadQueueNums: queueNums, WriteQueueNums: queueNums,
		Perm: perm, TopicFilterType: protocol.TopicFilterSingleTag, TopicSysFlag: topicSysFlag,
	})
	out := cloneTopicConfig(tc)
	m.mu.Unlock()
	if !created {
		return out, nil
	}
	m.logger.Info("topic created", "topic", topic, "queues", queueNums, "perm", perm)
	err := m.commit(topic)
	m.notify(out)
	return out, err
}

// ensureSystemTopics creates the system topics of docs/broker.md §1.3
// at start-up (no notification: the first registration ships them).
func (m *TopicConfigManager) ensureSystemTopics(cfg *Config) error {
	type sys struct {
		name   string
		queues int32
		perm   int32
	}
	topics := []sys{
		{names.TopicSelfTest, 1, protocol.PermRead | protocol.PermWrite},
		{names.TopicBenchmark, 1024, protocol.PermRead | protocol.PermWrite},
		{names.TopicOffsetMoved, 1, protocol.PermRead | protocol.PermWrite},
		{names.TopicSchedule, 18, protocol.PermRead | protocol.PermWrite},
		{names.TopicTransHalf, 1, protocol.PermRead | protocol.PermWrite},
		{names.TopicTransOpHalf, 1, protocol.PermRead | protocol.PermWrite},
		{cfg.BrokerClusterName + names.ReplyTopicSuffix, 1, protocol.PermRead | protocol.PermWrite},
	}
	if levels, err := parseStoreDelayLevels(cfg); err == nil {
		topics[3].queues = int32(len(levels))
	}
	if cfg.AutoCreateTopicEnable {
		topics = append(topics, sys{names.TopicAutoCreate, int32(cfg.DefaultTopicQueueNums), protocol.PermInherit | protocol.PermRead | protocol.PermWrite})
	}
	clusterPerm, brokerPerm := int32(protocol.PermInherit), int32(protocol.PermInherit)
	if cfg.ClusterTopicEnable {
		clusterPerm |= protocol.PermRead | protocol.PermWrite
	}
	if cfg.BrokerTopicEnable {
		brokerPerm |= protocol.PermRead | protocol.PermWrite
	}
	topics = append(topics, sys{cfg.BrokerClusterName, 16, clusterPerm}, sys{cfg.BrokerName, 1, brokerPerm})
	if cfg.TraceTopicEnable {
		topics = append(topics, sys{cfg.MsgTraceTopicName, 1, protocol.PermRead | protocol.PermWrite})
	}
	m.cf.writeMu.Lock()
	defer m.cf.writeMu.Unlock()
	m.mu.Lock()
	created := 0
	for _, s := range topics {
		if _, ok := m.putIfAbsentLocked(&protocol.TopicConfig{
			TopicName: s.name, ReadQueueNums: s.queues, WriteQueueNums: s.queues, Perm: s.perm,
			TopicFilterType: protocol.TopicFilterSingleTag,
		}); ok {
			created++
		}
	}
	if !cfg.AutoCreateTopicEnable {
		// A template left from an earlier run must not keep inheriting.
		if tc, ok := m.topics[names.TopicAutoCreate]; ok && tc.Perm&protocol.PermInherit != 0 {
			c := cloneTopicConfig(tc)
			c.Perm = protocol.PermRead | protocol.PermWrite
			m.topics[names.TopicAutoCreate] = &c
			m.nextVersionLocked()
			created++
		}
	}
	m.mu.Unlock()
	if created == 0 {
		return nil
	}
	return m.persist()
}

// nextVersionLocked bumps the data version. REQUIRES: m.mu held for writing.
func (m *TopicConfigManager) nextVersionLocked() {
	m.version = nextDataVersion(m.version, m.now())
}

func (m *TopicConfigManager) notify(tcs ...protocol.TopicConfig) {
	if m.onChange != nil && len(tcs) > 0 {
		m.onChange(tcs)
	}
}

func nextDataVersion(v protocol.DataVersion, now time.Time) protocol.DataVersion {
	v.Counter++
	v.Timestamp = now.UnixMilli()
	return v
}

func cloneTopicConfig(tc *protocol.TopicConfig) protocol.TopicConfig {
	c := *tc
	c.Attributes = maps.Clone(tc.Attributes)
	if c.Attributes == nil {
		c.Attributes = map[string]string{}
	}
	return c
}

func topicConfigEqual(a, b *protocol.TopicConfig) bool {
	return a.TopicName == b.TopicName && a.ReadQueueNums == b.ReadQueueNums &&
		a.WriteQueueNums == b.WriteQueueNums && a.Perm == b.Perm &&
		a.TopicFilterType == b.TopicFilterType && a.TopicSysFlag == b.TopicSysFlag &&
		a.Order == b.Order && maps.Equal(a.Attributes, b.Attributes)
}
