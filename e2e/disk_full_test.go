//go:build linux

package e2e

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

// smallDisk is a tmpfs of a fixed size with a ballast file that sets its
// usage, so a test can fill and free the broker's disk at will.
type smallDisk struct {
	dir     string
	ballast string
	total   int64
}

// mountSmallDisk mounts a size-byte tmpfs (root only; the test is skipped
// otherwise) and unmounts it at cleanup, after the processes the test
// starts later are stopped (cleanups run last-registered first).
func mountSmallDisk(t *testing.T, size int64) *smallDisk {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return &smallDisk{dir: dir, ballast: filepath.Join(dir, "ballast"), total: int64(st.Blocks) * st.Bsize}
}

// usage is the used fraction as the broker computes it.
func (d *smallDisk) usage(t *testing.T) float64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(d.dir, &st); err != nil {
		t.Fatal(err)
	}
	used := float64(st.Blocks-st.Bfree) * float64(st.Bsize)
	return used / (used + float64(st.Bavail)*float64(st.Bsize))
}

// fillTo resizes the ballast so that usage is about ratio.
func (d *smallDisk) fillTo(t *testing.T, ratio float64) {
	t.Helper()
	fi, err := os.Stat(d.ballast)
	cur := int64(0)
	if err == nil {
		cur = fi.Size()
	}
	want := max(cur+int64((ratio-d.usage(t))*float64(d.total)), 0)
	f, err := os.OpenFile(d.ballast, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if want < cur {
		if err := f.Truncate(want); err != nil {
			t.Fatal(err)
		}
		return
	}
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = 0xA5 // written, not a hole: tmpfs counts the pages
	}
	for off := cur; off < want; {
		n := min(int64(len(buf)), want-off)
		if _, err := f.WriteAt(buf[:n], off); err != nil {
			t.Fatalf("ballast: %v", err)
		}
		off += n
	}
}

// TestDiskFullRefusesAndRecovers drives a real broker process on a small
// file system with the official client: writes are refused with
// SERVICE_NOT_AVAILABLE and RocketMQ's usage remark within about a second of
// the disk filling; they stay refused between the forced-cleaning ratio
// (85 %) and the warning ratio (90 %) and resume at or below 85 %; reads are
// served while full; a broker killed on a full disk restarts and refuses at
// once (no first-minute window); with forced cleaning off nothing
// acknowledged is ever deleted.
func TestDiskFullRefusesAndRecovers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the apogee binary")
	}
	disk := mountSmallDisk(t, 48<<20)
	bin := buildApogee(t)
	ns := startNamesrv(t, nil)
	nsAddr := ns.Addr().String()
	port := freePort(t)
	args := []string{"broker", "--namesrv", nsAddr, "--listen-port", fmt.Sprint(port), "--store-dir", disk.dir,
		"--grpc-port", "-1", "--set", "metricsPromExporterPort=0", "--broker-name", "broker-disk", "--flush-disk-type", "SYNC_FLUSH", "--log-level", "warn",
		"--set", "vipChannelEnable=false", "--set", "mappedFileSizeCommitLog=2097152",
		"--set", "mappedFileSizeConsumeQueue=60000", "--set", "maxHashSlotNum=1000", "--set", "maxIndexNum=4000",
		"--set", "cleanFileForciblyEnable=false", "--set", "maxMessageSize=1048576"}
	proc := startApogeeProcess(t, bin, listening, args...)
	waitRoute(t, ns, "TBW102")
	rlog.SetLogLevel("error")

	topic := uniqueName(t, "T")
	p := newProducer(t, nsAddr)
	body := []byte(strings.Repeat("d", 4096))
	var acked []string
	send := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res, err := p.SendSync(ctx, primitive.NewMessage(topic, body))
		if err == nil && res.Status == primitive.SendOK {
			acked = append(acked, res.MsgID)
		}
		return err
	}
	for range 100 {
		if err := send(); err != nil {
			t.Fatalf("send before the disk fills: %v", err)
		}
	}
	waitRefused := func(what string) error {
		t.Helper()
		var err error
		start := time.Now()
		testutil.Eventually(t, 5*time.Second, func() bool { err = send(); return err != nil },
			"%s: sends still accepted at usage %.3f", what, disk.usage(t))
		t.Logf("%s: refused %v after the fill (usage %.3f)", what, time.Since(start).Round(10*time.Millisecond), disk.usage(t))
		return err
	}

	// Full: refused with RocketMQ's code and the usage figures.
	disk.fillTo(t, 0.95)
	err := waitRefused("disk at 95 %")
	if msg := err.Error(); !strings.Contains(msg, "14") || !strings.Contains(msg, "the broker's disk is full [CL:") {
		t.Fatalf("refusal does not carry SERVICE_NOT_AVAILABLE and the usage remark: %v", err)
	}
	// Inside the 85-90 % band: still refused, for several checks.
	disk.fillTo(t, 0.875)
	time.Sleep(2500 * time.Millisecond)
	if err := send(); err == nil {
		t.Fatalf("sends accepted again at usage %.3f, inside the hysteresis band", disk.usage(t))
	}
	// Reads are served while writes are refused.
	r := newReceived()
	newPushConsumer(t, nsAddr, uniqueName(t, "cg"), topic, "*", r)
	r.waitAll(t, 30*time.Second, acked, "acknowledged before the disk filled, read while full")
	// At or below 85 %: accepted again.
	disk.fillTo(t, 0.80)
	testutil.Eventually(t, 5*time.Second, func() bool { return send() == nil }, "sends still refused at usage %.3f", disk.usage(t))
	for range 20 {
		if err := send(); err != nil {
			t.Fatalf("send after space came back: %v", err)
		}
	}

	// Killed on a full disk: the restart succeeds and refuses at once,
	// long before the first cleanup pass (a minute after start).
	disk.fillTo(t, 0.95)
	waitRefused("disk full again")
	proc.Kill()
	started := time.Now()
	proc = startApogeeProcess(t, bin, listening, args...)
	waitRoute(t, ns, topic)
	if err := send(); err == nil || !strings.Contains(err.Error(), "disk is full") {
		t.Fatalf("first send after a restart on a full disk: %v", err)
	}
	t.Logf("restart on a full disk: refusing %v after start", time.Since(started).Round(time.Millisecond))

	// Forced cleaning is off: nothing acknowledged was deleted.
	disk.fillTo(t, 0.5)
	r2 := newReceived()
	newPushConsumer(t, nsAddr, uniqueName(t, "cg"), topic, "*", r2)
	r2.waitAll(t, 30*time.Second, acked, "acknowledged, with forced cleaning off")
	t.Logf("%d acknowledged messages all readable at the end", len(acked))
}

