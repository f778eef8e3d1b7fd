package store

import (
	"bytes"
	"maps"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestPutMessageRawProperties checks the raw-properties put: the string is
// stored verbatim, the record reads back with the same pairs, the index
// holds its KEYS, and WAIT=false answers before the flush under SYNC_FLUSH.
func TestPutMessageRawProperties(t *testing.T) {
	tests := []struct {
		name  string
		props string
	}{
		{"plain", "TAGS\x01tagA\x02KEYS\x01k1 k2\x02UNIQ_KEY\x01AC110001\x02"},
		{"no-wait", "KEYS\x01k3\x02WAIT\x01false\x02"},
		{"empty", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			cfg.FlushDiskType = SyncFlush
			s := openStore(t, cfg)
			m := newMsg("raw", 0, "body", nil)
			m.Properties = nil
			ch := make(chan PutResult, 1)
			s.PutMessageRawProperties(m, tt.props, []string{"CLUSTER", "c"}, func(r PutResult) { ch <- r })
			var r PutResult
			select {
			case r = <-ch:
			case <-time.After(10 * time.Second):
				t.Fatal("no completion")
			}
			if r.Status != PutOK {
				t.Fatalf("status %v (%s)", r.Status, r.Remark)
			}
			got, err := s.LookMessageByOffset(r.WroteOffset)
			if err != nil {
				t.Fatalf("LookMessageByOffset: %v", err)
			}
			want := message.DecodeProperties(tt.props + "CLUSTER\x01c\x02")
			if !maps.Equal(got.Properties, want) {
				t.Fatalf("properties %v, want %v", got.Properties, want)
			}
			rec, err := s.ReadRawByOffset(r.WroteOffset, r.WroteBytes)
			if err != nil {
				t.Fatalf("ReadRawByOffset: %v", err)
			}
			// The properties are the record's last field: stored verbatim.
			if !bytes.HasSuffix(rec, []byte(tt.props+"CLUSTER\x01c\x02")) {
				t.Fatalf("record does not end with the properties string %q", tt.props)
			}
			if !bytes.Equal(got.Body, []byte("body")) || got.Topic != "raw" {
				t.Fatalf("read back topic %q body %q", got.Topic, got.Body)
			}
			if tt.name == "plain" {
				waitDispatched(t, s, "raw", 0, 1)
				var found []*message.Ext
				// The index is written after the consume queue.
				testutil.Eventually(t, 5*time.Second, func() bool {
					found, _ = s.QueryMessage("raw", "k2", 4, 0, time.Now().Add(time.Hour).UnixMilli())
					return len(found) > 0
				}, "index query k2 found nothing")
				if len(found) != 1 {
					t.Fatalf("index query k2 found %d messages", len(found))
				}
			}
		})
	}
}
