package broker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// BenchmarkPopConsume compares consuming one backlog of 1 KiB messages by
// pull and by POP on the same broker in the same run. Each iteration is a
// pair of chunks, timed separately and interleaved so that the machine's
// noise hits both alike:
//
//   - pull: 16 PULL_MESSAGE of 32 messages with a piggy-backed offset
//     commit, one request at a time;
//   - pop: 16 POP_MESSAGE of 32 messages (60 s invisible), one at a time,
//     each followed by its acks sent asynchronously as RocketMQ's consumers
//     ack (ackAsync) while the next pop runs: one BATCH_ACK_MESSAGE
//     (batchAck) or one ACK_MESSAGE per message (ack); the chunk ends when
//     every ack is answered.
//
// Every POP really consumes: when a group has drained the backlog the next
// group starts at its beginning. x-pull is the POP rate over the pull rate
// (goal >= 0.7). Run with
//
//	go test -run '^$' -bench PopConsume -benchtime 3s ./internal/broker
func BenchmarkPopConsume(b *testing.B) {
	br := benchBroker(b, "ASYNC_FLUSH", 64<<20)
	c := benchClient(b)
	const n = 4096
	fillBenchQueue(b, c, br, "PopBench", n)
	groupSeq := 0
	for _, mode := range []string{"batchAck", "ack"} {
		b.Run(mode, func(b *testing.B) {
			pc := &popBenchConsumer{b: b, c: c, addr: br.Addr(), mode: mode, popped: n, slots: make(chan struct{}, 64)}
			var pullTime, popTime, pullCPU, popCPU time.Duration
			pullOff := int64(0)
			b.ReportAllocs()
			for b.Loop() {
				if pc.popped+16*32 > n {
					// A fresh group, created outside the timed chunks (its
					// creation persists subscriptionGroup.json).
					groupSeq++
					pc.group, pc.popped = fmt.Sprintf("pg-%s-%d", mode, groupSeq), 0
					if _, _, err := br.Groups.FindOrCreate(pc.group, true); err != nil {
						b.Fatal(err)
					}
				}
				t0, c0 := time.Now(), processCPU()
				for range 16 {
					pullOff = pc.pull(pullOff, n)
				}
				t1, c1 := time.Now(), processCPU()
				for range 16 {
					pc.popAndAck()
				}
				pc.acks.Wait()
				popTime += time.Since(t1)
				popCPU += processCPU() - c1
				pullTime += t1.Sub(t0)
				pullCPU += c1 - c0
			}
			msgs := float64(b.N * 16 * 32)
			b.ReportMetric(msgs/pullTime.Seconds(), "pull-msg/s")
			b.ReportMetric(msgs/popTime.Seconds(), "pop-msg/s")
			b.ReportMetric(pullTime.Seconds()/popTime.Seconds(), "x-pull")
			// CPU (client and broker, one process) per message: less
			// sensitive than wall time to other load on the machine.
			b.ReportMetric(float64(pullCPU.Microseconds())/msgs, "pull-cpu-us/msg")
			b.ReportMetric(float64(popCPU.Microseconds())/msgs, "pop-cpu-us/msg")
			b.ReportMetric(pullCPU.Seconds()/popCPU.Seconds(), "cpu-x-pull")
			if st := br.pop.state.Stats(); st.InFlight != 0 {
				b.Fatalf("%d messages left in flight after acking every pop", st.InFlight)
			}
		})
	}
}

type popBenchConsumer struct {
	b      *testing.B
	c      *remoting.Client
	addr   string
	mode   string
	group  string
	popped int
	acks   sync.WaitGroup
	slots  chan struct{} // bounds the acks in flight
}

func (p *popBenchConsumer) invoke(req *protocol.Command) *protocol.Command {
	resp, err := p.c.InvokeSync(context.Background(), p.addr, req)
	if err != nil {
		p.b.Fatal(err)
	}
	return resp
}

