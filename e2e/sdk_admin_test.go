package e2e

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

func newSDKAdmin(t *testing.T, nsAddr string) *admin.Admin {
	t.Helper()
	a, err := admin.New(admin.WithNameServers(nsAddr), admin.WithLogger(testutil.Logger(t)))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// failIfUnsupported fails the test at once, naming the missing code, when
// the broker answers REQUEST_CODE_NOT_SUPPORTED: every admin request these
// tests use is served, so that answer is a regression, not a gap.
func failIfUnsupported(t *testing.T, err error) {
	t.Helper()
	var be *client.BrokerError
	if errors.As(err, &be) && be.Code == int32(protocol.RequestCodeNotSupported) {
		t.Fatalf("broker does not serve this admin request: %v", err)
	}
}

// TestSDKAdminTopicsAndGroups: topics created through the admin API
// (UPDATE_AND_CREATE_TOPIC on the cluster's masters) are routed by the
// name server and seen by the official Go client; topicList, clusterList,
// subscription groups and deleteTopic work (docs/protocol.md §3.7, §3.8).
func TestSDKAdminTopicsAndGroups(t *testing.T) {
	c := startCluster(t, nil)
	a := newSDKAdmin(t, c.nsAddr)
	ctx := testutil.Context(t, 30*time.Second)
	cluster := c.cfg.BrokerClusterName

	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(ci.Clusters[cluster], c.cfg.BrokerName) || ci.Brokers[c.cfg.BrokerName].MasterAddr() == "" {
		t.Fatalf("cluster info %+v", ci)
	}

	topic := uniqueName(t, "T")
	if err := a.CreateTopic(ctx, admin.TopicConfig{Topic: topic, ReadQueues: 6, WriteQueues: 6}, admin.Target{Cluster: cluster}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		r, err := a.TopicRoute(ctx, topic)
		return err == nil && len(r.Queues) == 1 && r.Queues[0].WriteQueues == 6 && r.Queues[0].Perm == 6
	}, "topic %s not routed with 6 queues", topic)
	qs, err := publishQueues(t, c.nsAddr, topic)
	if err != nil || len(qs) != 6 {
		t.Fatalf("official client sees %d queues (%v)", len(qs), err)
	}
	topics, err := a.Topics(ctx)
	if err != nil || !slices.Contains(topics, topic) {
		t.Fatalf("topic list %v (%v)", topics, err)
	}
	topics, err = a.TopicsByCluster(ctx, cluster)
	failIfUnsupported(t, err)
	if err != nil || !slices.Contains(topics, topic) {
		t.Fatalf("cluster topic list %v (%v)", topics, err)
	}
	// Targeting one broker address works too (update to 3 write queues).
	if err := a.CreateTopic(ctx, admin.TopicConfig{Topic: topic, ReadQueues: 6, WriteQueues: 3},
		admin.Target{BrokerAddr: ci.Brokers[c.cfg.BrokerName].MasterAddr()}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		r, err := a.TopicRoute(ctx, topic)
		return err == nil && len(r.Queues) == 1 && r.Queues[0].WriteQueues == 3
	}, "topic update not routed")

	group := uniqueName(t, "cg")
	if err := a.CreateSubscriptionGroup(ctx, admin.GroupConfig{Group: group, RetryMaxTimes: 3}, admin.Target{Cluster: cluster}); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteSubscriptionGroup(ctx, group, admin.Target{Cluster: cluster}, true); err != nil {
		t.Fatal(err)
	}

	if err := a.DeleteTopic(ctx, topic, cluster); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		_, err := a.TopicRoute(ctx, topic)
		return errors.Is(err, admin.ErrNotFound)
	}, "deleted topic still routed")

	// Errors name the server and code.
	err = a.CreateTopic(ctx, admin.TopicConfig{Topic: "TBW102"}, admin.Target{Cluster: "no-such-cluster"})
	if !errors.Is(err, admin.ErrNotFound) {
		t.Fatalf("unknown cluster: %v", err)
	}
}

