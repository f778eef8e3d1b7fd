package store

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/testutil"
)

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		crashChildMain()
		return
	}
	goleak.VerifyTestMain(m)
}

// testConfig is a small-file configuration in dir.
func testConfig(dir string) Config {
	cfg := DefaultConfig()
	cfg.StorePathRootDir = dir
	cfg.MappedFileSizeCommitLog = 64 << 10
	cfg.MappedFileSizeConsumeQueue = 100 * CQUnitSize
	cfg.MaxMessageSize = 8 << 10
	cfg.MaxHashSlotNum = 64
	cfg.MaxIndexNum = 256
	cfg.FlushIntervalCommitLog = 10 * time.Millisecond
	cfg.FlushIntervalConsumeQueue = 20 * time.Millisecond
	cfg.CommitIntervalCommitLog = 10 * time.Millisecond
	cfg.CleanupInitialDelay = time.Hour
	cfg.StoreHost = netip.MustParseAddrPort("10.0.0.1:10911")
	return cfg
}

func openStore(t testing.TB, cfg Config) *Store {
	t.Helper()
	s, err := New(cfg, testutil.Logger(t))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newMsg(topic string, qid int32, body string, props map[string]string) *message.Ext {
	m := &message.Ext{QueueID: qid, BornTimestamp: time.Now().UnixMilli(),
		BornHost: netip.MustParseAddrPort("192.168.1.2:5555")}
	m.Topic = topic
	m.Body = []byte(body)
	m.Properties = map[string]string{}
	for k, v := range props {
		m.Properties[k] = v
	}
	return m
}

// put appends and waits for the done callback.
func put(t testing.TB, s *Store, m *message.Ext) PutResult {
	t.Helper()
	ch := make(chan PutResult, 1)
	s.PutMessage(m, func(r PutResult) { ch <- r })
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("put: no completion")
	}
	return PutResult{}
}

func mustPut(t testing.TB, s *Store, m *message.Ext) PutResult {
	t.Helper()
	r := put(t, s, m)
	if r.Status != PutOK {
		t.Fatalf("put: status %v (%s)", r.Status, r.Remark)
	}
	return r
}

// waitDispatched waits until the queue holds n messages.
func waitDispatched(t testing.TB, s *Store, topic string, qid int32, n int64) {
	t.Helper()
	testutil.Eventually(t, 5*time.Second, func() bool { return s.MaxOffsetInQueue(topic, qid) >= n },
		"queue %s-%d never reached %d (at %d)", topic, qid, n, s.MaxOffsetInQueue(topic, qid))
}

// waitQueueFiles waits until no queue waits for its first file (tests that
// touch consume-queue files directly).
func waitQueueFiles(t testing.TB, s *Store) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, func() bool { return s.creator.pendingQueues() == 0 },
		"%d queues still wait for their first file", s.creator.pendingQueues())
}

func decode(t testing.TB, raw []byte) *message.Ext {
	t.Helper()
	m, n, err := message.DecodeStored(raw, message.DecodeOptions{VerifyCRC: true})
	if err != nil || n != len(raw) {
		t.Fatalf("decode stored record: n=%d len=%d err=%v", n, len(raw), err)
	}
	return m
}

type variant struct {
	name  string
	apply func(*Config)
}

// variants is the conformance matrix: every flush type, with and without the
// transient store pool.
var variants = []variant{
	{"async", func(c *Config) {}},
	{"sync", func(c *Config) { c.FlushDiskType = SyncFlush }},
	{"async-pool", func(c *Config) { c.TransientStorePoolEnable = true; c.TransientStorePoolSize = 3 }},
	{"sync-pool", func(c *Config) {
		c.FlushDiskType = SyncFlush
		c.TransientStorePoolEnable = true
		c.TransientStorePoolSize = 3
	}},
	{"sync-warm", func(c *Config) { c.FlushDiskType = SyncFlush; c.WarmMapedFileEnable = true }},
	{"async-no-prefault", func(c *Config) { c.PrefaultAheadBytes = 0 }},
	{"sync-pwrite", func(c *Config) { c.FlushDiskType = SyncFlush; c.WriteWithoutMmap = true }},
	{"async-pwrite", func(c *Config) { c.WriteWithoutMmap = true }},
}

