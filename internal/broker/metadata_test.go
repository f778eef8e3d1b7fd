package broker

import (
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/config"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

func fixedNow() time.Time { return time.UnixMilli(1700000000000) }

// TestReadJavaConsumerOffsetFile reads consumerOffset.json as a Java broker
// writes it, with bare numeric queue ids and extra derived keys
// (docs/storage.md §8).
func TestReadJavaConsumerOffsetFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "consumerOffset.json")
	java := `{
	"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1700000000000},
	"offsetTable":{
		"TopicTest@group_a":{0:1200,1:1187,2:1210,3:1199},
		"%RETRY%group_a@group_a":{0:3}
	},
	"groupTopicMap":{"group_a":["TopicTest"]}
}`
	if err := os.WriteFile(path, []byte(java), 0o644); err != nil {
		t.Fatal(err)
	}
	m := newConsumerOffsetManager(path, testutil.Logger(t), fixedNow, 500)
	if err := m.load(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		group, topic string
		queue        int32
		want         int64
	}{
		{"group_a", "TopicTest", 0, 1200},
		{"group_a", "TopicTest", 3, 1199},
		{"group_a", "%RETRY%group_a", 0, 3},
	}
	for _, tc := range tests {
		if got, ok := m.Query(tc.group, tc.topic, tc.queue); !ok || got != tc.want {
			t.Errorf("%s@%s/%d = %d, %v; want %d", tc.topic, tc.group, tc.queue, got, ok, tc.want)
		}
	}
	if got := m.TopicsOfGroup("group_a"); len(got) != 2 {
		t.Errorf("topics of group = %v", got)
	}
}

// TestPersistKeepsBackupAndFallsBack: writes keep the previous version as
// .bak, and a corrupt or missing main file falls back to it.
func TestPersistKeepsBackupAndFallsBack(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "consumerOffset.json")
	m := newConsumerOffsetManager(path, testutil.Logger(t), fixedNow, 500)
	m.Commit("g", "T", 0, 5)
	if err := m.persist(false); err != nil {
		t.Fatal(err)
	}
	m.Commit("g", "T", 0, 9)
	if err := m.persist(false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".bak"); err != nil {
		t.Fatalf("no backup: %v", err)
	}
	for _, tc := range []struct {
		name    string
		corrupt func()
		want    int64
	}{
		{"intact", func() {}, 9},
		{"truncated main file", func() { os.WriteFile(path, []byte(`{"offsetTable":{"T@g":{0:`), 0o644) }, 5},
		{"empty main file", func() { os.WriteFile(path, nil, 0o644) }, 5},
		{"missing main file", func() { os.Remove(path) }, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.corrupt()
			m2 := newConsumerOffsetManager(path, testutil.Logger(t), fixedNow, 500)
			if err := m2.load(); err != nil {
				t.Fatal(err)
			}
			if got, _ := m2.Query("g", "T", 0); got != tc.want {
				t.Fatalf("offset = %d, want %d", got, tc.want)
			}
		})
	}
	os.Remove(path + ".bak")
	os.WriteFile(path, []byte("not json"), 0o644)
	if err := newConsumerOffsetManager(path, testutil.Logger(t), fixedNow, 500).load(); err == nil {
		t.Fatal("unreadable file without backup loaded silently")
	}
}

