package grpce2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"

	"github.com/apogeemq/apogee/client/admin"
)

// clientIDPrefix starts the ids the official client gives its clients in
// this process (hostname@pid@index@time).
func clientIDPrefix(t *testing.T) string {
	t.Helper()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s@%d@", host, os.Getpid())
}

// TestAdminViewsOfGRPCClients: the official v5.1.3 Producer, SimpleConsumer
// and PushConsumer show up in the broker's admin views as remoting clients
// do: consumerConnection lists each consumer with its client id, address,
// language and subscription (CONSUME_ACTIVELY for simple, CONSUME_PASSIVELY
// for push consumers, as RocketMQ's proxy registers them), producerConnection
// lists the producer under its topic (a gRPC producer's group), and so does
// `apogee admin consumerConnection`; consumerProgress shows the POP group's
// offsets once its messages are acked.
func TestAdminViewsOfGRPCClients(t *testing.T) {
	s := startServer(t, "")
	const topic, simpleGroup, pushGroup = "GrpcAdminViewTopic", "GrpcAdminSimple", "GrpcAdminPush"
	s.createTopic(t, topic, "NORMAL", 2)
	withSSL(t, false)
	p := newProducer(t, s.grpc, rmq.WithTopics(topic))
	sc := newSimpleConsumer(t, s.grpc, simpleGroup, topic, rmq.NewFilterExpression("TagA"))
	pc, err := rmq.NewPushConsumer(clientConfig(s.grpc, pushGroup), rmq.WithPushAwaitDuration(5*time.Second),
		rmq.WithPushSubscriptionExpressions(map[string]*rmq.FilterExpression{topic: rmq.SUB_ALL}),
		rmq.WithPushMessageListener(&rmq.FuncMessageListener{Consume: func(*rmq.MessageView) rmq.ConsumerResult { return rmq.SUCCESS }}))
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatalf("push consumer start: %v", err)
	}
	// The push consumer's held receives would hold GracefulStop for the
	// long-polling time; stopping the server first ends them at once.
	defer func() {
		s.stop(t)
		pc.GracefulStop()
	}()

	a, err := admin.New(admin.WithNameServers(s.namesrv))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	prefix := clientIDPrefix(t)
	ids := map[string]string{} // group -> client id
	for _, tc := range []struct {
		group, consumeType, expression string
	}{
		{simpleGroup, "CONSUME_ACTIVELY", "TagA"},
		{pushGroup, "CONSUME_PASSIVELY", "*"},
	} {
		var cc *admin.ConsumerConnections
		// Registration follows the client's settings, sent as it starts.
		eventually(t, 30*time.Second, "consumer connection of "+tc.group, func() bool {
			cc, err = a.ConsumerConnections(ctx, tc.group)
			return err == nil && len(cc.Connections) == 1
		})
		c := cc.Connections[0]
		ids[tc.group] = c.ClientID
		if !strings.HasPrefix(c.ClientID, prefix) || c.Language != "GO" || !strings.HasPrefix(c.ClientAddr, "127.0.0.1:") ||
			cc.ConsumeType != tc.consumeType || cc.MessageModel != "CLUSTERING" {
			t.Errorf("%s: connection %+v, consume type %s, model %s", tc.group, c, cc.ConsumeType, cc.MessageModel)
		}
		if len(cc.Subscriptions) != 1 || cc.Subscriptions[0].Topic != topic || cc.Subscriptions[0].Expression != tc.expression {
			t.Errorf("%s: subscriptions %+v", tc.group, cc.Subscriptions)
		}
	}

	if ids[simpleGroup] == ids[pushGroup] {
		t.Errorf("simple and push consumer share client id %s", ids[simpleGroup])
	}
	eventually(t, 30*time.Second, "the producer's connection", func() bool {
		conns, err := a.ProducerConnections(ctx, topic, s.broker)
		if err != nil {
			return false
		}
		for _, c := range conns {
			if strings.HasPrefix(c.ClientID, prefix) && strings.HasPrefix(c.ClientAddr, "127.0.0.1:") {
				return true
			}
		}
		return false
	})

	// consumerProgress finds the POP group's broker by its retry topic and
	// shows its offsets: received and acked messages leave no lag.
	for i := range 3 {
		m := &rmq.Message{Topic: topic, Body: []byte(fmt.Sprintf("admin view %d", i))}
		m.SetTag("TagA")
		if _, err := p.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for _, mv := range receiveAll(t, sc, 3, 20*time.Second, 40*time.Second) {
		if err := sc.Ack(ctx, mv); err != nil {
			t.Fatalf("ack: %v", err)
		}
	}
	var cp *admin.ConsumerProgress
	eventually(t, 30*time.Second, "consumer progress without lag", func() bool {
		cp, err = a.ConsumerProgress(ctx, simpleGroup, "")
		if err != nil || len(cp.Queues) == 0 {
			return false
		}
		var sum int64
		for _, q := range cp.Queues {
			if q.Queue.Topic != topic {
				return false
			}
			sum += q.ConsumerOffset
		}
		return cp.TotalLag == 0 && sum == 3
	})

	out, err := exec.CommandContext(ctx, apogeeBin, "admin", "consumerConnection", "-n", s.namesrv, "-g", simpleGroup).CombinedOutput()
	if err != nil || !strings.Contains(string(out), ids[simpleGroup]) || !strings.Contains(string(out), "CONSUME_ACTIVELY") {
		t.Errorf("apogee admin consumerConnection: %v\n%s", err, out)
	}
}