// TestPutGetAcrossFiles covers 2.3/2.4/4.5: records roll over several files
// with blank records, get consecutive queue offsets and read back
// byte-exact through the consume queue, in every flush/pool variant.
func TestPutGetAcrossFiles(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			v.apply(&cfg)
			s := openStore(t, cfg)
			const n = 300
			bodies := make([][]byte, n)
			for i := 0; i < n; i++ {
				body := bytes.Repeat([]byte{byte(i)}, 500+i)
				bodies[i] = body
				m := newMsg("TopicA", int32(i%2), string(body), map[string]string{"TAGS": "tag" + strconv.Itoa(i%3), "KEYS": "k" + strconv.Itoa(i)})
				r := mustPut(t, s, m)
				if want := int64(i / 2); r.QueueOffset != want {
					t.Fatalf("msg %d: queue offset %d, want %d", i, r.QueueOffset, want)
				}
				if r.MsgID != "" { // a single put's id is built from WroteOffset by its reader
					t.Fatalf("msg %d: msg id %s", i, r.MsgID)
				}
			}
			if files := len(s.commitLog.snapshot()); files < 3 {
				t.Fatalf("expected several commit-log files, got %d", files)
			}
			waitDispatched(t, s, "TopicA", 0, n/2)
			waitDispatched(t, s, "TopicA", 1, n/2)
			for q := int32(0); q < 2; q++ {
				got := 0
				for off := int64(0); off < n/2; {
					res := s.GetMessage("g", "TopicA", q, off, 32, 1<<20, nil)
					if res.Status != Found {
						t.Fatalf("queue %d offset %d: status %v", q, off, res.Status)
					}
					for j, raw := range res.Messages {
						m := decode(t, raw)
						i := int(off+int64(j))*2 + int(q)
						if !bytes.Equal(m.Body, bodies[i]) || m.QueueOffset != off+int64(j) || m.Topic != "TopicA" {
							t.Fatalf("message %d mismatch: qo=%d topic=%s", i, m.QueueOffset, m.Topic)
						}
						if m.StoreHost != cfg.StoreHost {
							t.Fatalf("store host %v", m.StoreHost)
						}
						got++
					}
					off = res.NextBeginOffset
				}
				if got != n/2 {
					t.Fatalf("queue %d: read %d messages", q, got)
				}
			}
		})
	}
}

// TestGetMessageStatuses checks the GetMessageStatus table and
// nextBeginOffset corrections of 4.5.
func TestGetMessageStatuses(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	for i := 0; i < 5; i++ {
		mustPut(t, s, newMsg("T", 0, "x", map[string]string{"TAGS": "a"}))
	}
	waitDispatched(t, s, "T", 0, 5)
	tests := []struct {
		name     string
		topic    string
		offset   int64
		filter   MessageFilter
		want     GetStatus
		wantNext int64
		wantMsgs int
	}{
		{"unknown queue", "nope", 0, nil, NoMatchedLogicQueue, 0, 0},
		{"found", "T", 1, nil, Found, 5, 4},
		{"overflow one", "T", 5, nil, OffsetOverflowOne, 5, 0},
		{"overflow badly with min 0", "T", 9, nil, OffsetOverflowBadly, 5, 0},
		{"filtered out", "T", 0, tagFilter("b"), NoMatchedMessage, 5, 0},
		{"filtered in", "T", 0, tagFilter("a"), Found, 5, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := s.GetMessage("g", tc.topic, 0, tc.offset, 32, 1<<20, tc.filter)
			if r.Status != tc.want || r.NextBeginOffset != tc.wantNext || len(r.Messages) != tc.wantMsgs {
				t.Fatalf("got %v next=%d msgs=%d, want %v next=%d msgs=%d", r.Status, r.NextBeginOffset,
					len(r.Messages), tc.want, tc.wantNext, tc.wantMsgs)
			}
		})
	}
	// Batch caps: maxMsgNums and the in-memory count cap.
	if r := s.GetMessage("g", "T", 0, 0, 2, 1<<20, nil); len(r.Messages) != 2 || r.NextBeginOffset != 2 {
		t.Fatalf("maxMsgNums=2: %d msgs next %d", len(r.Messages), r.NextBeginOffset)
	}
	s.findOrCreateQueue("Empty", 3)
	if r := s.GetMessage("g", "Empty", 3, 0, 2, 1<<20, nil); r.Status != NoMessageInQueue {
		t.Fatalf("empty queue: %v", r.Status)
	}
}

type tagFilter string

func (f tagFilter) MatchTagsCode(c int64) bool             { return c == message.TagsHashCode(string(f)) }
func (f tagFilter) MatchProperties(map[string]string) bool { return true }

