package namesrv

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
)

// checkInvariants verifies the table invariants doc.go states.
func checkInvariants(t *testing.T, m *RouteInfoManager) {
	t.Helper()
	m.mu.RLock()
	defer m.mu.RUnlock()
	for topic, qdMap := range m.topicQueueTable {
		if len(qdMap) == 0 {
			t.Fatalf("topic %s has an empty queue map", topic)
		}
		for name, qd := range qdMap {
			if qd.BrokerName != name {
				t.Fatalf("topic %s: queue data of %s keyed as %s", topic, qd.BrokerName, name)
			}
			if m.brokerAddrTable[name] == nil {
				t.Fatalf("topic %s has queue data of unknown broker %s", topic, name)
			}
		}
	}
	inCluster := map[string]bool{}
	for cluster, names := range m.clusterAddrTable {
		if len(names) == 0 {
			t.Fatalf("cluster %s is empty", cluster)
		}
		for name := range names {
			if m.brokerAddrTable[name] == nil {
				t.Fatalf("cluster %s lists unknown broker %s", cluster, name)
			}
			inCluster[name] = true
		}
	}
	for name, bd := range m.brokerAddrTable {
		if len(bd.BrokerAddrs) == 0 {
			t.Fatalf("broker %s has no address", name)
		}
		if !inCluster[name] {
			t.Fatalf("broker %s is in no cluster", name)
		}
		seen := map[string]bool{}
		for _, addr := range bd.BrokerAddrs {
			if seen[addr] {
				t.Fatalf("broker %s has address %s under two ids", name, addr)
			}
			seen[addr] = true
		}
	}
}

// TestRegistryRandomOperations runs seeded random sequences of every
// mutation and checks the invariants after each step.
func TestRegistryRandomOperations(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, seed))
			m, clk := newTestRegistry(RouteOptions{BrokerChannelExpiredTime: 30 * time.Second})
			yes, no := true, false
			for step := 0; step < 1500; step++ {
				cluster := fmt.Sprint("C", rng.IntN(2))
				name := fmt.Sprint("broker-", rng.IntN(4))
				id := int64(rng.IntN(3))
				addr := fmt.Sprintf("10.0.0.%d:10911", rng.IntN(6))
				topic := fmt.Sprint("T", rng.IntN(8))
				switch op := rng.IntN(10); op {
				case 0, 1, 2:
					qs := map[string]int32{}
					for n := rng.IntN(4); n >= 0; n-- {
						qs[fmt.Sprint("T", rng.IntN(8))] = int32(1 + rng.IntN(8))
					}
					r := reg(cluster, name, id, addr, topics(int64(rng.IntN(3)), qs))
					r.Channel = &fakeChannel{id: uint64(rng.IntN(6))}
					switch rng.IntN(3) {
					case 0:
						r.EnableActingMaster = &yes
					case 1:
						r.EnableActingMaster = &no
					}
					r.TopicConfig.DataVersion.StateVersion = int64(rng.IntN(2))
					m.RegisterBroker(r)
				case 3:
					m.UnregisterBroker(cluster, addr, name)
				case 4:
					m.OnChannelDestroy(uint64(rng.IntN(6)))
				case 5:
					clk.advance(time.Duration(rng.IntN(20)) * time.Second)
					m.ScanNotActiveBroker()
				case 6:
					if rng.IntN(2) == 0 {
						m.DeleteTopic(topic, "")
					} else {
						m.DeleteTopic(topic, cluster)
					}
				case 7:
					if rng.IntN(2) == 0 {
						m.WipeWritePermOfBroker(name)
					} else {
						m.AddWritePermOfBroker(name)
					}
				case 8:
					m.RegisterTopic(topic, []protocol.QueueData{{BrokerName: name, ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}})
				case 9:
					m.UpdateBrokerInfoUpdateTimestamp(cluster, addr, 0)
					m.SetOptions(RouteOptions{DeleteTopicWithBrokerRegistration: rng.IntN(2) == 0,
						SupportActingMaster: rng.IntN(2) == 0, BrokerChannelExpiredTime: 30 * time.Second})
				}
				checkInvariants(t, m)
				if r := m.PickupTopicRouteData(topic); r != nil {
					if _, err := r.Encode(); err != nil {
						t.Fatalf("step %d: route does not encode: %v", step, err)
					}
				}
			}
			// Everything expires eventually.
			clk.advance(time.Hour)
			m.ScanNotActiveBroker()
			checkInvariants(t, m)
			if s := m.Stats(); s.LiveBrokers != 0 {
				t.Fatalf("live brokers after expiry: %+v", s)
			}
		})
	}
}
