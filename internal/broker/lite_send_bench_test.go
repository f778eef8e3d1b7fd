package broker

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
)

// BenchmarkLiteSendCPU compares SEND_MESSAGE_V2 (ROCKETMQ header, 1 KiB,
// 16 in flight) to one plain topic of one queue and spread over 2,000
// existing lite topics of a LITE parent (named like session UUIDs, 36
// bytes), on one broker, and reports the
// process CPU per message (cpu-ns/op; client included). Few enough lite
// topics that the store's many-queue costs stay out: the difference is the
// broker's lite path (name check, registry, queue naming). Run with
//
//	go test -run '^$' -bench LiteSendCPU -benchtime 40000x -count 3 ./internal/broker
func BenchmarkLiteSendCPU(b *testing.B) {
	br := benchBroker(b, "ASYNC_FLUSH", 256<<20)
	c := benchClient(b)
	ct := protocol.CreateTopicRequestHeader{Topic: "LiteCPU", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6,
		TopicFilterType: "SINGLE_TAG", Attributes: "+message.type=LITE"}
	if resp, err := c.InvokeSync(context.Background(), br.Addr(), protocol.NewRequest(protocol.UpdateAndCreateTopic,
		protocol.EncodeHeader(&ct, false), nil)); err != nil || resp.Code != 0 {
		b.Fatalf("create topic: %v %v", err, resp)
	}
	ct = protocol.CreateTopicRequestHeader{Topic: "PlainCPU", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, TopicFilterType: "SINGLE_TAG"}
	if resp, err := c.InvokeSync(context.Background(), br.Addr(), protocol.NewRequest(protocol.UpdateAndCreateTopic,
		protocol.EncodeHeader(&ct, false), nil)); err != nil || resp.Code != 0 {
		b.Fatalf("create topic: %v %v", err, resp)
	}
	const spread = 2000
	body := make([]byte, 1024)
	props := make([]string, spread)
	for i := range props {
		props[i] = message.EncodeProperties(map[string]string{message.PropertyLiteTopic: fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i),
			"UNIQ_KEY": "AC1100010000000000000000000000", "WAIT": "true"})
	}
	send := func(topic, p string) error {
		h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: topic, DefaultTopic: names.TopicAutoCreate,
			DefaultTopicQueueNums: 4, QueueID: -1, BornTimestamp: time.Now().UnixMilli(), Properties: p}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req := protocol.NewRequestList(protocol.SendMessageV2, protocol.AppendHeader(nil, &h, true), body)
		req.SerializeType = protocol.SerializeRocketMQ
		for attempt := 0; ; attempt++ {
			resp, err := c.InvokeSync(ctx, br.Addr(), req)
			if err == nil && resp.Code == int32(protocol.SystemBusy) && attempt < 3 {
				continue
			}
			if err == nil && resp.Code != int32(protocol.Success) {
				err = fmt.Errorf("code %d %s", resp.Code, resp.Remark)
			}
			return err
		}
	}
	for _, p := range props { // create the lite topics outside the timing
		if err := send("LiteCPU", p); err != nil {
			b.Fatal(err)
		}
	}
	plain := message.EncodeProperties(map[string]string{"UNIQ_KEY": "AC1100010000000000000000000000", "WAIT": "true"})
	for _, side := range []string{"plain", "lite"} {
		b.Run(side, func(b *testing.B) {
			var seq atomic.Int64
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			b.SetParallelism(8)
			cpu := startCPU()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					var err error
					if side == "plain" {
						err = send("PlainCPU", plain)
					} else {
						err = send("LiteCPU", props[seq.Add(1)%spread])
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
			cpu(b, 1)
		})
	}
}