// TestRestartKeepsOffsets: a clean restart keeps every message and queue
// offsets continue where they stopped (6.3 step 5).
func TestRestartKeepsOffsets(t *testing.T) {
	for _, v := range variants[:2] {
		t.Run(v.name, func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			v.apply(&cfg)
			s := openStore(t, cfg)
			for i := 0; i < 150; i++ {
				mustPut(t, s, newMsg("T", 0, fmt.Sprintf("body-%d-%s", i, bytes.Repeat([]byte("z"), 700)), nil))
			}
			waitDispatched(t, s, "T", 0, 150)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(cfg.StorePathRootDir, abortFileName)); !os.IsNotExist(err) {
				t.Fatalf("abort file left after clean close: %v", err)
			}
			s2 := openStore(t, cfg)
			if rep := s2.Recovery(); rep.Abnormal || rep.DroppedBytes != 0 {
				t.Fatalf("clean restart reported %+v", rep)
			}
			if got := s2.MaxOffsetInQueue("T", 0); got != 150 {
				t.Fatalf("max offset after restart %d", got)
			}
			r := mustPut(t, s2, newMsg("T", 0, "after", nil))
			if r.QueueOffset != 150 {
				t.Fatalf("queue offset after restart %d, want 150", r.QueueOffset)
			}
			waitDispatched(t, s2, "T", 0, 151)
			res := s2.GetMessage("g", "T", 0, 150, 1, 1<<20, nil)
			if res.Status != Found || string(decode(t, res.Messages[0]).Body) != "after" {
				t.Fatalf("read after restart: %v", res.Status)
			}
		})
	}
}

// TestCloseIsIdempotent: Close twice and Close without Start are fine.
func TestCloseIsIdempotent(t *testing.T) {
	s, err := New(testConfig(t.TempDir()), testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, testConfig(t.TempDir()))
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	if r := put(t, s2, newMsg("T", 0, "x", nil)); r.Status != ServiceNotAvailable {
		t.Fatalf("put after close: %v", r.Status)
	}
}

// TestSecondStoreOnSameDirRefused: the lock file prevents two stores.
func TestSecondStoreOnSameDirRefused(t *testing.T) {
	cfg := testConfig(t.TempDir())
	openStore(t, cfg)
	s2, _ := New(cfg, testutil.Logger(t))
	if err := s2.Start(); err == nil {
		s2.Close()
		t.Fatal("second store on the same directory started")
	}
}

// TestConcurrentPutsAreDenseAndOrdered: many writers on one queue get
// distinct consecutive queue offsets and the queue reads back all of them.
func TestConcurrentPutsAreDenseAndOrdered(t *testing.T) {
	for _, v := range variants[:2] {
		t.Run(v.name, func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			v.apply(&cfg)
			s := openStore(t, cfg)
			const writers, each = 8, 40
			var wg sync.WaitGroup
			seen := make([]int64, writers*each)
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < each; i++ {
						r := put(t, s, newMsg("C", 0, fmt.Sprintf("%d-%d", w, i), nil))
						if r.Status != PutOK {
							t.Errorf("put: %v", r.Status)
							return
						}
						seen[w*each+i] = r.QueueOffset
					}
				}()
			}
			wg.Wait()
			got := map[int64]bool{}
			for _, q := range seen {
				got[q] = true
			}
			if len(got) != writers*each {
				t.Fatalf("queue offsets not distinct: %d unique", len(got))
			}
			waitDispatched(t, s, "C", 0, writers*each)
		})
	}
}

// TestCloseDuringPuts: Close while writers are putting never crashes, and
// every put completes exactly once (stored, or refused once closing).
func TestCloseDuringPuts(t *testing.T) {
	for _, v := range variants[:2] {
		t.Run(v.name, func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			v.apply(&cfg)
			s := openStore(t, cfg)
			var wg sync.WaitGroup
			var completed, issued atomic.Int64
			for w := 0; w < 4; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 2000; i++ {
						issued.Add(1)
						ch := make(chan PutResult, 1)
						s.PutMessage(newMsg("C", int32(w), "x", nil), func(r PutResult) { completed.Add(1); ch <- r })
						if r := <-ch; r.Status == ServiceNotAvailable {
							return
						}
					}
				}()
			}
			testutil.Eventually(t, 5*time.Second, func() bool { return completed.Load() > 50 })
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			if completed.Load() != issued.Load() {
				t.Fatalf("%d puts issued, %d completed", issued.Load(), completed.Load())
			}
		})
	}
}
