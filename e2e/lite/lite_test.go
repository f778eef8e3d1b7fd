package litee2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
)

// rpcCode is the status code of an official client error (0 if none).
func rpcCode(err error) int32 {
	var e *rmq.ErrRpcStatus
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// TestLitePushConsumer: the v5.1.4 LitePushConsumer subscribes lite topics
// of a LITE parent at run time and receives, per lite topic in send order,
// exactly the messages the v5.1.4 producer sent to them (created on first
// send); a lite topic it did not subscribe never reaches it; subscriptions
// past maxLiteSubscriptionCount are refused with
// LITE_SUBSCRIPTION_QUOTA_EXCEEDED and lite topics past
// maxLmqConsumeQueueNum with LITE_TOPIC_QUOTA_EXCEEDED; an idle lite topic
// expires after the parent's lite.topic.expiration and the consumer is told
// (NotifyUnsubscribeLiteCommand); the freed quota takes a new lite topic.
func TestLitePushConsumer(t *testing.T) {
	// lite.topic.expiration is in units of 2 s here (liteExpirationUnitMs).
	s := startServer(t, "", "--set", "liteExpirationUnitMs=2000", "--set", "liteTtlCheckInterval=200",
		"--set", "minLiteTTl=0", "--set", "maxLmqConsumeQueueNum=4", "--set", "maxLiteSubscriptionCount=2")
	const parent, group = "LiteParent", "LiteGroup"
	s.createTopic(t, parent, "+message.type=LITE,+lite.topic.expiration=6", 1)

	var mu sync.Mutex
	got := map[string][]string{}
	c, err := rmq.NewLitePushConsumer(clientConfig(s.grpc, group), rmq.NewLitePushConsumerConfig(parent, 20*time.Second),
		rmq.WithPushAwaitDuration(5*time.Second), rmq.WithPushConsumptionThreadCount(4),
		rmq.WithPushMessageListener(&rmq.FuncMessageListener{Consume: func(mv *rmq.MessageView) rmq.ConsumerResult {
			mu.Lock()
			got[mv.GetLiteTopic()] = append(got[mv.GetLiteTopic()], string(mv.GetBody()))
			mu.Unlock()
			return rmq.SUCCESS
		}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.GracefulStop()
	for _, l := range []string{"s1", "s2"} {
		if err := c.SubscribeLite(l); err != nil {
			t.Fatalf("subscribe %s: %v", l, err)
		}
	}
	if err := c.SubscribeLite("s3"); rpcCode(err) != 42902 {
		t.Fatalf("third subscription: %v, want LITE_SUBSCRIPTION_QUOTA_EXCEEDED (42902)", err)
	}

	p, err := rmq.NewProducer(clientConfig(s.grpc, ""), rmq.WithTopics(parent))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.GracefulStop()
	send := func(lite, body string) error {
		m := &rmq.Message{Topic: parent, Body: []byte(body)}
		m.SetLiteTopic(lite)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, err := p.Send(ctx, m)
		return err
	}
	want := map[string][]string{}
	for i := range 3 {
		for _, l := range []string{"s1", "s2", "s3"} {
			if l == "s2" && i == 2 {
				continue
			}
			body := fmt.Sprintf("%s-%d", l, i)
			if err := send(l, body); err != nil {
				t.Fatalf("send %s: %v", body, err)
			}
			if l != "s3" {
				want[l] = append(want[l], body)
			}
		}
	}
	if err := send("s4", "s4-0"); err != nil {
		t.Fatalf("send to the fourth lite topic: %v", err)
	}
	if err := send("s5", "s5-0"); rpcCode(err) != 42901 {
		t.Fatalf("send to a fifth lite topic: %v, want LITE_TOPIC_QUOTA_EXCEEDED (42901)", err)
	}

	// Admin: the parent's lite topics as `apogee admin getParentTopicInfo` lists them.
	out, err := exec.Command(apogeeBin, "admin", "getParentTopicInfo", "-n", s.namesrv, "-c", "DefaultCluster",
		"-t", parent, "--json").CombinedOutput()
	if err != nil {
		t.Fatalf("getParentTopicInfo: %v\n%s", err, out)
	}
	var infos map[string]struct {
		LiteTopicCount int      `json:"liteTopicCount"`
		TTL            int      `json:"ttl"`
		LiteTopics     []string `json:"liteTopics"`
	}
	if err := json.Unmarshal(out, &infos); err != nil || len(infos) != 1 {
		t.Fatalf("getParentTopicInfo output %s: %v", out, err)
	}
	for _, info := range infos {
		if info.LiteTopicCount != 4 || info.TTL != 6 || strings.Join(info.LiteTopics, ",") != "s1,s2,s3,s4" {
			t.Errorf("getParentTopicInfo: %+v, want s1..s4 with TTL 6", info)
		}
	}

	eventually(t, time.Minute, "the subscribed lite topics' messages", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got["s1"]) >= 3 && len(got["s2"]) >= 2
	})
	mu.Lock()
	if strings.Join(got["s1"], " ") != strings.Join(want["s1"], " ") || strings.Join(got["s2"], " ") != strings.Join(want["s2"], " ") {
		t.Errorf("received %v, want %v", got, want)
	}
	if len(got["s3"]) > 0 || len(got["s4"]) > 0 {
		t.Errorf("received lite topics the consumer did not subscribe: %v", got)
	}
	mu.Unlock()

	// Expiry: 6 units of 2 s after their last send the lite topics go; the
	// consumer is told about the two it subscribed.
	eventually(t, time.Minute, "NotifyUnsubscribeLiteCommand for s1 and s2", func() bool {
		b, _ := os.ReadFile(clientLog)
		return strings.Contains(string(b), "notifyUnsubscribeLite liteTopic:s1") &&
			strings.Contains(string(b), "notifyUnsubscribeLite liteTopic:s2")
	})
	// The quota has room again.
	eventually(t, 30*time.Second, "a new lite topic once the others expired", func() bool {
		return send("s5", "s5-0") == nil
	})
}
