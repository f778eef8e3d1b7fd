package broker

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/testutil"
)

// BenchmarkSendCPU measures SEND_MESSAGE_V2 with a ROCKETMQ header built as
// an ext list (what the Go SDK sends) of 1 KiB bodies to an ASYNC_FLUSH
// broker, 16 requests in flight, and reports process CPU per message as
// cpu-ns/op: wall time on a shared machine is noise, CPU per message is what
// the broker-side work cuts. The client runs in the same process, so its
// (unchanged) share is included; compare old and new binaries.
//
//	go test -run='^$' -bench=CPU -benchtime=2s -count=3 ./internal/broker
func BenchmarkSendCPU(b *testing.B) {
	br := benchBroker(b, "ASYNC_FLUSH", 256<<20)
	c := benchClient(b)
	body := make([]byte, 1024)
	h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: "BenchCPU", DefaultTopic: names.TopicAutoCreate,
		DefaultTopicQueueNums: 4, QueueID: -1, BornTimestamp: time.Now().UnixMilli(),
		Properties: "TAGS\x01t\x02UNIQ_KEY\x01AC1100010000000000000000000000\x02WAIT\x01true\x02"}
	send := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req := protocol.NewRequestList(protocol.SendMessageV2, protocol.AppendHeader(nil, &h, true), body)
		req.SerializeType = protocol.SerializeRocketMQ
		// SYSTEM_BUSY (a store put that held the lock over
		// osPageCacheBusyTimeOutMills on a loaded machine) is retried, as a
		// producer would.
		for attempt := 0; ; attempt++ {
			resp, err := c.InvokeSync(ctx, br.Addr(), req)
			if err == nil && resp.Code == int32(protocol.SystemBusy) && attempt < 3 {
				continue
			}
			if err == nil && resp.Code != int32(protocol.Success) {
				err = fmt.Errorf("code %d %s", resp.Code, resp.Remark)
			}
			return err
		}
	}
	if err := send(); err != nil { // creates the topic
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.SetParallelism(8)
	cpu := startCPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := send(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	cpu(b, 1)
}

// BenchmarkPullCPU pulls 32 x 1 KiB messages per request with a ROCKETMQ
// header (what the Go SDK sends) and reports process CPU per message
// (cpu-ns/op is per request; cpu-ns/msg per message).
func BenchmarkPullCPU(b *testing.B) {
	br := benchBroker(b, "ASYNC_FLUSH", 64<<20)
	c := benchClient(b)
	const n = 4096
	fillBenchQueue(b, c, br, "PullCPU", n)
	b.SetBytes(32 * 1024)
	b.ReportAllocs()
	cpu := startCPU()
	off := int64(0)
	for b.Loop() {
		h := protocol.PullMessageRequestHeader{ConsumerGroup: "cg", Topic: "PullCPU", QueueID: 0, QueueOffset: off,
			MaxMsgNums: 32, SysFlag: protocol.PullFlagSubscription, Subscription: "*", SuspendTimeoutMillis: 15000}
		req := protocol.NewRequestList(protocol.PullMessage, protocol.AppendHeader(nil, &h, false), nil)
		req.SerializeType = protocol.SerializeRocketMQ
		resp, err := c.InvokeSync(context.Background(), br.Addr(), req)
		if err != nil || resp.Code != 0 {
			b.Fatalf("pull: %v %v", err, resp)
		}
		off = (off + 32) % (n - 32)
	}
	cpu(b, 32)
}

// benchBroker starts a broker for a benchmark; Close runs at cleanup.
func benchBroker(b *testing.B, flush string, fileSize int64) *Broker {
	cfg := DefaultConfig()
	cfg.BrokerName = "bench"
	cfg.ListenPort = 0
	cfg.VIPChannelEnable = false
	cfg.Store.StorePathRootDir = b.TempDir()
	cfg.Store.FlushDiskType = flush
	cfg.Store.MappedFileSizeCommitLog = fileSize
	cfg.Store.MessageIndexEnable = false
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

// benchClient starts a remoting client that the benchmark's cleanup closes
// (before the broker, which was started earlier).
func benchClient(b *testing.B) *remoting.Client {
	c := remoting.NewClient(remoting.ClientConfig{Logger: testutil.DiscardLogger()})
	if err := c.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// startCPU starts measuring the process's CPU time; the function it returns
// reports it per operation (cpu-ns/op) and, with perOp > 1 messages per
// operation, per message (cpu-ns/msg).
func startCPU() func(b *testing.B, perOp int) {
	start := processCPU()
	return func(b *testing.B, perOp int) {
		if b.N == 0 {
			return
		}
		per := float64(processCPU()-start) / float64(b.N)
		b.ReportMetric(per, "cpu-ns/op")
		if perOp > 1 {
			b.ReportMetric(per/float64(perOp), "cpu-ns/msg")
		}
	}
}

// processCPU is the process's user plus system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
