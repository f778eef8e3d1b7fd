package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/lite"
	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
)

// liteBenchBroker starts a broker with the LITE parent "LP" and returns it
// with a call that fails the benchmark unless the request gets want.
func liteBenchBroker(b *testing.B) (*Broker, func(req *protocol.Command, want protocol.ResponseCode) *protocol.Command) {
	br := benchBroker(b, "ASYNC_FLUSH", 64<<20)
	c := benchClient(b)
	call := func(req *protocol.Command, want protocol.ResponseCode) *protocol.Command {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := c.InvokeSync(ctx, br.Addr(), req)
		if err != nil || resp.Code != int32(want) {
			b.Fatalf("request %d: %v %+v, want %s", req.Code, err, resp, want)
		}
		return resp
	}
	ct := protocol.CreateTopicRequestHeader{Topic: "LP", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6,
		TopicFilterType: "SINGLE_TAG", Attributes: "+message.type=LITE"}
	call(protocol.NewRequest(protocol.UpdateAndCreateTopic, protocol.EncodeHeader(&ct, false), nil), protocol.Success)
	return br, call
}

// BenchmarkLitePopManySubscriptions measures one POP_LITE_MESSAGE of a
// client subscribed to 100,000 lite topics, of which 64 exist and receive
// the traffic: each iteration sends one message to the next of them, pops
// it (a held pop answered by the arrival, or found at once) and acks it.
// cpu-us/pop is the process's CPU (client and broker) per iteration, the
// figure to compare; allocs/op counts both sides too. Run with
//
//	go test -run '^$' -bench LitePopManySubscriptions -benchtime 2000x ./internal/broker
func BenchmarkLitePopManySubscriptions(b *testing.B) {
	br, call := liteBenchBroker(b)
	g := protocol.NewSubscriptionGroupConfig("LG")
	g.Attributes = map[string]string{"lite.bind.topic": "LP"}
	gb, _ := protocol.MarshalJSON(&g)
	call(protocol.NewRequest(protocol.UpdateAndCreateSubscriptionGroup, nil, gb), protocol.Success)

	const subs, hot = 100000, 64
	send := func(i int, body string) {
		call(sendReq("LP", -1, []byte(body), map[string]string{message.PropertyLiteTopic: fmt.Sprint("t", i), "UNIQ_KEY": body}), protocol.Success)
	}
	for i := range hot {
		send(i, "seed")
	}
	for i := range hot {
		for br.Store.MaxOffsetInQueue(lite.QueueName("LP", fmt.Sprint("t", i)), 0) < 1 {
			time.Sleep(time.Millisecond)
		}
	}
	names := make([]string, 0, 10000)
	for i := 0; i < subs; i++ {
		names = append(names, fmt.Sprint("t", i))
		if len(names) == cap(names) {
			body, _ := protocol.MarshalJSON(protocol.LiteSubscriptionCtlRequestBody{SubscriptionSet: []protocol.LiteSubscriptionDTO{{
				Action: protocol.LiteActionPartialAdd, ClientID: "C", Group: "LG", Topic: "LP", LiteTopicSet: names}}})
			call(protocol.NewRequest(protocol.LiteSubscriptionCtl, nil, body), protocol.Success)
			names = names[:0]
		}
	}
	popReq := func() *protocol.Command {
		h := protocol.PopLiteMessageRequestHeader{ClientID: "C", ConsumerGroup: "LG", Topic: "LP", MaxMsgNum: 32,
			InvisibleTime: 60000, PollTime: 5000, BornTime: time.Now().UnixMilli()}
		return protocol.NewRequest(protocol.PopLiteMessage, protocol.EncodeHeader(&h, false), nil)
	}
	ack := func(resp *protocol.Command) int {
		var rh protocol.PopLiteMessageResponseHeader
		if err := protocol.DecodeHeader(resp.ExtFields, &rh, false); err != nil {
			b.Fatal(err)
		}
		n := 0
		for body := resp.Body; len(body) > 0; n++ {
			m, k, err := message.DecodeStored(body, message.DecodeOptions{})
			if err != nil {
				b.Fatal(err)
			}
			body = body[k:]
			ei := protocol.ReceiptHandle{CkQueueOffset: m.QueueOffset, PopTime: rh.PopTime, InvisibleTime: rh.InvisibleTime,
				ReviveQueueID: rh.ReviveQid, BrokerName: br.cfg.BrokerName, QueueOffset: m.QueueOffset}
			ah := protocol.AckMessageRequestHeader{ConsumerGroup: "LG", Topic: m.Topic, ExtraInfo: ei.ExtraInfo(), Offset: m.QueueOffset}
			call(protocol.NewRequest(protocol.AckMessage, protocol.EncodeHeader(&ah, false), nil), protocol.Success)
		}
		return n
	}
	// Drain the seeds (the group starts at each lite topic's first message).
	for drained := 0; drained < hot; {
		drained += ack(call(popReq(), protocol.Success))
	}
	b.ReportAllocs()
	cpu0 := processCPU()
	i := 0
	for b.Loop() {
		send(i%hot, "m")
		i++
		if n := ack(call(popReq(), protocol.Success)); n != 1 {
			b.Fatalf("popped %d messages, want 1", n)
		}
	}
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-us/pop")
}

