package e2e

import (
	"bytes"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/testutil"
)

var failoverLong = flag.Bool("failover.long", false,
	"run the long controller-mode failover variants (a group of 3 with the official producer's own recovery through its 30 s route poll; the controller leader and the master lost together, then every controller restarted)")

// TestControllerFailoverGroupOf3Long: a broker group of 3. The master is
// SIGKILLed under load from one official producer that keeps running: a
// slave is elected, the other slave follows the new master without a
// restart (its log is a prefix of the new master's), the running producer
// recovers on its own (its next 30 s route poll), and every acknowledged
// message is readable; both slaves converge byte-identically.
func TestControllerFailoverGroupOf3Long(t *testing.T) {
	if !*failoverLong {
		t.Skip("long variant: -failover.long")
	}
	e := newFailoverEnv(t)
	const cluster, name = "Group3Cluster", "broker-g3"
	bs := []*ctlBroker{
		newCtlBroker(t, e.bin, e.ctl, e.nsAddr, cluster, name, nil),
		newCtlBroker(t, e.bin, e.ctl, e.nsAddr, cluster, name, nil),
		newCtlBroker(t, e.bin, e.ctl, e.nsAddr, cluster, name, nil),
	}
	bs[0].start()
	e.waitMaster(name, bs[0].addr, 1, 20*time.Second)
	bs[1].start()
	bs[2].start()
	e.waitMaster(name, bs[0].addr, 3, 20*time.Second)
	topic := uniqueName(t, "G3")
	ctx := testutil.Context(t, 10*time.Second)
	if err := e.admin.CreateTopic(ctx, admin.TopicConfig{Topic: topic, ReadQueues: 4, WriteQueues: 4}, admin.Target{Cluster: cluster}); err != nil {
		t.Fatal(err)
	}
	p := startSyncProducer(t, e.nsAddr, uniqueName(t, "PG"))
	var load loadResult
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); sendLoop(p, topic, "a", 1000000, stop, &load) }()
	testutil.Eventually(t, 20*time.Second, func() bool { a, _ := load.snapshot(); return len(a) >= 200 }, "no load")
	killed := time.Now()
	load.setMark(killed)
	bs[0].kill()
	var newMaster *ctlBroker
	testutil.Eventually(t, 10*time.Second, func() bool {
		ri, ok := e.replicas(name)
		for _, b := range bs[1:] {
			if ok && ri.MasterAddress == b.addr {
				newMaster = b
			}
		}
		return newMaster != nil
	}, "no new master")
	elected := time.Since(killed)
	other := bs[1]
	if other == newMaster {
		other = bs[2]
	}
	e.waitMaster(name, newMaster.addr, 2, 20*time.Second) // the other slave rejoined the set
	testutil.Eventually(t, 45*time.Second, func() bool {
		load.mu.Lock()
		defer load.mu.Unlock()
		return !load.firstOKAfter.IsZero()
	}, "the running producer never recovered")
	recovered := load.firstOKAfter.Sub(killed)
	close(stop)
	<-done
	t.Logf("group of 3: elected %v, running producer's first acked send %v after the kill", elected.Round(time.Millisecond), recovered.Round(time.Millisecond))
	acked, _ := load.snapshot()
	e.requireReadable(newMaster.addr, topic, name, 4, acked)
	bs[0].start()
	e.waitMaster(name, newMaster.addr, 3, 30*time.Second)
	var want int64
	testutil.Eventually(t, 20*time.Second, func() bool {
		want = e.maxOffset(newMaster.addr)
		return want > 0 && e.maxOffset(other.addr) == want && e.maxOffset(bs[0].addr) == want
	}, "slaves never converged")
	ref := newMaster.commitLog(want)
	for _, b := range []*ctlBroker{other, bs[0]} {
		if !bytes.Equal(b.commitLog(want), ref) {
			t.Fatal(fmt.Sprintf("%s differs from the new master", b.addr))
		}
	}
}
