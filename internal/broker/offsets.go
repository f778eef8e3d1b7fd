package broker

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
)

// ConsumerOffsetManager keeps every group's "next offset to consume" per
// queue, keyed "topic@group" like RocketMQ's ConsumerOffsetManager, and
// persists it to consumerOffset.json periodically and at shutdown
// (docs/broker.md §1.5).
type ConsumerOffsetManager struct {
	path        string
	logger      *slog.Logger
	now         func() time.Time
	versionStep int64

	persistMu sync.Mutex // serialises file writes

	mu sync.RWMutex
	// offsets, version and commits are guarded by mu.
	offsets map[string]map[int32]int64
	version protocol.DataVersion
	commits int64 // commits since the last version bump
	dirty   bool  // changed since the last persist
	// resets holds server-side resets not yet delivered to the group's
	// next pull ("topic@group" -> queue -> target); guarded by mu.
	resets map[string]map[int32]int64
	// byTopic lists, per topic, the groups with an entry in offsets
	// (substrings of the keys): RemoveTopic, called for every expired lite
	// topic, costs the topic's entries instead of a scan of the whole
	// table. Guarded by mu; kept by setLocked, deleteLocked, reindexLocked.
	byTopic map[string][]string
}

// setLocked stores a key's queue offsets, indexing a new key.
// REQUIRES: mu held.
func (m *ConsumerOffsetManager) setLocked(key string, q map[int32]int64) {
	if _, ok := m.offsets[key]; !ok {
		if t, g, ok := splitOffsetKey(key); ok {
			m.byTopic[t] = append(m.byTopic[t], g)
		}
	}
	m.offsets[key] = q
}

// deleteLocked removes a key and its index entry. REQUIRES: mu held.
func (m *ConsumerOffsetManager) deleteLocked(key string) {
	if _, ok := m.offsets[key]; !ok {
		return
	}
	delete(m.offsets, key)
	t, g, ok := splitOffsetKey(key)
	if !ok {
		return
	}
	gs := m.byTopic[t]
	for i, x := range gs {
		if x == g {
			gs[i] = gs[len(gs)-1]
			gs = gs[:len(gs)-1]
			break
		}
	}
	if len(gs) == 0 {
		delete(m.byTopic, t)
	} else {
		m.byTopic[t] = gs
	}
}

// reindexLocked rebuilds byTopic from offsets. REQUIRES: mu held.
func (m *ConsumerOffsetManager) reindexLocked() {
	m.byTopic = make(map[string][]string, len(m.offsets))
	for k := range m.offsets {
		if t, g, ok := splitOffsetKey(k); ok {
			m.byTopic[t] = append(m.byTopic[t], g)
		}
	}
}

func newConsumerOffsetManager(path string, logger *slog.Logger, now func() time.Time, versionStep int64) *ConsumerOffsetManager {
	return &ConsumerOffsetManager{
		path:        path,
		logger:      logger,
		now:         now,
		versionStep: max(versionStep, 1),
		offsets:     make(map[string]map[int32]int64),
		resets:      make(map[string]map[int32]int64),
		byTopic:     make(map[string][]string),
	}
}

// Reset commits target and parks it until TakeReset (server-side reset,
// docs/protocol.md §7.6).
func (m *ConsumerOffsetManager) Reset(group, topic string, queueID int32, target int64) {
	m.Commit(group, topic, queueID, target)
	key := offsetKey(topic, group)
	m.mu.Lock()
	defer m.mu.Unlock()
	q, ok := m.resets[key]
	if !ok {
		q = make(map[int32]int64)
		m.resets[key] = q
	}
	q[queueID] = target
}

// ResetPending reports whether a reset of the queue awaits the next pull.
func (m *ConsumerOffsetManager) ResetPending(group, topic string, queueID int32) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, ok := m.resets[offsetKey(topic, group)][queueID]
	return ok
}

// TakeReset returns and forgets a pending reset.
func (m *ConsumerOffsetManager) TakeReset(group, topic string, queueID int32) (int64, bool) {
	key := offsetKey(topic, group)
	m.mu.Lock()
	defer m.mu.Unlock()
	q, ok := m.resets[key]
	if !ok {
		return 0, false
	}
	off, ok := q[queueID]
	if ok {
		delete(q, queueID)
		if len(q) == 0 {
			delete(m.resets, key)
		}
	}
	return off, ok
}

func offsetKey(topic, group string) string { return topic + "@" + group }

