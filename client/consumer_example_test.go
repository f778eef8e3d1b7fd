package client_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/apogeemq/apogee/client"
)

// A clustering push consumer: the group's members share the topic's
// queues; the listener runs on the consumer's worker pool.
func ExampleNewPushConsumer() {
	c, err := client.NewPushConsumer("order-service",
		client.WithNameServers("127.0.0.1:9876"),
		client.WithConsumeFromWhere(client.ConsumeFromFirstOffset),
	)
	if err != nil {
		log.Fatal(err)
	}
	err = c.Subscribe("orders", client.TagSelector("created || paid"),
		func(ctx context.Context, msgs []*client.MessageExt) (client.ConsumeResult, error) {
			for _, m := range msgs {
				fmt.Printf("%s %s\n", m.Tag(), m.Body)
			}
			return client.ConsumeSuccess, nil // or ConsumeRetryLater to redeliver
		})
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Start(); err != nil {
		log.Fatal(err)
	}
	defer c.Close() // commits offsets; unconsumed messages go to the other members
}

// A lite pull consumer: the caller polls, seeks and commits.
func ExampleNewLitePullConsumer() {
	c, err := client.NewLitePullConsumer("report-job",
		client.WithNameServers("127.0.0.1:9876"),
		client.WithAutoCommit(false, 0),
	)
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Subscribe("orders", client.TagSelector("*")); err != nil {
		log.Fatal(err)
	}
	if err := c.Start(); err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msgs, err := c.Poll(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(msgs), "messages")
	if err := c.Commit(ctx); err != nil {
		log.Fatal(err)
	}
}

// A pull consumer reads chosen queues at chosen offsets.
func ExampleNewPullConsumer() {
	c, err := client.NewPullConsumer("audit", client.WithNameServers("127.0.0.1:9876"))
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Start(); err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	queues, err := c.FetchQueues(ctx, "orders")
	if err != nil {
		log.Fatal(err)
	}
	for _, q := range queues {
		res, err := c.Pull(ctx, q, client.TagSelector("*"), 0, 32)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(q, res.Status, len(res.Messages), "next", res.NextBeginOffset)
	}
}
