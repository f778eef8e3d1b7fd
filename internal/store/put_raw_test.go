package store

import (
	"bytes"
	"maps"
	"net/netip"
	"strconv"
	"sync"
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

// TestPutRawStagedInPlace holds the staged single put, which encodes its
// record under the append lock straight into the stage ring (or, at the
// ring's wrap and when the ring is full, into a buffer appended as before),
// to the encoder: every record read back equals
// message.AppendStoredRawProperties of the message with the offsets and
// store timestamp the put reported. Puts are issued without waiting, with
// bodies and properties of varied sizes, IPv6 and IPv4 born hosts, a topic
// long enough for MagicV2 and transactional half messages, so that the
// ring wraps, fills up and files end in BLANK records.
func TestPutRawStagedInPlace(t *testing.T) {
	for _, tc := range []struct {
		name     string
		flush    string
		fileSize int64
	}{
		{"async/64KiB-files", AsyncFlush, 64 << 10},
		{"async/8MiB-files", AsyncFlush, 8 << 20},
		{"sync/8MiB-files", SyncFlush, 8 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			cfg.FlushDiskType = tc.flush
			cfg.MappedFileSizeCommitLog = tc.fileSize
			const ts = 1_700_000_000_123
			cfg.Now = func() time.Time { return time.UnixMilli(ts) }
			s := openStore(t, cfg)
			if s.stage == nil {
				t.Fatal("staged appends are off")
			}
			long := string(bytes.Repeat([]byte("L"), 200))
			const n = 3000
			msgs := make([]*message.Ext, n)
			props := make([]string, n)
			results := make([]PutResult, n)
			var wg sync.WaitGroup
			wg.Add(n)
			for i := range n {
				topic := "inplace"
				if i%7 == 3 {
					topic = long
				}
				m := newMsg(topic, int32(i%3), string(bytes.Repeat([]byte{byte('a' + i%26)}, 1+(i*397)%3000)), nil)
				m.Properties = nil
				if i%5 == 1 {
					m.BornHost = netip.MustParseAddrPort("[2001:db8::7]:4242")
				}
				if i%11 == 5 {
					m.SysFlag = message.SysFlagTransactionPreparedType
				}
				props[i] = "TAGS\x01t" + strconv.Itoa(i%9) + "\x02KEYS\x01k" + strconv.Itoa(i) + "\x02" +
					string(bytes.Repeat([]byte("p"), (i*131)%500))
				mc := *m
				msgs[i] = &mc
				s.PutMessageRawProperties(m, props[i], []string{"CLUSTER", "c", "UNIQ_KEY", strconv.Itoa(i)}, func(r PutResult) {
					results[i] = r
					wg.Done()
				})
			}
			wg.Wait()
			for i, r := range results {
				if r.Status != PutOK {
					t.Fatalf("put %d: %v (%s)", i, r.Status, r.Remark)
				}
				want := *msgs[i]
				want.StoreHost = cfg.StoreHost
				want.CommitLogOffset, want.StoreTimestamp = r.WroteOffset, ts
				want.QueueOffset = r.QueueOffset
				if tt := message.TransactionType(want.SysFlag); tt == message.SysFlagTransactionPreparedType {
					want.QueueOffset = 0
				}
				enc, err := message.AppendStoredRawProperties(nil, &want, props[i], "CLUSTER", "c", "UNIQ_KEY", strconv.Itoa(i))
				if err != nil {
					t.Fatal(err)
				}
				if int(r.WroteBytes) != len(enc) {
					t.Fatalf("put %d wrote %d bytes, the encoder %d", i, r.WroteBytes, len(enc))
				}
				got, err := s.ReadRawByOffset(r.WroteOffset, r.WroteBytes)
				if err != nil {
					t.Fatalf("read %d: %v", i, err)
				}
				if !bytes.Equal(got, enc) {
					t.Fatalf("record %d at %d differs from the encoder's", i, r.WroteOffset)
				}
			}
		})
	}
}

// TestPutMessageRawPropertiesAt: the start a caller gives is the put's
// start in the put-latency histogram (a start 2 s back lands above 1 s), a
// zero start makes the store read the clock, and both store the same record
// as PutMessageRawProperties with the store timestamp of the append lock.
func TestPutMessageRawPropertiesAt(t *testing.T) {
	for _, tc := range []struct {
		name    string
		back    time.Duration // start = now - back; 0: zero start
		slowest bool          // lands in the last (> 1 s) bucket
	}{
		{"zero-start", 0, false},
		{"start-2s-ago", 2 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			s := openStore(t, cfg)
			var start time.Time
			if tc.back > 0 {
				start = time.Now().Add(-tc.back)
			}
			m := newMsg("at", 0, "body", nil)
			m.Properties = nil
			const props = "TAGS\x01a\x02"
			ch := make(chan PutResult, 1)
			before := time.Now().UnixMilli()
			s.PutMessageRawPropertiesAt(m, props, nil, start, func(r PutResult) { ch <- r })
			r := <-ch
			if r.Status != PutOK {
				t.Fatalf("status %v (%s)", r.Status, r.Remark)
			}
			if r.StoreTimestamp < before || r.StoreTimestamp > time.Now().UnixMilli() || m.StoreTimestamp != r.StoreTimestamp {
				t.Fatalf("store timestamp %d (message %d), put at %d", r.StoreTimestamp, m.StoreTimestamp, before)
			}
			st := s.Stats()
			last := st.PutLatencyCounts[len(st.PutLatencyCounts)-1]
			if (last == 1) != tc.slowest {
				t.Fatalf("put-latency counts %v", st.PutLatencyCounts)
			}
			got, err := s.ReadRawByOffset(r.WroteOffset, r.WroteBytes)
			if err != nil {
				t.Fatal(err)
			}
			want := *m
			want.CommitLogOffset, want.QueueOffset = r.WroteOffset, r.QueueOffset
			enc, _ := message.AppendStoredRawProperties(nil, &want, props)
			if !bytes.Equal(got, enc) {
				t.Fatal("record differs from the encoder's")
			}
		})
	}
}
