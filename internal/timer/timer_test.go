package timer

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/store"
	"github.com/apogeemq/apogee/internal/testutil"
)

func storeConfig(dir string) store.Config {
	cfg := store.DefaultConfig()
	cfg.StorePathRootDir = dir
	cfg.MappedFileSizeCommitLog = 1 << 20
	cfg.MappedFileSizeConsumeQueue = 1000 * store.CQUnitSize
	cfg.MaxMessageSize = 8 << 10
	cfg.MessageIndexEnable = false
	cfg.FlushIntervalCommitLog = 10 * time.Millisecond
	cfg.FlushIntervalConsumeQueue = 20 * time.Millisecond
	cfg.CleanupInitialDelay = time.Hour
	cfg.StoreHost = netip.MustParseAddrPort("127.0.0.1:10911")
	return cfg
}

func timerConfig(dir string, precisionMs int64) Config {
	cfg := DefaultConfig()
	cfg.Dir = filepath.Join(dir, "timerlog")
	cfg.CheckpointPath = filepath.Join(dir, "config", "timercheck")
	cfg.PrecisionMs = precisionMs
	cfg.LogFileSize = 200 * recordSize
	cfg.FlushInterval = 50 * time.Millisecond
	return cfg
}

// deliveries records messages arriving in the real topic.
type deliveries struct {
	mu   sync.Mutex
	at   map[string][]int64 // body -> arrival times (ms)
	want map[string]int64   // body -> deliver time
}

func newDeliveries() *deliveries {
	return &deliveries{at: map[string][]int64{}, want: map[string]int64{}}
}

func (d *deliveries) listener(topic string) func(string, int32, int64, int64, int64, map[string]string) {
	return func(tp string, _ int32, _ int64, _ int64, storeTs int64, props map[string]string) {
		if tp != topic {
			return
		}
		d.mu.Lock()
		d.at[props["ID"]] = append(d.at[props["ID"]], storeTs)
		d.mu.Unlock()
	}
}

func (d *deliveries) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.at)
}

type env struct {
	dir string
	st  *store.Store
	tm  *Timer
}

