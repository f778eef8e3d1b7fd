package broker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

// BenchmarkSendMetricsOnOff compares the send path with metrics on
// (metricsExporterType=PROM: per-topic meters and the rpc-latency hook)
// and off (DISABLE) in one run: two ASYNC_FLUSH brokers in this process,
// SEND_MESSAGE_V2 of 1 KiB from 16 goroutines, 2000-send phases on each
// broker in turn. Wall time is noise on a shared machine, so each phase's
// process CPU is charged to its broker; x-metrics-off is CPU per send off
// / on, the throughput ratio of a CPU-bound broker (target >= 0.97).
//
//	go test -run='^$' -bench=SendMetricsOnOff -benchtime=20x -count=3 ./internal/broker
func BenchmarkSendMetricsOnOff(b *testing.B) {
	on := benchBroker(b, "ASYNC_FLUSH", 256<<20)
	off := benchBrokerWith(b, func(c *Config) { c.MetricsExporterType = MetricsExporterDisable })
	if !on.MetricsEnabled() || off.MetricsEnabled() {
		b.Fatal("metrics switch not applied")
	}
	c := benchClient(b)
	body := make([]byte, 1024)
	h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: "BenchMetrics", DefaultTopic: names.TopicAutoCreate,
		DefaultTopicQueueNums: 4, QueueID: -1, BornTimestamp: time.Now().UnixMilli(),
		Properties: "TAGS\x01t\x02UNIQ_KEY\x01AC1100010000000000000000000000\x02WAIT\x01true\x02"}
	send := func(addr string) {
		req := protocol.NewRequestList(protocol.SendMessageV2, protocol.AppendHeader(nil, &h, true), body)
		req.SerializeType = protocol.SerializeRocketMQ
		for attempt := 0; attempt < 4; attempt++ {
			resp, err := c.InvokeSync(context.Background(), addr, req)
			if err != nil {
				b.Error(err)
				return
			}
			if resp.Code != int32(protocol.SystemBusy) {
				return
			}
		}
	}
	phase := func(addr string, n int) time.Duration {
		start := processCPU()
		var wg sync.WaitGroup
		per := n / 16
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range per {
					send(addr)
				}
			}()
		}
		wg.Wait()
		return processCPU() - start
	}
	phase(on.Addr(), 160) // create topics, warm connections
	phase(off.Addr(), 160)
	const perPhase = 2000
	var cpuOn, cpuOff time.Duration
	round := 0
	for b.Loop() {
		if round%2 == 0 {
			cpuOn += phase(on.Addr(), perPhase)
			cpuOff += phase(off.Addr(), perPhase)
		} else {
			cpuOff += phase(off.Addr(), perPhase)
			cpuOn += phase(on.Addr(), perPhase)
		}
		round++
	}
	sends := float64(round * perPhase)
	b.ReportMetric(float64(cpuOn)/sends, "cpu-ns/send-on")
	b.ReportMetric(float64(cpuOff)/sends, "cpu-ns/send-off")
	b.ReportMetric(float64(cpuOff)/float64(cpuOn), "x-metrics-off")
}

// benchBrokerWith is benchBroker (ASYNC_FLUSH, 256 MiB files) with a
// config change.
func benchBrokerWith(b *testing.B, mutate func(*Config)) *Broker {
	cfg := DefaultConfig()
	cfg.BrokerName = "bench2"
	cfg.ListenPort = 0
	cfg.VIPChannelEnable = false
	cfg.Store.StorePathRootDir = b.TempDir()
	cfg.Store.FlushDiskType = "ASYNC_FLUSH"
	cfg.Store.MappedFileSizeCommitLog = 256 << 20
	cfg.Store.MessageIndexEnable = false
	mutate(&cfg)
	br, err := New(cfg, testutil.DiscardLogger())
	if err != nil {
		b.Fatal(err)
	}
	if err := br.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { br.Close() })
	return br
}

// BenchmarkMeterHotPath is the metrics work one send and one pull add:
// resolve the topic's and the group's meters (lock-free map reads), count
// the stored message and the pulled batch. It must not allocate.
func BenchmarkMeterHotPath(b *testing.B) {
	m := newMeters()
	for i := range 100 { // a broker with some topics and groups
		m.topic("T" + string(rune('a'+i%26)) + string(rune('a'+i/26)))
		m.group("T"+string(rune('a'+i%26)), "G"+string(rune('a'+i/26)))
	}
	topic, group := "BenchTopic", "BenchGroup"
	m.topic(topic)
	m.group(topic, group)
	b.ReportAllocs()
	cpu := startCPU() // wall time on a loaded machine overstates it
	for b.Loop() {
		m.topic(topic).stored(MessageNormal, 1, 1200)
		gm := m.group(topic, group)
		gm.consumed(32, 32*1200)
		gm.pulledTo(3, 1000)
	}
	cpu(b, 1)
}