// TestSDKAdminMessagesAndStats: messages sent by the SDK are found by the
// admin API by offset id, by UNIQ_KEY and by key, read back without a
// group, and the topic's offsets reflect them.
func TestSDKAdminMessagesAndStats(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 2)
	p := newSDKProducer(t, c.nsAddr)
	a := newSDKAdmin(t, c.nsAddr)
	ctx := testutil.Context(t, 30*time.Second)
	var results []*client.SendResult
	for i := range 6 {
		res, err := p.Send(ctx, client.NewMessage(topic, []byte{byte('0' + i)}).WithKeys("order-42").WithTag("TagQ"))
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, res)
	}

	m, err := a.QueryMessageByID(ctx, "", results[0].OffsetMsgID)
	failIfUnsupported(t, err)
	if err != nil {
		t.Fatalf("by offset id: %v", err)
	}
	if m.MsgID != results[0].MsgID || string(m.Body) != "0" || m.Tag() != "TagQ" {
		t.Fatalf("by offset id: %+v", m)
	}

	// The consume queues are filled asynchronously (dispatch): poll.
	var stats []admin.QueueStat
	testutil.Eventually(t, 10*time.Second, func() bool {
		var err error
		stats, err = a.TopicStats(ctx, topic)
		failIfUnsupported(t, err)
		if err != nil {
			t.Fatal(err)
		}
		var total int64
		for _, s := range stats {
			total += s.MaxOffset - s.MinOffset
		}
		return len(stats) == 2 && total == 6
	}, "topic stats never showed 6 messages in 2 queues")
	var got int
	for _, s := range stats {
		pr, err := a.PullMessages(ctx, s.Queue, s.MinOffset, 32)
		if err != nil {
			t.Fatal(err)
		}
		got += len(pr.Messages)
	}
	if got != 6 {
		t.Fatalf("pulled %d messages", got)
	}

	testutil.Eventually(t, 10*time.Second, func() bool {
		msgs, err := a.QueryMessageByKey(ctx, topic, "order-42", 32, time.Time{}, time.Time{})
		failIfUnsupported(t, err)
		return err == nil && len(msgs) == 6
	}, "query by key did not find the 6 messages")
	byUniq, err := a.QueryMessageByID(ctx, topic, results[3].MsgID)
	if err != nil || string(byUniq.Body) != "3" {
		t.Fatalf("by UNIQ_KEY: %v %+v", err, byUniq)
	}

	// The producer's heartbeats registered its group on the broker.
	conns, err := a.ProducerConnections(ctx, p.Group(), c.b.Addr())
	failIfUnsupported(t, err)
	if err != nil || len(conns) != 1 || conns[0].ClientID != p.ClientID() || conns[0].Language != "GO" {
		t.Fatalf("producer connections %+v (%v)", conns, err)
	}
}

// TestSDKAdminReadsOfficialProducerMessages: messages sent by the official
// Go producer, a 10 KB body and a batch, are read back byte-identical by the
// admin API (by key and by tool pulls).
func TestSDKAdminReadsOfficialProducerMessages(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 1)
	op := newProducer(t, c.nsAddr)
	a := newSDKAdmin(t, c.nsAddr)
	ctx := testutil.Context(t, 30*time.Second)
	big := make([]byte, 10_000)
	for i := range big {
		big[i] = byte('a' + i%7)
	}
	m := primitive.NewMessage(topic, big)
	m.WithKeys([]string{"official-key"})
	m.WithTag("TagO")
	m.WithProperty("p1", "v1")
	if _, err := op.SendSync(ctx, m); err != nil {
		t.Fatal(err)
	}
	b1 := primitive.NewMessage(topic, []byte("batch-1"))
	b1.WithKeys([]string{"official-key"})
	b2 := primitive.NewMessage(topic, []byte("batch-2"))
	b2.WithKeys([]string{"official-key"})
	if _, err := op.SendSync(ctx, b1, b2); err != nil {
		t.Fatal(err)
	}
	var msgs []*client.MessageExt
	testutil.Eventually(t, 10*time.Second, func() bool {
		var err error
		msgs, err = a.QueryMessageByKey(ctx, topic, "official-key", 10, time.Time{}, time.Time{})
		return err == nil && len(msgs) == 3
	}, "query by key found %d of 3", len(msgs))
	bodies := map[string]*client.MessageExt{}
	for _, m := range msgs {
		bodies[string(m.Body)] = m
	}
	got := bodies[string(big)]
	if got == nil || got.Tag() != "TagO" || got.Properties["p1"] != "v1" {
		t.Fatalf("large message not read back intact (found %v)", got != nil)
	}
	if bodies["batch-1"] == nil || bodies["batch-2"] == nil {
		t.Fatalf("batch messages missing: %v", len(bodies))
	}
	stats, err := a.TopicStats(ctx, topic)
	if err != nil || len(stats) != 1 {
		t.Fatalf("stats %v %v", stats, err)
	}
	pr, err := a.PullMessages(ctx, stats[0].Queue, 0, 32)
	if err != nil || len(pr.Messages) != 3 || string(pr.Messages[0].Body) != string(big) {
		t.Fatalf("pull: %v, %d messages", err, len(pr.Messages))
	}
}
