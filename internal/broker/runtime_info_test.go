package broker

import (
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

func runtimeInfo(t *testing.T, c *remoting.Client, b *Broker) map[string]string {
	t.Helper()
	resp := invoke(t, c, b.Addr(), protocol.NewRequest(protocol.GetBrokerRuntimeInfo, nil, nil))
	mustCode(t, resp, protocol.Success)
	kv, err := protocol.DecodeKVTable(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return kv.Table
}

// statfsRatio is df's Use% of the file system holding dir.
func statfsRatio(t *testing.T, dir string) float64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	used := float64(st.Blocks-st.Bfree) * float64(st.Bsize)
	return used / (used + float64(st.Bavail)*float64(st.Bsize))
}

// TestRuntimeInfoIsMeasured: GET_BROKER_RUNTIME_INFO reports measured
// values: putTps as three Java doubles (10 s, 1 min, 10 min) that rise with
// sends, disk ratios matching statfs within a percent, the earliest message
// time, the put total.
func TestRuntimeInfoIsMeasured(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, testConfig(t, dir))
	c := newClient(t)
	before := runtimeInfo(t, c, b)
	if before["putTps"] != "0.0 0.0 0.0" {
		t.Fatalf("idle putTps = %q", before["putTps"])
	}
	start := time.Now().UnixMilli()
	const n = 30
	for i := range n {
		mustCode(t, invoke(t, c, b.Addr(), sendReq("Rt", 0, []byte("m"+strconv.Itoa(i)), nil)), protocol.Success)
	}
	info := runtimeInfo(t, c, b)
	tps := strings.Fields(info["putTps"])
	if len(tps) != 3 {
		t.Fatalf("putTps = %q, want three figures", info["putTps"])
	}
	for _, f := range tps {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || v <= 0 || !strings.Contains(f, ".") {
			t.Fatalf("putTps figure %q: want a positive Java double", f)
		}
	}
	if info["getTransferedTps"] == "" || info["getTransferedTps"] != info["getTransferredTps"] {
		t.Fatalf("getTransferedTps %q / getTransferredTps %q", info["getTransferedTps"], info["getTransferredTps"])
	}
	if info["msgPutTotalTodayNow"] != strconv.Itoa(n) {
		t.Fatalf("msgPutTotalTodayNow = %q, want %d", info["msgPutTotalTodayNow"], n)
	}
	// The store root: the consume-queue directory is made with the first
	// queue file, in the background, and may not exist yet; the broker
	// then reports the root's file system (the same one here).
	for key, d := range map[string]string{"commitLogDiskRatio": dir + "/commitlog", "consumeQueueDiskRatio": dir} {
		got, err := strconv.ParseFloat(info[key], 64)
		if err != nil {
			t.Fatalf("%s = %q", key, info[key])
		}
		if want := statfsRatio(t, d); math.Abs(got-want) > 0.01 || got <= 0 {
			t.Fatalf("%s = %v, statfs says %v", key, got, want)
		}
	}
	earliest, _ := strconv.ParseInt(info["earliestMessageTimeStamp"], 10, 64)
	if earliest < start-1000 || earliest > time.Now().UnixMilli() {
		t.Fatalf("earliestMessageTimeStamp = %d, sends began at %d", earliest, start)
	}
	if _, err := strconv.ParseInt(info["pageCacheLockTimeMills"], 10, 64); err != nil {
		t.Fatalf("pageCacheLockTimeMills = %q", info["pageCacheLockTimeMills"])
	}
	// VIEW_BROKER_STATS_DATA knows the topic's stored bytes.
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.ViewBrokerStatsData,
		map[string]string{"statsName": "TOPIC_PUT_SIZE", "statsKey": "Rt"}, nil)), protocol.Success)
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.ViewBrokerStatsData,
		map[string]string{"statsName": "TOPIC_PUT_SIZE", "statsKey": "NoSuchTopic"}, nil)), protocol.SystemError)
}

