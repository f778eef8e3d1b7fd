package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestSDKRequestReply: Request waits for the reply a consumer sends with
// SendReply; the broker pushes it back with PUSH_REPLY_MESSAGE_TO_CLIENT
// (docs/protocol.md §3.3.1 reply specifics, §3.6).
func TestSDKRequestReply(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 2)
	requester := newSDKProducer(t, c.nsAddr)
	replier := newSDKProducer(t, c.nsAddr)
	ctx := testutil.Context(t, 60*time.Second)

	cons, err := client.NewPushConsumer(uniqueName(t, "cg"), client.WithNameServers(c.nsAddr),
		client.WithLogger(testutil.Logger(t)), client.WithConsumeFromWhere(client.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	err = cons.Subscribe(topic, client.TagSelector("*"), func(ctx context.Context, msgs []*client.MessageExt) (client.ConsumeResult, error) {
		for _, m := range msgs {
			if _, err := replier.SendReply(ctx, m, []byte("re:"+string(m.Body))); err != nil {
				// E.g. the queue moved in a rebalance (ctx cancelled): the
				// request is redelivered and answered then.
				return client.ConsumeRetryLater, err
			}
		}
		return client.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cons.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cons.Close() })

	for i := range 3 {
		body := fmt.Sprintf("question-%d", i)
		var reply *client.MessageExt
		testutil.Eventually(t, 30*time.Second, func() bool {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			var err error
			reply, err = requester.Request(rctx, client.NewMessage(topic, []byte(body)))
			if err != nil {
				t.Logf("request: %v", err)
			}
			return err == nil
		}, "no reply to %s", body)
		if string(reply.Body) != "re:"+body || reply.Property("MSG_TYPE") != "reply" {
			t.Fatalf("reply %q props %v", reply.Body, reply.Properties)
		}
	}
	// SendReply refuses a message that is not a request.
	if _, err := replier.SendReply(ctx, &client.MessageExt{Message: client.Message{Topic: topic, Body: []byte("x")}}, []byte("y")); err == nil {
		t.Fatal("reply to a non-request accepted")
	}
}
