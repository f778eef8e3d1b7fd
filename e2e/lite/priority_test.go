package litee2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	rmq "github.com/apache/rocketmq-clients/golang/v5"
)

// TestPriorityBacklogHighestFirst: a backlog of priority messages, sent
// lowest level first by the v5.1.4 producer (SystemProperties.priority over
// gRPC) and by the v2 remoting producer (the _SYS_MSG_PRIORITY_ property),
// reaches a v5.1.4 SimpleConsumer highest priority first; within a level in
// send order. A normal message is refused by the PRIORITY topic over gRPC.
func TestPriorityBacklogHighestFirst(t *testing.T) {
	s := startServer(t, "")
	const topic, group = "PrioTopic", "PrioGroup"
	const levels, perLevel = 4, 5
	s.createTopic(t, topic, "+message.type=PRIORITY", levels)

	p, err := rmq.NewProducer(clientConfig(s.grpc, ""), rmq.WithTopics(topic))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.GracefulStop()
	rp, err := v2.NewProducer(producer.WithNameServer([]string{s.namesrv}), producer.WithGroupName("PrioRemoting"))
	if err != nil {
		t.Fatal(err)
	}
	if err := rp.Start(); err != nil {
		t.Fatal(err)
	}
	defer rp.Shutdown()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range perLevel {
		for lvl := range levels {
			body := fmt.Sprintf("p%d-%d", lvl, i)
			if (i+lvl)%2 == 0 {
				m := &rmq.Message{Topic: topic, Body: []byte(body)}
				if err := m.SetPriority(int32(lvl)); err != nil {
					t.Fatal(err)
				}
				if _, err := p.Send(ctx, m); err != nil {
					t.Fatalf("grpc send %s: %v", body, err)
				}
				continue
			}
			m := primitive.NewMessage(topic, []byte(body))
			m.WithProperty("_SYS_MSG_PRIORITY_", strconv.Itoa(lvl))
			if _, err := rp.SendSync(ctx, m); err != nil {
				t.Fatalf("remoting send %s: %v", body, err)
			}
		}
	}
	if _, err := p.Send(ctx, &rmq.Message{Topic: topic, Body: []byte("plain")}); err == nil {
		t.Fatal("a normal message was accepted by a PRIORITY topic over gRPC")
	}

	c, err := rmq.NewSimpleConsumer(clientConfig(s.grpc, group), rmq.WithSimpleAwaitDuration(5*time.Second),
		rmq.WithSimpleSubscriptionExpressions(map[string]*rmq.FilterExpression{topic: rmq.SUB_ALL}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.GracefulStop()
	var got []string
	deadline := time.Now().Add(time.Minute)
	for len(got) < levels*perLevel && time.Now().Before(deadline) {
		rctx, rcancel := context.WithTimeout(context.Background(), 12*time.Second)
		mvs, err := c.Receive(rctx, 3, 30*time.Second)
		rcancel()
		if err != nil {
			if strings.Contains(err.Error(), "MESSAGE_NOT_FOUND") {
				continue
			}
			t.Fatalf("receive: %v", err)
		}
		for _, mv := range mvs {
			got = append(got, string(mv.GetBody()))
			if err := c.Ack(context.Background(), mv); err != nil {
				t.Fatalf("ack: %v", err)
			}
		}
	}
	if len(got) != levels*perLevel {
		t.Fatalf("received %d of %d: %v", len(got), levels*perLevel, got)
	}
	var want []string
	for lvl := levels - 1; lvl >= 0; lvl-- {
		for i := range perLevel {
			want = append(want, fmt.Sprintf("p%d-%d", lvl, i))
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("delivery order\n got %v\nwant %v", got, want)
	}
}
