package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/apogeemq/apogee/internal/run"
)

// writeFileAtomic replaces path with data so that a crash at any moment
// leaves either the old or the new content readable (through the .bak
// fallback of loadFileWithBackup):
//
//  1. write data to path.tmp and fsync it;
//  2. rename path -> path.bak (the previous version survives);
//  3. rename path.tmp -> path;
//  4. fsync the directory so both renames are durable.
//
// Between 2 and 3 path does not exist, and a loader falls back to path.bak.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("broker: persist %s: %w", path, err)
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("broker: persist %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("broker: persist %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("broker: persist %s: fsync: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("broker: persist %s: %w", path, err)
	}
	if err := os.Rename(path, path+".bak"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("broker: persist %s: keep backup: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("broker: persist %s: %w", path, err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("broker: fsync dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("broker: fsync dir %s: %w", dir, err)
	}
	return nil
}

// loadFileWithBackup reads path and hands its content to decode. An absent,
// empty or undecodable file falls back to path.bak, as RocketMQ's
// ConfigManager does. It reports found=false when neither file exists.
func loadFileWithBackup(path string, decode func([]byte) error) (found bool, err error) {
	var firstErr error
	for _, p := range []string{path, path + ".bak"} {
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			firstErr = cmpErr(firstErr, fmt.Errorf("broker: load %s: %w", p, err))
			continue
		}
		if len(bytes.TrimSpace(data)) == 0 {
			firstErr = cmpErr(firstErr, fmt.Errorf("broker: load %s: empty file", p))
			continue
		}
		if err := decode(data); err != nil {
			firstErr = cmpErr(firstErr, fmt.Errorf("broker: load %s: %w", p, err))
			continue
		}
		return true, nil
	}
	return false, firstErr
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// compactLoop folds the topic and group change logs into topics.json and
// subscriptionGroup.json when due (config_log.go), checking every 200 ms.
func (b *Broker) compactLoop() {
	run.Every(b.baseCtx, 200*time.Millisecond, func(context.Context) { b.compactConfigs(false) })
}

// compactConfigs compacts the change logs that are due (all non-empty ones
// with force: at shutdown, so the JSON files are complete after a clean
// stop). An empty log is never compacted: a table that failed to load must
// not overwrite its file.
func (b *Broker) compactConfigs(force bool) error {
	var errs []error
	for _, cf := range []*configFile{b.Topics.cf, b.Groups.cf} {
		if (force && cf.pendingLines() > 0) || cf.compactDue(b.now()) {
			if err := cf.compact(); err != nil {
				b.logger.Error("compact config change log", "file", cf.path, "err", err)
				errs = append(errs, err)
			}
		}
		if force {
			cf.close()
		}
	}
	return errors.Join(errs...)
}
