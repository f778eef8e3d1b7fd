package e2e

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

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
//	stale     the first send to the old master's address is acknowledged
//	          (a producer with a stale route: the old master, restarted
//	          at once after SIGKILL as a supervisor would, or resumed
//	          after SIGSTOP, rejoins as a slave and relays the send to the
//	          new master, forwardSendToMaster)
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
			var detect, elect, route, send, stale []time.Duration
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
				// The old master rejoins as a slave (before the next round)
				// and relays what a stale producer sends to its address.
				if fault.sig == syscall.SIGKILL {
					m.start()
				} else {
					m.signal(syscall.SIGCONT)
				}
				old := newRawSender(b, m.addr)
				var oT time.Duration
				for time.Now().Before(t0.Add(60 * time.Second)) {
					if storedBy(old.sendResp(topic, "stale")) == s.addr {
						oT = time.Since(t0)
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
				if oT == 0 {
					b.Fatalf("iteration: the old master's address never relayed a send within 60 s")
				}
				detect, elect, route, send, stale = append(detect, dT), append(elect, eT), append(route, rT), append(send, sT), append(stale, oT)
				b.Logf("%s: detected %v, elected %v, route %v, first send %v, first send to the old address %v", fault.name, dT.Round(time.Millisecond),
					eT.Round(time.Millisecond), rT.Round(time.Millisecond), sT.Round(time.Millisecond), oT.Round(time.Millisecond))
				e.waitMaster(name, s.addr, 2, 30*time.Second)
				master, slave = slave, master
			}
			b.StopTimer()
			b.ReportMetric(meanMs(detect), "detect-ms")
			b.ReportMetric(meanMs(elect), "elect-ms")
			b.ReportMetric(meanMs(route), "route-ms")
			b.ReportMetric(meanMs(send), "send-ms")
			b.ReportMetric(maxMs(send), "send-max-ms")
			b.ReportMetric(meanMs(stale), "stale-send-ms")
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

// BenchmarkControllerReplication compares a controller-mode broker group
// of 2 with allAckInSyncStateSet=true (every acknowledged send is on both
// replicas: RPO 0) with the same group replicating asynchronously, in one
// run: 16 official Go producers' goroutines send 1 KiB messages sync
// (ASYNC_FLUSH on both, so the difference is replication). Reports
// msgs/s and the p50/p99 send latency.
//
//	go test -run '^$' -bench ControllerReplication -benchtime 5000x ./e2e
func BenchmarkControllerReplication(b *testing.B) {
	e := newFailoverEnv(b)
	type group struct{ name, topic string }
	var groups []group
	for _, mode := range []struct {
		name   string
		allAck string
	}{{"AllAck2Replicas", "true"}, {"Async2Replicas", "false"}} {
		cluster, name := "Repl"+mode.name, "broker-"+mode.name
		extra := map[string]string{"allAckInSyncStateSet": mode.allAck, "flushDiskType": "ASYNC_FLUSH"}
		m := newCtlBroker(b, e.bin, e.ctl, e.nsAddr, cluster, name, extra)
		s := newCtlBroker(b, e.bin, e.ctl, e.nsAddr, cluster, name, extra)
		m.start()
		e.waitMaster(name, m.addr, 1, 20*time.Second)
		s.start()
		e.waitMaster(name, m.addr, 2, 20*time.Second)
		topic := uniqueName(b, "Repl")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := e.admin.CreateTopic(ctx, admin.TopicConfig{Topic: topic, ReadQueues: 8, WriteQueues: 8}, admin.Target{Cluster: cluster})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		groups = append(groups, group{mode.name, topic})
	}
	p := startSyncProducer(b, e.nsAddr, uniqueName(b, "PG"))
	body := make([]byte, 1024)
	for _, g := range groups {
		for range 50 { // warm-up: routes, connections
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, _ = p.SendSync(ctx, primitive.NewMessage(g.topic, body))
			cancel()
		}
	}
	for _, g := range groups {
		b.Run(g.name, func(b *testing.B) {
			const workers = 16
			lat := make([][]time.Duration, workers)
			var failed atomic.Int64
			var next atomic.Int64
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						t0 := time.Now()
						ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
						res, err := p.SendSync(ctx, primitive.NewMessage(g.topic, body))
						cancel()
						if err != nil || res.Status != primitive.SendOK {
							failed.Add(1)
							continue
						}
						lat[w] = append(lat[w], time.Since(t0))
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			var all []time.Duration
			for _, l := range lat {
				all = append(all, l...)
			}
			sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
			if len(all) == 0 {
				b.Fatal("no send succeeded")
			}
			b.ReportMetric(float64(len(all))/elapsed.Seconds(), "msgs/s")
			b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(failed.Load()), "failed")
		})
	}
}
