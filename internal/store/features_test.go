package store

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/config"
	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestQueryMessageByKey covers the index (5.2-5.4): KEYS tokens and
// UNIQ_KEY are found within the time range, across several index files.
func TestQueryMessageByKey(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MaxIndexNum = 50 // forces several index files
	s := openStore(t, cfg)
	start := time.Now().UnixMilli()
	for i := 0; i < 120; i++ {
		mustPut(t, s, newMsg("IdxTopic", 0, "b", map[string]string{
			message.PropertyKeys:                      fmt.Sprintf("order-%d shared", i),
			message.PropertyUniqClientMessageIDKeyidx: fmt.Sprintf("UNIQ%04d", i),
		}))
	}
	waitDispatched(t, s, "IdxTopic", 0, 120)
	end := time.Now().UnixMilli() + 1000
	if files := len(s.index.files); files < 3 {
		t.Fatalf("expected several index files, got %d", files)
	}
	for _, i := range []int{0, 49, 50, 119} {
		got, err := s.QueryMessage("IdxTopic", fmt.Sprintf("order-%d", i), 32, start-1000, end)
		if err != nil || len(got) == 0 {
			t.Fatalf("key order-%d: %v, %d results", i, err, len(got))
		}
		found := false
		for _, m := range got {
			found = found || m.Properties[message.PropertyKeys] == fmt.Sprintf("order-%d shared", i)
		}
		if !found {
			t.Fatalf("key order-%d: right message not among %d results", i, len(got))
		}
		u, _ := s.QueryMessage("IdxTopic", fmt.Sprintf("UNIQ%04d", i), 32, start-1000, end)
		if len(u) == 0 || u[0].Properties[message.PropertyUniqClientMessageIDKeyidx] != fmt.Sprintf("UNIQ%04d", i) {
			t.Fatalf("uniq key %d not found", i)
		}
	}
	if got, _ := s.QueryMessage("IdxTopic", "shared", 10, start-1000, end); len(got) != 10 {
		t.Fatalf("maxNum not honoured: %d", len(got))
	}
	if got, _ := s.QueryMessage("IdxTopic", "order-1", 32, end+10_000, end+20_000); len(got) != 0 {
		t.Fatalf("time range not honoured: %d results", len(got))
	}
	if got, _ := s.QueryMessage("Other", "order-1", 32, start-1000, end); len(got) != 0 {
		t.Fatalf("topic not part of the key: %d results", len(got))
	}
}

// TestDelayLevelRewrite covers 8.8: DELAY > 0 goes to SCHEDULE_TOPIC_XXXX
// queue level-1 with REAL_TOPIC/REAL_QID, and the unit's tag is the
// delivery time.
func TestDelayLevelRewrite(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	m := newMsg("Orders", 3, "later", map[string]string{message.PropertyDelayTimeLevel: "3", "TAGS": "x"})
	r := mustPut(t, s, m)
	waitDispatched(t, s, names.TopicSchedule, 2, 1)
	got := s.GetMessage("g", names.TopicSchedule, 2, 0, 1, 1<<20, nil)
	if got.Status != Found {
		t.Fatalf("schedule queue: %v", got.Status)
	}
	ext := decode(t, got.Messages[0])
	if ext.Properties[message.PropertyRealTopic] != "Orders" || ext.Properties[message.PropertyRealQueueID] != "3" {
		t.Fatalf("real topic/queue not kept: %v", ext.Properties)
	}
	u, _ := s.getQueue(names.TopicSchedule, 2).unitAt(0)
	if want := r.StoreTimestamp + 10_000; u.TagsCode != want {
		t.Fatalf("tags code %d, want delivery time %d", u.TagsCode, want)
	}
	if s.MaxOffsetInQueue("Orders", 3) != 0 {
		t.Fatal("delayed message visible in its real queue")
	}
	// A level above the max is clamped.
	mustPut(t, s, newMsg("Orders", 0, "x", map[string]string{message.PropertyDelayTimeLevel: "99"}))
	waitDispatched(t, s, names.TopicSchedule, 17, 1)
}

