package broker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/testutil"
)

func topicN(i int) protocol.TopicConfig {
	return protocol.TopicConfig{TopicName: fmt.Sprintf("T%05d", i), ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}
}

func loadTopics(t *testing.T, path string) *TopicConfigManager {
	t.Helper()
	m := newTopicConfigManager(path, testutil.DiscardLogger(), time.Now)
	if err := m.load(); err != nil {
		t.Fatalf("load: %v", err)
	}
	return m
}

// TestTopicChangeLog: past syncSnapshotMax topics a change appends one line
// to topics.json.log instead of rewriting topics.json; a reload replays the
// log (creates, updates, deletes, a batch), ignores a torn last line,
// finishes an interrupted compaction, and compaction leaves a complete
// RocketMQ topics.json and no log.
func TestTopicChangeLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "topics.json")
	m := loadTopics(t, path)
	n := syncSnapshotMax + 10
	var batch []protocol.TopicConfig
	for i := 0; i < n; i++ {
		batch = append(batch, topicN(i))
	}
	if err := m.UpdateMany(batch[:syncSnapshotMax]); err != nil {
		t.Fatal(err)
	}
	st0, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range batch[syncSnapshotMax:] {
		if err := m.Update(tc); err != nil {
			t.Fatal(err)
		}
	}
	upd := topicN(3)
	upd.WriteQueueNums, upd.ReadQueueNums = 8, 8
	if err := m.Update(upd); err != nil {
		t.Fatal(err)
	}
	if ok, err := m.Delete("T00004"); !ok || err != nil {
		t.Fatalf("delete: %v %v", ok, err)
	}
	st1, _ := os.Stat(path)
	if st1.Size() != st0.Size() || !st1.ModTime().Equal(st0.ModTime()) {
		t.Fatalf("topics.json rewritten by a change past %d topics", syncSnapshotMax)
	}
	logBytes, err := os.ReadFile(path + ".log")
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(logBytes), "\n"); lines != n-syncSnapshotMax+2 {
		t.Fatalf("change log has %d lines, want %d", lines, n-syncSnapshotMax+2)
	}
	want, wantVersion := m.Snapshot()
	m.cf.close()

	// A torn append (crash mid-write) is dropped on load.
	f, _ := os.OpenFile(path+".log", os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"op":"put","key":"Torn","value":{"topicName":"To`)
	f.Close()
	check := func(m *TopicConfigManager, when string) {
		t.Helper()
		got, v := m.Snapshot()
		if len(got) != len(want) || v != wantVersion {
			t.Fatalf("%s: %d topics version %+v, want %d version %+v", when, len(got), v, len(want), wantVersion)
		}
		for k, tc := range want {
			if g, ok := got[k]; !ok || !topicConfigEqual(g, tc) {
				t.Fatalf("%s: topic %s = %+v, want %+v", when, k, g, tc)
			}
		}
	}
	m2 := loadTopics(t, path)
	check(m2, "after replay")
	if b, _ := os.ReadFile(path + ".log"); strings.Contains(string(b), "Torn") {
		t.Fatal("torn line left in the log")
	}

	// A compaction interrupted after the rotation: .old is replayed and
	// the compaction finished at load.
	m2.cf.close()
	if err := os.Rename(path+".log", path+".log.old"); err != nil {
		t.Fatal(err)
	}
	m3 := loadTopics(t, path)
	check(m3, "after interrupted compaction")
	if _, err := os.Stat(path + ".log.old"); !os.IsNotExist(err) {
		t.Fatalf(".old not removed: %v", err)
	}

	// Compaction: topics.json alone holds everything.
	if err := m3.Update(topicN(n + 1)); err != nil {
		t.Fatal(err)
	}
	want, wantVersion = m3.Snapshot()
	if err := m3.cf.compact(); err != nil {
		t.Fatal(err)
	}
	m3.cf.close()
	if b, err := os.ReadFile(path + ".log"); err == nil && len(b) > 0 {
		t.Fatalf("log not emptied by compaction: %d bytes", len(b))
	}
	var file topicsFile
	b, _ := os.ReadFile(path)
	if err := protocol.UnmarshalFastJSON(b, &file); err != nil || len(file.TopicConfigTable) != len(want) || file.DataVersion != wantVersion {
		t.Fatalf("topics.json after compaction: %d topics, version %+v, err %v", len(file.TopicConfigTable), file.DataVersion, err)
	}
	check(loadTopics(t, path), "after compaction")
}

// TestGroupChangeLog: subscription-group changes past syncSnapshotMax go
// to the log and survive a reload.
func TestGroupChangeLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "subscriptionGroup.json")
	m := newSubscriptionGroupManager(path, testutil.DiscardLogger(), time.Now)
	for i := 0; i < syncSnapshotMax+20; i++ {
		if err := m.Update(protocol.NewSubscriptionGroupConfig(fmt.Sprintf("G%05d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := m.Delete("G00007"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	m.cf.close()
	if _, err := os.Stat(path + ".log"); err != nil {
		t.Fatalf("no change log: %v", err)
	}
	m2 := newSubscriptionGroupManager(path, testutil.DiscardLogger(), time.Now)
	if err := m2.load(); err != nil {
		t.Fatal(err)
	}
	if got := len(m2.Names()); got != syncSnapshotMax+19 {
		t.Fatalf("%d groups after reload, want %d", got, syncSnapshotMax+19)
	}
	if _, ok := m2.Get("G00007"); ok {
		t.Fatal("deleted group came back")
	}
	if m2.Wrapper().DataVersion != m.Wrapper().DataVersion {
		t.Fatal("data version not restored")
	}
}

// registrations records REGISTER_BROKER bodies (a name server stand-in:
// the test is about what the broker sends).
type registrations struct {
	mu     sync.Mutex
	bodies []map[string]protocol.TopicConfig
}

func (r *registrations) last(t *testing.T, n int) []map[string]protocol.TopicConfig {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]map[string]protocol.TopicConfig(nil), r.bodies[n:]...)
}

func (r *registrations) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bodies)
}

