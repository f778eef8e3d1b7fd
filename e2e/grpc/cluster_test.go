package grpce2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"

	"github.com/apogeemq/apogee/client/admin"
)

// TestClusterModeProxy: `apogee proxy -n` in front of a name server and two
// brokers: the route lists both brokers behind the proxy's address, the
// official Producer's messages spread over both, and a SimpleConsumer
// reading through the proxy gets and acks every one.
func TestClusterModeProxy(t *testing.T) {
	_, ns := startProcess(t, "namesrv listening on ", "namesrv", "--listen", "127.0.0.1:0", "--log-level", "warn")
	for _, name := range []string{"broker-x", "broker-y"} {
		startProcess(t, "broker "+name+" listening on ", "broker", "-n", ns, "--listen-port", "0", "--grpc-port", "-1",
			"--broker-name", name, "--store-dir", t.TempDir(), "--log-level", "warn",
			"--set", "vipChannelEnable=false", "--set", "metricsPromExporterPort=0")
	}
	_, endpoint := startProcess(t, "grpc endpoint listening on ", "proxy", "-n", ns, "--grpc-port", "0", "--min-invisible", "1s", "--log-level", "warn")

	const topic, group = "GrpcClusterTopic", "GrpcClusterGroup"
	a, err := admin.New(admin.WithNameServers(ns))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Both brokers register before the topic is created on the cluster.
	eventually(t, 20*time.Second, "both brokers in the cluster", func() bool {
		err := a.CreateTopic(ctx, admin.TopicConfig{Topic: topic, ReadQueues: 2, WriteQueues: 2}, admin.Target{Cluster: "DefaultCluster"})
		if err != nil {
			return false
		}
		r, err := a.TopicRoute(ctx, topic)
		return err == nil && len(r.Queues) == 2
	})

	withSSL(t, true)
	p := newProducer(t, endpoint, rmq.WithTopics(topic))
	ids := map[string]bool{}
	for i := range 20 {
		res, err := p.Send(ctx, &rmq.Message{Topic: topic, Body: []byte(fmt.Sprintf("cluster %d", i))})
		if err != nil {
			t.Fatalf("send %d through the proxy: %v", i, err)
		}
		ids[res[0].MessageID] = true
	}
	c := newSimpleConsumer(t, endpoint, group, topic, rmq.SUB_ALL)
	got := receiveAll(t, c, len(ids), 20*time.Second, 40*time.Second)
	brokers := map[string]bool{}
	for _, mv := range got {
		if !ids[mv.GetMessageId()] {
			t.Errorf("unexpected message %s", mv.GetMessageId())
		}
		// The receipt handle names the broker the message lives on.
		brokers[brokerOfHandle(mv.GetReceiptHandle())] = true
		if err := c.Ack(ctx, mv); err != nil {
			t.Errorf("ack: %v", err)
		}
	}
	if len(got) != len(ids) {
		t.Fatalf("received %d of %d", len(got), len(ids))
	}
	if !brokers["broker-x"] || !brokers["broker-y"] {
		t.Errorf("messages came from brokers %v, want both", brokers)
	}
}

// brokerOfHandle returns field 6 of a RocketMQ receipt handle.
func brokerOfHandle(h string) string {
	var f [9]string
	n, _ := fmt.Sscan(h, &f[0], &f[1], &f[2], &f[3], &f[4], &f[5])
	if n < 6 {
		return ""
	}
	return f[5]
}

