package e2e

import (
	"testing"
	"time"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestSDKAdminConsumerGroup: with an official push consumer running,
// consumerProgress reports every queue caught up (lag 0), consumerConnection
// lists the Go client and its subscription, resetOffsetByTime to before the
// first message moves every queue back to its first offset, and the
// broker's runtime info is readable (docs/protocol.md §3.7: 208, 203, 222, 28).
func TestSDKAdminConsumerGroup(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 2)
	group := uniqueName(t, "cg")
	p := newSDKProducer(t, c.nsAddr)
	a := newSDKAdmin(t, c.nsAddr)
	ctx := testutil.Context(t, 60*time.Second)
	start := time.Now().Add(-time.Second)
	const n = 10
	for range n {
		if _, err := p.Send(ctx, client.NewMessage(topic, []byte("progress"))); err != nil {
			t.Fatal(err)
		}
	}
	r := newReceived()
	newPushConsumer(t, c.nsAddr, group, topic, "*", r)
	testutil.Eventually(t, 30*time.Second, func() bool { return r.count.Load() >= n }, "consumed %d of %d", r.count.Load(), n)

	testutil.Eventually(t, 30*time.Second, func() bool {
		cp, err := a.ConsumerProgress(ctx, group, "")
		failIfUnsupported(t, err)
		if err != nil {
			t.Logf("progress: %v", err)
			return false
		}
		var broker int64
		for _, q := range cp.Queues {
			if q.Queue.Topic == topic {
				broker += q.BrokerOffset
			}
		}
		return broker == n && cp.TotalLag == 0
	}, "consumer progress never caught up")

	cc, err := a.ConsumerConnections(ctx, group)
	failIfUnsupported(t, err)
	if err != nil {
		t.Fatal(err)
	}
	if len(cc.Connections) != 1 || cc.Connections[0].Language != "GO" || cc.MessageModel != "CLUSTERING" {
		t.Fatalf("connections %+v", cc)
	}
	found := false
	for _, s := range cc.Subscriptions {
		found = found || (s.Topic == topic && s.Expression == "*")
	}
	if !found {
		t.Fatalf("subscriptions %+v", cc.Subscriptions)
	}

	offsets, err := a.ResetOffsetByTime(ctx, topic, group, start, true)
	failIfUnsupported(t, err)
	if err != nil {
		t.Fatal(err)
	}
	if len(offsets) != 2 {
		t.Fatalf("reset offsets %v", offsets)
	}
	for q, off := range offsets {
		if off != 0 {
			t.Fatalf("queue %v reset to %d, want 0", q, off)
		}
	}

	info, err := a.BrokerRuntimeInfo(ctx, c.b.Addr())
	failIfUnsupported(t, err)
	if err != nil || len(info) == 0 {
		t.Fatalf("runtime info %v (%v)", info, err)
	}
}