// TestPutMessagesBatch covers 2.4 batch puts: consecutive queue offsets,
// contiguous records, comma-joined ids; and delayed batches are illegal.
func TestPutMessagesBatch(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	mustPut(t, s, newMsg("B", 1, "first", nil))
	var batch []*message.Ext
	for i := 0; i < 10; i++ {
		batch = append(batch, newMsg("B", 1, "item"+strconv.Itoa(i), nil))
	}
	ch := make(chan PutResult, 1)
	s.PutMessages(batch, func(r PutResult) { ch <- r })
	r := <-ch
	if r.Status != PutOK || r.MsgNum != 10 || r.QueueOffset != 1 {
		t.Fatalf("batch: %+v", r)
	}
	if ids := len(splitComma(r.MsgID)); ids != 10 {
		t.Fatalf("batch ids: %d", ids)
	}
	waitDispatched(t, s, "B", 1, 11)
	got := s.GetMessage("g", "B", 1, 1, 32, 1<<20, nil)
	if len(got.Messages) != 10 || string(decode(t, got.Messages[9]).Body) != "item9" {
		t.Fatalf("batch read back: %d", len(got.Messages))
	}
	var huge []*message.Ext
	for i := 0; i < 20; i++ {
		huge = append(huge, newMsg("B", 1, string(make([]byte, 1000)), nil))
	}
	s.PutMessages(huge, func(r PutResult) { ch <- r })
	if r := <-ch; r.Status != UnknownError {
		t.Fatalf("batch over maxMessageSize: %v", r.Status)
	}
	bad := []*message.Ext{newMsg("B", 1, "d", map[string]string{message.PropertyDelayTimeLevel: "1"})}
	s.PutMessages(bad, func(r PutResult) { ch <- r })
	if r := <-ch; r.Status != MessageIllegal {
		t.Fatalf("delayed batch: %v", r.Status)
	}
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

// TestPutStatuses covers the MESSAGE_ILLEGAL / PROPERTIES_SIZE_EXCEEDED /
// SERVICE_NOT_AVAILABLE / OS_PAGE_CACHE_BUSY rules of 2.5, 2.8 and 7.2.
func TestPutStatuses(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := openStore(t, cfg)
	big := make([]byte, cfg.MaxMessageSize+1)
	if r := put(t, s, newMsg("T", 0, string(big), nil)); r.Status != MessageIllegal {
		t.Fatalf("oversized body: %v", r.Status)
	}
	props := map[string]string{"big": string(make([]byte, 40000))}
	if r := put(t, s, newMsg("T", 0, "x", props)); r.Status != PropertiesSizeExceeded && r.Status != MessageIllegal {
		t.Fatalf("oversized properties: %v", r.Status)
	}
	for _, topic := range []string{"..", "a/b", "x\x00y"} {
		if r := put(t, s, newMsg(topic, 0, "x", nil)); r.Status != MessageIllegal {
			t.Fatalf("topic %q: %v", topic, r.Status)
		}
	}
	m := newMsg("T", 0, "x", nil)
	m.Body = nil
	if r := put(t, s, m); r.Status != MessageIllegal {
		t.Fatalf("nil body: %v", r.Status)
	}
	s.diskFull.Store(true)
	if r := put(t, s, newMsg("T", 0, "x", nil)); r.Status != ServiceNotAvailable {
		t.Fatalf("disk full: %v", r.Status)
	}
	s.diskFull.Store(false)
	s.beginTimeInLock.Store(time.Now().Add(-2 * time.Second).UnixMilli())
	if !s.IsOSPageCacheBusy() {
		t.Fatal("page cache busy not detected")
	}
	if r := put(t, s, newMsg("T", 0, "x", nil)); r.Status != OSPageCacheBusy {
		t.Fatalf("page cache busy: %v", r.Status)
	}
	s.beginTimeInLock.Store(0)
	mustPut(t, s, newMsg("T", 0, "x", nil))
	if st := s.Stats(); st.PageCacheBusy != 1 || st.PutMessages != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestFlushFailureIsSticky: after a failed msync every waiting SYNC_FLUSH
// put gets FLUSH_DISK_TIMEOUT and later puts are refused.
func TestFlushFailureIsSticky(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.FlushDiskType = SyncFlush
	s := openStore(t, cfg)
	mustPut(t, s, newMsg("T", 0, "ok", nil))
	fault := func() error { return errors.New("injected EIO") }
	s.commitLog.syncFault.Store(&fault)
	if r := put(t, s, newMsg("T", 0, "lost?", nil)); r.Status != FlushDiskTimeout {
		t.Fatalf("put during failing flush: %v", r.Status)
	}
	s.commitLog.syncFault.Store(nil)
	if r := put(t, s, newMsg("T", 0, "x", nil)); r.Status != ServiceNotAvailable {
		t.Fatalf("put after a failed flush: %v", r.Status)
	}
	if !s.Stats().FlushFailed {
		t.Fatal("stats do not show the failure")
	}
}

// TestSyncFlushTimeout: a flush that never completes answers
// FLUSH_DISK_TIMEOUT after syncFlushTimeout.
func TestSyncFlushTimeout(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.FlushDiskType = SyncFlush
	cfg.SyncFlushTimeout = 100 * time.Millisecond
	s := openStore(t, cfg)
	release := make(chan struct{})
	var blocked atomic.Bool
	fault := func() error {
		if blocked.CompareAndSwap(false, true) {
			<-release
		}
		return nil
	}
	s.commitLog.syncFault.Store(&fault)
	start := time.Now()
	r := put(t, s, newMsg("T", 0, "slow", nil))
	close(release)
	if r.Status != FlushDiskTimeout || time.Since(start) < 100*time.Millisecond {
		t.Fatalf("status %v after %v", r.Status, time.Since(start))
	}
	s.commitLog.syncFault.Store(nil)
	// Flushing works again: a put is acknowledged. One fdatasync can itself
	// take longer than the 100 ms bound on a loaded machine, so a timeout
	// here is retried (a bounded number of times), not taken for a fault.
	for i := 0; ; i++ {
		r := put(t, s, newMsg("T", 0, "fast", nil))
		if r.Status == PutOK {
			break
		}
		if r.Status != FlushDiskTimeout || i == 20 {
			t.Fatalf("put after the fault: status %v (%s) on attempt %d", r.Status, r.Remark, i+1)
		}
	}
}

// TestOffsetByTime covers SEARCH_OFFSET_BY_TIMESTAMP (4.1) and the store
// time lookups.
func TestOffsetByTime(t *testing.T) {
	var clock atomic.Int64
	clock.Store(1_700_000_000_000)
	cfg := testConfig(t.TempDir())
	cfg.Now = func() time.Time { return time.UnixMilli(clock.Load()) }
	s := openStore(t, cfg)
	for i := 0; i < 50; i++ {
		clock.Add(1000)
		mustPut(t, s, newMsg("T", 0, "x", nil))
	}
	waitDispatched(t, s, "T", 0, 50)
	base := int64(1_700_000_000_000)
	tests := []struct {
		ts    int64
		upper bool
		want  int64
	}{
		{base, false, 0},
		{base + 1000, false, 0},
		{base + 1500, false, 1},
		{base + 1500, true, 0},
		{base + 50_000, true, 49},
		{base + 99_000, false, 50},
	}
	for _, tc := range tests {
		if got := s.OffsetByTimeBoundary("T", 0, tc.ts, tc.upper); got != tc.want {
			t.Errorf("ts %d upper=%v: %d, want %d", tc.ts-base, tc.upper, got, tc.want)
		}
	}
	if ts, err := s.EarliestMessageTime("T", 0); err != nil || ts != base+1000 {
		t.Fatalf("earliest %d %v", ts, err)
	}
	if ts, _ := s.StoreTimeByQueueOffset("T", 0, 9); ts != base+10_000 {
		t.Fatalf("store time at 9: %d", ts)
	}
}

// TestCleanupExpiredFiles covers 7.1/7.3/7.4 with an injected clock: files
// older than fileReservedTime are deleted at the deleteWhen hour (never the
// active one), consume queues follow and their min offset is corrected.
func TestCleanupExpiredFiles(t *testing.T) {
	var clock atomic.Int64
	y, mo, d := time.Now().Date()
	clock.Store(time.Date(y, mo, d, 10, 0, 0, 0, time.Local).UnixMilli())
	cfg := testConfig(t.TempDir())
	cfg.Now = func() time.Time { return time.UnixMilli(clock.Load()) }
	cfg.DiskUsage = func(string) (float64, error) { return 0.1, nil }
	cfg.DeleteCommitLogFilesInterval = 0
	cfg.DeleteConsumeQueueFilesInterval = 0
	cfg.DeleteWhen = "04"
	s := openStore(t, cfg)
	res := writeN(t, s, 300)
	files := len(s.commitLog.snapshot())
	if files < 4 {
		t.Fatalf("want several files, got %d", files)
	}
	s.CleanupOnce()
	if len(s.commitLog.snapshot()) != files {
		t.Fatal("deleted files outside the deleteWhen hour / before expiry")
	}
	// 04:00 four days later: every file but the active one is expired.
	clock.Store(time.Date(y, mo, d+4, 4, 0, 0, 0, time.Local).UnixMilli())
	s.CleanupOnce()
	left := s.commitLog.snapshot()
	if len(left) != 1 {
		t.Fatalf("%d files left, want only the active one", len(left))
	}
	minPhy := s.MinPhyOffset()
	if minPhy != left[0].fromOffset {
		t.Fatalf("min phy %d, want %d", minPhy, left[0].fromOffset)
	}
	firstKept := 0
	for firstKept < len(res) && res[firstKept].WroteOffset < minPhy {
		firstKept++
	}
	if got := s.MinOffsetInQueue("T", 0); got != int64(firstKept) {
		t.Fatalf("queue min offset %d, want %d", got, firstKept)
	}
	if r := s.GetMessage("g", "T", 0, 0, 1, 1<<20, nil); r.Status != OffsetTooSmall || r.NextBeginOffset != int64(firstKept) {
		t.Fatalf("read below min: %v next %d", r.Status, r.NextBeginOffset)
	}
	if r := s.GetMessage("g", "T", 0, int64(firstKept), 1, 1<<20, nil); r.Status != Found {
		t.Fatalf("read at min: %v", r.Status)
	}
	if s.Stats().FilesDeleted == 0 {
		t.Fatal("stats do not count deletions")
	}
}

// TestDiskFullRefusesWrites covers 7.2: usage above the warning level makes
// the store refuse writes until usage drops.
func TestDiskFullRefusesWrites(t *testing.T) {
	var usage atomic.Value
	usage.Store(0.95)
	cfg := testConfig(t.TempDir())
	cfg.DiskUsage = func(string) (float64, error) { return usage.Load().(float64), nil }
	s := openStore(t, cfg)
	s.CleanupOnce()
	if r := put(t, s, newMsg("T", 0, "x", nil)); r.Status != ServiceNotAvailable {
		t.Fatalf("disk full: %v", r.Status)
	}
	usage.Store(0.5)
	s.CleanupOnce()
	mustPut(t, s, newMsg("T", 0, "x", nil))
}

// TestArrivalListenerIsPrompt: a listener hears about a message within a
// few milliseconds of its put (long polling depends on it).
func TestArrivalListenerIsPrompt(t *testing.T) {
	for _, v := range variants[:2] {
		t.Run(v.name, func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			v.apply(&cfg)
			s := openStore(t, cfg)
			got := make(chan int64, 16)
			s.AddArrivalListener(func(topic string, q int32, qo, tags, ts int64, props map[string]string) {
				if topic == "L" {
					got <- qo
				}
			})
			var worst time.Duration
			for i := 0; i < 20; i++ {
				start := time.Now()
				s.PutMessage(newMsg("L", 0, "x", nil), func(PutResult) {})
				select {
				case qo := <-got:
					if qo != int64(i) {
						t.Fatalf("listener got offset %d, want %d", qo, i)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("no arrival notification")
				}
				worst = max(worst, time.Since(start))
			}
			t.Logf("worst put-to-arrival latency %v", worst)
			if v.name == "async" && worst > 50*time.Millisecond {
				t.Fatalf("dispatch is not prompt: %v", worst)
			}
		})
	}
}

// TestDeleteTopics removes the consume queues of a topic.
func TestDeleteTopics(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := openStore(t, cfg)
	mustPut(t, s, newMsg("Gone", 0, "x", nil))
	waitDispatched(t, s, "Gone", 0, 1)
	if err := s.DeleteTopics([]string{"Gone"}); err != nil {
		t.Fatal(err)
	}
	if s.MaxOffsetInQueue("Gone", 0) != 0 {
		t.Fatal("queue still there")
	}
	if _, err := os.Stat(filepath.Join(cfg.StorePathRootDir, consumeQueueDirName, "Gone")); !os.IsNotExist(err) {
		t.Fatalf("queue directory left: %v", err)
	}
	if r := mustPut(t, s, newMsg("Gone", 0, "y", nil)); r.QueueOffset != 0 {
		t.Fatalf("offset after delete %d", r.QueueOffset)
	}
}

// TestConfigValidate names bad keys.
func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		ok     bool
	}{
		{"defaults", func(*Config) {}, true},
		{"bad flush type", func(c *Config) { c.FlushDiskType = "SOMETIMES" }, false},
		{"bad deleteWhen", func(c *Config) { c.DeleteWhen = "25" }, false},
		{"bad delay level", func(c *Config) { c.MessageDelayLevel = "1s 5x" }, false},
		{"tiny commit log", func(c *Config) { c.MappedFileSizeCommitLog = 1000 }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.StorePathRootDir = t.TempDir()
			tc.mutate(&c)
			if err := c.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate: %v", err)
			}
		})
	}
	c := DefaultConfig()
	c.MappedFileSizeConsumeQueue = 1001
	_ = c.Validate()
	if c.MappedFileSizeConsumeQueue%CQUnitSize != 0 {
		t.Fatalf("cq size not rounded: %d", c.MappedFileSizeConsumeQueue)
	}
	_ = testutil.Logger
}

