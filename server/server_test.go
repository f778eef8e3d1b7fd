package server_test

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"go.uber.org/goleak"

	"github.com/apogeemq/apogee/server"
	"github.com/apogeemq/apogee/server/apogeetest"
)

// ignoreOfficialClient skips the goroutine the official client's package
// initialisation starts (a cache janitor): it is linked into this test
// binary for TestServerServesOfficialClient and is not the server's.
var ignoreOfficialClient = goleak.IgnoreTopFunction("github.com/patrickmn/go-cache.(*janitor).Run")

// TestServerNoLeak: a server started and closed leaves no goroutine behind
// and removes its temporary data directory.
func TestServerNoLeak(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreOfficialClient)
	s, err := server.Start(server.Options{Config: map[string]string{"flushDiskType": "SYNC_FLUSH"}})
	if err != nil {
		t.Fatal(err)
	}
	dir := s.DataDir()
	if _, err := os.Stat(filepath.Join(dir, "broker")); err != nil {
		t.Fatalf("store not under the data dir: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("temporary data dir left behind: %v", err)
	}
}

// TestServerBadConfig: an unknown or bad broker.conf key is an error, and
// nothing is left running.
func TestServerBadConfig(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreOfficialClient)
	for _, kv := range []map[string]string{{"noSuchKey": "1"}, {"flushDiskType": "SOMETIMES"}} {
		if s, err := server.Start(server.Options{Config: kv}); err == nil {
			s.Close()
			t.Fatalf("Start accepted %v", kv)
		}
	}
}

// TestServerServesOfficialClient: the official RocketMQ Go client produces
// to and consumes from an apogeetest server.
func TestServerServesOfficialClient(t *testing.T) {
	rlog.SetLogLevel("error")
	s := apogeetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := rocketmq.NewProducer(producer.WithNameServer([]string{s.NamesrvAddr()}), producer.WithGroupName("embedded-pg"),
		producer.WithRetry(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	const n = 10
	for i := range n {
		if _, err := p.SendSync(ctx, primitive.NewMessage("EmbeddedTopic", []byte{byte(i)})); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	var got atomic.Int32
	c, err := rocketmq.NewPushConsumer(consumer.WithNameServer([]string{s.NamesrvAddr()}), consumer.WithGroupName("embedded-cg"),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Subscribe("EmbeddedTopic", consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		got.Add(int32(len(msgs)))
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	for got.Load() < n && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	if got.Load() < n {
		t.Fatalf("consumed %d of %d", got.Load(), n)
	}
}
