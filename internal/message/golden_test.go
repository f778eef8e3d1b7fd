package message

import (
	"bytes"
	"encoding/hex"
	"errors"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// goldenHex compares got with testdata/<name>.hex (hex, 32 bytes a line),
// rewriting the file under -update.
func goldenHex(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".hex")
	if *update {
		var sb strings.Builder
		for len(got) > 0 {
			n := min(32, len(got))
			sb.WriteString(strings.ToUpper(hex.EncodeToString(got[:n])))
			sb.WriteByte('\n')
			got = got[n:]
		}
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	want := unhex(t, string(data))
	if !bytes.Equal(got, want) {
		t.Errorf("%s changed: the stored format must never change\n got %X\nwant %X", name, got, want)
	}
}

const zlibHello = "785ECB48CDC9C957C8402701680308B1" // "hello hello hello hello"

func TestDecompressForeignZlib(t *testing.T) {
	got, err := Decompress(unhex(t, zlibHello))
	if err != nil || string(got) != "hello hello hello hello" {
		t.Fatalf("Decompress = %q, %v", got, err)
	}
	if _, err := Decompress([]byte("not zlib")); err == nil {
		t.Errorf("garbage decompressed")
	}
	big, _ := Compress(make([]byte, 1<<20), 5)
	if _, err := DecompressLimit(big, 1<<20-1); !errors.Is(err, ErrBodyTooLarge) {
		t.Errorf("limit: %v", err)
	}
	if got, err := DecompressLimit(big, 1<<20); err != nil || len(got) != 1<<20 {
		t.Errorf("exact limit: %d, %v", len(got), err)
	}
}

// TestGoldenEncodings pins the on-disk and wire encodings of several
// variants; a diff here means the format changed.
func TestGoldenEncodings(t *testing.T) {
	v6 := func(m *Ext) {
		m.BornHost = netip.MustParseAddrPort("[2001:db8::1]:40000")
		m.StoreHost = netip.MustParseAddrPort("[2001:db8::2]:10911")
	}
	// A zlib stream made by another implementation (Python's zlib, level
	// 5), so the golden file does not depend on Go's deflate output.
	compressed := unhex(t, zlibHello)
	stored := []struct {
		name   string
		mutate func(*Ext)
	}{
		{"stored_v1_ipv4", func(*Ext) {}},
		{"stored_ipv6_hosts", v6},
		{"stored_v2_topic200", func(m *Ext) { m.Topic = "%DLQ%" + strings.Repeat("g", 195) }},
		{"stored_zlib_body", func(m *Ext) { m.Body, m.SysFlag = compressed, SysFlagCompressed }},
		{"stored_many_properties", func(m *Ext) {
			m.SetKeys("order-1", "order-2")
			m.SetUniqKey("C0A8010A12340BADF00D0A8588C00001")
			m.SetWaitStoreMsgOK(true)
			m.SetProperty(PropertyCluster, "DefaultCluster")
		}},
	}
	for _, tc := range stored {
		t.Run(tc.name, func(t *testing.T) {
			m := sampleExt()
			tc.mutate(m)
			rec, err := AppendStored(nil, m)
			if err != nil {
				t.Fatal(err)
			}
			goldenHex(t, tc.name, rec)
		})
	}
	t.Run("batch", func(t *testing.T) {
		goldenHex(t, "batch", EncodeBatch([]Message{
			{Flag: 1, Body: []byte("first"), Properties: map[string]string{"TAGS": "a", "KEYS": "k"}},
			{Body: []byte("second")},
		}))
	})
}
