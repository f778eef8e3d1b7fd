package broker

import (
	"bufio"
	"context"
	"net"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
)

// BenchmarkSendPipelinedCPU is the broker's CPU per send under pipelined
// publishing (the harness's PublishPipelined): one connection carries up
// to 1024 SEND_MESSAGE_V2 requests of 1 KiB in flight, written in bursts of
// 64 pre-encoded frames, and the responses are only framed and counted, so
// the process CPU per send (cpu-ns/op) is mostly the broker's: read loop,
// dispatch, send processor, store put and response write.
func BenchmarkSendPipelinedCPU(b *testing.B) {
	br := benchBroker(b, "ASYNC_FLUSH", 256<<20)
	c := benchClient(b)
	h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: "BenchPipelined", DefaultTopic: names.TopicAutoCreate,
		DefaultTopicQueueNums: 4, QueueID: 1, BornTimestamp: time.Now().UnixMilli(),
		Properties: "TAGS\x01t\x02UNIQ_KEY\x01AC1100010000000000000000000000\x02WAIT\x01true\x02"}
	req := protocol.NewRequestList(protocol.SendMessageV2, protocol.AppendHeader(nil, &h, true), make([]byte, 1024))
	req.SerializeType = protocol.SerializeRocketMQ
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if resp, err := c.InvokeSync(ctx, br.Addr(), req); err != nil || resp.Code != int32(protocol.Success) {
		b.Fatalf("creating the topic: %v %+v", err, resp) // auto-creates it
	}
	const burst, window = 64, 1024
	var frames []byte
	for i := range burst {
		req.Opaque = int32(i + 1)
		var err error
		if frames, err = protocol.AppendFrame(frames, req); err != nil {
			b.Fatal(err)
		}
	}
	nc, err := net.Dial("tcp", br.Addr())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	credits := make(chan struct{}, window/burst) // bursts allowed in flight
	for range cap(credits) {
		credits <- struct{}{}
	}
	bursts := (b.N + burst - 1) / burst
	readErr := make(chan error, 1)
	go func() {
		fr := protocol.NewFrameReader(bufio.NewReaderSize(nc, 64<<10), 0, 0)
		for i := range bursts * burst {
			resp, err := fr.Next()
			if err == nil && resp.Code != int32(protocol.Success) {
				err = protocol.Errorf(protocol.ResponseCode(resp.Code), "send %d: %s", i, resp.Remark)
			}
			if err != nil {
				readErr <- err
				return
			}
			if (i+1)%burst == 0 {
				credits <- struct{}{}
			}
		}
		readErr <- nil
	}()
	b.SetBytes(1024)
	b.ReportAllocs()
	cpu := startCPU()
	b.ResetTimer()
	for range bursts {
		select {
		case <-credits:
		case err := <-readErr:
			b.Fatal(err)
		}
		if _, err := nc.Write(frames); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-readErr; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	cpu(b, 1)
}