// TestDiskFullForcedCleaningIsReported: with cleanFileForciblyEnable (the
// default) a disk above diskSpaceCleanForciblyRatio makes cleanup delete
// commit-log files before their retention time; the messages deleted per
// topic reach apogee_forced_deleted_messages_total and the runtime info,
// and match exactly what a consumer can no longer read (the queues' new
// min offsets).
func TestDiskFullForcedCleaningIsReported(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the apogee binary")
	}
	disk := mountSmallDisk(t, 48<<20)
	bin := buildApogee(t)
	ns := startNamesrv(t, nil)
	nsAddr := ns.Addr().String()
	port, metricsPort := freePort(t), freePort(t)
	startApogeeProcess(t, bin, listening, "broker", "--namesrv", nsAddr, "--listen-port", fmt.Sprint(port),
		"--store-dir", disk.dir, "--grpc-port", "-1", "--broker-name", "broker-forced", "--log-level", "warn",
		"--set", "vipChannelEnable=false", "--set", "mappedFileSizeCommitLog=1048576", "--set", "maxMessageSize=262144",
		"--set", "mappedFileSizeConsumeQueue=60000", "--set", "maxHashSlotNum=1000", "--set", "maxIndexNum=4000",
		"--set", "cleanFileForciblyEnable=true", "--set", fmt.Sprintf("metricsPromExporterPort=%d", metricsPort))
	waitRoute(t, ns, "TBW102")
	rlog.SetLogLevel("error")
	topic := uniqueName(t, "T")
	p := newProducer(t, nsAddr)
	ctx := testutil.Context(t, 2*time.Minute)
	rnd := mrand.New(mrand.NewPCG(1, 2))
	const n = 1200 // about 5 MiB: several 1 MiB commit-log files
	for i := range n {
		body := make([]byte, 4000) // random: the client compresses bodies over 4 KiB
		for j := range body {
			body[j] = byte(rnd.Uint32())
		}
		if _, err := p.SendSync(ctx, primitive.NewMessage(topic, body)); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	a, err := admin.New(admin.WithNameServers(nsAddr))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	// Above 85 %, below 90 %: writes still accepted, cleanup deletes now.
	disk.fillTo(t, 0.88)
	if _, err := a.Maintenance(ctx, protocol.DeleteExpiredCommitLog, admin.Target{BrokerAddr: fmt.Sprintf("127.0.0.1:%d", port)}); err != nil {
		t.Fatal(err)
	}
	stats, err := a.TopicStats(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var lost int64
	for _, q := range stats {
		lost += q.MinOffset
	}
	if lost == 0 {
		ents, _ := os.ReadDir(filepath.Join(disk.dir, "commitlog"))
		var names []string
		for _, e := range ents {
			fi, _ := e.Info()
			names = append(names, fmt.Sprintf("%s:%d", e.Name(), fi.Size()))
		}
		t.Fatalf("forced cleaning deleted nothing at usage %.3f (commit log %v)", disk.usage(t), names)
	}
	mfs := scrape(t, fmt.Sprintf("127.0.0.1:%d", metricsPort))
	var counted float64
	for _, m := range mfs["apogee_forced_deleted_messages_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "topic" && l.GetValue() == topic {
				counted = m.GetCounter().GetValue()
			}
		}
	}
	if int64(counted) != lost {
		t.Fatalf("apogee_forced_deleted_messages_total{topic=%s} = %v, consumers lost %d", topic, counted, lost)
	}
	info, err := a.BrokerRuntimeInfo(ctx, fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := strconv.ParseInt(info["forcedDeletedMessages"], 10, 64); got < lost {
		t.Fatalf("runtime info forcedDeletedMessages=%q, want at least %d", info["forcedDeletedMessages"], lost)
	}
	t.Logf("forced cleaning at usage %.3f deleted %d of %d unexpired messages of %s; metric and runtime info agree", disk.usage(t), lost, n, topic)
}