func openEnv(t testing.TB, dir string, precisionMs int64, d *deliveries) *env {
	t.Helper()
	st, err := store.New(storeConfig(dir), testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	if d != nil {
		st.AddArrivalListener(d.listener("Real"))
	}
	tm, err := New(timerConfig(dir, precisionMs), st, testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := tm.Start(); err != nil {
		t.Fatal(err)
	}
	e := &env{dir: dir, st: st, tm: tm}
	t.Cleanup(e.close)
	return e
}

func (e *env) close() {
	e.tm.Close()
	e.st.Close()
}

// putTimer sends one timer message through Rewrite and the store.
func (e *env) putTimer(t testing.TB, id string, deliverMs int64, precisionMs int64) {
	t.Helper()
	m := &message.Ext{QueueID: 1, BornTimestamp: time.Now().UnixMilli(), BornHost: netip.MustParseAddrPort("127.0.0.1:5555")}
	m.Topic = "Real"
	m.Body = []byte("body-" + id)
	m.Properties = map[string]string{"ID": id, message.PropertyTimerDeliverMS: strconv.FormatInt(deliverMs, 10)}
	if _, err := Rewrite(m, time.Now().UnixMilli(), precisionMs, DefaultConfig().MaxDelay.Milliseconds()); err != nil {
		t.Fatal(err)
	}
	done := make(chan store.PutResult, 1)
	e.st.PutMessage(m, func(r store.PutResult) { done <- r })
	if r := <-done; r.Status != store.PutOK {
		t.Fatalf("put: %v", r.Status)
	}
}

// TestDeliverWithinPrecision: timer messages reach their real topic no
// earlier than their delivery time and within about one precision step
// (docs/broker.md §1.9), with the documented properties.
func TestDeliverWithinPrecision(t *testing.T) {
	const precision = 100
	d := newDeliveries()
	e := openEnv(t, t.TempDir(), precision, d)
	start := time.Now().UnixMilli()
	const n = 40
	for i := range n {
		id := strconv.Itoa(i)
		deliver := start + 200 + int64(i)*25
		d.want[id] = deliver
		e.putTimer(t, id, deliver, precision)
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return d.count() == n }, "deliveries")
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, at := range d.at {
		if len(at) != 1 {
			t.Errorf("message %s delivered %d times", id, len(at))
		}
		late := at[0] - d.want[id]
		if late < 0 {
			t.Errorf("message %s delivered %d ms early", id, -late)
		}
		if late > precision+1000 { // generous: shared CI machine under -race
			t.Errorf("message %s delivered %d ms late", id, late)
		}
	}
	// The delivered message is the real one, cleaned as RocketMQ does.
	res := e.st.GetMessage("g", "Real", 1, 0, 1, 0, nil)
	if res.Status != store.Found {
		t.Fatalf("real topic: %v", res.Status)
	}
	m, _, err := message.DecodeStored(res.Messages[0], message.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := m.Properties
	if p["REAL_TOPIC"] != "" || p["REAL_QID"] != "" || p["TIMER_OUT_MS"] == "" || p["TIMER_ENQUEUE_MS"] == "" ||
		p["TIMER_DEQUEUE_MS"] == "" || string(m.Body) != "body-"+p["ID"] || m.QueueID != 1 {
		t.Fatalf("delivered message %s/%d props %v body %q", m.Topic, m.QueueID, p, m.Body)
	}
	if s := e.tm.Stats(); s.Pending != 0 || s.Delivered != n || s.Enqueued != n {
		t.Fatalf("stats %+v", s)
	}
}

// TestSurviveRestart: timers pending at a clean close are delivered after
// the restart, each exactly once, and log files of delivered slots are
// deleted.
func TestSurviveRestart(t *testing.T) {
	const precision = 100
	dir := t.TempDir()
	d := newDeliveries()
	e := openEnv(t, dir, precision, d)
	start := time.Now().UnixMilli()
	const n = 1000
	for i := range n {
		id := strconv.Itoa(i)
		deliver := start + 100 + int64(i)*2 // spread over ~2 s
		d.want[id] = deliver
		e.putTimer(t, id, deliver, precision)
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return d.count() > 50 }, "first deliveries")
	e.close()
	if s := e.tm.Stats(); s.Pending+int64(d.count()) < n-int64(s.InFlight) {
		t.Logf("at close: %+v, delivered %d", s, d.count())
	}
	closedAt := e.tm.Stats()
	if closedAt.LogFlushPos < closedAt.Enqueued*recordSize {
		t.Errorf("log flushed up to %d at close, %d records enqueued", closedAt.LogFlushPos, closedAt.Enqueued)
	}
	e2 := openEnv(t, dir, precision, d)
	if pos := e2.tm.Stats().LogFlushPos; pos != closedAt.LogFlushPos {
		t.Errorf("log flush position %d after restart, %d at close", pos, closedAt.LogFlushPos)
	}
	testutil.Eventually(t, 15*time.Second, func() bool { return d.count() == n }, "all deliveries after restart")
	// Give a duplicate the chance to show up.
	testutil.Eventually(t, 5*time.Second, func() bool { return e2.tm.Stats().Pending == 0 && e2.tm.Stats().QueueBehind == 0 }, "drained")
	d.mu.Lock()
	for id, at := range d.at {
		if len(at) != 1 {
			t.Errorf("message %s delivered %d times", id, len(at))
		}
		if at[0] < d.want[id] {
			t.Errorf("message %s delivered early", id)
		}
	}
	d.mu.Unlock()
	if got := e2.st.MaxOffsetInQueue("Real", 1); got != n {
		t.Errorf("the real queue holds %d messages, want %d", got, n)
	}
	// Old log files go once their slots are delivered.
	testutil.Eventually(t, 5*time.Second, func() bool {
		entries, _ := os.ReadDir(filepath.Join(dir, "timerlog"))
		return len(entries) <= 2
	}, "timer log files deleted")
}

// TestCrashRecoveryUnsyncedTail: records past the checkpoint's flushPos are
// discarded and re-enqueued from the checkpoint's queue offset, so nothing
// is lost or doubled.
func TestCrashRecoveryUnsyncedTail(t *testing.T) {
	dir := t.TempDir()
	cfg := timerConfig(dir, 1000)
	l, err := openLog(cfg.Dir, cfg.LogFileSize, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 300 { // crosses a file boundary (200 records per file)
		r := record{prevPos: -1, writeMs: 1000, slotMs: 5000 + int64(i%3)*1000, phyOffset: int64(i) * 100, msgSize: 100, queueOffset: int64(i)}
		if _, err := l.append(&r); err != nil {
			t.Fatal(err)
		}
	}
	synced := l.writePos
	if err := l.sync(); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		r := record{prevPos: -1, writeMs: 1000, slotMs: 9000, phyOffset: int64(i), msgSize: 1}
		if _, err := l.append(&r); err != nil {
			t.Fatal(err)
		}
	}
	l.close()
	l2, err := openLog(cfg.Dir, cfg.LogFileSize, synced)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.close()
	if l2.writePos != synced {
		t.Fatalf("writePos = %d, want %d", l2.writePos, synced)
	}
	count := 0
	if err := l2.scan(l2.writePos, func(pos int64, r record) {
		if r.queueOffset != int64(count) {
			t.Fatalf("record %d has queue offset %d", count, r.queueOffset)
		}
		count++
	}); err != nil {
		t.Fatal(err)
	}
	if count != 300 {
		t.Fatalf("scanned %d records, want 300", count)
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config", "timercheck")
	want := checkpoint{doneMs: 1234000, flushPos: 52 * 7, queueOffset: 99}
	if err := storeCheckpoint(path, want); err != nil {
		t.Fatal(err)
	}
	got, ok, err := loadCheckpoint(path)
	if err != nil || !ok || got != want {
		t.Fatalf("loaded %+v %v %v", got, ok, err)
	}
	b, _ := os.ReadFile(path)
	b[10] ^= 1
	os.WriteFile(path, b, 0o644)
	if _, _, err := loadCheckpoint(path); err == nil {
		t.Fatal("damaged checkpoint accepted")
	}
}

func TestConfigValidate(t *testing.T) {
	cfg := timerConfig(t.TempDir(), 1000)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(*Config){
		"precision": func(c *Config) { c.PrecisionMs = 0 },
		"max delay": func(c *Config) { c.MaxDelay = 0 },
		"file size": func(c *Config) { c.LogFileSize = 10 },
		"flush":     func(c *Config) { c.FlushInterval = 0 },
		"dir":       func(c *Config) { c.Dir = "" },
	} {
		c := cfg
		mutate(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: bad config accepted", name)
		}
	}
	if _, err := New(cfg, nil, nil); err == nil {
		t.Fatal("New without a store accepted")
	}
}

func TestRecordRoundTrip(t *testing.T) {
	r := record{magic: recordMagic | magicDelete, prevPos: 520, writeMs: 1_700_000_000_000, slotMs: 1_700_000_259_000, phyOffset: 1 << 40, msgSize: 321, topicHash: -5, queueOffset: 77}
	var b [recordSize]byte
	r.encode(b[:])
	got, ok := decodeRecord(b[:])
	if !ok || got != r {
		t.Fatalf("decoded %+v, want %+v", got, r)
	}
	if _, ok := decodeRecord(make([]byte, recordSize)); ok {
		t.Fatal("zero record accepted")
	}
	_ = fmt.Sprint(got)
}

// TestCancelTimer: a message with TIMER_DEL_UNIQKEY = REAL_TOPIC+UNIQ_KEY
// and the same delivery time cancels that timer; the cancel message itself
// is never delivered and other timers of the slot are (docs/broker.md §1.9 Cancel).
func TestCancelTimer(t *testing.T) {
	const precision = 100
	d := newDeliveries()
	e := openEnv(t, t.TempDir(), precision, d)
	deliver := time.Now().UnixMilli() + 400
	put := func(id string, props map[string]string) {
		m := &message.Ext{QueueID: 0, BornTimestamp: time.Now().UnixMilli(), BornHost: netip.MustParseAddrPort("127.0.0.1:5555")}
		m.Topic = "Real"
		m.Body = []byte(id)
		m.Properties = map[string]string{"ID": id, message.PropertyTimerDeliverMS: strconv.FormatInt(deliver, 10)}
		for k, v := range props {
			m.Properties[k] = v
		}
		if _, err := Rewrite(m, time.Now().UnixMilli(), precision, DefaultConfig().MaxDelay.Milliseconds()); err != nil {
			t.Fatal(err)
		}
		done := make(chan store.PutResult, 1)
		e.st.PutMessage(m, func(r store.PutResult) { done <- r })
		if r := <-done; r.Status != store.PutOK {
			t.Fatalf("put: %v", r.Status)
		}
	}
	put("keep", map[string]string{message.PropertyUniqClientMessageIDKeyidx: "U1"})
	put("cancelled", map[string]string{message.PropertyUniqClientMessageIDKeyidx: "U2"})
	put("cancel", map[string]string{message.PropertyTimerDelUniqKey: "Real+U2", message.PropertyUniqClientMessageIDKeyidx: "U3"})
	testutil.Eventually(t, 10*time.Second, func() bool {
		return e.tm.Stats().Cancelled == 1 && e.tm.Stats().Delivered == 1 && d.count() == 1
	}, "slot fired")
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.at) != 1 || len(d.at["keep"]) != 1 {
		t.Fatalf("delivered %v, want only keep", d.at)
	}
	// Cancelling after the time is refused.
	m := &message.Ext{}
	m.Topic = "Real"
	m.Properties = map[string]string{message.PropertyTimerDeliverMS: "1000", message.PropertyTimerDelUniqKey: "Real+U1"}
	if _, err := Rewrite(m, time.Now().UnixMilli(), precision, DefaultConfig().MaxDelay.Milliseconds()); err == nil {
		t.Fatal("late cancel accepted")
	}
}

// TestStartFailsCleanly: a damaged checkpoint fails Start with an error
// naming it, and Close after a failed Start is safe.
func TestStartFailsCleanly(t *testing.T) {
	dir := t.TempDir()
	st, err := store.New(storeConfig(dir), testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := timerConfig(dir, 1000)
	os.MkdirAll(filepath.Dir(cfg.CheckpointPath), 0o755)
	os.WriteFile(cfg.CheckpointPath, []byte("garbage"), 0o644)
	tm, err := New(cfg, st, testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := tm.Start(); err == nil || !strings.Contains(err.Error(), "timercheck") {
		t.Fatalf("Start = %v, want a checkpoint error naming the file", err)
	}
	if err := tm.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tm.Start(); err == nil {
		t.Fatal("Start after Close accepted")
	}
}

// TestPrecisionChangeAcrossRestart: timers parked under one
// timerPrecisionMs still fire, each once, after a restart with another
// (their slots are folded into the new grid).
func TestPrecisionChangeAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	d := newDeliveries()
	e := openEnv(t, dir, 300, d)
	start := time.Now().UnixMilli()
	const n = 200
	for i := range n {
		id := strconv.Itoa(i)
		deliver := start + 1500 + int64(i)*7
		d.want[id] = deliver
		e.putTimer(t, id, deliver, 300)
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return e.tm.Stats().Pending == n }, "enqueued")
	e.close()
	if d.count() != 0 {
		t.Fatalf("%d delivered before the restart", d.count())
	}
	e2 := openEnv(t, dir, 1000, d) // several old slots fold into one: lists merge
	testutil.Eventually(t, 10*time.Second, func() bool { return d.count() == n }, "deliveries after the precision change")
	testutil.Eventually(t, 5*time.Second, func() bool { return e2.tm.Stats().Pending == 0 }, "drained")
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, at := range d.at {
		if len(at) != 1 {
			t.Errorf("message %s delivered %d times", id, len(at))
		}
		if early := d.want[id] - at[0]; early >= 300 { // at most one old precision early
			t.Errorf("message %s delivered %d ms early", id, early)
		}
	}
}