func TestTopicManagerAutoCreateRules(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BrokerName = "broker-a"
	m := newTopicConfigManager(filepath.Join(t.TempDir(), "topics.json"), testutil.Logger(t), fixedNow)
	if err := m.ensureSystemTopics(&cfg); err != nil {
		t.Fatal(err)
	}
	v0 := m.DataVersion()
	for _, name := range []string{names.TopicAutoCreate, names.TopicSelfTest, names.TopicSchedule, "DefaultCluster", "broker-a", names.TopicTransHalf} {
		if !m.Contains(name) {
			t.Errorf("system topic %s missing", name)
		}
	}
	if tc, _ := m.Get(names.TopicSchedule); tc.WriteQueueNums != 18 {
		t.Errorf("schedule topic queues = %d, want one per delay level", tc.WriteQueueNums)
	}
	tests := []struct {
		name, topic, template string
		clientQueues          int32
		autoCreate            bool
		wantOK                bool
		wantQueues            int32
	}{
		{"capped by client", "A", names.TopicAutoCreate, 4, true, true, 4},
		{"capped by template", "B", names.TopicAutoCreate, 100, true, true, 8},
		{"auto-create disabled", "C", names.TopicAutoCreate, 4, false, false, 0},
		{"template without inherit", "D", names.TopicSelfTest, 4, true, false, 0},
		{"unknown template", "E", "NoSuchTopic", 4, true, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := m.CreateInSendMessage(tc.topic, tc.template, tc.clientQueues, 0, tc.autoCreate)
			if err != nil || ok != tc.wantOK {
				t.Fatalf("ok = %v err = %v, want ok %v", ok, err, tc.wantOK)
			}
			if ok && (got.WriteQueueNums != tc.wantQueues || got.Perm != protocol.PermRead|protocol.PermWrite) {
				t.Fatalf("created %+v", got)
			}
		})
	}
	if v := m.DataVersion(); v.Counter <= v0.Counter {
		t.Errorf("data version not bumped: %+v -> %+v", v0, v)
	}
	// Reload from disk.
	m2 := newTopicConfigManager(m.path, testutil.Logger(t), fixedNow)
	if err := m2.load(); err != nil {
		t.Fatal(err)
	}
	if tc, ok := m2.Get("B"); !ok || tc.WriteQueueNums != 8 {
		t.Fatalf("reloaded B = %+v, %v", tc, ok)
	}
	if m2.DataVersion() != m.DataVersion() {
		t.Fatalf("reloaded version %+v != %+v", m2.DataVersion(), m.DataVersion())
	}
	// Disabling auto-creation strips INHERIT from an existing template.
	cfg.AutoCreateTopicEnable = false
	if err := m2.ensureSystemTopics(&cfg); err != nil {
		t.Fatal(err)
	}
	if tc, _ := m2.Get(names.TopicAutoCreate); tc.Perm&protocol.PermInherit != 0 {
		t.Fatalf("TBW102 perm = %d after disabling auto-creation", tc.Perm)
	}
}

func TestSubscriptionGroupManager(t *testing.T) {
	path := filepath.Join(t.TempDir(), "subscriptionGroup.json")
	m := newSubscriptionGroupManager(path, testutil.Logger(t), fixedNow)
	if err := m.ensureSystemGroups(); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := m.FindOrCreate("new_group", false); ok {
		t.Fatal("created without autoCreate")
	}
	if _, ok, _ := m.FindOrCreate("bad group!", true); ok {
		t.Fatal("created an invalid name")
	}
	g, ok, err := m.FindOrCreate("new_group", true)
	if err != nil || !ok || g.RetryMaxTimes != 16 || g.RetryQueueNums != 1 || !g.ConsumeEnable {
		t.Fatalf("group = %+v, %v, %v", g, ok, err)
	}
	g.ConsumeEnable = false
	if err := m.Update(g); err != nil {
		t.Fatal(err)
	}
	m2 := newSubscriptionGroupManager(path, testutil.Logger(t), fixedNow)
	if err := m2.load(); err != nil {
		t.Fatal(err)
	}
	if g2, ok := m2.Get("new_group"); !ok || g2.ConsumeEnable {
		t.Fatalf("reloaded = %+v, %v", g2, ok)
	}
	if _, ok := m2.Get(names.GroupToolsConsumer); !ok {
		t.Fatal("system group not persisted")
	}
}

func TestValidateNames(t *testing.T) {
	tests := []struct {
		name   string
		topic  string
		wantOK bool
	}{
		{"plain", "TopicTest", true},
		{"all allowed characters", "a-b_c|d%e9", true},
		{"blank", "", false},
		{"space", "a b", false},
		{"dot", "a.b", false},
		{"127 chars", strings.Repeat("a", 127), true},
		{"128 chars", strings.Repeat("a", 128), false},
		{"long retry topic", "%RETRY%" + strings.Repeat("g", 200), true},
		{"too long retry topic", "%RETRY%" + strings.Repeat("g", 249), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := names.ValidateTopic(tc.topic)
			if (err == nil) != tc.wantOK {
				t.Fatalf("ValidateTopic(%q) = %v", tc.topic, err)
			}
			if err != nil && !errors.Is(err, names.ErrInvalid) {
				t.Fatalf("error %v does not wrap names.ErrInvalid", err)
			}
		})
	}
	if names.ValidateGroup(strings.Repeat("g", 121)) == nil || names.ValidateGroup("group_a") != nil {
		t.Fatal("group length limit")
	}
}

