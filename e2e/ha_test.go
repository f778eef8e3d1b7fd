package e2e

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/store"
	"github.com/apogeemq/apogee/internal/testutil"
)

// haBroker starts a broker of group broker-a with cfg.
func haBroker(t *testing.T, cfg broker.Config) *broker.Broker {
	t.Helper()
	b, err := broker.New(cfg, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// commitLogBytes reads [from, to) of a broker's commit log.
func commitLogBytes(t *testing.T, b *broker.Broker, from, to int64) []byte {
	t.Helper()
	var out []byte
	for off := from; off < to; {
		chunk, err := b.Store.ReadCommitLog(off, int(to-off))
		if err != nil || len(chunk) == 0 {
			t.Fatalf("%s: ReadCommitLog(%d): %d bytes, %v", b.Addr(), off, len(chunk), err)
		}
		out = append(out, chunk...)
		off += int64(len(chunk))
	}
	return out
}

// waitReplicated waits until the slave's commit log is byte-identical to
// the master's up to the master's max offset.
func waitReplicated(t *testing.T, master, slave *broker.Broker) {
	t.Helper()
	want := master.Store.MaxPhyOffset()
	testutil.Eventually(t, 15*time.Second, func() bool { return slave.Store.MaxPhyOffset() >= want },
		"slave at %d never reached the master's %d", slave.Store.MaxPhyOffset(), want)
	if got := slave.Store.MaxPhyOffset(); got != want {
		t.Fatalf("slave max offset %d, master %d", got, want)
	}
	if !bytes.Equal(commitLogBytes(t, master, 0, want), commitLogBytes(t, slave, 0, want)) {
		t.Fatal("slave commit log differs from the master's")
	}
}

// TestMasterSlaveReplicationWithOfficialClient (docs/broker.md §2.1):
// a SYNC_MASTER with inSyncReplicas=2 and a SLAVE that finds it through the
// name server. Every send the official producer sees acknowledged is on the
// slave at that moment; the slave's commit log is byte-identical to the
// master's; with the slave stopped a send gets FLUSH_SLAVE_TIMEOUT (12);
// an official push consumer of a new group started just before the master
// stops reads every message, the rest from the slave.
func TestMasterSlaveReplicationWithOfficialClient(t *testing.T) {
	ns := startNamesrv(t, nil)
	nsAddr := ns.Addr().String()

	mcfg := brokerTestConfig(t.TempDir())
	mcfg.NamesrvAddr = []string{nsAddr}
	mcfg.Store.BrokerRole = store.RoleSyncMaster
	mcfg.InSyncReplicas = 2
	mcfg.Store.SlaveTimeout = time.Second
	master := haBroker(t, mcfg)

	scfg := brokerTestConfig(t.TempDir())
	scfg.NamesrvAddr = []string{nsAddr}
	scfg.BrokerID = 1
	scfg.Store.BrokerRole = store.RoleSlave
	scfg.SlaveReadEnable = true
	scfg.HaReconnectInterval = 100 * time.Millisecond
	scfg.SlaveSyncPeriod = 300 * time.Millisecond
	slave := haBroker(t, scfg)
	scfg.ListenPort = slave.Config().ListenPort // a restart keeps the address

	// The slave learned the master's HA address from its registration.
	testutil.Eventually(t, 10*time.Second, func() bool {
		st := master.HAServer().Stats()
		return len(st.Slaves) == 1 && st.Slaves[0].AckOffset >= 0
	}, "slave never connected to the master's HA port")

	topic := uniqueName(t, "HA")
	tc := protocol.NewTopicConfig(topic)
	tc.ReadQueueNums, tc.WriteQueueNums = 4, 4
	if err := master.Topics.Update(tc); err != nil {
		t.Fatal(err)
	}
	waitRoute(t, ns, topic)
	testutil.Eventually(t, 10*time.Second, func() bool { return slave.Topics.Contains(topic) },
		"slave never copied the topic from its master")

	p := newProducer(t, nsAddr)
	ctx := testutil.Context(t, 60*time.Second)
	var ids []string
	for i := range 40 {
		res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("replicated-"+string(rune('a'+i%26)))))
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("send %d: %v %v", i, res, err)
		}
		_, phy, err := message.ParseOffsetMsgID(res.OffsetMsgID)
		if err != nil {
			t.Fatal(err)
		}
		if got := slave.Store.MaxPhyOffset(); got <= phy {
			t.Fatalf("send %d acknowledged at offset %d before the slave had it (slave at %d)", i, phy, got)
		}
		ids = append(ids, res.MsgID)
	}
	waitReplicated(t, master, slave)

	// Slave stopped: the message is stored on the master, the answer is
	// FLUSH_SLAVE_TIMEOUT.
	if err := slave.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() bool { return len(master.HAServer().Stats().Slaves) == 0 })
	start := time.Now()
	res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("unreplicated")))
	if err != nil || res.Status != primitive.SendFlushSlaveTimeout {
		t.Fatalf("send without slave: %v %v, want FLUSH_SLAVE_TIMEOUT", res, err)
	}
	if d := time.Since(start); d < mcfg.Store.SlaveTimeout {
		t.Fatalf("FLUSH_SLAVE_TIMEOUT after %v, before slaveTimeout", d)
	}
	ids = append(ids, res.MsgID)

	// The slave comes back, resumes at its offset and catches up.
	slave = haBroker(t, scfg)
	waitReplicated(t, master, slave)

	// A push consumer of a new group starts while the master is up: the
	// official Go client asks only the master (brokerId 0) for a queue's
	// starting offset (remoteBrokerOffsetStore.fetchConsumeOffsetFromBroker
	// uses FindBrokerAddrByName), so a group that starts with no master in
	// the route never pulls at all. It pulls one message per queue every
	// 300 ms (pull batch 1, pull interval; not flow control, whose counters
	// race inside the client), so the master has served only a few messages
	// when it stops.
	//
	// As in RocketMQ 5, a readable slave sends a reader that does not lag
	// back to the master (docs/protocol.md §7.3, suggestWhichBrokerId), so
	// after the master stops the client keeps asking its cached master
	// address until its route refresh (30 s in the Go client) drops it, then
	// reads the rest from the slave.
	group := uniqueName(t, "cg")
	gc := protocol.NewSubscriptionGroupConfig(group)
	// The closing master drops the consumer's connection and would notify
	// the group; the client's rebalance could then read an empty member
	// list and drop every queue, and with the master still in its cached
	// route (30 s refresh) it could not get them back within the test.
	// notifyConsumerIdsChangedEnable is RocketMQ's per-group switch for that.
	gc.NotifyConsumerIdsChangedEnable = false
	if err := master.Groups.Update(gc); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() bool { g, ok := slave.Groups.Get(group); return ok && !g.NotifyConsumerIdsChangedEnable },
		"slave never copied the subscription group")
	var queuesMu sync.Mutex
	queues := map[int]bool{} // queues that delivered a message
	got := newReceived()
	startOfficialPushConsumer(t, nsAddr, group, topic, tagSelector("*"),
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			queuesMu.Lock()
			for _, m := range msgs {
				queues[m.Queue.QueueId] = true
			}
			queuesMu.Unlock()
			got.add(msgs...)
			return consumer.ConsumeSuccess, nil
		},
		consumer.WithPullBatchSize(1), consumer.WithPullInterval(300*time.Millisecond))
	testutil.Eventually(t, 30*time.Second, func() bool {
		queuesMu.Lock()
		defer queuesMu.Unlock()
		return len(queues) == int(tc.ReadQueueNums)
	}, "consumer never pulled from every queue of the master")

	// The master goes away; the route keeps the slave.
	fromMaster := master.Stats().MessagesOut
	if err := master.Close(); err != nil {
		t.Fatal(err)
	}
	if fromMaster >= int64(len(ids)) {
		t.Fatalf("the master served all %d messages before it stopped: the pull interval did not hold", fromMaster)
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		r := ns.Routes().PickupTopicRouteData(topic)
		if r == nil || len(r.BrokerDatas) != 1 {
			return false
		}
		addrs := r.BrokerDatas[0].BrokerAddrs
		return addrs[protocol.MasterID] == "" && addrs[1] == slave.Addr()
	}, "route never dropped the master")
	got.waitAll(t, 75*time.Second, ids, "messages read across the failover") // route refresh + pulls
	if served := slave.Stats().MessagesOut; served < int64(len(ids))-fromMaster {
		t.Fatalf("slave served %d messages, master %d, of %d", served, fromMaster, len(ids))
	}
}