// TestClusterModeProxyRegistersClients: behind `apogee proxy -n`, each
// official v5 SimpleConsumer, PushConsumer and Producer is registered with
// the brokers under its own client id (not the proxy's): the brokers'
// consumerConnection and `apogee admin consumerConnection` list every
// consumer with its address, language and subscription,
// producerConnection lists the producer on both brokers, consumerProgress
// shows the POP group's offsets, and when the proxy goes its clients leave
// the brokers' views.
func TestClusterModeProxyRegistersClients(t *testing.T) {
	_, ns := startProcess(t, "namesrv listening on ", "namesrv", "--listen", "127.0.0.1:0", "--log-level", "warn")
	for _, name := range []string{"broker-rx", "broker-ry"} {
		startProcess(t, "broker "+name+" listening on ", "broker", "-n", ns, "--listen-port", "0", "--grpc-port", "-1",
			"--broker-name", name, "--store-dir", t.TempDir(), "--log-level", "warn",
			"--set", "vipChannelEnable=false", "--set", "metricsPromExporterPort=0")
	}
	proxy, endpoint := startProcess(t, "grpc endpoint listening on ", "proxy", "-n", ns, "--grpc-port", "0", "--min-invisible", "1s", "--log-level", "warn")

	const topic, group, pushGroup = "GrpcClusterRegTopic", "GrpcClusterRegGroup", "GrpcClusterRegPush"
	a, err := admin.New(admin.WithNameServers(ns))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	eventually(t, 20*time.Second, "both brokers in the cluster", func() bool {
		err := a.CreateTopic(ctx, admin.TopicConfig{Topic: topic, ReadQueues: 2, WriteQueues: 2}, admin.Target{Cluster: "DefaultCluster"})
		if err != nil {
			return false
		}
		r, err := a.TopicRoute(ctx, topic)
		return err == nil && len(r.Queues) == 2
	})
	withSSL(t, false)
	c1 := newSimpleConsumer(t, endpoint, group, topic, rmq.NewFilterExpression("TagA"))
	newSimpleConsumer(t, endpoint, group, topic, rmq.NewFilterExpression("TagA")) // a second member
	pc, err := rmq.NewPushConsumer(clientConfig(endpoint, pushGroup), rmq.WithPushAwaitDuration(5*time.Second),
		rmq.WithPushSubscriptionExpressions(map[string]*rmq.FilterExpression{topic: rmq.SUB_ALL}),
		rmq.WithPushMessageListener(&rmq.FuncMessageListener{Consume: func(*rmq.MessageView) rmq.ConsumerResult { return rmq.SUCCESS }}))
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatalf("push consumer start: %v", err)
	}
	defer pc.GracefulStop()

	prefix := clientIDPrefix(t)
	var cc *admin.ConsumerConnections
	eventually(t, 30*time.Second, "both simple consumers on the brokers", func() bool {
		cc, err = a.ConsumerConnections(ctx, group)
		return err == nil && len(cc.Connections) == 2
	})
	seen := map[string]bool{}
	for _, c := range cc.Connections {
		seen[c.ClientID] = true
		if !strings.HasPrefix(c.ClientID, prefix) || c.Language != "GO" || !strings.HasPrefix(c.ClientAddr, "127.0.0.1:") {
			t.Errorf("connection %+v", c)
		}
	}
	if len(seen) != 2 || cc.ConsumeType != "CONSUME_ACTIVELY" || cc.MessageModel != "CLUSTERING" ||
		len(cc.Subscriptions) != 1 || cc.Subscriptions[0].Topic != topic || cc.Subscriptions[0].Expression != "TagA" {
		t.Errorf("group view %+v", cc)
	}
	eventually(t, 30*time.Second, "the push consumer on the brokers", func() bool {
		pcc, err := a.ConsumerConnections(ctx, pushGroup)
		return err == nil && len(pcc.Connections) == 1 && pcc.ConsumeType == "CONSUME_PASSIVELY" && !seen[pcc.Connections[0].ClientID]
	})
	out, err := exec.CommandContext(ctx, apogeeBin, "admin", "consumerConnection", "-n", ns, "-g", group).CombinedOutput()
	for id := range seen {
		if err != nil || !strings.Contains(string(out), id) {
			t.Errorf("apogee admin consumerConnection (want %s): %v\n%s", id, err, out)
		}
	}

	// The producer too, on each broker of its topic (its group is the topic).
	p := newProducer(t, endpoint, rmq.WithTopics(topic))
	route, err := a.TopicRoute(ctx, topic)
	if err != nil || len(route.Brokers) != 2 {
		t.Fatalf("route %+v: %v", route, err)
	}
	for _, br := range route.Brokers {
		eventually(t, 30*time.Second, "the producer on "+br.Name, func() bool {
			conns, err := a.ProducerConnections(ctx, topic, br.MasterAddr())
			if err != nil {
				return false
			}
			for _, c := range conns {
				if strings.HasPrefix(c.ClientID, prefix) && !seen[c.ClientID] && strings.HasPrefix(c.ClientAddr, "127.0.0.1:") {
					return true
				}
			}
			return false
		})
	}

	// consumerProgress of the POP group, across both brokers.
	for i := range 6 {
		m := &rmq.Message{Topic: topic, Body: []byte(fmt.Sprintf("reg %d", i))}
		m.SetTag("TagA")
		if _, err := p.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for _, mv := range receiveAll(t, c1, 6, 20*time.Second, 40*time.Second) {
		if err := c1.Ack(ctx, mv); err != nil {
			t.Fatalf("ack: %v", err)
		}
	}
	eventually(t, 30*time.Second, "consumer progress without lag", func() bool {
		cp, err := a.ConsumerProgress(ctx, group, "")
		if err != nil {
			return false
		}
		var sum int64
		for _, q := range cp.Queues {
			if q.Queue.Topic == topic {
				sum += q.ConsumerOffset
			}
		}
		return cp.TotalLag == 0 && sum == 6
	})

	// The proxy goes: its clients leave the brokers' views.
	proxy.cmd.Process.Kill()
	<-proxy.done
	eventually(t, 30*time.Second, "the proxy's clients left the brokers", func() bool {
		cc, err := a.ConsumerConnections(ctx, group)
		return err != nil || len(cc.Connections) == 0
	})
}