func recordingNamesrv(t *testing.T) (*registrations, string) {
	t.Helper()
	r := &registrations{}
	s := remoting.NewServer(remoting.ServerConfig{ListenAddr: "127.0.0.1:0", Logger: testutil.DiscardLogger()})
	s.RegisterProcessor(protocol.RegisterBroker, func(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
		body, err := protocol.DecodeRegisterBrokerBody(req.Body, false, 0)
		if err != nil {
			return nil, err
		}
		r.mu.Lock()
		r.bodies = append(r.bodies, body.TopicConfigSerializeWrapper.TopicConfigTable)
		r.mu.Unlock()
		return protocol.NewResponse(req, protocol.Success, ""), nil
	}, remoting.PoolConfig{Workers: 1, QueueSize: 64})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return r, s.Addr().String()
}

// TestIncrementalRegistrationAndBatchCreate: UPDATE_AND_CREATE_TOPIC_LIST
// creates every listed topic with one request, and the registration that
// follows ships only those topics (the start-up registration shipped the
// whole table); a bad entry refuses the whole list.
func TestIncrementalRegistrationAndBatchCreate(t *testing.T) {
	regs, nsAddr := recordingNamesrv(t)
	cfg := testConfig(t, t.TempDir())
	cfg.NamesrvAddr = []string{nsAddr}
	b := startBroker(t, cfg)
	if regs.count() == 0 {
		t.Fatal("no start-up registration")
	}
	full := regs.last(t, 0)[0]
	if _, ok := full["TBW102"]; !ok {
		t.Fatalf("start-up registration lacks the system topics: %d topics", len(full))
	}
	before := regs.count()
	c := newClient(t)
	list := []protocol.TopicConfig{topicN(1), topicN(2), topicN(3)}
	body, _ := protocol.MarshalJSON(map[string]any{"topicConfigList": list})
	req := protocol.NewRequest(protocol.UpdateAndCreateTopicList, nil, body)
	mustCode(t, invoke(t, c, b.Addr(), req), protocol.Success)
	for _, tc := range list {
		if !b.Topics.Contains(tc.TopicName) {
			t.Fatalf("%s not created", tc.TopicName)
		}
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return regs.count() > before }, "no registration after the batch create")
	seen := map[string]bool{}
	for _, table := range regs.last(t, before) {
		if len(table) > len(list) {
			t.Fatalf("registration after a 3-topic change shipped %d topics", len(table))
		}
		for k := range table {
			seen[k] = true
		}
	}
	for _, tc := range list {
		if !seen[tc.TopicName] {
			t.Fatalf("%s not registered (saw %v)", tc.TopicName, seen)
		}
	}
	bad := []protocol.TopicConfig{topicN(7), {TopicName: "bad topic!", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}}
	body, _ = protocol.MarshalJSON(map[string]any{"topicConfigList": bad})
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.UpdateAndCreateTopicList, nil, body)), protocol.InvalidParameter)
	if b.Topics.Contains(topicN(7).TopicName) {
		t.Fatal("a refused list was partly applied")
	}
}

// FuzzTopicChangeLog: any bytes in topics.json.log load without panic;
// what loads is a valid table, and the log is cut to the lines applied, so
// a second load sees the same table.
func FuzzTopicChangeLog(f *testing.F) {
	f.Add([]byte(`{"op":"put","key":"A","value":{"topicName":"A","readQueueNums":1,"writeQueueNums":1,"perm":6},"dataVersion":{"counter":3}}` + "\n"))
	f.Add([]byte(`{"op":"delete","key":"A","dataVersion":{"counter":4}}` + "\n" + `{"op":"put","key":"B"`))
	f.Add([]byte("\n\n{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "topics.json")
		if err := os.WriteFile(path+".log", data, 0o644); err != nil {
			t.Fatal(err)
		}
		m := newTopicConfigManager(path, testutil.DiscardLogger(), time.Now)
		if err := m.load(); err != nil {
			return // a value that does not decode as a TopicConfig is refused
		}
		m.cf.close()
		first, v := m.Snapshot()
		m2 := newTopicConfigManager(path, testutil.DiscardLogger(), time.Now)
		if err := m2.load(); err != nil {
			t.Fatalf("second load: %v", err)
		}
		second, v2 := m2.Snapshot()
		if len(first) != len(second) || v != v2 {
			t.Fatalf("reload differs: %d/%+v then %d/%+v", len(first), v, len(second), v2)
		}
	})
}

// TestSplitRegistration: with enableSplitRegistration the full
// registration arrives in chunks of splitRegistrationSize topics that
// together hold the whole table.
func TestSplitRegistration(t *testing.T) {
	regs, nsAddr := recordingNamesrv(t)
	cfg := testConfig(t, t.TempDir())
	cfg.NamesrvAddr = []string{nsAddr}
	cfg.EnableSplitRegistration = true
	cfg.SplitRegistrationSize = 4
	b := startBroker(t, cfg)
	seen := map[string]bool{}
	for _, table := range regs.last(t, 0) {
		if len(table) > 4 {
			t.Fatalf("a chunk of %d topics, want at most 4", len(table))
		}
		for k := range table {
			seen[k] = true
		}
	}
	for _, n := range b.Topics.Names() {
		if !seen[n] {
			t.Fatalf("topic %s missing from the split registration (%d chunks)", n, regs.count())
		}
	}
	if regs.count() < 2 {
		t.Fatalf("%d registrations, want several chunks", regs.count())
	}
}