func (m *ConsumerOffsetManager) load() error {
	_, err := loadFileWithBackup(m.path, func(b []byte) error {
		var w protocol.ConsumerOffsetWrapper
		if err := protocol.UnmarshalFastJSON(b, &w); err != nil {
			return err
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		m.offsets = w.OffsetTable
		if m.offsets == nil {
			m.offsets = make(map[string]map[int32]int64)
		}
		m.reindexLocked()
		if w.DataVersion != nil {
			m.version = *w.DataVersion
		}
		return nil
	})
	return err
}

// Commit stores offset as the group's next offset for the queue. A commit
// below the stored value is accepted (RocketMQ logs it).
func (m *ConsumerOffsetManager) Commit(group, topic string, queueID int32, offset int64) {
	key := offsetKey(topic, group)
	m.mu.Lock()
	q, ok := m.offsets[key]
	if !ok {
		q = make(map[int32]int64)
		m.setLocked(key, q)
	}
	prev, had := q[queueID]
	q[queueID] = offset
	m.dirty = true
	m.commits++
	if m.commits >= m.versionStep {
		m.commits = 0
		m.version = nextDataVersion(m.version, m.now())
	}
	m.mu.Unlock()
	if had && offset < prev {
		m.logger.Debug("consumer offset moved back", "group", group, "topic", topic, "queueId", queueID,
			"offset", offset, "previous", prev)
	}
}

// Query returns the stored offset, or false.
func (m *ConsumerOffsetManager) Query(group, topic string, queueID int32) (int64, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	off, ok := m.offsets[offsetKey(topic, group)][queueID]
	return off, ok
}

// QueryAll returns a copy of a group's offsets on one topic.
func (m *ConsumerOffsetManager) QueryAll(group, topic string) map[int32]int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return maps.Clone(m.offsets[offsetKey(topic, group)])
}

// TopicsOfGroup lists the topics a group has offsets for.
func (m *ConsumerOffsetManager) TopicsOfGroup(group string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []string
	for k := range m.offsets {
		if t, g, ok := splitOffsetKey(k); ok && g == group {
			out = append(out, t)
		}
	}
	return out
}

// GroupsByTopic lists, per topic, the groups that have offsets on it: one
// pass over the table, for callers that visit every topic (GroupsOfTopic
// per topic would be quadratic in the table's size).
func (m *ConsumerOffsetManager) GroupsByTopic() map[string][]string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make(map[string][]string)
	for k := range m.offsets {
		if t, g, ok := splitOffsetKey(k); ok {
			out[t] = append(out[t], g)
		}
	}
	return out
}

// GroupsOfTopic lists the groups that have offsets on a topic.
func (m *ConsumerOffsetManager) GroupsOfTopic(topic string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return append([]string(nil), m.byTopic[topic]...)
}

func splitOffsetKey(k string) (topic, group string, ok bool) {
	i := strings.LastIndexByte(k, '@')
	if i < 0 {
		return "", "", false
	}
	return k[:i], k[i+1:], true
}

// RemoveTopic drops every group's offsets on topic.
func (m *ConsumerOffsetManager) RemoveTopic(topic string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	gs := m.byTopic[topic]
	if len(gs) == 0 {
		return
	}
	for _, g := range append([]string(nil), gs...) {
		m.deleteLocked(offsetKey(topic, g))
	}
	m.dirty = true
}

// RemoveGroup drops a group's offsets on every topic.
func (m *ConsumerOffsetManager) RemoveGroup(group string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.offsets {
		if _, g, ok := splitOffsetKey(k); ok && g == group {
			m.deleteLocked(k)
			m.dirty = true
		}
	}
}

// Wrapper returns a copy of the table: consumerOffset.json and
// GET_ALL_CONSUMER_OFFSET's body.
func (m *ConsumerOffsetManager) Wrapper() *protocol.ConsumerOffsetWrapper {
	m.mu.RLock()
	defer m.mu.RUnlock()
	w := &protocol.ConsumerOffsetWrapper{OffsetTable: make(map[string]map[int32]int64, len(m.offsets))}
	for k, v := range m.offsets {
		w.OffsetTable[k] = maps.Clone(v)
	}
	v := m.version
	w.DataVersion = &v
	return w
}

// persist writes consumerOffset.json when something changed (or force).
// The table is copied flat under the read lock (one slice, no map per
// key: with 10^5 lite topics cloning the nested maps held off every
// commit, and so every ack, for a good part of a second) and encoded
// outside it.
func (m *ConsumerOffsetManager) persist(force bool) error {
	m.persistMu.Lock()
	defer m.persistMu.Unlock()
	m.mu.Lock()
	dirty := m.dirty
	m.dirty = false
	m.mu.Unlock()
	if !dirty && !force {
		return nil
	}
	entries, version := m.flat()
	if err := writeFileAtomic(m.path, appendOffsetsJSON(make([]byte, 0, 128+len(entries)*64), entries, version)); err != nil {
		m.mu.Lock()
		m.dirty = true
		m.mu.Unlock()
		return err
	}
	return nil
}

