package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// offsetStore keeps a consumer group's consumed offsets ("next offset to
// consume") per message queue (docs/broker.md §4.7). Clustering
// groups keep them on the broker (remoteOffsetStore), broadcasting groups in
// a local file (localOffsetStore). All methods are safe for concurrent use;
// none holds a lock during I/O.
type offsetStore interface {
	// load reads what is persisted locally (local store); no-op for remote.
	load() error
	// update records offset for mq in memory. With increaseOnly, a smaller
	// offset than the one held is ignored (late completions of concurrent
	// consumption must not move the offset back).
	update(mq MessageQueue, offset int64, increaseOnly bool)
	// read returns the offset of mq: from memory when fromStore is false and
	// memory has it; otherwise from the persistent store, which also
	// refreshes memory. -1 means no offset exists.
	read(ctx context.Context, mq MessageQueue, fromStore bool) (int64, error)
	// persist writes the in-memory offsets of mqs to the persistent store.
	persist(ctx context.Context, mqs []MessageQueue) error
	// remove forgets mq in memory (after a rebalance took it away).
	remove(mq MessageQueue)
	// snapshot copies the in-memory table.
	snapshot() map[MessageQueue]int64
}

// offsetBackend is what the remote offset store needs from the broker
// (QUERY_CONSUMER_OFFSET 14 and UPDATE_CONSUMER_OFFSET 15).
type offsetBackend interface {
	// queryConsumerOffset returns -1 (no error) when the broker has none.
	queryConsumerOffset(ctx context.Context, group string, mq MessageQueue) (int64, error)
	updateConsumerOffset(ctx context.Context, group string, mq MessageQueue, offset int64) error
}

// offsetTable is the in-memory part shared by both stores.
type offsetTable struct {
	mu      sync.Mutex
	offsets map[MessageQueue]int64 // guarded by mu
}

func (t *offsetTable) update(mq MessageQueue, offset int64, increaseOnly bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.offsets == nil {
		t.offsets = make(map[MessageQueue]int64)
	}
	if cur, ok := t.offsets[mq]; ok && increaseOnly && offset < cur {
		return
	}
	t.offsets[mq] = offset
}

func (t *offsetTable) get(mq MessageQueue) (int64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	off, ok := t.offsets[mq]
	return off, ok
}

func (t *offsetTable) remove(mq MessageQueue) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.offsets, mq)
}

func (t *offsetTable) snapshot() map[MessageQueue]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[MessageQueue]int64, len(t.offsets))
	for k, v := range t.offsets {
		out[k] = v
	}
	return out
}

// remoteOffsetStore is RocketMQ's RemoteBrokerOffsetStore: memory first,
// the broker of each queue as the persistent store.
type remoteOffsetStore struct {
	offsetTable
	group   string
	backend offsetBackend
}

func newRemoteOffsetStore(group string, backend offsetBackend) *remoteOffsetStore {
	return &remoteOffsetStore{group: group, backend: backend}
}

func (s *remoteOffsetStore) load() error { return nil }

func (s *remoteOffsetStore) read(ctx context.Context, mq MessageQueue, fromStore bool) (int64, error) {
	if !fromStore {
		if off, ok := s.get(mq); ok {
			return off, nil
		}
	}
	off, err := s.backend.queryConsumerOffset(ctx, s.group, mq)
	if err != nil {
		return -1, err
	}
	if off >= 0 {
		s.update(mq, off, false)
	}
	return off, nil
}

