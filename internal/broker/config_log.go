package broker

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
)

// configFile makes one change to a RocketMQ JSON config file (topics.json,
// subscriptionGroup.json) cost the same whatever the size of its table.
//
// The JSON file keeps RocketMQ's layout and is a snapshot. While the table
// is small (at most syncSnapshotMax entries) every change rewrites it at
// once, as RocketMQ does. Past that, a change is appended to <file>.log as
// one JSON line {"op","key","value","dataVersion"} and fdatasync'd before it
// is acknowledged, and the snapshot is brought up to date in the
// background (compactDue): once the log holds as many lines as the table
// (at least compactMinLines), or a second after the last change, and at a
// clean shutdown. Load reads the snapshot and replays the log.
//
// Compaction: under logMu the log is renamed to <file>.log.old and a new
// one started; then the table is encoded and written atomically; then the
// .old file is removed. Every change recorded in .old had updated the table
// before its line was appended, and so before the rename, so the snapshot
// contains it. A crash between the steps leaves .old, which load replays
// too: lines set absolute values in order, so replaying lines the snapshot
// already reflects changes nothing.
type configFile struct {
	path   string
	logger *slog.Logger
	// encode renders the whole table as the JSON file; value returns the
	// current JSON value of one key (ok=false once deleted); size is the
	// number of entries. All three take the owner's table lock themselves.
	encode func() ([]byte, error)
	value  func(key string) (json.RawMessage, bool)
	size   func() int

	// writeMu serialises changes (table update + commit), so log lines
	// are in the order the table changed.
	writeMu sync.Mutex
	// snapMu serialises snapshot writes (commit of a small table,
	// compaction).
	snapMu sync.Mutex

	logMu      sync.Mutex
	log        *os.File  // open change log; nil until the first append; guarded by logMu
	lines      int       // lines in the log since the last rotation; guarded by logMu
	lastAppend time.Time // guarded by logMu
}

const (
	// syncSnapshotMax is the table size up to which a change rewrites the
	// snapshot synchronously, so a small deployment's files are current
	// after every change, as RocketMQ's are.
	syncSnapshotMax = 128
	// compactMinLines is the least log length that triggers compaction
	// while changes keep coming.
	compactMinLines = 1024
	// compactIdle compacts a non-empty log that long after its last line.
	compactIdle = time.Second
)

// configLogEntry is one line of a change log.
type configLogEntry struct {
	Op          string               `json:"op"` // "put" or "delete"
	Key         string               `json:"key"`
	Value       json.RawMessage      `json:"value,omitempty"`
	DataVersion protocol.DataVersion `json:"dataVersion"`
}

func (c *configFile) logPath() string { return c.path + ".log" }
func (c *configFile) oldPath() string { return c.path + ".log.old" }