// TestAppendRawCommitLogReplicates: a slave fed with ReadCommitLog chunks of
// a master ends up with an identical commit log and consume queues, and
// under either flush type each chunk is readable (MaxPhyOffset) as soon as
// the append returns.
func TestAppendRawCommitLogReplicates(t *testing.T) {
	for _, flush := range []string{AsyncFlush, SyncFlush} {
		t.Run(flush, func(t *testing.T) {
			master := openStore(t, testConfig(t.TempDir()))
			res := writeN(t, master, 150)
			slaveCfg := testConfig(t.TempDir())
			slaveCfg.BrokerRole = RoleSlave
			slaveCfg.FlushDiskType = flush
			slave := openStore(t, slaveCfg)
			for off := int64(0); off < master.MaxPhyOffset(); {
				chunk, err := master.ReadCommitLog(off, 10_000)
				if err != nil || len(chunk) == 0 {
					t.Fatalf("read master at %d: %v", off, err)
				}
				if err := slave.AppendRawCommitLog(off, chunk); err != nil {
					t.Fatalf("append at %d: %v", off, err)
				}
				off += int64(len(chunk))
				// The slave reports MaxPhyOffset to its master right after
				// the append: it must cover the chunk already, or a
				// synchronous master waits for the next report.
				if got := slave.MaxPhyOffset(); got != off {
					t.Fatalf("after a raw append up to %d the slave's max offset is %d", off, got)
				}
			}
			waitDispatched(t, slave, "T", 0, 150)
			r := slave.GetMessage("g", "T", 0, 149, 1, 1<<20, nil)
			if r.Status != Found || decode(t, r.Messages[0]).CommitLogOffset != res[149].WroteOffset {
				t.Fatalf("slave read: %v", r.Status)
			}
			if err := slave.AppendRawCommitLog(0, []byte{1}); err == nil {
				t.Fatal("append at a wrong offset accepted")
			}
			if p := put(t, slave, newMsg("T", 0, "x", nil)); p.Status != ServiceNotAvailable {
				t.Fatalf("put on a slave: %v", p.Status)
			}
		})
	}
}

