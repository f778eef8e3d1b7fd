package grpce2e

import (
	"context"
	"fmt"
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
