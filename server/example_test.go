package server_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/server"
)

// An in-process name server and broker on free ports: a producer and a
// consumer of the Go SDK (or any RocketMQ client) use NamesrvAddr.
func Example() {
	s, err := server.Start(server.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	p, err := client.NewProducer("example-producer", client.WithNameServers(s.NamesrvAddr()))
	if err != nil {
		log.Fatal(err)
	}
	if err := p.Start(); err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The first send creates the topic (autoCreateTopicEnable).
	if _, err := p.Send(ctx, client.NewMessage("greetings", []byte("hello, apogee"))); err != nil {
		log.Fatal(err)
	}

	c, err := client.NewLitePullConsumer("example-consumer", client.WithNameServers(s.NamesrvAddr()),
		client.WithConsumeFromWhere(client.ConsumeFromFirstOffset))
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Subscribe("greetings", client.TagSelector("*")); err != nil {
		log.Fatal(err)
	}
	if err := c.Start(); err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for ctx.Err() == nil {
		msgs, err := c.Poll(ctx)
		if err != nil {
			log.Fatal(err)
		}
		if len(msgs) > 0 {
			fmt.Println(string(msgs[0].Body))
			break
		}
	}
	// Output: hello, apogee
}
