package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/testutil"
)

// BenchmarkSend measures SEND_MESSAGE through a real broker (ASYNC_FLUSH
// and SYNC_FLUSH), 16 requests in flight, against a baseline: the same
// client and remoting server answering at once without a store. Run with
//
//	go test -run='^$' -bench=Send -benchtime=2s ./internal/broker
func BenchmarkSend(b *testing.B) {
	for _, size := range []int{128, 1024} {
		body := make([]byte, size)
		b.Run(fmt.Sprintf("baseline/size=%d", size), func(b *testing.B) {
			srv := remoting.NewServer(remoting.ServerConfig{ListenAddr: "127.0.0.1:0", Logger: testutil.DiscardLogger()})
			srv.RegisterProcessor(protocol.SendMessage, func(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
				return protocol.NewResponse(req, protocol.Success, ""), nil
			}, remoting.PoolConfig{Workers: 4})
			if err := srv.Start(); err != nil {
				b.Fatal(err)
			}
			defer srv.Close()
			runSend(b, srv.Addr().String(), body)
		})
		for _, flush := range []string{"ASYNC_FLUSH", "SYNC_FLUSH"} {
			b.Run(fmt.Sprintf("broker/%s/size=%d", flush, size), func(b *testing.B) {
				cfg := DefaultConfig()
				cfg.BrokerName = "bench"
				cfg.ListenPort = 0
				cfg.VIPChannelEnable = false
				cfg.Store.StorePathRootDir = b.TempDir()
				cfg.Store.FlushDiskType = flush
				cfg.Store.MappedFileSizeCommitLog = 256 << 20
				cfg.Store.MessageIndexEnable = false
				br, err := New(cfg, testutil.DiscardLogger())
				if err != nil {
					b.Fatal(err)
				}
				if err := br.Start(); err != nil {
					b.Fatal(err)
				}
				defer br.Close()
				runSend(b, br.Addr(), body)
			})
		}
	}
}

func runSend(b *testing.B, addr string, body []byte) {
	c := benchClient(b)
	h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: "Bench", DefaultTopic: names.TopicAutoCreate,
		DefaultTopicQueueNums: 4, QueueID: -1, BornTimestamp: time.Now().UnixMilli(), Properties: "TAGS\x01t\x02"}
	ext := protocol.EncodeHeader(&h, false)
	send := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		e := make(map[string]string, len(ext))
		for k, v := range ext {
			e[k] = v
		}
		resp, err := c.InvokeSync(ctx, addr, protocol.NewRequest(protocol.SendMessage, e, body))
		if err == nil && resp.Code != int32(protocol.Success) {
			err = fmt.Errorf("code %d %s", resp.Code, resp.Remark)
		}
		return err
	}
	if err := send(); err != nil { // creates the topic
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.SetParallelism(8) // 8 x GOMAXPROCS requests in flight
	start := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := send(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msg/s")
}

// BenchmarkPull measures PULL_MESSAGE of 32 x 1 KiB messages from a queue
// that already holds them (messages per second transferred).
func BenchmarkPull(b *testing.B) {
	br := benchBroker(b, "ASYNC_FLUSH", 64<<20)
	c := benchClient(b)
	const n = 4096
	fillBenchQueue(b, c, br, "PullBench", n)
	b.SetBytes(32 * 1024)
	b.ReportAllocs()
	start := time.Now()
	var msgs int64
	off := int64(0)
	for b.Loop() {
		h := protocol.PullMessageRequestHeader{ConsumerGroup: "cg", Topic: "PullBench", QueueID: 0, QueueOffset: off,
			MaxMsgNums: 32, SysFlag: protocol.PullFlagSubscription, Subscription: "*"}
		resp, err := c.InvokeSync(context.Background(), br.Addr(), protocol.NewRequest(protocol.PullMessage, protocol.EncodeHeader(&h, false), nil))
		if err != nil || resp.Code != 0 {
			b.Fatalf("pull: %v %v", err, resp)
		}
		msgs += 32
		off = (off + 32) % (n - 32)
	}
	b.ReportMetric(float64(msgs)/time.Since(start).Seconds(), "msg/s")
}

// fillBenchQueue sends n 1 KiB messages to queue 0 of topic and waits
// until they are dispatched: the data the pull benchmarks read.
func fillBenchQueue(b *testing.B, c *remoting.Client, br *Broker, topic string, n int64) {
	b.Helper()
	body := make([]byte, 1024)
	for range n {
		h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: topic, DefaultTopic: names.TopicAutoCreate,
			DefaultTopicQueueNums: 1, QueueID: 0, BornTimestamp: time.Now().UnixMilli()}
		resp, err := c.InvokeSync(context.Background(), br.Addr(), protocol.NewRequest(protocol.SendMessage, protocol.EncodeHeader(&h, false), body))
		if err != nil || resp.Code != 0 {
			b.Fatalf("send: %v %v", err, resp)
		}
	}
	testutil.Eventually(b, 10*time.Second, func() bool { return br.Store.MaxOffsetInQueue(topic, 0) >= n })
}
