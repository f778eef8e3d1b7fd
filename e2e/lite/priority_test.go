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

	"github.com/apogeemq/apogee/client/admin"
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

// TestPrioritySeparateRetryQueue: with useSeparateRetryQueue=true, priority
// messages a v5.1.4 SimpleConsumer received and did not ack come back
// through the group's retry topic highest level first (each revived into
// the retry queue of its level), with their delivery attempt increased.
func TestPrioritySeparateRetryQueue(t *testing.T) {
	s := startServer(t, "", "--set", "useSeparateRetryQueue=true", "--set", "popPriorityMaxWaitMs=0")
	const topic, group = "PrioRetry", "PrioRetryGroup"
	s.createTopic(t, topic, "+message.type=PRIORITY", 4)
	p, err := rmq.NewProducer(clientConfig(s.grpc, ""), rmq.WithTopics(topic))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.GracefulStop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for lvl := range 4 { // lowest level first
		m := &rmq.Message{Topic: topic, Body: []byte(fmt.Sprint("p", lvl))}
		if err := m.SetPriority(int32(lvl)); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
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
	receive := func(n int32, invisible time.Duration) []*rmq.MessageView {
		rctx, rcancel := context.WithTimeout(ctx, 12*time.Second)
		defer rcancel()
		mvs, err := c.Receive(rctx, n, invisible)
		if err != nil && !strings.Contains(err.Error(), "MESSAGE_NOT_FOUND") {
			t.Fatalf("receive: %v", err)
		}
		return mvs
	}
	var first []*rmq.MessageView
	for deadline := time.Now().Add(30 * time.Second); len(first) < 4 && time.Now().Before(deadline); {
		first = append(first, receive(4, time.Second)...) // not acked: back after a second
	}
	if len(first) != 4 {
		t.Fatalf("first receive got %d of 4", len(first))
	}
	// Wait until all four are in the retry topic, so the order below is
	// the retry queues' and not the revive loop's.
	a, err := admin.New(admin.WithNameServers(s.namesrv))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	retryTopic := "%RETRY%" + group + "+" + topic
	eventually(t, time.Minute, "4 messages in "+retryTopic, func() bool {
		sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
		defer scancel()
		stats, err := a.TopicStats(sctx, retryTopic)
		if err != nil {
			return false
		}
		n := int64(0)
		for _, q := range stats {
			n += q.MaxOffset - q.MinOffset
		}
		return n == 4 && len(stats) == 4
	})
	var again []string
	for deadline := time.Now().Add(time.Minute); len(again) < 4 && time.Now().Before(deadline); {
		for _, mv := range receive(1, 30*time.Second) {
			if mv.GetDeliveryAttempt() < 2 {
				t.Fatalf("%s redelivered with attempt %d", mv.GetBody(), mv.GetDeliveryAttempt())
			}
			again = append(again, string(mv.GetBody()))
			if err := c.Ack(ctx, mv); err != nil {
				t.Fatal(err)
			}
		}
	}
	if strings.Join(again, " ") != "p3 p2 p1 p0" {
		t.Fatalf("redeliveries %v, want p3 p2 p1 p0", again)
	}
}
