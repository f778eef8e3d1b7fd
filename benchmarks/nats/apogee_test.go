package natsbench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/testutil"
)

// benchTopic is the Apogee topic (and, lower-cased, the NATS subject).
const benchTopic = "NatsBench"

// apogeeQueues is the topic's queue count: RocketMQ's default for
// auto-created topics (defaultTopicQueueNums=4).
const apogeeQueues = 4

// apogeeSystem drives Apogee through its Go SDK: one Producer (one
// connection to the broker) shared by every publishing goroutine, and a
// LitePullConsumer for draining. Every knob is the SDK's default except the
// send timeout (10 s, so that a slow fsync is measured, not failed) and
// compression (off: the 1 KiB bodies are under the 4 KiB threshold anyway);
// opts add to them (the auto-batching row).
type apogeeSystem struct {
	srv   *apogeeServer
	prod  *client.Producer
	body  []byte
	done  func(error) // beginAsync's callback; set before the async workers start
	group int         // drains so far; each uses a fresh consumer group
}

func newApogee(tb testing.TB, durable bool, opts ...client.ProducerOpt) *apogeeSystem {
	tb.Helper()
	srv := startApogee(tb, durable)
	ctx := testutil.Context(tb, 30*time.Second)
	adm, err := admin.New(admin.WithNameServers(srv.namesrv))
	if err == nil {
		err = adm.Start()
	}
	if err != nil {
		tb.Fatal(err)
	}
	defer adm.Close()
	tc := admin.TopicConfig{Topic: benchTopic, ReadQueues: apogeeQueues, WriteQueues: apogeeQueues}
	if err := adm.CreateTopic(ctx, tc, admin.Target{BrokerAddr: srv.broker}); err != nil {
		tb.Fatal(err)
	}
	prod, err := client.NewProducer("natsbench-producer", append([]client.ProducerOpt{client.WithNameServers(srv.namesrv),
		client.WithSendTimeout(10 * time.Second), client.WithCompressOver(0)}, opts...)...)
	if err == nil {
		err = prod.Start()
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = prod.Close() })
	s := &apogeeSystem{srv: srv, prod: prod, body: body(0)}
	// The broker registers the topic with the name server on its next
	// heartbeat; wait until the producer sees all queues.
	testutil.Eventually(tb, 30*time.Second, func() bool {
		qs, err := prod.Queues(ctx, benchTopic)
		return err == nil && len(qs) == apogeeQueues
	}, "route of %s", benchTopic)
	return s
}

func (s *apogeeSystem) name() string  { return "apogee" }
func (s *apogeeSystem) server() *proc { return s.srv.proc }

func sendErr(res *client.SendResult, err error) error {
	if err != nil {
		return err
	}
	if res.Status != client.SendOK {
		return fmt.Errorf("apogee: send status %v", res.Status)
	}
	return nil
}

func (s *apogeeSystem) publish(ctx context.Context, b []byte) error {
	return sendErr(s.prod.Send(ctx, client.NewMessage(benchTopic, b)))
}

func (s *apogeeSystem) beginAsync(done func(error)) { s.done = done }

func (s *apogeeSystem) publishAsync(ctx context.Context, b []byte) error {
	return s.prod.SendAsync(ctx, client.NewMessage(benchTopic, b), func(res *client.SendResult, err error) {
		s.done(sendErr(res, err))
	})
}

// stored is the number of messages in the topic: the sum of its queues'
// max offsets (every queue starts at 0 in a fresh store).
func (s *apogeeSystem) stored(ctx context.Context) (int64, error) {
	pc, err := client.NewPullConsumer("natsbench-count", client.WithNameServers(s.srv.namesrv))
	if err == nil {
		err = pc.Start()
	}
	if err != nil {
		return 0, err
	}
	defer pc.Close()
	qs, err := pc.FetchQueues(ctx, benchTopic)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, q := range qs {
		m, err := pc.MaxOffset(ctx, q)
		if err != nil {
			return 0, err
		}
		n += m
	}
	return n, nil
}

// drain reads the topic from its first message with a new group until n
// messages arrived, calling seen for each body, and returns the time from
// its start to the n-th message: creating the consumer and its first
// rebalance count (as creating the consumer counts on the NATS side),
// closing it does not.
func (s *apogeeSystem) drain(ctx context.Context, n int64, seen func([]byte) error) (time.Duration, error) {
	start := time.Now()
	s.group++
	c, err := client.NewLitePullConsumer(fmt.Sprintf("natsbench-drain-%d", s.group),
		client.WithNameServers(s.srv.namesrv), client.WithConsumeFromWhere(client.ConsumeFromFirstOffset),
		client.WithPullBatchSize(*pullBatchFlag))
	if err != nil {
		return 0, err
	}
	if err := c.Subscribe(benchTopic, client.TagSelector("*")); err != nil {
		return 0, err
	}
	if err := c.Start(); err != nil {
		return 0, err
	}
	defer c.Close()
	var got int64
	for got < n {
		msgs, err := c.Poll(ctx)
		if err != nil {
			return 0, fmt.Errorf("apogee: poll after %d of %d: %w", got, n, err)
		}
		for _, m := range msgs {
			if err := seen(m.Body); err != nil {
				return 0, err
			}
		}
		got += int64(len(msgs))
	}
	return time.Since(start), nil
}
