package broker

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/apogeemq/apogee/internal/protocol"
)

func ep(e int32, s int64) protocol.EpochEntry { return protocol.EpochEntry{Epoch: e, StartOffset: s} }

func TestConsistentPoint(t *testing.T) {
	tests := []struct {
		name          string
		local, master []protocol.EpochEntry
		masterMax     int64
		want          int64
	}{
		{"no local epochs", nil, []protocol.EpochEntry{ep(1, 0)}, 100, -1},
		{"same epoch, master ahead", []protocol.EpochEntry{ep(1, 0)}, []protocol.EpochEntry{ep(1, 0)}, 100, 100},
		{"old master rejoins: its epoch ended at the new master's start",
			[]protocol.EpochEntry{ep(1, 0)}, []protocol.EpochEntry{ep(1, 0), ep(2, 80)}, 150, 80},
		{"local newer epoch unknown to master",
			[]protocol.EpochEntry{ep(1, 0), ep(3, 90)}, []protocol.EpochEntry{ep(1, 0), ep(2, 80)}, 150, 80},
		{"local epoch ends first", []protocol.EpochEntry{ep(1, 0), ep(2, 50)}, []protocol.EpochEntry{ep(1, 0), ep(2, 50), ep(4, 70)}, 90, 70},
		{"same epoch number, different start", []protocol.EpochEntry{ep(2, 60)}, []protocol.EpochEntry{ep(1, 0), ep(2, 50)}, 90, 0},
		{"nothing agrees", []protocol.EpochEntry{ep(5, 0)}, []protocol.EpochEntry{ep(1, 0)}, 90, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := consistentPoint(tc.local, tc.master, tc.masterMax); got != tc.want {
				t.Fatalf("consistentPoint = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestEpochFileRoundTripAndCorruption(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "epochFileCheckpoint")
	f, err := loadEpochFile(path)
	if err != nil || len(f.list()) != 0 {
		t.Fatalf("missing file: %v %v", f.list(), err)
	}
	for _, e := range []protocol.EpochEntry{ep(1, 0), ep(2, 4096), ep(2, 5000), ep(1, 9000), ep(5, 8192)} {
		if err := f.appendEpoch(e.Epoch, e.StartOffset); err != nil {
			t.Fatal(err)
		}
	}
	want := []protocol.EpochEntry{ep(1, 0), ep(2, 4096), ep(5, 8192)} // stale epochs ignored
	g, err := loadEpochFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.list(); len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("reloaded %v, want %v", got, want)
	}
	data, _ := os.ReadFile(path)
	for _, bad := range []struct {
		name string
		data []byte
	}{
		{"torn write: last line missing", data[:len(data)-6]},
		{"checksum", append([]byte("3\n1\n"), data[bytesIndexNth(data, '\n', 2)+1:]...)},
		{"garbage entry", []byte("1\n0\nx-y\n")},
	} {
		if _, err := parseEpochFile(bad.data); !errors.Is(err, errBadEpochFile) {
			t.Errorf("%s: err %v, want errBadEpochFile", bad.name, err)
		}
	}
	// A crash between writing the temp file and the rename leaves the old
	// file in place: the temp file is ignored.
	if err := os.WriteFile(path+".tmp", []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if g, err := loadEpochFile(path); err != nil || len(g.list()) != 3 {
		t.Fatalf("with a stale temp file: %v %v", g, err)
	}
}

func bytesIndexNth(b []byte, c byte, n int) int {
	for i, x := range b {
		if x == c {
			if n--; n == 0 {
				return i
			}
		}
	}
	return -1
}

func FuzzEpochFile(f *testing.F) {
	f.Add(encodeEpochFile([]protocol.EpochEntry{ep(1, 0), ep(3, 100)}))
	f.Add([]byte("2\n0\n1-0\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := parseEpochFile(data)
		if err != nil {
			return
		}
		again, err := parseEpochFile(encodeEpochFile(entries))
		if err != nil || len(again) != len(entries) {
			t.Fatalf("re-encoding %v: %v %v", entries, again, err)
		}
		for i := range entries {
			if again[i] != entries[i] {
				t.Fatalf("entry %d: %v != %v", i, again[i], entries[i])
			}
		}
	})
}
