package grpce2e

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	rmq "github.com/apache/rocketmq-clients/golang/v5"

	apogee "github.com/apogeemq/apogee/client"
)

func newSimpleConsumer(t *testing.T, endpoint, group, topic string, filter *rmq.FilterExpression) rmq.SimpleConsumer {
	t.Helper()
	c, err := rmq.NewSimpleConsumer(clientConfig(endpoint, group), rmq.WithSimpleAwaitDuration(5*time.Second),
		rmq.WithSimpleSubscriptionExpressions(map[string]*rmq.FilterExpression{topic: filter}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("simple consumer start: %v", err)
	}
	t.Cleanup(func() { c.GracefulStop() })
	return c
}

// receiveAll receives until n messages arrived or d passed.
func receiveAll(t *testing.T, c rmq.SimpleConsumer, n int, invisible, d time.Duration) []*rmq.MessageView {
	t.Helper()
	var out []*rmq.MessageView
	deadline := time.Now().Add(d)
	for len(out) < n && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 12*time.Second)
		mvs, err := c.Receive(ctx, 16, invisible)
		cancel()
		if err != nil {
			if strings.Contains(err.Error(), "MESSAGE_NOT_FOUND") {
				continue
			}
			t.Fatalf("receive: %v", err)
		}
		out = append(out, mvs...)
	}
	return out
}

// TestSimpleConsumerFromRemotingProducer: messages a v2 remoting producer
// sends (one compressed with zlib) reach the official v5 SimpleConsumer
// with body, tag, keys, user properties and message id intact, the body
// IDENTITY-encoded; acked messages never come back, a message left unacked
// comes back after its invisible time with delivery attempt 2, and
// ChangeInvisibleDuration postpones it.
func TestSimpleConsumerFromRemotingProducer(t *testing.T) {
	s := startServer(t, "")
	const topic, group = "GrpcSimpleTopic", "GrpcSimpleGroup"
	s.createTopic(t, topic, "", 2)

	p, err := v2.NewProducer(producer.WithNameServer([]string{s.namesrv}), producer.WithGroupName("RemotingSender"),
		producer.WithCompressMsgBodyOverHowmuch(4096))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	type sent struct {
		body []byte
		tag  string
	}
	want := map[string]sent{}
	for i := range 4 {
		body := []byte(fmt.Sprintf("remoting body %d", i))
		if i == 3 {
			body = bytes.Repeat([]byte("compressible "), 1000) // over 4 KiB: sent zlib-compressed
		}
		m := primitive.NewMessage(topic, body)
		m.WithTag(fmt.Sprintf("t%d", i))
		m.WithKeys([]string{fmt.Sprintf("k%d", i)})
		m.WithProperty("origin", "remoting")
		res, err := p.SendSync(context.Background(), m)
		if err != nil || res.Status != primitive.SendOK {
			t.Fatalf("remoting send %d: %v %v", i, res, err)
		}
		want[res.MsgID] = sent{body: body, tag: fmt.Sprintf("t%d", i)}
	}

	c := newSimpleConsumer(t, s.grpc, group, topic, rmq.SUB_ALL)
	got := receiveAll(t, c, len(want), 20*time.Second, 30*time.Second)
	if len(got) != len(want) {
		t.Fatalf("received %d of %d messages", len(got), len(want))
	}
	var keep *rmq.MessageView
	for _, mv := range got {
		w, ok := want[mv.GetMessageId()]
		if !ok {
			t.Fatalf("unexpected message id %s", mv.GetMessageId())
		}
		if !bytes.Equal(mv.GetBody(), w.body) {
			t.Errorf("%s: body differs (%d vs %d bytes)", mv.GetMessageId(), len(mv.GetBody()), len(w.body))
		}
		if mv.GetTag() == nil || *mv.GetTag() != w.tag || mv.GetProperties()["origin"] != "remoting" || len(mv.GetKeys()) != 1 {
			t.Errorf("%s: tag %v keys %v props %v", mv.GetMessageId(), mv.GetTag(), mv.GetKeys(), mv.GetProperties())
		}
		if mv.GetDeliveryAttempt() != 1 {
			t.Errorf("%s: delivery attempt %d, want 1", mv.GetMessageId(), mv.GetDeliveryAttempt())
		}
		if w.tag == "t0" {
			keep = mv // left unacked
			continue
		}
		if err := c.Ack(context.Background(), mv); err != nil {
			t.Errorf("ack %s: %v", mv.GetMessageId(), err)
		}
	}
	// Postpone the unacked one to 3 s from now, then wait for it: it must
	// come back once, with delivery attempt 2, and nothing acked with it.
	if err := c.ChangeInvisibleDuration(keep, 3*time.Second); err != nil {
		t.Fatalf("change invisible duration: %v", err)
	}
	changedAt := time.Now()
	back := receiveAll(t, c, 1, 20*time.Second, 30*time.Second)
	if len(back) != 1 || back[0].GetMessageId() != keep.GetMessageId() {
		t.Fatalf("redelivered %d messages, want only %s", len(back), keep.GetMessageId())
	}
	if since := time.Since(changedAt); since < 2*time.Second {
		t.Errorf("redelivered after %s, before the changed invisible time", since)
	}
	if back[0].GetDeliveryAttempt() != 2 {
		t.Errorf("redelivery attempt %d, want 2", back[0].GetDeliveryAttempt())
	}
	if err := c.Ack(context.Background(), back[0]); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Second)
	defer cancel()
	if extra, err := c.Receive(ctx, 16, 20*time.Second); err == nil && len(extra) > 0 {
		t.Errorf("acked messages came back: %d", len(extra))
	}
}

// TestSimpleConsumerReadsLZ4AndZSTD: bodies this module's producer sends
// compressed with RocketMQ 5's other compressTypes (LZ4 frame, zstd; sysFlag
// 0x101 / 0x201) reach the official v5 SimpleConsumer through the gRPC
// endpoint decompressed, as a RocketMQ 5 proxy delivers them.
func TestSimpleConsumerReadsLZ4AndZSTD(t *testing.T) {
	s := startServer(t, "")
	const topic, group = "GrpcCompressTopic", "GrpcCompressGroup"
	s.createTopic(t, topic, "", 1)
	want := map[string][]byte{}
	for i, ct := range []apogee.CompressType{apogee.CompressLZ4, apogee.CompressZSTD, apogee.CompressZLIB} {
		p, err := apogee.NewProducer(fmt.Sprintf("CompressSender%d", i), apogee.WithNameServers(s.namesrv),
			apogee.WithCompressType(ct), apogee.WithCompressOver(1024))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		body := bytes.Repeat([]byte(fmt.Sprintf("compress type %#x ", int32(ct))), 400)
		res, err := p.Send(context.Background(), apogee.NewMessage(topic, body))
		p.Close()
		if err != nil || res.Status != apogee.SendOK {
			t.Fatalf("send as %#x: %v %v", int32(ct), res, err)
		}
		want[res.MsgID] = body
	}
	c := newSimpleConsumer(t, s.grpc, group, topic, rmq.SUB_ALL)
	got := receiveAll(t, c, len(want), 20*time.Second, 30*time.Second)
	if len(got) != len(want) {
		t.Fatalf("received %d of %d messages", len(got), len(want))
	}
	for _, mv := range got {
		if w, ok := want[mv.GetMessageId()]; !ok || !bytes.Equal(mv.GetBody(), w) {
			t.Errorf("%s: body of %d bytes, want %d (known %v)", mv.GetMessageId(), len(mv.GetBody()), len(w), ok)
		}
	}
}
