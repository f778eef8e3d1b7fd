package broker

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/apogeemq/apogee/internal/protocol"
)

// epochFile is the controller-mode epoch checkpoint (storePathEpochFile,
// RocketMQ's EpochFileCache): which master epoch wrote which part of the
// commit log, as <epoch, startOffset> entries with increasing epochs and
// non-decreasing start offsets. Format (text):
//
//	<number of entries>
//	<CRC-32 (IEEE) of the entry lines, each with its '\n'>
//	<epoch>-<startOffset>      one line per entry, oldest first
//
// It is written to <path>.tmp, fsynced and renamed over <path> (then the
// directory is fsynced), so a crash leaves the old or the new file, never
// a mix; a file whose count or checksum does not match is refused.
type epochFile struct {
	path string

	mu      sync.Mutex
	entries []protocol.EpochEntry // StartOffset/Epoch only; guarded by mu
}

var errBadEpochFile = errors.New("broker: corrupt epoch file")

// loadEpochFile reads path; a missing file is an empty cache.
func loadEpochFile(path string) (*epochFile, error) {
	f := &epochFile{path: path}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("broker: epoch file: %w", err)
	}
	entries, err := parseEpochFile(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.entries = entries
	return f, nil
}

// parseEpochFile decodes the format above.
func parseEpochFile(data []byte) ([]protocol.EpochEntry, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", errBadEpochFile, err)
	}
	if len(lines) == 0 {
		return nil, nil
	}
	if len(lines) < 2 {
		return nil, fmt.Errorf("%w: no checksum line", errBadEpochFile)
	}
	n, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || n < 0 || n != len(lines)-2 {
		return nil, fmt.Errorf("%w: count %q for %d entries", errBadEpochFile, lines[0], len(lines)-2)
	}
	sum, err := strconv.ParseUint(strings.TrimSpace(lines[1]), 10, 32)
	if err != nil {
		return nil, fmt.Errorf("%w: checksum %q", errBadEpochFile, lines[1])
	}
	var body bytes.Buffer
	out := make([]protocol.EpochEntry, 0, n)
	for _, line := range lines[2:] {
		body.WriteString(line)
		body.WriteByte('\n')
		ep, start, ok := strings.Cut(line, "-")
		e, err1 := strconv.ParseInt(ep, 10, 32)
		s, err2 := strconv.ParseInt(start, 10, 64)
		if !ok || err1 != nil || err2 != nil || s < 0 {
			return nil, fmt.Errorf("%w: entry %q", errBadEpochFile, line)
		}
		if k := len(out); k > 0 && (int32(e) <= out[k-1].Epoch || s < out[k-1].StartOffset) {
			return nil, fmt.Errorf("%w: entry %q out of order", errBadEpochFile, line)
		}
		out = append(out, protocol.EpochEntry{Epoch: int32(e), StartOffset: s})
	}
	if uint32(sum) != crc32.ChecksumIEEE(body.Bytes()) {
		return nil, fmt.Errorf("%w: checksum mismatch", errBadEpochFile)
	}
	return out, nil
}

// encodeEpochFile renders entries in the file format.
func encodeEpochFile(entries []protocol.EpochEntry) []byte {
	var body bytes.Buffer
	for _, e := range entries {
		fmt.Fprintf(&body, "%d-%d\n", e.Epoch, e.StartOffset)
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "%d\n%d\n", len(entries), crc32.ChecksumIEEE(body.Bytes()))
	out.Write(body.Bytes())
	return out.Bytes()
}

// persistLocked writes the file atomically. REQUIRES: f.mu held.
func (f *epochFile) persistLocked() error {
	if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
		return fmt.Errorf("broker: epoch file: %w", err)
	}
	tmp := f.path + ".tmp"
	w, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("broker: epoch file: %w", err)
	}
	_, err = w.Write(encodeEpochFile(f.entries))
	if err == nil {
		err = w.Sync()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, f.path)
	}
	if err != nil {
		return fmt.Errorf("broker: epoch file: %w", err)
	}
	if d, err := os.Open(filepath.Dir(f.path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// list returns a copy of the entries.
func (f *epochFile) list() []protocol.EpochEntry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.entries)
}

// lastEpoch is the newest epoch (0 when empty).
func (f *epochFile) lastEpoch() int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.entries) == 0 {
		return 0
	}
	return f.entries[len(f.entries)-1].Epoch
}

// appendEpoch records that epoch starts at startOffset (a new master's
// end of log). An epoch not newer than the last is ignored.
func (f *epochFile) appendEpoch(epoch int32, startOffset int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.entries); n > 0 && (epoch <= f.entries[n-1].Epoch || startOffset < f.entries[n-1].StartOffset) {
		return nil
	}
	f.entries = append(f.entries, protocol.EpochEntry{Epoch: epoch, StartOffset: startOffset})
	return f.persistLocked()
}

// replace sets the entries (a slave adopting its master's history after
// truncating to the common point) and persists them.
func (f *epochFile) replace(entries []protocol.EpochEntry) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entries = f.entries[:0]
	for _, e := range entries {
		f.entries = append(f.entries, protocol.EpochEntry{Epoch: e.Epoch, StartOffset: e.StartOffset})
	}
	return f.persistLocked()
}

// withEnds returns the entries with EndOffset filled in (the next start;
// maxOffset for the last), as GET_BROKER_EPOCH_CACHE answers.
func withEnds(entries []protocol.EpochEntry, maxOffset int64) []protocol.EpochEntry {
	out := slices.Clone(entries)
	for i := range out {
		if i+1 < len(out) {
			out[i].EndOffset = out[i+1].StartOffset
		} else {
			out[i].EndOffset = maxOffset
		}
	}
	return out
}

// consistentPoint is where a replica's log stops agreeing with its
// master's: the newest local epoch that the master has with the same start
// offset, ended at the earlier of the two ends (the local end of the
// newest local epoch is unbounded; the master's last epoch ends at
// masterMax). Everything before it is identical on both (each epoch has one
// writer); the replica truncates there. It returns -1 when the replica has
// no epochs (nothing to compare: an empty or pre-controller log) and 0 when
// no epoch agrees.
func consistentPoint(local, master []protocol.EpochEntry, masterMax int64) int64 {
	if len(local) == 0 {
		return -1
	}
	for i := len(local) - 1; i >= 0; i-- {
		le := local[i]
		j := slices.IndexFunc(master, func(m protocol.EpochEntry) bool { return m.Epoch == le.Epoch })
		if j < 0 || master[j].StartOffset != le.StartOffset {
			continue
		}
		localEnd := int64(1<<63 - 1)
		if i+1 < len(local) {
			localEnd = local[i+1].StartOffset
		}
		masterEnd := masterMax
		if j+1 < len(master) {
			masterEnd = master[j+1].StartOffset
		}
		return min(localEnd, masterEnd)
	}
	return 0
}
