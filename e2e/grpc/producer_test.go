package grpce2e

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	rmq "github.com/apache/rocketmq-clients/golang/v5"
)

// TestProducerToRemotingConsumer: messages the official v5 Producer sends
// over gRPC (TLS and plaintext on the same port) reach a v2 remoting push
// consumer byte-exact: body, tag, keys, user properties, born time, and
// the client's message id as the message id.
func TestProducerToRemotingConsumer(t *testing.T) {
	s := startServer(t, "")
	const topic = "GrpcInteropTopic"
	s.createTopic(t, topic, "NORMAL", 4)

	type sent struct {
		body  []byte
		tag   string
		keys  []string
		props map[string]string
		born  time.Time
	}
	want := map[string]sent{} // by message id
	for _, tls := range []bool{true, false} {
		t.Run(fmt.Sprintf("tls=%v", tls), func(t *testing.T) {
			withSSL(t, tls)
			p, err := rmq.NewProducer(clientConfig(s.grpc, ""), rmq.WithTopics(topic))
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Start(); err != nil {
				t.Fatalf("producer start: %v", err)
			}
			defer p.GracefulStop()
			for i := range 5 {
				body := bytes.Repeat([]byte{byte(i), 0, 0xff, '\n'}, 64*(i+1))
				m := &rmq.Message{Topic: topic, Body: body}
				m.SetTag(fmt.Sprintf("tag%d", i))
				m.SetKeys(fmt.Sprintf("key-%d", i), "other key")
				m.AddProperty("color", fmt.Sprintf("blue-%v", tls))
				m.AddProperty("n", fmt.Sprint(i))
				before := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				res, err := p.Send(ctx, m)
				cancel()
				if err != nil {
					t.Fatalf("send %d: %v", i, err)
				}
				if len(res) != 1 || res[0].MessageID == "" {
					t.Fatalf("send %d: receipts %+v", i, res)
				}
				want[res[0].MessageID] = sent{body: body, tag: fmt.Sprintf("tag%d", i),
					keys:  []string{fmt.Sprintf("key-%d", i), "other key"},
					props: map[string]string{"color": fmt.Sprintf("blue-%v", tls), "n": fmt.Sprint(i)}, born: before}
			}
		})
	}
	if t.Failed() {
		return
	}

	var mu sync.Mutex
	got := map[string]*primitive.MessageExt{}
	c, err := v2.NewPushConsumer(consumer.WithGroupName("GrpcInteropGroup"), consumer.WithNameServer([]string{s.namesrv}),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			got[m.MsgId] = m
		}
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	eventually(t, 30*time.Second, "the remoting consumer to receive every message", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= len(want)
	})
	mu.Lock()
	defer mu.Unlock()
	for id, w := range want {
		m, ok := got[id]
		if !ok {
			t.Errorf("message %s not consumed by its id", id)
			continue
		}
		if !bytes.Equal(m.Body, w.body) {
			t.Errorf("%s: body differs (%d vs %d bytes)", id, len(m.Body), len(w.body))
		}
		if m.GetTags() != w.tag {
			t.Errorf("%s: tag %q, want %q", id, m.GetTags(), w.tag)
		}
		if m.GetKeys() != w.keys[0]+" "+w.keys[1] {
			t.Errorf("%s: keys %q, want %q", id, m.GetKeys(), w.keys)
		}
		for k, v := range w.props {
			if m.GetProperty(k) != v {
				t.Errorf("%s: property %s = %q, want %q", id, k, m.GetProperty(k), v)
			}
		}
		born := time.UnixMilli(m.BornTimestamp)
		if d := born.Sub(w.born); d < -time.Second || d > 5*time.Second {
			t.Errorf("%s: born %s, sent at %s", id, born, w.born)
		}
		if m.Topic != topic {
			t.Errorf("%s: topic %q", id, m.Topic)
		}
	}
}