func (s *remoteOffsetStore) persist(ctx context.Context, mqs []MessageQueue) error {
	var errs []error
	for _, mq := range mqs {
		off, ok := s.get(mq)
		if !ok || off < 0 {
			continue
		}
		if err := s.backend.updateConsumerOffset(ctx, s.group, mq, off); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// localOffsetStore is RocketMQ's LocalFileOffsetStore for broadcasting
// consumers: offsets live in <dir>/<clientID>/<group>/offsets.json with a
// .bak copy of the previous version; the broker never sees them.
type localOffsetStore struct {
	offsetTable
	path string
	// fileMu serialises writers of the file; never held with offsetTable.mu.
	fileMu sync.Mutex
}

func newLocalOffsetStore(dir, clientID, group string) *localOffsetStore {
	return &localOffsetStore{path: filepath.Join(dir, sanitizePathPart(clientID), sanitizePathPart(group), "offsets.json")}
}

// sanitizePathPart keeps a client id such as "10.0.0.5@4711" usable as a
// directory name on every platform.
func sanitizePathPart(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch c {
		case '/', '\\', ':', '*', '?', '"', '<', '>', '|':
			b[i] = '_'
		}
	}
	return string(b)
}

// offsetFile is the file format of the local store. It is our own, plain
// JSON (RocketMQ's fastjson form with object keys is not portable).
type offsetFile struct {
	OffsetTable []offsetEntry `json:"offsetTable"`
}

type offsetEntry struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int    `json:"queueId"`
	Offset     int64  `json:"offset"`
}

func (s *localOffsetStore) load() error {
	data, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		data, err = os.ReadFile(s.path + ".bak")
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("client: load offsets %s: %w", s.path, err)
	}
	var f offsetFile
	if err := json.Unmarshal(data, &f); err != nil {
		// A torn write leaves the .bak copy as the last good version.
		bak, berr := os.ReadFile(s.path + ".bak")
		if berr != nil || json.Unmarshal(bak, &f) != nil {
			return fmt.Errorf("client: parse offsets %s: %w", s.path, err)
		}
	}
	for _, e := range f.OffsetTable {
		s.update(MessageQueue{Topic: e.Topic, BrokerName: e.BrokerName, QueueID: e.QueueID}, e.Offset, false)
	}
	return nil
}

func (s *localOffsetStore) read(_ context.Context, mq MessageQueue, fromStore bool) (int64, error) {
	if fromStore {
		// The file is written from memory; memory is at least as new.
		if err := s.loadIfEmpty(); err != nil {
			return -1, err
		}
	}
	if off, ok := s.get(mq); ok {
		return off, nil
	}
	return -1, nil
}

func (s *localOffsetStore) loadIfEmpty() error {
	s.mu.Lock()
	n := len(s.offsets)
	s.mu.Unlock()
	if n > 0 {
		return nil
	}
	return s.load()
}

// persist writes the whole table (mqs only selects nothing: a broadcasting
// consumer owns every queue of its topics, and keeping offsets of queues it
// no longer reads is harmless). The previous file becomes the .bak copy and
// the new one is written to a temporary file and renamed into place.
func (s *localOffsetStore) persist(_ context.Context, _ []MessageQueue) error {
	snap := s.snapshot()
	f := offsetFile{OffsetTable: make([]offsetEntry, 0, len(snap))}
	for mq, off := range snap {
		f.OffsetTable = append(f.OffsetTable, offsetEntry{Topic: mq.Topic, BrokerName: mq.BrokerName, QueueID: mq.QueueID, Offset: off})
	}
	slices.SortFunc(f.OffsetTable, func(a, b offsetEntry) int {
		return compareMessageQueue(
			MessageQueue{Topic: a.Topic, BrokerName: a.BrokerName, QueueID: a.QueueID},
			MessageQueue{Topic: b.Topic, BrokerName: b.BrokerName, QueueID: b.QueueID})
	})
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("client: encode offsets: %w", err)
	}
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
		return fmt.Errorf("client: persist offsets: %w", err)
	}
	if prev, err := os.ReadFile(s.path); err == nil {
		_ = os.WriteFile(s.path+".bak", prev, 0o644) // best effort; the main file follows
	}
	tmp := s.path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("client: persist offsets: %w", err)
	}
	if err := os.Rename(tmp, s.path); err != nil {
		return fmt.Errorf("client: persist offsets: %w", err)
	}
	return nil
}
