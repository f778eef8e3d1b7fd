package grpce2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"

	"github.com/apogeemq/apogee/client/admin"
)

// TestSimpleConsumerFIFO: a FIFO (orderly) group receives one message
// group's messages in send order, and the queue stays blocked for the
// group until the received batch is acked (docs/grpc.md §8.4).
func TestSimpleConsumerFIFO(t *testing.T) {
	s := startServer(t, "")
	const topic, group = "GrpcFifoConsumeTopic", "GrpcFifoConsumeGroup"
	s.createTopic(t, topic, "FIFO", 1)
	a, err := admin.New(admin.WithNameServers(s.namesrv))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := a.CreateSubscriptionGroup(ctx, admin.GroupConfig{Group: group, Orderly: true}, admin.Target{Cluster: "DefaultCluster"}); err != nil {
		t.Fatal(err)
	}
	withSSL(t, true)
	p := newProducer(t, s.grpc, rmq.WithTopics(topic))
	var ids []string
	for i := range 6 {
		m := &rmq.Message{Topic: topic, Body: []byte(fmt.Sprintf("step %d", i))}
		m.SetMessageGroup("order-1")
		res, err := p.Send(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res[0].MessageID)
	}
	c := newSimpleConsumer(t, s.grpc, group, topic, rmq.SUB_ALL)
	var got []string
	for len(got) < len(ids) {
		batch := receiveAll(t, c, 1, 20*time.Second, 20*time.Second)
		if len(batch) == 0 {
			t.Fatalf("received %d of %d in order, then nothing", len(got), len(ids))
		}
		// While this batch is unacked the queue is blocked for the group.
		rctx, rcancel := context.WithTimeout(context.Background(), 12*time.Second)
		more, err := c.Receive(rctx, 16, 20*time.Second)
		rcancel()
		if err == nil && len(more) > 0 {
			t.Fatalf("received %d more messages while a FIFO batch was unacked", len(more))
		}
		for _, mv := range batch {
			if mv.GetMessageGroup() == nil || *mv.GetMessageGroup() != "order-1" {
				t.Errorf("message group %v", mv.GetMessageGroup())
			}
			got = append(got, mv.GetMessageId())
			if err := c.Ack(ctx, mv); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range ids {
		if got[i] != ids[i] {
			t.Fatalf("received order %v, sent %v", got, ids)
		}
	}
}
