package e2e

import (
	"context"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/protocol"
)

// BenchmarkFailoverTimeline measures a controller-mode failover step by
// step (real processes on loopback: 3 controllers, a name server, a broker
// group of 2 with allAckInSyncStateSet and SYNC_FLUSH): from the fault to
//
//	detected  the controller no longer lists the master as alive
//	elected   the controller names the slave master
//	route     the name server routes the topic's broker name to it (id 0)
//	send      the first send to it is acknowledged
//
// for SIGKILL (closed connection) and SIGSTOP (hang: heartbeat timeout,
// controllerHeartBeatTimeoutMills=3000 here, 10 s by default). Each
// iteration fails the current master over, then lets it rejoin as a slave.
// Not a timed test: run with
//
//	go test -run '^$' -bench FailoverTimeline -benchtime 3x ./e2e
//
// Metrics are milliseconds after the fault (means over the iterations,
// and the worst send).
func BenchmarkFailoverTimeline(b *testing.B) {
	for _, fault := range []struct {
		name string
		sig  syscall.Signal
	}{{"SIGKILL", syscall.SIGKILL}, {"SIGSTOP", syscall.SIGSTOP}} {
		b.Run(fault.name, func(b *testing.B) {
			e := newFailoverEnv(b)
			const cluster, name = "TimelineCluster", "broker-t"
			brokers := []*ctlBroker{
				newCtlBroker(b, e.bin, e.ctl, e.nsAddr, cluster, name, nil),
				newCtlBroker(b, e.bin, e.ctl, e.nsAddr, cluster, name, nil),
			}
			brokers[0].start()
			e.waitMaster(name, brokers[0].addr, 1, 20*time.Second)
			brokers[1].start()
			e.waitMaster(name, brokers[0].addr, 2, 20*time.Second)
			topic := uniqueName(b, "Timeline")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := e.admin.CreateTopic(ctx, admin.TopicConfig{Topic: topic, ReadQueues: 2, WriteQueues: 2}, admin.Target{Cluster: cluster})
			cancel()
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() {
				for _, br := range brokers {
					br.signal(syscall.SIGCONT)
				}
			})
			master, slave := 0, 1
			var detect, elect, route, send []time.Duration
			b.ResetTimer()
			for range b.N {
				m, s := brokers[master], brokers[slave]
				probe := newRawSender(b, s.addr)
				t0 := time.Now()
				if fault.sig == syscall.SIGKILL {
					m.kill()
				} else {
					m.signal(syscall.SIGSTOP)
				}
				var dT, eT, rT, sT time.Duration
				deadline := t0.Add(30 * time.Second)
				for time.Now().Before(deadline) && (dT == 0 || eT == 0 || rT == 0 || sT == 0) {
					now := time.Since(t0)
					if dT == 0 || eT == 0 {
						if ri, ok := e.replicas(name); ok {
							if ri.MasterAddress == s.addr {
								eT = max(eT, now)
								if dT == 0 {
									dT = now
								}
							}
							for _, r := range append(ri.InSyncReplicas, ri.NotInSyncReplicas...) {
								if r.BrokerAddress == m.addr && !r.Alive && dT == 0 {
									dT = now
								}
							}
						}
					}
					if eT != 0 && rT == 0 {
						rctx, cancel := context.WithTimeout(context.Background(), time.Second)
						tr, err := e.admin.TopicRoute(rctx, topic)
						cancel()
						if err == nil {
							for _, bd := range tr.Brokers {
								if bd.Name == name && bd.Addrs[protocol.MasterID] == s.addr {
									rT = time.Since(t0)
								}
							}
						}
					}
					if eT != 0 && sT == 0 && probe.send(topic) == int32(protocol.Success) {
						sT = time.Since(t0)
					}
					time.Sleep(5 * time.Millisecond)
				}
				if sT == 0 || rT == 0 {
					b.Fatalf("iteration: no complete failover within 30 s (detected %v elected %v route %v send %v)", dT, eT, rT, sT)
				}
				detect, elect, route, send = append(detect, dT), append(elect, eT), append(route, rT), append(send, sT)
				b.Logf("%s: detected %v, elected %v, route %v, first send %v", fault.name, dT.Round(time.Millisecond),
					eT.Round(time.Millisecond), rT.Round(time.Millisecond), sT.Round(time.Millisecond))
				// The old master rejoins as a slave before the next round.
				if fault.sig == syscall.SIGKILL {
					m.start()
				} else {
					m.signal(syscall.SIGCONT)
				}
				e.waitMaster(name, s.addr, 2, 30*time.Second)
				master, slave = slave, master
			}
			b.StopTimer()
			b.ReportMetric(meanMs(detect), "detect-ms")
			b.ReportMetric(meanMs(elect), "elect-ms")
			b.ReportMetric(meanMs(route), "route-ms")
			b.ReportMetric(meanMs(send), "send-ms")
			b.ReportMetric(maxMs(send), "send-max-ms")
		})
	}
}

func meanMs(ds []time.Duration) float64 {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return float64(sum.Microseconds()) / 1000 / float64(max(1, len(ds)))
}

func maxMs(ds []time.Duration) float64 {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		return 0
	}
	return float64(s[len(s)-1].Microseconds()) / 1000
}