func TestJavaDouble(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{{0, "0.0"}, {12, "12.0"}, {1523.5, "1523.5"}, {0.25, "0.25"}, {1.5e7, "1.5E7"}, {math.NaN(), "0.0"}} {
		if got := javaDouble(tc.v); got != tc.want {
			t.Errorf("javaDouble(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// TestMaintenanceRequestsDoTheirWork: DELETE_EXPIRED_COMMITLOG (329)
// deletes expired commit-log files at once, CLEAN_EXPIRED_CONSUMEQUEUE
// (306) then removes the queue whose messages all went with them, and
// CLEAN_UNUSED_TOPIC (316) deletes the queues of a topic the broker no
// longer has; each says what it did.
func TestMaintenanceRequestsDoTheirWork(t *testing.T) {
	var shift atomic.Int64 // clock offset, ns
	cfg := testConfig(t, t.TempDir())
	cfg.Store.MappedFileSizeCommitLog = 64 << 10
	cfg.Store.MaxMessageSize = 8 << 10
	cfg.Store.DeleteCommitLogFilesInterval = time.Millisecond
	cfg.Store.Now = func() time.Time { return time.Now().Add(time.Duration(shift.Load())) }
	// A nearly empty disk: the machine's real usage (a shared disk above
	// diskSpaceCleanForciblyRatio) would start forced cleaning, which deletes
	// the unexpired files this test keeps.
	cfg.Store.DiskUsage = func(string) (float64, error) { return 0.1, nil }
	b := startBroker(t, cfg)
	c := newClient(t)
	mustCode(t, invoke(t, c, b.Addr(), sendReq("Old", 0, []byte("first"), nil)), protocol.Success)
	body := make([]byte, 4<<10)
	for range 60 { // ~250 KiB: four 64 KiB files
		mustCode(t, invoke(t, c, b.Addr(), sendReq("Fill", 0, body, nil)), protocol.Success)
	}
	waitDispatched(t, b, "Fill", 0, 60)
	mustCode(t, invoke(t, c, b.Addr(), sendReq("Gone", 0, []byte("x"), nil)), protocol.Success)
	waitDispatched(t, b, "Gone", 0, 1)

	resp := invoke(t, c, b.Addr(), protocol.NewRequest(protocol.DeleteExpiredCommitLog, nil, nil))
	mustCode(t, resp, protocol.Success)
	if b.Store.MinPhyOffset() != 0 || resp.Remark != "deleted 0 expired commit-log files" {
		t.Fatalf("unexpired files deleted: min offset %d, remark %q", b.Store.MinPhyOffset(), resp.Remark)
	}
	shift.Store(int64(100 * time.Hour)) // past fileReservedTime (72 h)
	resp = invoke(t, c, b.Addr(), protocol.NewRequest(protocol.DeleteExpiredCommitLog, nil, nil))
	mustCode(t, resp, protocol.Success)
	if b.Store.MinPhyOffset() == 0 || resp.Remark == "deleted 0 expired commit-log files" {
		t.Fatalf("329 deleted nothing: min offset %d, remark %q", b.Store.MinPhyOffset(), resp.Remark)
	}

	has := func(topic string) bool {
		for _, q := range b.Store.QueueTopics() {
			if q == topic {
				return true
			}
		}
		return false
	}
	if !has("Old") {
		t.Fatal("queue of Old missing before 306")
	}
	resp = invoke(t, c, b.Addr(), protocol.NewRequest(protocol.CleanExpiredConsumeQueue, nil, nil))
	mustCode(t, resp, protocol.Success)
	if has("Old") || !has("Gone") {
		t.Fatalf("after 306: Old kept %v, Gone kept %v (remark %q)", has("Old"), has("Gone"), resp.Remark)
	}

	if _, err := b.Topics.Delete("Gone"); err != nil {
		t.Fatal(err)
	}
	resp = invoke(t, c, b.Addr(), protocol.NewRequest(protocol.CleanUnusedTopic, nil, nil))
	mustCode(t, resp, protocol.Success)
	if has("Gone") || !has("Fill") {
		t.Fatalf("after 316: Gone kept %v, Fill kept %v (remark %q)", has("Gone"), has("Fill"), resp.Remark)
	}
	if resp.Remark != "removed the consume queues of 1 unused topics" {
		t.Fatalf("316 remark %q", resp.Remark)
	}
}
