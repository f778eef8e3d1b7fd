package namesrv

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sync"

	"github.com/apogeemq/apogee/internal/protocol"
)

// kvConfigFile is the on-disk form of the KV config, RocketMQ's
// KVConfigSerializeWrapper: {"configTable":{namespace:{key:value}}}.
type kvConfigFile struct {
	ConfigTable map[string]map[string]string `json:"configTable"`
}

// KVConfigManager holds the name server's namespaced key/value config
// (docs/broker.md §3.5), persisted as JSON at a path.
type KVConfigManager struct {
	path string // "" = memory only

	// mu guards table. It is never held during file I/O.
	mu    sync.RWMutex
	table map[string]map[string]string // namespace -> key -> value

	// persistMu serialises writers of the file. Each writer snapshots the
	// table after taking it, so the last writer to finish writes a state
	// at least as new as every change that preceded its snapshot.
	persistMu sync.Mutex
}

// NewKVConfigManager returns an empty manager persisting to path.
func NewKVConfigManager(path string) *KVConfigManager {
	return &KVConfigManager{path: path, table: make(map[string]map[string]string)}
}

// Load reads the file; a missing file is an empty config.
func (k *KVConfigManager) Load() error {
	if k.path == "" {
		return nil
	}
	data, err := os.ReadFile(k.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("namesrv: read kv config: %w", err)
	}
	if len(data) == 0 {
		return nil
	}
	var f kvConfigFile
	if err := protocol.UnmarshalFastJSON(data, &f); err != nil {
		return fmt.Errorf("namesrv: kv config %s: %w", k.path, err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for ns, kv := range f.ConfigTable {
		if kv == nil {
			continue
		}
		if k.table[ns] == nil {
			k.table[ns] = make(map[string]string, len(kv))
		}
		maps.Copy(k.table[ns], kv)
	}
	return nil
}

// Put sets a value and persists the table.
func (k *KVConfigManager) Put(namespace, key, value string) error {
	k.mu.Lock()
	ns := k.table[namespace]
	if ns == nil {
		ns = make(map[string]string)
		k.table[namespace] = ns
	}
	ns[key] = value
	k.mu.Unlock()
	return k.persist()
}

// Delete removes a key (keeping its namespace, as RocketMQ does) and
// persists the table.
func (k *KVConfigManager) Delete(namespace, key string) error {
	k.mu.Lock()
	ns, ok := k.table[namespace]
	if ok {
		_, ok = ns[key]
		delete(ns, key)
	}
	k.mu.Unlock()
	if !ok {
		return nil
	}
	return k.persist()
}

// Get returns a value.
func (k *KVConfigManager) Get(namespace, key string) (string, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	v, ok := k.table[namespace][key]
	return v, ok
}

// List returns a copy of a namespace, or nil if it is absent or empty.
func (k *KVConfigManager) List(namespace string) map[string]string {
	k.mu.RLock()
	defer k.mu.RUnlock()
	ns := k.table[namespace]
	if len(ns) == 0 {
		return nil
	}
	return maps.Clone(ns)
}

// persist writes the table atomically: a temp file in the same directory,
// fsync, rename over the old file, fsync of the directory.
func (k *KVConfigManager) persist() error {
	if k.path == "" {
		return nil
	}
	k.persistMu.Lock()
	defer k.persistMu.Unlock()

	k.mu.RLock()
	snap := kvConfigFile{ConfigTable: make(map[string]map[string]string, len(k.table))}
	for ns, kv := range k.table {
		snap.ConfigTable[ns] = maps.Clone(kv)
	}
	k.mu.RUnlock()
	data, err := protocol.MarshalJSON(&snap)
	if err != nil {
		return fmt.Errorf("namesrv: encode kv config: %w", err)
	}
	return writeFileAtomic(k.path, data)
}

func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("namesrv: create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("namesrv: write %s: %w", path, err)
	}
	tmpName := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmpName)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("namesrv: write %s: %w", tmpName, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("namesrv: fsync %s: %w", tmpName, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("namesrv: close %s: %w", tmpName, err)
	}
	if err := os.Rename(tmpName, path); err != nil {
		return fmt.Errorf("namesrv: rename %s: %w", tmpName, err)
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		// Make the rename durable; a failure here leaves a valid file.
		_ = d.Sync()
		d.Close()
	}
	return nil
}
