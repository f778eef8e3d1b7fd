package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestCleanRestartAsyncFlush: every acknowledged message is readable after a
// clean broker shutdown and restart under ASYNC_FLUSH (shutdown flushes).
func TestCleanRestartAsyncFlush(t *testing.T) {
	c := startCluster(t, func(cfg *broker.Config) { cfg.Store.FlushDiskType = "ASYNC_FLUSH" })
	topic := uniqueName(t, "T")
	c.createTopic(topic, 4)
	p := newProducer(t, c.nsAddr)
	ids := sendN(t, p, topic, "", "before-restart", 100)

	c.stopBroker()
	c.startBroker()
	waitRoute(t, c.ns, topic)

	r := newReceived()
	newPushConsumer(t, c.nsAddr, uniqueName(t, "cg"), topic, "*", r)
	r.waitAll(t, 30*time.Second, ids, "acknowledged before a clean restart")
}

// TestKillRestartSyncFlush SIGKILLs a real `apogee broker` process running
// SYNC_FLUSH while a producer sends, restarts it on the same store, and
// checks that every acknowledged message is consumed (CONTRIBUTING.md: crash
// tests for every on-disk format).
func TestKillRestartSyncFlush(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the apogee binary")
	}
	bin := buildApogee(t)
	ns := startNamesrv(t, nil)
	nsAddr := ns.Addr().String()

	port := freePort(t)
	storeDir := t.TempDir()
	args := []string{"broker", "--namesrv", nsAddr, "--listen-port", fmt.Sprint(port), "--grpc-port", "-1", "--store-dir", storeDir,
		"--broker-name", "broker-k", "--flush-disk-type", "SYNC_FLUSH", "--log-level", "warn",
		"--set", "vipChannelEnable=false", "--set", "metricsPromExporterPort=0", "--set", "mappedFileSizeCommitLog=8388608",
		"--set", "mappedFileSizeConsumeQueue=200000", "--set", "messageIndexEnable=false"}
	start := func() *testutil.Child { return startApogeeProcess(t, bin, listening, args...) }
	proc := start()
	waitRoute(t, ns, "TBW102")

	// A producer sends continuously (the first send auto-creates the topic
	// through TBW102); the broker is killed mid-stream.
	topic := uniqueName(t, "T")
	p := newProducer(t, nsAddr)
	var acked sync.Map
	var nAcked atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ctx := testutil.Context(t, 120*time.Second)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(fmt.Sprintf("crash-%d", i))))
			if err == nil && res.Status == primitive.SendOK {
				acked.Store(res.MsgID, true)
				nAcked.Add(1)
			}
		}
	}()
	testutil.Eventually(t, 60*time.Second, func() bool { return nAcked.Load() >= 300 }, "only %d sends acknowledged", nAcked.Load())
	proc.Kill()
	close(stop)
	wg.Wait()
	var ids []string
	acked.Range(func(k, _ any) bool { ids = append(ids, k.(string)); return true })
	t.Logf("%d messages acknowledged before SIGKILL", len(ids))

	start()
	waitRoute(t, ns, topic)
	r := newReceived()
	newPushConsumer(t, nsAddr, uniqueName(t, "cg"), topic, "*", r)
	r.waitAll(t, 60*time.Second, ids, "acknowledged before the SIGKILL")
}

// TestStandaloneBinary runs `apogee standalone` on free ports, produces and
// consumes through it with the official client, and stops it with SIGTERM:
// a clean shutdown exits 0 and unregisters the broker.
func TestStandaloneBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the apogee binary")
	}
	bin := buildApogee(t)
	data := t.TempDir()
	var nsAddr, brokerAddr string
	cmd := startApogeeProcess(t, bin, func(line string) bool {
		if a, ok := strings.CutPrefix(line, "name server listening on "); ok {
			nsAddr = a
		}
		if i := strings.Index(line, " listening on "); strings.HasPrefix(line, "broker ") && i > 0 {
			brokerAddr = line[i+len(" listening on "):]
		}
		return nsAddr != "" && brokerAddr != ""
	}, "standalone", "--data", data, "--namesrv-port", "0", "--broker-port", "0", "--grpc-port", "-1", "--log-level", "warn",
		"--set", "metricsPromExporterPort=0", "--console-port", "-1")
	rlog.SetLogLevel("error")
	topic := uniqueName(t, "T")
	p := newProducer(t, nsAddr)
	ids := sendN(t, p, topic, "", "standalone", 5) // auto-created through TBW102
	r := newReceived()
	newPushConsumer(t, nsAddr, uniqueName(t, "cg"), topic, "*", r)
	r.waitAll(t, 60*time.Second, ids, "sent through standalone")

	if err := cmd.Stop(20 * time.Second); err != nil {
		t.Fatalf("standalone after SIGTERM: %v", err)
	}
	if _, err := os.Stat(filepath.Join(data, "broker", "config", "topics.json")); err != nil {
		t.Fatalf("metadata not under --data: %v", err)
	}
}

func freePort(t *testing.T) int { return testutil.FreePort(t) }
