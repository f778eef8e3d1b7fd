package client

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

func TestDecodeQueueOffsetTable(t *testing.T) {
	body, err := protocol.EncodeResetOffsetBody([]protocol.QueueValue[int64]{
		{Queue: protocol.MessageQueue{Topic: "T", BrokerName: "b", QueueID: 1}, Value: 7},
		{Queue: protocol.MessageQueue{Topic: "T", BrokerName: "b", QueueID: 0}, Value: 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeQueueOffsetTable(body, "offsetTable")
	if err != nil {
		t.Fatal(err)
	}
	if got[MessageQueue{Topic: "T", BrokerName: "b", QueueID: 1}] != 7 || got[MessageQueue{Topic: "T", BrokerName: "b"}] != 3 || len(got) != 2 {
		t.Fatalf("decoded %v from %s", got, body)
	}
	if _, err := decodeQueueOffsetTable([]byte(`{"offsetTable":{"x":1}}`), "offsetTable"); err == nil {
		t.Fatal("bad key accepted")
	}
}

// TestPushConsumerResetOffsets: a broker-pushed reset (legacy
// RESET_CONSUMER_CLIENT_OFFSET) makes the consumer read the queue again
// from the given offset.
func TestPushConsumerResetOffsets(t *testing.T) {
	env := newFakeBrokerEnv(t, "a")
	env.put("T", 1, 10, "m")
	c, err := newFakePushConsumer(env, WithConsumeFromWhere(ConsumeFromFirstOffset), WithRebalanceInterval(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	_ = c.Subscribe("T", TagSelector("*"), func(_ context.Context, msgs []*MessageExt) (ConsumeResult, error) {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range msgs {
			seen[string(m.Body)]++
		}
		return ConsumeSuccess, nil
	})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	count := func(body string) int {
		mu.Lock()
		defer mu.Unlock()
		return seen[body]
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return count("m-9") == 1 }, "first pass")
	mq := MessageQueue{Topic: "T", BrokerName: fakeBrokerName}
	c.resetOffsets(context.Background(), "T", map[MessageQueue]int64{mq: 8})
	testutil.Eventually(t, 5*time.Second, func() bool { return count("m-8") == 2 && count("m-9") == 2 }, "not re-read from 8")
	if count("m-7") != 1 {
		t.Fatalf("m-7 consumed %d times, want 1", count("m-7"))
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return c.offsetsOf("T")[mq] == 10 }, "offset not back at 10")
}

// FuzzDecodeQueueOffsetTable: reset-offset bodies from the network never
// panic the decoder.
func FuzzDecodeQueueOffsetTable(f *testing.F) {
	f.Add([]byte(`{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:5}}`))
	f.Add([]byte(`{"offsetTable":{"{\"topic\":\"T\"}":1}}`))
	f.Add([]byte(`{"offsetTable":null}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = decodeQueueOffsetTable(data, "offsetTable")
	})
}
