package grpce2e

import (
	"context"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"

	"github.com/apogeemq/apogee/client/admin"
)

// TestSimpleConsumerDLQ: a message its SimpleConsumer never acks is
// delivered once per attempt up to the group's retryMaxTimes+1 and then
// moved to %DLQ%<group>, where a consumer of the DLQ topic reads it with
// the same message id and body; it never comes back to its group.
func TestSimpleConsumerDLQ(t *testing.T) {
	s := startServer(t, "")
	const topic, group = "GrpcDlqTopic", "GrpcDlqGroup"
	s.createTopic(t, topic, "NORMAL", 1)
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
	if err := a.CreateSubscriptionGroup(ctx, admin.GroupConfig{Group: group, RetryMaxTimes: 1}, admin.Target{Cluster: "DefaultCluster"}); err != nil {
		t.Fatal(err)
	}
	withSSL(t, true)
	p := newProducer(t, s.grpc, rmq.WithTopics(topic))
	res, err := p.Send(ctx, &rmq.Message{Topic: topic, Body: []byte("poison")})
	if err != nil {
		t.Fatal(err)
	}
	id := res[0].MessageID

	c := newSimpleConsumer(t, s.grpc, group, topic, rmq.SUB_ALL)
	var attempts []int32
	deadline := time.Now().Add(40 * time.Second)
	for len(attempts) < 2 && time.Now().Before(deadline) {
		got := receiveAll(t, c, 1, time.Second, 10*time.Second) // never acked: back after 1 s
		for _, mv := range got {
			if mv.GetMessageId() != id {
				t.Fatalf("unexpected message %s", mv.GetMessageId())
			}
			attempts = append(attempts, mv.GetDeliveryAttempt())
		}
	}
	if len(attempts) != 2 || attempts[0] != 1 || attempts[1] != 2 {
		t.Fatalf("delivery attempts %v, want [1 2]", attempts)
	}
	// retryMaxTimes 1: after the second delivery expires the message goes
	// to the DLQ, not back to the consumer.
	dlqTopic := "%DLQ%" + group
	var dead *rmq.MessageView
	eventually(t, 30*time.Second, "the message in "+dlqTopic, func() bool {
		r, err := a.TopicRoute(ctx, dlqTopic)
		return err == nil && len(r.Queues) > 0
	})
	dc := newSimpleConsumer(t, s.grpc, "GrpcDlqReader", dlqTopic, rmq.SUB_ALL)
	for time.Now().Before(deadline.Add(20*time.Second)) && dead == nil {
		if got := receiveAll(t, dc, 1, 20*time.Second, 10*time.Second); len(got) > 0 {
			dead = got[0]
		}
	}
	if dead == nil || dead.GetMessageId() != id || string(dead.GetBody()) != "poison" {
		t.Fatalf("DLQ message %v, want id %s", dead, id)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 12*time.Second)
	defer cancel2()
	if more, err := c.Receive(ctx2, 4, 20*time.Second); err == nil && len(more) > 0 {
		t.Errorf("the dead message came back to its group (attempt %d)", more[0].GetDeliveryAttempt())
	}
}
