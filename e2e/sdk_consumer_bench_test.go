package e2e

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/apogeemq/apogee/client"
)

// BenchmarkConsume measures how fast a fresh group drains a backlog of
// 1 KiB messages with the Apogee push consumer and, in the same run, with
// the official Go push consumer (same broker, same backlog, default
// settings), and reports both rates and their ratio:
//
//	go test -run '^$' -bench Consume -benchtime 1x ./e2e
func BenchmarkConsume(b *testing.B) {
	const backlog = 20000
	c := startClusterTB(b, nil)
	topic := uniqueName(b, "BenchConsume")
	c.createTopic(topic, 8)
	ctx := context.Background()
	p, err := client.NewProducer("bench_pg", client.WithNameServers(c.nsAddr))
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Start(); err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	body := make([]byte, 1024)
	for sent := 0; sent < backlog; sent += 100 {
		batch := make([]*client.Message, 100)
		for i := range batch {
			batch[i] = client.NewMessage(topic, body)
		}
		if _, err := p.SendBatch(ctx, batch...); err != nil {
			b.Fatal(err)
		}
	}
	var sdkRate, officialRate float64
	for b.Loop() {
		sdkRate = drainSDK(b, c.nsAddr, topic, uniqueName(b, "bench_sdk"), backlog)
		officialRate = drainOfficial(b, c.nsAddr, topic, uniqueName(b, "bench_off"), backlog)
	}
	b.ReportMetric(sdkRate, "apogee-msgs/s")
	b.ReportMetric(officialRate, "official-msgs/s")
	b.ReportMetric(sdkRate/officialRate, "x-official")
}

func drainSDK(b *testing.B, nsAddr, topic, group string, n int) float64 {
	var got atomic.Int64
	done := make(chan struct{})
	c, err := client.NewPushConsumer(group, client.WithNameServers(nsAddr),
		client.WithConsumeFromWhere(client.ConsumeFromFirstOffset), client.WithInstanceName(group))
	if err != nil {
		b.Fatal(err)
	}
	_ = c.Subscribe(topic, client.TagSelector("*"), func(_ context.Context, msgs []*client.MessageExt) (client.ConsumeResult, error) {
		if got.Add(int64(len(msgs))) == int64(n) {
			close(done)
		}
		return client.ConsumeSuccess, nil
	})
	start := time.Now()
	if err := c.Start(); err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	select {
	case <-done:
	case <-time.After(120 * time.Second):
		b.Fatalf("apogee consumer drained %d of %d", got.Load(), n)
	}
	return float64(n) / time.Since(start).Seconds()
}

func drainOfficial(b *testing.B, nsAddr, topic, group string, n int) float64 {
	var got atomic.Int64
	done := make(chan struct{})
	c, err := rocketmq.NewPushConsumer(consumer.WithNameServer([]string{nsAddr}), consumer.WithGroupName(group),
		consumer.WithInstance(group), consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		b.Fatal(err)
	}
	_ = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			if got.Add(int64(len(msgs))) == int64(n) {
				close(done)
			}
			return consumer.ConsumeSuccess, nil
		})
	start := time.Now()
	if err := c.Start(); err != nil {
		b.Fatal(err)
	}
	defer c.Shutdown()
	select {
	case <-done:
	case <-time.After(120 * time.Second):
		b.Fatalf("official consumer drained %d of %d", got.Load(), n)
	}
	return float64(n) / time.Since(start).Seconds()
}
