package broker

import (
	"strconv"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/pop"
)

// BenchmarkCommitLowWatermarks is the revive loop's once-a-second commit
// of every popped queue's low watermark to the offset table, with 100,000
// lite-sized queues popped once and acked (an idle broker after a lite
// consume): one op is one commit round.
//
//	go test -run '^$' -bench CommitLowWatermarks -benchtime 50x ./internal/broker
func BenchmarkCommitLowWatermarks(b *testing.B) {
	br := benchBroker(b, "ASYNC_FLUSH", 64<<20)
	p := br.pop
	now := time.Now().UnixMilli()
	for i := range 100000 {
		k := pop.QueueKey{Group: "LiteGroup", Topic: "%LMQ%$Parent$session-" + strconv.Itoa(i), QueueID: 0}
		if err := p.state.AddCheckpoint(pop.Checkpoint{Key: k, StartOffset: 0, PopTime: now, InvisibleTime: 60000,
			Offsets: []int64{0}, NextOffset: 1}); err != nil {
			b.Fatal(err)
		}
		if _, err := p.state.Ack(k, 0, now, 0); err != nil {
			b.Fatal(err)
		}
	}
	p.commitLowWatermarks()
	b.ResetTimer()
	for b.Loop() {
		p.commitLowWatermarks()
	}
}