func (p *popBenchConsumer) pull(off, n int64) int64 {
	h := protocol.PullMessageRequestHeader{ConsumerGroup: "cg", Topic: "PopBench", QueueID: 0, QueueOffset: off,
		MaxMsgNums: 32, SysFlag: protocol.PullFlagSubscription | protocol.PullFlagCommitOffset, CommitOffset: off,
		Subscription: "*"}
	resp := p.invoke(protocol.NewRequest(protocol.PullMessage, protocol.EncodeHeader(&h, false), nil))
	if resp.Code != 0 {
		p.b.Fatalf("pull: %d %s", resp.Code, resp.Remark)
	}
	if _, err := message.DecodeStoredAll(resp.Body, message.DecodeOptions{SkipBody: true}); err != nil {
		p.b.Fatal(err)
	}
	return (off + 32) % (n - 32)
}

func (p *popBenchConsumer) ackAsync(req *protocol.Command) {
	p.slots <- struct{}{}
	p.acks.Add(1)
	err := p.c.InvokeAsync(context.Background(), p.addr, req, func(r *protocol.Command, err error) {
		defer p.acks.Done()
		<-p.slots
		if err != nil || r.Code != 0 || r.Remark != "" {
			p.b.Errorf("ack: %v %v", err, r)
		}
	})
	if err != nil {
		p.b.Fatal(err)
	}
}

func (p *popBenchConsumer) popAndAck() {
	b := p.b
	h := protocol.PopMessageRequestHeader{ConsumerGroup: p.group, Topic: "PopBench", QueueID: 0, MaxMsgNums: 32,
		InvisibleTime: 60_000, BornTime: time.Now().UnixMilli(), InitMode: protocol.PopInitModeMin}
	resp := p.invoke(protocol.NewRequest(protocol.PopMessage, protocol.EncodeHeader(&h, false), nil))
	if resp.Code != 0 {
		b.Fatalf("pop: %d %s", resp.Code, resp.Remark)
	}
	var rh protocol.PopMessageResponseHeader
	if err := protocol.DecodeHeader(resp.ExtFields, &rh, false); err != nil {
		b.Fatal(err)
	}
	msgs, err := message.DecodeStoredAll(resp.Body, message.DecodeOptions{SkipBody: true})
	if err != nil || len(msgs) == 0 {
		b.Fatalf("pop decode: %d %v", len(msgs), err)
	}
	p.popped += len(msgs)
	starts, _ := protocol.ParseStartOffsetInfo(rh.StartOffsetInfo)
	ck := starts[protocol.PopQueueKey{QueueID: 0}]
	if p.mode == "batchAck" {
		offs := make([]int64, len(msgs))
		for i, m := range msgs {
			offs[i] = m.QueueOffset
		}
		a := protocol.BatchAck{ConsumerGroup: p.group, Topic: "PopBench", Retry: "0", QueueID: 0,
			ReviveQueueID: rh.ReviveQid, PopTime: rh.PopTime, InvisibleTime: rh.InvisibleTime}
		if err := a.SetOffsetsFrom(ck, offs); err != nil {
			b.Fatal(err)
		}
		body, err := protocol.AppendBatchAckBody(nil, &protocol.BatchAckMessageRequestBody{BrokerName: "bench", Acks: []protocol.BatchAck{a}})
		if err != nil {
			b.Fatal(err)
		}
		p.ackAsync(protocol.NewRequest(protocol.BatchAckMessage, nil, body))
		return
	}
	for _, m := range msgs {
		ei := protocol.ReceiptHandle{CkQueueOffset: ck, PopTime: rh.PopTime, InvisibleTime: rh.InvisibleTime,
			ReviveQueueID: rh.ReviveQid, BrokerName: "bench", QueueID: 0, QueueOffset: m.QueueOffset}
		ah := protocol.AckMessageRequestHeader{ConsumerGroup: p.group, Topic: "PopBench", QueueID: 0,
			ExtraInfo: ei.ExtraInfo(), Offset: m.QueueOffset}
		p.ackAsync(protocol.NewRequest(protocol.AckMessage, protocol.EncodeHeader(&ah, false), nil))
	}
}
