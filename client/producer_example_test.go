package client_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/apogeemq/apogee/client"
)

func ExampleProducer_Send() {
	p, err := client.NewProducer("example-group",
		client.WithNameServers("127.0.0.1:9876"),
		client.WithSendTimeout(3*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	if err := p.Start(); err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	res, err := p.Send(ctx, client.NewMessage("TopicA", []byte("hello")).WithTag("TagA").WithKeys("order-1"))
	if err != nil {
		log.Fatal(err) // a *client.BrokerError names the broker, code and topic
	}
	fmt.Println(res.Status, res.MsgID, res.Queue)
}

func ExampleProducer_SendAsync() {
	p, _ := client.NewProducer("example-group", client.WithNameServers("127.0.0.1:9876"))
	_ = p.Start()
	defer p.Close() // waits for the callback below
	err := p.SendAsync(context.Background(), client.NewMessage("TopicA", []byte("hi")), func(res *client.SendResult, err error) {
		if err != nil {
			log.Println("send failed:", err)
			return
		}
		log.Println("stored at", res.Queue, res.QueueOffset)
	})
	if err != nil {
		log.Println("not sent:", err)
	}
}

func ExampleProducer_SendOrderly() {
	p, _ := client.NewProducer("example-group", client.WithNameServers("127.0.0.1:9876"))
	_ = p.Start()
	defer p.Close()
	// Every message of order 42 goes to the same queue, in send order.
	for _, step := range []string{"created", "paid", "shipped"} {
		_, _ = p.SendOrderly(context.Background(), client.NewMessage("Orders", []byte(step)), client.HashQueueSelector{}, "order-42")
	}
}

type bookkeeping struct{}

func (bookkeeping) ExecuteLocalTransaction(ctx context.Context, m *client.Message, arg any) client.LocalTransactionState {
	// Do the local work; commit only if it succeeded.
	return client.TransactionCommit
}

func (bookkeeping) CheckLocalTransaction(ctx context.Context, m *client.MessageExt) client.LocalTransactionState {
	// Look the transaction up by m.MsgID or a key.
	return client.TransactionCommit
}

func ExampleProducer_SendInTransaction() {
	p, _ := client.NewProducer("tx-group", client.WithNameServers("127.0.0.1:9876"),
		client.WithTransactionListener(bookkeeping{}))
	_ = p.Start()
	defer p.Close()
	res, err := p.SendInTransaction(context.Background(), client.NewMessage("Payments", []byte("debit 10")), nil)
	if err == nil {
		fmt.Println(res.LocalState)
	}
}
