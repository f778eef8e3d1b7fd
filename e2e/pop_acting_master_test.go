package e2e

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/namesrv"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestPopSlaveActingMaster: a master and a slave `apogee broker` with
// enableSlaveActingMaster, a name server with supportActingMaster. A
// remoting POP consumer that finds its broker in the topic route (id 0, as
// RocketMQ's clients do) pops and acks on the master; the master is
// SIGKILLed. The route then names the slave as id 0, read-only: the
// consumer pops the rest of the backlog there, acks (also handles the
// master issued) and re-times one. The master restarts on its directory
// and takes the slave's POP state before registering: no acked message is
// delivered again, every unacked one comes back once, none is lost.
func TestPopSlaveActingMaster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the apogee binary")
	}
	logger := testutil.Logger(t)
	bin := buildApogeeBinary(t)
	nsCfg := namesrv.DefaultConfig()
	nsCfg.ListenPort, nsCfg.BindAddress, nsCfg.SupportActingMaster = 0, "127.0.0.1", true
	ns := namesrv.New(nsCfg, logger)
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })

	const name = "broker-sam"
	base := func(dir string, port int) []string {
		return []string{"broker", "--namesrv", ns.Addr().String(), "--listen-port", strconv.Itoa(port), "--grpc-port", "-1",
			"--store-dir", dir, "--broker-name", name, "--log-level", "warn", "--set", "vipChannelEnable=false",
			"--set", "metricsPromExporterPort=0", "--set", "mappedFileSizeCommitLog=8388608",
			"--set", "mappedFileSizeConsumeQueue=200000", "--set", "reviveInterval=100",
			"--set", "enableSlaveActingMaster=true", "--set", "syncBrokerMemberGroupPeriod=200"}
	}
	mport, sport := freePort(t), freePort(t)
	masterArgs := append(base(t.TempDir(), mport), "--set", "brokerRole=SYNC_MASTER", "--set", "inSyncReplicas=2")
	master := startApogeeProcess(t, bin, listening, masterArgs...)
	startApogeeProcess(t, bin, listening, append(base(t.TempDir(), sport), "--set", "brokerId=1", "--set", "brokerRole=SLAVE")...)
	maddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(mport))
	saddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sport))

	rc := remoting.NewClient(remoting.ClientConfig{Logger: logger})
	if err := rc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	topic := uniqueName(t, "PopActing")
	pc := &popClient{t: t, c: rc, addr: maddr, group: "GSAM", broker: name}
	// routeMaster is what a client does: the broker's id-0 address in the
	// topic's route.
	routeMaster := func() (string, int32) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := rc.InvokeSync(ctx, ns.Addr().String(), protocol.NewRequest(protocol.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
		if err != nil || resp.Code != int32(protocol.Success) {
			return "", 0
		}
		rd, err := protocol.DecodeTopicRouteData(resp.Body)
		if err != nil || len(rd.BrokerDatas) != 1 || len(rd.QueueDatas) != 1 {
			return "", 0
		}
		return rd.BrokerDatas[0].BrokerAddrs[protocol.MasterID], rd.QueueDatas[0].Perm
	}

	const n = 60
	// SYNC_MASTER with inSyncReplicas=2: an acknowledged send is on the
	// slave too; the first ones wait for the slave to connect.
	probes := 0
	testutil.Eventually(t, 40*time.Second, func() bool {
		h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: topic, DefaultTopic: "TBW102",
			DefaultTopicQueueNums: 2, QueueID: 0, BornTimestamp: time.Now().UnixMilli()}
		probes++
		resp, err := pc.invoke(protocol.NewRequest(protocol.SendMessage, protocol.EncodeHeader(&h, false), []byte("probe-"+itoa(probes))))
		return err == nil && resp.Code == 0
	}, "the master never acknowledged a replicated send")
	for i := 0; i < n; i++ {
		h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: topic, DefaultTopic: "TBW102",
			DefaultTopicQueueNums: 2, QueueID: int32(i % 2), BornTimestamp: time.Now().UnixMilli()}
		resp, err := pc.invoke(protocol.NewRequest(protocol.SendMessage, protocol.EncodeHeader(&h, false), []byte("m-"+strconv.Itoa(i))))
		if err != nil || resp.Code != 0 {
			t.Fatalf("send %d: %v %v", i, err, resp)
		}
	}
	testutil.Eventually(t, 30*time.Second, func() bool { a, _ := routeMaster(); return a == maddr }, "no route to the master")

	const invisible = 4 * time.Second
	acked, unacked := map[string]bool{}, map[string]bool{}
	var keep []poppedMsg // unacked handles from the master, acked later on the slave
	seen := 0            // of the n messages m-i
	take := func(got []poppedMsg, ackEvery int) {
		for i, m := range got {
			if strings.HasPrefix(m.body, "probe-") {
				if err := pc.ack(m); err != nil {
					t.Fatal(err)
				}
				continue
			}
			seen++
			if acked[m.body] || unacked[m.body] {
				t.Fatalf("%s popped twice", m.body)
			}
			if i%ackEvery == 0 {
				unacked[m.body] = true
				keep = append(keep, m)
				continue
			}
			if err := pc.ack(m); err != nil {
				t.Fatal(err)
			}
			acked[m.body] = true
		}
	}
	for seen < 20 {
		got, err := pc.pop(topic, invisible)
		if err != nil {
			t.Fatal(err)
		}
		take(got, 3)
	}
	testutil.Eventually(t, 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		m, err1 := brokerRuntime(ctx, rc, maddr)
		s, err2 := brokerRuntime(ctx, rc, saddr)
		if err1 != nil || err2 != nil || m["popInFlightMessages"] != s["popInFlightMessages"] || s["popReplicaCaughtUp"] != "true" {
			return false
		}
		// The topic reached the slave too (metadata sync, every second).
		resp, err := rc.InvokeSync(ctx, saddr, protocol.NewRequest(protocol.GetTopicConfig, map[string]string{"topic": topic}, nil))
		return err == nil && resp.Code == int32(protocol.Success)
	}, "the slave's POP state or topic never caught up")

	master.Kill()
	testutil.Eventually(t, 30*time.Second, func() bool {
		a, perm := routeMaster()
		return a == saddr && !protocol.PermWritable(perm) && protocol.PermReadable(perm)
	}, "the route never named the slave as a read-only id 0")
	testutil.Eventually(t, 30*time.Second, func() bool {
		kv, err := brokerRuntime(testutil.Context(t, 3*time.Second), rc, saddr)
		return err == nil && kv["popActingMaster"] == "true"
	}, "the slave never reported popActingMaster=true")
	pc.addr = saddr
	first := keep[0]
	var lastErr error
	testutil.Eventually(t, 40*time.Second, func() bool {
		got, err := pc.pop(topic, invisible)
		if err != nil {
			lastErr = err // acting starts within a member-group period
			return false
		}
		take(got, 4)
		return seen >= n
	}, "the acting slave popped %s of %d (last error %v)", lazy(func() string { return itoa(seen) }), n, lazy(func() string { return fmt.Sprint(lastErr) }))
	// A handle the master issued acks on the slave.
	if err := pc.ack(first); err != nil {
		t.Fatal(err)
	}
	delete(unacked, first.body)
	acked[first.body] = true

	// The master returns and takes the slave's state.
	startApogeeProcess(t, bin, listening, masterArgs...)
	testutil.Eventually(t, 30*time.Second, func() bool { a, _ := routeMaster(); return a == maddr }, "the master never registered again")
	pc.addr = maddr
	again := map[string]int{}
	testutil.Eventually(t, 30*time.Second, func() bool {
		got, err := pc.pop(topic, time.Minute)
		if err != nil {
			return false
		}
		for _, m := range got {
			if acked[m.body] {
				t.Fatalf("%s was acked and delivered again", m.body)
			}
			if !strings.HasPrefix(m.body, "probe-") {
				again[m.body]++
			}
			if err := pc.ack(m); err != nil {
				t.Fatal(err)
			}
		}
		for b := range unacked {
			if again[b] == 0 {
				return false
			}
		}
		return true
	}, "redelivered %s of %d unacked", lazy(func() string { return itoa(len(again)) }), len(unacked))
	for b, k := range again {
		if k != 1 {
			t.Errorf("%s redelivered %d times", b, k)
		}
	}
	t.Logf("%d acked, %d unacked, %d redelivered after the master returned", len(acked), len(unacked), len(again))
}

// brokerRuntime reads GET_BROKER_RUNTIME_INFO from addr.
func brokerRuntime(ctx context.Context, rc *remoting.Client, addr string) (map[string]string, error) {
	resp, err := rc.InvokeSync(ctx, addr, protocol.NewRequest(protocol.GetBrokerRuntimeInfo, nil, nil))
	if err != nil {
		return nil, err
	}
	var kv struct {
		Table map[string]string `json:"table"`
	}
	if err := protocol.UnmarshalFastJSON(resp.Body, &kv); err != nil {
		return nil, err
	}
	return kv.Table, nil
}