// BenchmarkLitePopBacklog measures a POP_LITE_MESSAGE of 32 messages over
// 32 lite topics (one 1 KiB message each: a backlog spread over many lite
// topics, BenchmarkLiteConsume's case in process) and their 32 acks. The
// sends that make each iteration's backlog are outside the timer; B/op and
// allocs/op count the broker's and the client's pop and ack work.
//
//	go test -run '^$' -bench LitePopBacklog -benchtime 300x -benchmem ./internal/broker
func BenchmarkLitePopBacklog(b *testing.B) {
	br, call := liteBenchBroker(b)
	const batch, topics = 32, 3200
	body := make([]byte, 1024)
	names := make([]string, topics)
	for i := range names {
		names[i] = fmt.Sprintf("session-%05d", i)
	}
	sub, _ := protocol.MarshalJSON(protocol.LiteSubscriptionCtlRequestBody{SubscriptionSet: []protocol.LiteSubscriptionDTO{{
		Action: protocol.LiteActionPartialAdd, ClientID: "C", Group: "LG", Topic: "LP", LiteTopicSet: names}}})
	call(protocol.NewRequest(protocol.LiteSubscriptionCtl, nil, sub), protocol.Success)
	next := 0
	backlog := func() {
		for range batch {
			call(sendReq("LP", -1, body, map[string]string{message.PropertyLiteTopic: names[next%topics]}), protocol.Success)
			next++
		}
		last := lite.QueueName("LP", names[(next-1)%topics])
		for br.Store.MaxOffsetInQueue(last, 0) < int64((next-1)/topics+1) {
			time.Sleep(100 * time.Microsecond)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		backlog()
		b.StartTimer()
		h := protocol.PopLiteMessageRequestHeader{ClientID: "C", ConsumerGroup: "LG", Topic: "LP", MaxMsgNum: batch,
			InvisibleTime: 60000, PollTime: 5000, BornTime: time.Now().UnixMilli()}
		resp := call(protocol.NewRequest(protocol.PopLiteMessage, protocol.EncodeHeader(&h, false), nil), protocol.Success)
		var rh protocol.PopLiteMessageResponseHeader
		if err := protocol.DecodeHeader(resp.ExtFields, &rh, false); err != nil {
			b.Fatal(err)
		}
		n := 0
		for rest := resp.Body; len(rest) > 0; n++ {
			v, k, err := message.ViewStored(rest)
			if err != nil {
				b.Fatal(err)
			}
			rest = rest[k:]
			ei := protocol.ReceiptHandle{CkQueueOffset: v.QueueOffset(), PopTime: rh.PopTime, InvisibleTime: rh.InvisibleTime,
				ReviveQueueID: rh.ReviveQid, BrokerName: br.cfg.BrokerName, QueueOffset: v.QueueOffset()}
			ah := protocol.AckMessageRequestHeader{ConsumerGroup: "LG", Topic: string(v.Topic()), ExtraInfo: ei.ExtraInfo(), Offset: v.QueueOffset()}
			call(protocol.NewRequest(protocol.AckMessage, protocol.EncodeHeader(&ah, false), nil), protocol.Success)
		}
		if n != batch {
			b.Fatalf("popped %d messages, want %d", n, batch)
		}
	}
}
