package e2e

import (
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/apogeemq/apogee/internal/testutil"
)

// TestGoAdminTopicLifecycle drives the broker's admin calls with the
// official Go admin: UPDATE_AND_CREATE_TOPIC (17), GET_ALL_SUBSCRIPTIONGROUP_CONFIG
// (201, decoded with a strict standard JSON decoder) and
// DELETE_TOPIC_IN_BROKER (215) + DELETE_TOPIC_IN_NAMESRV (216).
func TestGoAdminTopicLifecycle(t *testing.T) {
	c := startCluster(t, nil)
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{c.nsAddr})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adm.Close() })
	ctx := testutil.Context(t, 30*time.Second)
	topic := uniqueName(t, "T")
	if err := adm.CreateTopic(ctx, admin.WithTopicCreate(topic), admin.WithBrokerAddrCreate(c.b.Addr()),
		admin.WithReadQueueNums(3), admin.WithWriteQueueNums(3)); err != nil {
		t.Fatal(err)
	}
	tc, ok := c.b.Topics.Get(topic)
	if !ok || tc.WriteQueueNums != 3 || tc.Perm != 6 {
		t.Fatalf("created topic = %+v, %v", tc, ok)
	}
	waitRoute(t, c.ns, topic)
	p := newProducer(t, c.nsAddr)
	sendN(t, p, topic, "", "admin", 3)
	// Deletion must not race the dispatch of what was just sent.
	testutil.Eventually(t, 10*time.Second, func() bool {
		var n int64
		for q := int32(0); q < 3; q++ {
			n += c.b.Store.MaxOffsetInQueue(topic, q)
		}
		return n == 3
	}, "messages not dispatched")

	groups, err := adm.GetAllSubscriptionGroup(ctx, c.b.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := groups.SubscriptionGroupTable["TOOLS_CONSUMER"]; !ok {
		t.Fatalf("system group missing from %d groups", len(groups.SubscriptionGroupTable))
	}

	if err := adm.DeleteTopic(ctx, admin.WithTopicDelete(topic), admin.WithBrokerAddrDelete(c.b.Addr()),
		admin.WithNameSrvAddr([]string{c.nsAddr})); err != nil {
		t.Fatal(err)
	}
	if c.b.Topics.Contains(topic) {
		t.Fatal("topic still on the broker")
	}
	if c.b.Store.MaxOffsetInQueue(topic, 0)+c.b.Store.MaxOffsetInQueue(topic, 1)+c.b.Store.MaxOffsetInQueue(topic, 2) > 0 {
		t.Fatal("consume queues of the deleted topic still served")
	}
}
