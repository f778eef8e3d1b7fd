package grpce2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"

	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestSlaveActingMasterPop: `apogee namesrv` with supportActingMaster, a
// master and a slave `apogee broker` with enableSlaveActingMaster, and
// `apogee proxy -n` in front. The official v5 SimpleConsumer receives
// part of the backlog from the master and acks some; the master is
// SIGKILLed. Through the same proxy the consumer keeps receiving the rest
// of the master's backlog from the slave (route: the slave as id 0) and
// acks; the master returns on its data directory and takes the slave's
// POP state before it registers. Afterwards every unacked message comes
// back and no acked one is delivered again.
func TestSlaveActingMasterPop(t *testing.T) {
	_, ns := startProcess(t, "namesrv listening on ", "namesrv", "--listen", "127.0.0.1:0", "--log-level", "warn",
		"--set", "supportActingMaster=true")
	port := testutil.FreePort(t)
	brokerArgs := func(dir string, extra ...string) []string {
		return append([]string{"broker", "-n", ns, "--grpc-port", "-1", "--broker-name", "broker-am",
			"--store-dir", dir, "--log-level", "warn", "--set", "vipChannelEnable=false",
			"--set", "metricsPromExporterPort=0", "--set", "enableSlaveActingMaster=true",
			"--set", "syncBrokerMemberGroupPeriod=200", "--set", "reviveInterval=200"}, extra...)
	}
	mdir := t.TempDir()
	masterArgs := brokerArgs(mdir, "--listen-port", strconv.Itoa(port))
	master, maddr := startProcess(t, "broker broker-am listening on ", masterArgs...)
	_, saddr := startProcess(t, "broker broker-am listening on ", brokerArgs(t.TempDir(), "--listen-port", "0",
		"--set", "brokerId=1", "--set", "brokerRole=SLAVE")...)
	_, endpoint := startProcess(t, "grpc endpoint listening on ", "proxy", "-n", ns, "--grpc-port", "0",
		"--min-invisible", "1s", "--log-level", "warn")

	const topic, group = "GrpcActingTopic", "GrpcActingGroup"
	a, err := admin.New(admin.WithNameServers(ns))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	if err := a.CreateTopic(ctx, admin.TopicConfig{Topic: topic, ReadQueues: 2, WriteQueues: 2}, admin.Target{Cluster: "DefaultCluster"}); err != nil {
		t.Fatal(err)
	}
	withSSL(t, false)
	p := newProducer(t, endpoint, rmq.WithTopics(topic))
	const n = 40
	for i := range n {
		if _, err := p.Send(ctx, &rmq.Message{Topic: topic, Body: []byte(fmt.Sprintf("am-%02d", i))}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}

	c := newSimpleConsumer(t, endpoint, group, topic, rmq.SUB_ALL)
	const invisible = 6 * time.Second
	acked, unacked := map[string]bool{}, map[string]bool{}
	take := func(mvs []*rmq.MessageView, ackEvery int) {
		for i, mv := range mvs {
			b := string(mv.GetBody())
			if acked[b] {
				t.Fatalf("acked %s delivered again", b)
			}
			if unacked[b] {
				continue // redelivered once its invisible time passed: at least once
			}
			if i%ackEvery == 0 {
				unacked[b] = true
				continue
			}
			if err := c.Ack(ctx, mv); err != nil {
				t.Fatalf("ack %s: %v", b, err)
			}
			acked[b] = true
		}
	}
	take(receiveAll(t, c, 12, invisible, 30*time.Second), 3)
	if len(acked)+len(unacked) < 12 {
		t.Fatalf("received %d from the master", len(acked)+len(unacked))
	}
	// The slave has the messages, the topic and the master's POP state.
	eventually(t, 30*time.Second, "the slave caught up with the master", func() bool {
		m, err1 := a.BrokerRuntimeInfo(ctx, maddr)
		s, err2 := a.BrokerRuntimeInfo(ctx, saddr)
		if err1 != nil || err2 != nil {
			return false
		}
		if _, err := a.QueryConsumeQueue(ctx, saddr, topic, 0, 0, 1, group); err != nil {
			return false
		}
		return m["commitLogMaxOffset"] == s["commitLogMaxOffset"] && m["popInFlightMessages"] == s["popInFlightMessages"] &&
			s["popReplicaCaughtUp"] == "true"
	})
	killedAt := time.Now()
	master.cmd.Process.Kill()
	<-master.done

	// Through the same proxy, the rest comes from the slave.
	before := len(acked) + len(unacked)
	deadline := time.Now().Add(60 * time.Second)
	for len(acked)+len(unacked) < n && time.Now().Before(deadline) {
		rctx, rcancel := context.WithTimeout(ctx, 12*time.Second)
		mvs, err := c.Receive(rctx, 16, invisible)
		rcancel()
		if err != nil {
			if !strings.Contains(err.Error(), "MESSAGE_NOT_FOUND") {
				t.Logf("receive while the master is down: %v", err)
				time.Sleep(200 * time.Millisecond)
			}
			continue
		}
		take(mvs, 4)
	}
	if len(acked)+len(unacked) != n {
		t.Fatalf("received %d of %d (%d after the master died)", len(acked)+len(unacked), n, len(acked)+len(unacked)-before)
	}
	t.Logf("master down %.1fs: %d received from the slave", time.Since(killedAt).Seconds(), n-before)

	// The master returns; the slave's state goes back to it.
	startProcess(t, "broker broker-am listening on ", masterArgs...)
	again := map[string]int{}
	deadline = time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		missing := 0
		for b := range unacked {
			if again[b] == 0 {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		rctx, rcancel := context.WithTimeout(ctx, 12*time.Second)
		mvs, err := c.Receive(rctx, 16, 30*time.Second)
		rcancel()
		if err != nil {
			if !strings.Contains(err.Error(), "MESSAGE_NOT_FOUND") {
				time.Sleep(200 * time.Millisecond)
			}
			continue
		}
		for _, mv := range mvs {
			b := string(mv.GetBody())
			if acked[b] {
				t.Fatalf("%s was acked (before or during the outage) and delivered again", b)
			}
			again[b]++
			if err := c.Ack(ctx, mv); err != nil {
				t.Fatalf("ack %s: %v", b, err)
			}
		}
	}
	for b := range unacked {
		if again[b] == 0 {
			t.Errorf("unacked %s never delivered again", b)
		}
	}
	t.Logf("%d acked, %d unacked; %d redelivered after the master returned", len(acked), len(unacked), len(again))
}
