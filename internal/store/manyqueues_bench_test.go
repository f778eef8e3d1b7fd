package store

import (
	"os"
	"runtime/pprof"
	"sort"

	"fmt"
	"github.com/apogeemq/apogee/internal/message"
	"testing"
	"time"
)

// BenchmarkManyQueues: ASYNC_FLUSH puts spread round-robin over 1, 1,000,
// 10,000 and 100,000 topics of one queue in one store (RocketMQ's
// consume-queue file size, the default mapping limit). "first" is the
// first message to every queue of a count, put and dispatched (what makes
// the queue's files); the steady rates of the counts are then measured
// interleaved, put to dispatched, and reported as ratios of the 1-queue
// rate of the same run:
//
//	go test -run '^$' -bench ManyQueues -benchtime 1x ./internal/store
func BenchmarkManyQueues(b *testing.B) {
	cfg := benchConfig(b.TempDir())
	cfg.MappedFileSizeConsumeQueue = 300000 * CQUnitSize
	cfg.MappedFileSizeCommitLog = 1 << 30
	s := benchStore(b, cfg)
	counts := []int{1, 1000, 10000, 100000}
	done := func(r PutResult) {
		if r.Status != PutOK {
			panic(r.Status.String())
		}
	}
	msgs := make(map[int][]*testMsgRef)
	for _, n := range counts {
		refs := make([]*testMsgRef, n)
		for i := range refs {
			m := benchMsg(0)
			m.Topic = fmt.Sprintf("MQ%d-%06d", n, i)
			refs[i] = &testMsgRef{m: m}
		}
		msgs[n] = refs
	}
	waitAll := func() {
		for s.reputFrom.Load() < s.commitLog.maxOffset() {
			time.Sleep(100 * time.Microsecond)
		}
	}
	for _, n := range counts {
		t0 := time.Now()
		for _, r := range msgs[n] {
			s.PutMessage(r.m, done)
		}
		waitAll()
		el := time.Since(t0)
		for s.creator.pendingQueues() > 0 {
			time.Sleep(time.Millisecond)
		}
		made := time.Since(t0)
		b.ReportMetric(float64(n)/el.Seconds(), fmt.Sprintf("first-queues/s-%dq", n))
		b.Logf("%6d queues: first message to each put and dispatched at %.0f queues/s, files made at %.0f/s", n, float64(n)/el.Seconds(), float64(n)/made.Seconds())
	}
	const chunk = 50000
	rates := make(map[int][]float64)
	if p := os.Getenv("MQ_PROF"); p != "" {
		f, _ := os.Create(p)
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	b.ResetTimer()
	for range 3 {
		for _, n := range counts {
			refs := msgs[n]
			t0 := time.Now()
			for k := 0; k < chunk; k++ {
				s.PutMessage(refs[k%n].m, done)
			}
			waitAll()
			rates[n] = append(rates[n], chunk/time.Since(t0).Seconds())
		}
	}
	b.StopTimer()
	base := median(rates[1])
	for _, n := range counts {
		m := median(rates[n])
		b.ReportMetric(m/base, fmt.Sprintf("x%dq", n))
		b.Logf("%6d queues: %.0f msgs/s put+dispatch (rounds %.0f), x%.2f of 1 queue", n, m, rates[n], m/base)
	}
	b.Logf("mapped consume-queue files %d (limit %d), maps %d unmaps %d", s.mapper.mapped(), s.mapper.limit, s.mapper.maps.Load(), s.mapper.unmaps.Load())
}

type testMsgRef struct{ m *message.Ext }

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}