// offsetEntry is one queue's offset in a flat copy of the table; the
// entries of one key are adjacent.
type offsetEntry struct {
	key     string
	queueID int32
	offset  int64
}

// flat copies the table (keys shared: strings are immutable) and its
// version under the read lock.
func (m *ConsumerOffsetManager) flat() ([]offsetEntry, protocol.DataVersion) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]offsetEntry, 0, len(m.offsets)+len(m.offsets)/4)
	for k, q := range m.offsets {
		for id, off := range q {
			out = append(out, offsetEntry{k, id, off})
		}
	}
	return out, m.version
}

// appendOffsetsJSON appends consumerOffset.json's document: the
// ConsumerOffsetWrapper's fields, one key per line, as the JSON encoder
// would write them (keys unordered: RocketMQ's file is a HashMap's order
// too). A key with no queue (never stored) is omitted.
func appendOffsetsJSON(dst []byte, entries []offsetEntry, v protocol.DataVersion) []byte {
	dst = append(dst, "{\n\t\"offsetTable\": {"...)
	for i, e := range entries {
		if i == 0 || entries[i-1].key != e.key {
			if i > 0 {
				dst = append(dst, "\n\t\t},"...)
			}
			dst = append(dst, "\n\t\t"...)
			dst = appendJSONString(dst, e.key)
			dst = append(dst, ": {"...)
		} else {
			dst = append(dst, ',')
		}
		dst = append(dst, "\n\t\t\t\""...)
		dst = strconv.AppendInt(dst, int64(e.queueID), 10)
		dst = append(dst, "\": "...)
		dst = strconv.AppendInt(dst, e.offset, 10)
	}
	if len(entries) > 0 {
		dst = append(dst, "\n\t\t}\n\t"...)
	}
	dst = append(dst, "},\n\t\"dataVersion\": {\n\t\t\"stateVersion\": "...)
	dst = strconv.AppendInt(dst, v.StateVersion, 10)
	dst = append(dst, ",\n\t\t\"timestamp\": "...)
	dst = strconv.AppendInt(dst, v.Timestamp, 10)
	dst = append(dst, ",\n\t\t\"counter\": "...)
	dst = strconv.AppendInt(dst, v.Counter, 10)
	return append(dst, "\n\t}\n}"...)
}

// appendJSONString appends s as a JSON string: as is between quotes when
// it holds only printable ASCII other than the quote and the backslash
// (every valid topic and group name), else as encoding/json writes it.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s)
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// DelayOffsetTable is delayOffset.json: per delay level, the next offset of
// the schedule queue to deliver (docs/broker.md §1.8).
type DelayOffsetTable struct {
	path string

	persistMu sync.Mutex

	mu      sync.Mutex
	offsets map[int32]int64 // guarded by mu
	version protocol.DataVersion
}

func newDelayOffsetTable(path string) *DelayOffsetTable {
	return &DelayOffsetTable{path: path, offsets: make(map[int32]int64)}
}

func (d *DelayOffsetTable) load() error {
	_, err := loadFileWithBackup(d.path, func(b []byte) error {
		var w protocol.DelayOffsetWrapper
		if err := protocol.UnmarshalFastJSON(b, &w); err != nil {
			return err
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		d.offsets = w.OffsetTable
		if d.offsets == nil {
			d.offsets = make(map[int32]int64)
		}
		if w.DataVersion != nil {
			d.version = *w.DataVersion
		}
		return nil
	})
	return err
}

// Get returns a level's offset (0 if none).
func (d *DelayOffsetTable) Get(level int32) int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.offsets[level]
}

// Set stores a level's offset.
func (d *DelayOffsetTable) Set(level int32, offset int64) {
	d.mu.Lock()
	d.offsets[level] = offset
	d.mu.Unlock()
}

// Wrapper returns a copy: delayOffset.json and GET_ALL_DELAY_OFFSET's body.
func (d *DelayOffsetTable) Wrapper() *protocol.DelayOffsetWrapper {
	d.mu.Lock()
	defer d.mu.Unlock()
	v := d.version
	return &protocol.DelayOffsetWrapper{OffsetTable: maps.Clone(d.offsets), DataVersion: &v}
}

func (d *DelayOffsetTable) persist() error {
	d.persistMu.Lock()
	defer d.persistMu.Unlock()
	data, err := json.MarshalIndent(d.Wrapper(), "", "\t")
	if err != nil {
		return fmt.Errorf("broker: encode delay offsets: %w", err)
	}
	return writeFileAtomic(d.path, data)
}
