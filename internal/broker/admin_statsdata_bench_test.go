package broker

import (
	"fmt"
	"testing"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

// BenchmarkSampleStats is one sampling pass over many topics, each with a
// consumer group's offsets (the shape of a broker with 100,000 queues).
func BenchmarkSampleStats(b *testing.B) {
	for _, topics := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("topics=%d", topics), func(b *testing.B) {
			br, err := New(testConfig(b, b.TempDir()), testutil.DiscardLogger())
			if err != nil {
				b.Fatal(err)
			}
			if err := br.Start(); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { br.Close() })
			tcs := make([]protocol.TopicConfig, topics)
			for i := range tcs {
				tcs[i] = protocol.TopicConfig{TopicName: fmt.Sprintf("S%d", i), ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}
			}
			if err := br.Topics.UpdateMany(tcs); err != nil {
				b.Fatal(err)
			}
			for i := range tcs {
				br.Offsets.Commit(fmt.Sprintf("g%d", i), tcs[i].TopicName, 0, 1)
			}
			b.ResetTimer()
			for b.Loop() {
				br.sampleStats()
			}
		})
	}
}
