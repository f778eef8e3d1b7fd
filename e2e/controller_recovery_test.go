package e2e

import (
	"strconv"
	"testing"
	"time"

	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestControllerProducerRecovery: an official Go v2 producer keeps sending
// through a SIGKILL failover and recovers without any route update. Its
// only name server is stopped once the producer has the route, so the new
// master is reachable only through the old master's address: the killed
// broker is restarted at once (as a supervisor would), rejoins as a slave
// and relays the producer's sends to the new master (forwardSendToMaster).
// Without the relay the producer would fail until its 30 s route poll,
// which here cannot help at all.
func TestControllerProducerRecovery(t *testing.T) {
	e := newFailoverEnv(t)
	const cluster, name = "RecoveryCluster", "broker-r"
	b1 := newCtlBroker(t, e.bin, e.ctl, e.nsAddr, cluster, name, nil)
	b2 := newCtlBroker(t, e.bin, e.ctl, e.nsAddr, cluster, name, nil)
	b1.start()
	e.waitMaster(name, b1.addr, 1, 20*time.Second)
	b2.start()
	e.waitMaster(name, b1.addr, 2, 20*time.Second)
	topic := uniqueName(t, "Recover")
	ctx := testutil.Context(t, 10*time.Second)
	if err := e.admin.CreateTopic(ctx, admin.TopicConfig{Topic: topic, ReadQueues: 4, WriteQueues: 4}, admin.Target{Cluster: cluster}); err != nil {
		t.Fatal(err)
	}
	p := startSyncProducer(t, e.nsAddr, uniqueName(t, "PG"))
	var load loadResult
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); sendLoop(p, topic, "r", 100000, stop, &load) }()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-done
	}()
	testutil.Eventually(t, 30*time.Second, func() bool { acked, _ := load.snapshot(); return len(acked) >= 50 }, "load never reached 50 acked sends")
	if err := e.ns.Close(); err != nil { // no route update from here on
		t.Fatal(err)
	}

	killed := time.Now()
	load.setMark(killed)
	b1.kill()
	e.waitMaster(name, b2.addr, 1, 15*time.Second)
	elected := time.Since(killed)
	b1.start() // the supervisor's restart: it rejoins as a slave
	testutil.Eventually(t, 30*time.Second, func() bool {
		load.mu.Lock()
		defer load.mu.Unlock()
		return !load.firstOKAfter.IsZero()
	}, "the running producer never recovered (last error: %v)", lazy(func() string { load.mu.Lock(); defer load.mu.Unlock(); return load.lastErr }))
	recovered := load.firstOKAfter.Sub(killed)
	before, _ := load.snapshot()
	testutil.Eventually(t, 20*time.Second, func() bool { acked, _ := load.snapshot(); return len(acked) >= len(before)+50 },
		"the recovered producer did not keep sending")
	close(stop)
	<-done

	kv, err := e.admin.BrokerRuntimeInfo(testutil.Context(t, 3*time.Second), b1.addr)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := strconv.Atoi(kv["sendForwardedToMaster"]); n == 0 {
		t.Fatalf("the rejoined slave relayed no send: %q", kv["sendForwardedToMaster"])
	}
	acked, failed := load.snapshot()
	t.Logf("producer recovery: elected %v after the SIGKILL, running producer's first acknowledged send %v after it (through the restarted old master, %s relayed); %d acked, %d failed",
		elected.Round(time.Millisecond), recovered.Round(time.Millisecond), kv["sendForwardedToMaster"], len(acked), failed)
	e.requireReadable(b2.addr, topic, name, 4, acked)
}
