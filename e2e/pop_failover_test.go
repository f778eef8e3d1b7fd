package e2e

import (
	"testing"
	"time"

	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestPopFailoverControllerMode: two `apogee broker` processes in
// controller mode; a POP group pops every message from the master, acks
// some; the master is SIGKILLed and the controller elects the slave. The
// new master knows the POP state its master had (the slave followed it):
// the unacked messages stay invisible until their invisible time and are
// then redelivered, each once; no acked message is delivered again.
func TestPopFailoverControllerMode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs controllers and brokers")
	}
	e := newFailoverEnv(t)
	const cluster, name = "PopFailCluster", "broker-pf"
	b1 := newCtlBroker(t, e.bin, e.ctl, e.nsAddr, cluster, name, nil)
	b2 := newCtlBroker(t, e.bin, e.ctl, e.nsAddr, cluster, name, nil)
	b1.start()
	e.waitMaster(name, b1.addr, 1, 20*time.Second)
	b2.start()
	e.waitMaster(name, b1.addr, 2, 20*time.Second)

	topic := uniqueName(t, "PopFail")
	ctx := testutil.Context(t, 10*time.Second)
	if err := e.admin.CreateTopic(ctx, admin.TopicConfig{Topic: topic, ReadQueues: 2, WriteQueues: 2}, admin.Target{Cluster: cluster}); err != nil {
		t.Fatal(err)
	}
	e.waitRoute(topic, name, b1.addr)
	sent := sendAcked(t, e.nsAddr, topic, "pf", 40, 30*time.Second)

	rc := remoting.NewClient(remoting.ClientConfig{Logger: testutil.Logger(t)})
	if err := rc.Start(); err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	group := uniqueName(t, "PopFailG")
	pc := &popClient{t: t, c: rc, addr: b1.addr, group: group, broker: name}
	const invisible = 8 * time.Second
	var got []poppedMsg
	firstPop := time.Now() // no checkpoint's invisible time ends before firstPop+invisible
	testutil.Eventually(t, 15*time.Second, func() bool {
		m, err := pc.pop(topic, invisible)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m...)
		return len(got) >= len(sent)
	}, "popped %d of %d", lazy(func() string { return itoa(len(got)) }), len(sent))
	acked := map[string]bool{}
	for i, m := range got {
		if i%3 != 0 {
			if err := pc.ack(m); err != nil {
				t.Fatal(err)
			}
			acked[m.body] = true
		}
	}
	unacked := len(got) - len(acked)
	// The slave's copy of the POP state caught up with the master's.
	testutil.Eventually(t, 10*time.Second, func() bool {
		kv1, err1 := e.admin.BrokerRuntimeInfo(testutil.Context(t, 2*time.Second), b1.addr)
		kv2, err2 := e.admin.BrokerRuntimeInfo(testutil.Context(t, 2*time.Second), b2.addr)
		return err1 == nil && err2 == nil && kv1["popInFlightMessages"] == kv2["popInFlightMessages"] &&
			kv2["popInFlightMessages"] == itoa(unacked) && kv2["popReplicaCaughtUp"] == "true"
	}, "the slave's POP state never matched the master's %d in flight", unacked)

	b1.kill()
	e.waitMaster(name, b2.addr, 1, 15*time.Second)
	pc.addr = b2.addr
	var back []poppedMsg
	testutil.Eventually(t, 30*time.Second, func() bool {
		m, err := pc.pop(topic, time.Minute)
		if err != nil {
			return false // the new master may still be starting
		}
		if len(m) > 0 && time.Since(firstPop) < invisible-time.Second {
			t.Fatalf("%d messages popped from the new master before their invisible time: %v", len(m), m)
		}
		back = append(back, m...)
		return len(back) >= unacked
	}, "the new master redelivered %d of %d", lazy(func() string { return itoa(len(back)) }), unacked)
	// Nothing more comes (acked ones, or a second copy).
	time.Sleep(time.Second)
	more, err := pc.pop(topic, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	back = append(back, more...)
	seen := map[string]int{}
	for _, m := range back {
		seen[m.body]++
		if acked[m.body] {
			t.Fatalf("acked message %s delivered again by the new master", m.body)
		}
	}
	for _, m := range got {
		if !acked[m.body] && seen[m.body] != 1 {
			t.Fatalf("unacked %s redelivered %d times", m.body, seen[m.body])
		}
	}
	if len(back) != unacked {
		t.Fatalf("redelivered %d, want %d", len(back), unacked)
	}
}