// commit makes the current values of keys durable (deleted keys as
// deletions) with the table's data version. REQUIRES: c.writeMu held, and
// the table already changed.
func (c *configFile) commit(version protocol.DataVersion, keys ...string) error {
	c.logMu.Lock()
	empty := c.lines == 0
	c.logMu.Unlock()
	if empty && c.size() <= syncSnapshotMax {
		return c.writeSnapshot()
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, k := range keys {
		e := configLogEntry{Op: "delete", Key: k, DataVersion: version}
		if v, ok := c.value(k); ok {
			e.Op, e.Value = "put", v
		}
		if err := enc.Encode(&e); err != nil { // one line each
			return fmt.Errorf("broker: encode %s change: %w", filepath.Base(c.path), err)
		}
	}
	return c.append(buf.Bytes(), len(keys))
}

func (c *configFile) append(b []byte, n int) error {
	c.logMu.Lock()
	defer c.logMu.Unlock()
	if c.log == nil {
		f, err := os.OpenFile(c.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("broker: persist %s: %w", c.logPath(), err)
		}
		c.log = f
		if err := syncDir(filepath.Dir(c.path)); err != nil {
			return err
		}
	}
	if _, err := c.log.Write(b); err != nil {
		return fmt.Errorf("broker: persist %s: %w", c.logPath(), err)
	}
	if err := c.log.Sync(); err != nil {
		return fmt.Errorf("broker: persist %s: sync: %w", c.logPath(), err)
	}
	c.lines += n
	c.lastAppend = time.Now()
	return nil
}

// writeSnapshot writes the whole table to the JSON file.
func (c *configFile) writeSnapshot() error {
	c.snapMu.Lock()
	defer c.snapMu.Unlock()
	data, err := c.encode()
	if err != nil {
		return err
	}
	return writeFileAtomic(c.path, data)
}

// pendingLines is the number of log lines not yet in the snapshot.
func (c *configFile) pendingLines() int {
	c.logMu.Lock()
	defer c.logMu.Unlock()
	return c.lines
}

// compactDue reports whether the log should be folded into the snapshot.
func (c *configFile) compactDue(now time.Time) bool {
	c.logMu.Lock()
	defer c.logMu.Unlock()
	return c.lines > 0 && (c.lines >= max(compactMinLines, c.size()) || now.Sub(c.lastAppend) >= compactIdle)
}

// compact writes a snapshot and drops the log lines it covers (the
// algorithm is in the type's comment). It also serves as the full persist
// after the whole table was replaced.
func (c *configFile) compact() error {
	c.logMu.Lock()
	if c.log != nil {
		if err := c.log.Close(); err != nil {
			c.logger.Warn("close config change log", "file", c.logPath(), "err", err)
		}
		c.log = nil
	}
	rotated := false
	if _, err := os.Stat(c.oldPath()); errors.Is(err, fs.ErrNotExist) {
		if err := os.Rename(c.logPath(), c.oldPath()); err == nil {
			rotated = true
		} else if !errors.Is(err, fs.ErrNotExist) {
			c.logMu.Unlock()
			return fmt.Errorf("broker: rotate %s: %w", c.logPath(), err)
		}
	} else {
		// An earlier compaction stopped half-way: .old is still needed;
		// the current log is folded in by this snapshot too and can go.
		rotated = true
	}
	c.lines = 0
	c.logMu.Unlock()
	if err := c.writeSnapshot(); err != nil {
		return err
	}
	if rotated {
		// Lines appended since the rotation are in the new log; the ones
		// in .old and (after a half-done compaction) the current log are
		// in the snapshot.
		os.Remove(c.oldPath())
	}
	return syncDir(filepath.Dir(c.path))
}

// replay applies the change log(s) after the snapshot was loaded: .old
// first, then the current log. A torn last line (a crash during an append)
// ends the log; the file is cut there so later appends start on a line
// boundary. It returns the number of lines applied.
func (c *configFile) replay(apply func(e configLogEntry) error) (int, error) {
	total := 0
	for _, p := range []string{c.oldPath(), c.logPath()} {
		n, err := c.replayFile(p, apply)
		total += n
		if err != nil {
			return total, err
		}
	}
	c.logMu.Lock()
	c.lines = total
	c.lastAppend = time.Now()
	c.logMu.Unlock()
	return total, nil
}

// replayTable replays the change logs into a manager's table: apply runs
// under mu for each put or delete, after version has taken the entry's
// DataVersion when it is not older. A compaction an interrupted run left
// unfinished (.old present) is finished. It returns the number of
// changes applied.
func (c *configFile) replayTable(mu sync.Locker, version *protocol.DataVersion, apply func(e configLogEntry) error) (int, error) {
	_, oldErr := os.Stat(c.oldPath())
	n, err := c.replay(func(e configLogEntry) error {
		mu.Lock()
		defer mu.Unlock()
		if e.DataVersion.Counter >= version.Counter {
			*version = e.DataVersion
		}
		return apply(e)
	})
	if err != nil {
		return n, err
	}
	if oldErr == nil {
		return n, c.compact()
	}
	return n, nil
}

func (c *configFile) replayFile(path string, apply func(e configLogEntry) error) (int, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("broker: load %s: %w", path, err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	var good int64
	n := 0
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			if len(bytes.TrimSpace(line)) > 0 {
				c.logger.Warn("config change log: torn last line dropped", "file", path, "offset", good)
			}
			break
		}
		if err != nil {
			return n, fmt.Errorf("broker: load %s: %w", path, err)
		}
		var e configLogEntry
		if err := json.Unmarshal(line, &e); err != nil || (e.Op != "put" && e.Op != "delete") || e.Key == "" {
			c.logger.Warn("config change log: undecodable line; the log is cut there", "file", path, "offset", good, "err", err)
			break
		}
		if err := apply(e); err != nil {
			return n, fmt.Errorf("broker: load %s at %d: %w", path, good, err)
		}
		good += int64(len(line))
		n++
	}
	if st, err := f.Stat(); err == nil && st.Size() > good {
		if err := f.Truncate(good); err != nil {
			return n, fmt.Errorf("broker: cut %s: %w", path, err)
		}
	}
	return n, nil
}

// close closes the change log (without compacting).
func (c *configFile) close() {
	c.logMu.Lock()
	defer c.logMu.Unlock()
	if c.log != nil {
		c.log.Close()
		c.log = nil
	}
}