// TestConfigFromBrokerConf: broker.conf keys apply to Config through
// internal/config, durations as RocketMQ milliseconds.
func TestConfigFromBrokerConf(t *testing.T) {
	props, err := config.Parse(strings.NewReader(strings.Join([]string{
		"storePathRootDir=/data/store", "flushDiskType=SYNC_FLUSH", "syncFlushTimeout=3000",
		"mappedFileSizeCommitLog=268435456", "fileReservedTime=48", "deleteWhen=04;16",
		"transientStorePoolEnable=true", "maxMessageSize=1048576", "osPageCacheBusyTimeOutMills=2000",
	}, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	unknown, err := config.Apply(props, &cfg)
	if err != nil || len(unknown) != 0 {
		t.Fatalf("apply: %v unknown=%v", err, unknown)
	}
	if cfg.FlushDiskType != SyncFlush || cfg.SyncFlushTimeout != 3*time.Second || cfg.FileReservedTime != 48 ||
		cfg.MappedFileSizeCommitLog != 256<<20 || !cfg.TransientStorePoolEnable || cfg.OSPageCacheBusyTimeOutMills != 2*time.Second {
		t.Fatalf("config not applied: %+v", cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if m := config.ToMap(&cfg); m["flushIntervalCommitLog"] != "500" || m["brokerRole"] != "ASYNC_MASTER" {
		t.Fatalf("ToMap: %v", m)
	}
}

// TestHostForms covers 2.3: IPv4, IPv6 and missing born/store hosts are
// stored with the right sysflag bits and read back, and the store
// timestamp is found at its shifted position.
func TestHostForms(t *testing.T) {
	tests := []struct {
		name        string
		born, store string
	}{
		{"v4/v4", "192.168.0.1:1000", "10.0.0.1:10911"},
		{"v6/v4", "[2001:db8::1]:1000", "10.0.0.1:10911"},
		{"v4/v6", "192.168.0.1:1000", "[2001:db8::2]:10911"},
		{"v6/v6", "[2001:db8::1]:1000", "[2001:db8::2]:10911"},
		{"none/v4", "", "10.0.0.1:10911"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			cfg.StoreHost = netip.MustParseAddrPort(tc.store)
			var clock atomic.Int64
			clock.Store(1_800_000_000_000)
			cfg.Now = func() time.Time { return time.UnixMilli(clock.Load()) }
			s := openStore(t, cfg)
			m := newMsg("H", 0, "body", nil)
			m.BornHost = netip.AddrPort{}
			if tc.born != "" {
				m.BornHost = netip.MustParseAddrPort(tc.born)
			}
			r := mustPut(t, s, m)
			got, err := s.LookMessageByOffset(r.WroteOffset)
			if err != nil {
				t.Fatal(err)
			}
			if got.StoreHost != cfg.StoreHost || (tc.born != "" && got.BornHost != m.BornHost) {
				t.Fatalf("hosts %v / %v", got.BornHost, got.StoreHost)
			}
			if got.StoreTimestamp != 1_800_000_000_000 {
				t.Fatalf("store timestamp %d", got.StoreTimestamp)
			}
			waitDispatched(t, s, "H", 0, 1)
			if ts, _ := s.StoreTimeByQueueOffset("H", 0, 0); ts != 1_800_000_000_000 {
				t.Fatalf("store time via queue %d", ts)
			}
			if r.MsgID != "" { // a single put's id is built from WroteOffset by its reader
				t.Fatalf("msg id %s", r.MsgID)
			}
		})
	}
}

// TestCreateMappedFileFailed: when the next commit-log file cannot be
// created the put answers CREATE_MAPPED_FILE_FAILED, nothing is written, and
// puts succeed again once the obstacle is gone.
func TestCreateMappedFileFailed(t *testing.T) {
	cfg := testConfig(t.TempDir())
	// A directory squats on the second file's name.
	obstacle := filepath.Join(cfg.commitLogDir(), fileName(cfg.MappedFileSizeCommitLog))
	if err := os.MkdirAll(obstacle, 0o755); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, cfg)
	var last PutResult
	for i := 0; i < 200; i++ {
		last = put(t, s, newMsg("T", 0, string(make([]byte, 900)), nil))
		if last.Status != PutOK {
			break
		}
	}
	if last.Status != CreateMappedFileFailed {
		t.Fatalf("status %v when the next file cannot be created", last.Status)
	}
	before := s.MaxPhyOffset()
	if err := os.Remove(obstacle); err != nil {
		t.Fatal(err)
	}
	r := mustPut(t, s, newMsg("T", 0, "after", nil))
	if r.WroteOffset != cfg.MappedFileSizeCommitLog {
		t.Fatalf("append after recovery at %d (max was %d)", r.WroteOffset, before)
	}
}

// TestAdminLookups covers the small admin helpers: commit-log offset of a
// queue offset, the assigned (not yet dispatched) offset, and removal of
// queues whose messages all expired.
func TestAdminLookups(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := openStore(t, cfg)
	res := writeN(t, s, 150)
	late := int64(0)
	for s.commitLog.last().fromOffset <= res[149].WroteOffset {
		mustPut(t, s, newMsg("Late", 0, string(make([]byte, 900)), nil))
		late++
	}
	if off, err := s.CommitLogOffsetInQueue("T", 0, 7); err != nil || off != res[7].WroteOffset {
		t.Fatalf("offset in queue: %d %v", off, err)
	}
	if _, err := s.CommitLogOffsetInQueue("T", 0, 999); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing offset: %v", err)
	}
	if got := s.AssignedOffsetInQueue("T", 0); got != 150 {
		t.Fatalf("assigned offset %d", got)
	}
	waitDispatched(t, s, "Late", 0, late)
	var clock atomic.Int64
	clock.Store(time.Now().Add(100 * time.Hour).UnixMilli())
	s.cfg.Now = func() time.Time { return time.UnixMilli(clock.Load()) }
	s.cfg.DiskUsage = func(string) (float64, error) { return 0.5, nil }
	s.cfg.DeleteCommitLogFilesInterval = 0
	s.cfg.DeleteWhen = strconv.Itoa(time.UnixMilli(clock.Load()).Hour())
	s.CleanupOnce()
	if n := s.CleanExpiredConsumeQueues(); n != 1 {
		t.Fatalf("removed %d queues, want 1 (T)", n)
	}
	if s.MaxOffsetInQueue("T", 0) != 0 || s.MaxOffsetInQueue("Late", 0) != late {
		t.Fatal("wrong queue removed")
	}
}

// TestPutMessagesPooledBufferReuse interleaves batches and single puts,
// which share the store's pooled encode buffers, and reads every message
// back: a buffer reused before its records were in the commit log would
// show up as a later message's bytes in an earlier record.
func TestPutMessagesPooledBufferReuse(t *testing.T) {
	s := openStore(t, testConfig(t.TempDir()))
	ch := make(chan PutResult, 1)
	want := []string{}
	for round := 0; round < 20; round++ {
		var batch []*message.Ext
		for i := 0; i < 8+round; i++ {
			body := fmt.Sprintf("r%d-batch-%d-%s", round, i, strings.Repeat("x", 10*round))
			batch = append(batch, newMsg("P", 0, body, nil))
			want = append(want, body)
		}
		s.PutMessages(batch, func(r PutResult) { ch <- r })
		if r := <-ch; r.Status != PutOK {
			t.Fatalf("round %d batch: %+v", round, r)
		}
		single := fmt.Sprintf("r%d-single", round)
		mustPut(t, s, newMsg("P", 0, single, nil))
		want = append(want, single)
	}
	waitDispatched(t, s, "P", 0, int64(len(want)))
	for off := 0; off < len(want); {
		got := s.GetMessage("g", "P", 0, int64(off), 32, 1<<20, nil)
		if len(got.Messages) == 0 {
			t.Fatalf("offset %d: nothing read (%v), %d messages stored", off, got.Status, len(want))
		}
		for _, m := range got.Messages {
			if b := string(decode(t, m).Body); b != want[off] {
				t.Fatalf("offset %d: body %q, want %q", off, b, want[off])
			}
			off++
		}
	}
}