func TestConfigApplyProperties(t *testing.T) {
	props, err := config.Parse(strings.NewReader("brokerName=broker-b\nlistenPort=20911\nflushDiskType=SYNC_FLUSH\n" +
		"storePathRootDir=/tmp/x\nnamesrvAddr=127.0.0.1:9876;127.0.0.1:9877\nwaitTimeMillsInSendQueue=500\nnoSuchKey=1\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	unknown, err := cfg.ApplyProperties(props)
	if err != nil {
		t.Fatal(err)
	}
	if len(unknown) != 1 || unknown[0] != "noSuchKey" {
		t.Fatalf("unknown = %v", unknown)
	}
	if cfg.BrokerName != "broker-b" || cfg.ListenPort != 20911 || cfg.Store.FlushDiskType != "SYNC_FLUSH" ||
		cfg.Store.StorePathRootDir != "/tmp/x" || len(cfg.NamesrvAddr) != 2 || cfg.WaitTimeMillsInSendQueue != 500*time.Millisecond {
		t.Fatalf("cfg = %+v", cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	m := cfg.ToMap()
	if m["flushDiskType"] != "SYNC_FLUSH" || m["waitTimeMillsInSendQueue"] != "500" || m["brokerName"] != "broker-b" {
		t.Fatalf("ToMap = %v", m)
	}

	bad, _ := config.Parse(strings.NewReader("listenPort=abc\n"))
	if _, err := cfg.ApplyProperties(bad); err == nil || !strings.Contains(err.Error(), "listenPort") || !strings.Contains(err.Error(), "abc") {
		t.Fatalf("err = %v, want one naming key and value", err)
	}
	for _, tc := range []struct{ key, value string }{
		{"brokerPermission", "9"}, {"brokerName", "bad name"}, {"flushDiskType", "SOMETIMES"}, {"brokerIP1", "host"},
	} {
		c := DefaultConfig()
		if _, err := c.SetKey(tc.key, tc.value); err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("Validate with %s=%s: %v", tc.key, tc.value, err)
		}
	}
}

func TestSubscriptionNormalization(t *testing.T) {
	// Subscriptions are normalised with Java hash codes whatever the client
	// sent (docs/protocol.md §9.4 #23).
	s := normalizeSubscription(protocol.SubscriptionData{Topic: "T", SubString: "TagA || TagB", CodeSet: protocol.CodeSet{1}})
	if s.ExpressionType != "TAG" || len(s.CodeSet) != 2 || s.CodeSet[0] != 2598919 {
		t.Fatalf("normalised = %+v", s)
	}
	all := normalizeSubscription(protocol.SubscriptionData{Topic: "T", SubString: ""})
	if f := newTagFilter(&all); !f.MatchTagsCode(12345) {
		t.Fatal("empty expression must match everything")
	}
	f := newTagFilter(&s)
	if !f.MatchTagsCode(2598919) || f.MatchTagsCode(0) {
		t.Fatal("tag filter")
	}
}

// TestOffsetsRemoveTopicByIndex: RemoveTopic and RemoveGroup drop exactly
// the matching entries through the per-topic index, which follows
// commits, removals, a reload and a master's merge.
func TestOffsetsRemoveTopicByIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "consumerOffset.json")
	m := newConsumerOffsetManager(path, testutil.Logger(t), fixedNow, 500)
	for _, g := range []string{"g1", "g2"} {
		for _, topic := range []string{"A", "B", "x@y"} {
			m.Commit(g, topic, 0, 1)
			m.Commit(g, topic, 1, 2)
		}
	}
	m.RemoveTopic("A")
	m.RemoveTopic("missing")
	if _, ok := m.Query("g1", "A", 0); ok {
		t.Fatal("A@g1 kept after RemoveTopic(A)")
	}
	if got := m.GroupsOfTopic("A"); len(got) != 0 {
		t.Fatalf("groups of a removed topic: %v", got)
	}
	if off, ok := m.Query("g2", "B", 1); !ok || off != 2 {
		t.Fatalf("B@g2 lost: %d %v", off, ok)
	}
	m.RemoveGroup("g1")
	if got := m.GroupsOfTopic("x@y"); len(got) != 1 || got[0] != "g2" {
		t.Fatalf("groups of x@y after RemoveGroup(g1): %v", got)
	}
	m.Commit("g1", "A", 0, 7) // re-created after removal
	if err := m.persist(false); err != nil {
		t.Fatal(err)
	}
	m2 := newConsumerOffsetManager(path, testutil.Logger(t), fixedNow, 500)
	if err := m2.load(); err != nil {
		t.Fatal(err)
	}
	for topic, want := range map[string]int{"A": 1, "B": 1, "x@y": 1} {
		if got := m2.GroupsOfTopic(topic); len(got) != want {
			t.Fatalf("after reload, groups of %s: %v, want %d", topic, got, want)
		}
	}
	m2.RemoveTopic("x@y")
	if _, ok := m2.Query("g2", "x@y", 0); ok {
		t.Fatal("x@y@g2 kept after RemoveTopic on a reloaded table")
	}
	if off, ok := m2.Query("g1", "A", 0); !ok || off != 7 {
		t.Fatalf("A@g1 after reload: %d %v", off, ok)
	}
}

// TestOffsetsJSON: consumerOffset.json as persist writes it reads back
// (with the loader, and with encoding/json) as the table it was made of,
// for empty tables, many queues per key and keys that need escaping.
func TestOffsetsJSON(t *testing.T) {
	for _, tc := range []struct {
		name    string
		commits map[string]map[int32]int64 // "topic@group" -> offsets
	}{
		{"empty", nil},
		{"one", map[string]map[int32]int64{"T@G": {0: 5}}},
		{"queues", map[string]map[int32]int64{"T@G": {0: 5, 1: 0, 7: 1 << 40}, "%LMQ%$P$s-1@LG": {0: 1}, "%RETRY%G@G": {0: 3}}},
		{"escaped", map[string]map[int32]int64{"t\"q\\<&>\u00e9\n@g": {2: 9}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "consumerOffset.json")
			m := newConsumerOffsetManager(path, testutil.Logger(t), fixedNow, 1)
			for k, q := range tc.commits {
				topic, group, _ := splitOffsetKey(k)
				for id, off := range q {
					m.Commit(group, topic, id, off)
				}
			}
			if err := m.persist(true); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var w protocol.ConsumerOffsetWrapper
			if err := json.Unmarshal(data, &w); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, data)
			}
			if len(w.OffsetTable) != len(tc.commits) || w.DataVersion == nil || *w.DataVersion != *m.Wrapper().DataVersion {
				t.Fatalf("read back %+v (version %+v), want %v", w.OffsetTable, w.DataVersion, tc.commits)
			}
			m2 := newConsumerOffsetManager(path, testutil.Logger(t), fixedNow, 1)
			if err := m2.load(); err != nil {
				t.Fatal(err)
			}
			for k, q := range tc.commits {
				topic, group, _ := splitOffsetKey(k)
				for id, off := range q {
					if got, ok := m2.Query(group, topic, id); !ok || got != off || w.OffsetTable[k][id] != off {
						t.Fatalf("%s queue %d: loaded %d %v, json %d, want %d", k, id, got, ok, w.OffsetTable[k][id], off)
					}
				}
			}
		})
	}
}

// BenchmarkOffsetsPersist: consumerOffset.json with 300,000 keys (three
// groups over 10^5 lite topics). lock-ms is how long the copy holds the
// table's lock (every commit, and so every ack, waits that long).
func BenchmarkOffsetsPersist(b *testing.B) {
	path := filepath.Join(b.TempDir(), "consumerOffset.json")
	m := newConsumerOffsetManager(path, slog.New(slog.DiscardHandler), fixedNow, 500)
	for g := range 3 {
		for i := range 100_000 {
			m.Commit("LiteGroup"+strconv.Itoa(g), "%LMQ%$LiteParent$session-"+strconv.Itoa(i), 0, int64(i))
		}
	}
	var lock time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		m.flat()
		lock += time.Since(t0)
		if err := m.persist(true); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(lock.Milliseconds())/float64(b.N), "lock-ms")
}
