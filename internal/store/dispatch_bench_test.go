package store

import (
	"bytes"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/testutil"
)

// dispatchBenchProps is a properties string like a client's send: KEYS,
// TAGS, WAIT, the unique key and the broker's cluster name.
var dispatchBenchProps = message.EncodeProperties(map[string]string{
	message.PropertyKeys:                      "order-4711",
	message.PropertyTags:                      "TagA",
	message.PropertyWaitStoreMsgOK:            "true",
	message.PropertyUniqClientMessageIDKeyidx: "0A0000020FA0000000000000000000AB",
	"CLUSTER": "DefaultCluster",
})

// BenchmarkDispatch isolates dispatch (ReputMessageService: record view,
// property look-ups, tag code, consume-queue unit, index entries): b.N
// records are put while the confirm offset holds dispatch back, then the
// timed part releases it and waits until every record is dispatched.
// cpu-ns/op is the process's CPU per record over that part (dispatch is
// the only busy goroutine). The message index is on, as by default.
func BenchmarkDispatch(b *testing.B) {
	cfg := benchConfig(b.TempDir())
	cfg.MessageIndexEnable = true
	s := benchStore(b, cfg)
	s.SetConfirmOffset(0)
	m := &message.Ext{BornTimestamp: 1, BornHost: netip.MustParseAddrPort("10.0.0.2:4000")}
	m.Topic = "BenchTopic"
	m.Body = bytes.Repeat([]byte("x"), 128)
	done := make(chan PutResult, 1)
	for i := 0; i < b.N; i++ {
		m.QueueID = int32(i % 8)
		s.PutMessageRawProperties(m, dispatchBenchProps, nil, func(r PutResult) { done <- r })
		if r := <-done; r.Status != PutOK {
			b.Fatal(r.Status)
		}
	}
	base := s.Stats().Dispatched
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := benchProcessCPU()
	s.SetConfirmOffset(-1)
	testutil.Eventually(b, time.Minute, func() bool { return s.Stats().Dispatched-base >= int64(b.N) })
	cpu := benchProcessCPU() - cpu0
	b.StopTimer()
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	if got := s.MaxOffsetInQueue("BenchTopic", 0); got != int64((b.N+7)/8) {
		b.Fatalf("queue 0 max offset %d, want %d", got, (b.N+7)/8)
	}
}

// benchProcessCPU is the process's user plus system CPU time.
func benchProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPutRawPipelined: the broker's put (PutMessageRawProperties,
// ASYNC_FLUSH, staged) with up to 256 puts in flight and dispatch held back
// by the confirm offset, so that cpu-ns/op (process CPU per put, the stage
// committer's pwrite and completions included) is the put path's alone.
// The at variant is the broker's put with metrics on: the caller read the
// clock when the request began (remoting's Conn.RequestStart, read here in
// the loop) and hands it to PutMessageRawPropertiesAt.
func BenchmarkPutRawPipelined(b *testing.B) {
	benchPutRawPipelined(b, 128, func(s *Store, m *message.Ext, done func(PutResult)) {
		s.PutMessageRawProperties(m, dispatchBenchProps, nil, done)
	})
}

func BenchmarkPutRawPipelinedAt(b *testing.B) {
	benchPutRawPipelined(b, 128, func(s *Store, m *message.Ext, done func(PutResult)) {
		s.PutMessageRawPropertiesAt(m, dispatchBenchProps, nil, time.Now(), done)
	})
}

// BenchmarkPutRawPipelinedAt1K is the at variant with 1 KiB bodies, the
// NATS harness's size.
func BenchmarkPutRawPipelinedAt1K(b *testing.B) {
	benchPutRawPipelined(b, 1024, func(s *Store, m *message.Ext, done func(PutResult)) {
		s.PutMessageRawPropertiesAt(m, dispatchBenchProps, nil, time.Now(), done)
	})
}

func benchPutRawPipelined(b *testing.B, bodyLen int, put func(*Store, *message.Ext, func(PutResult))) {
	cfg := benchConfig(b.TempDir())
	s := benchStore(b, cfg)
	s.SetConfirmOffset(0)
	m := &message.Ext{BornTimestamp: 1, BornHost: netip.MustParseAddrPort("10.0.0.2:4000")}
	m.Topic = "BenchTopic"
	m.Body = bytes.Repeat([]byte("x"), bodyLen)
	sem := make(chan struct{}, 256)
	done := func(r PutResult) {
		if r.Status != PutOK {
			panic(r.Status.String())
		}
		<-sem
	}
	b.ReportAllocs()
	cpu0 := benchProcessCPU()
	i := 0
	for b.Loop() {
		sem <- struct{}{}
		m.QueueID = int32(i % 8)
		i++
		put(s, m, done)
	}
	for range cap(sem) {
		sem <- struct{}{}
	}
	cpu := benchProcessCPU() - cpu0
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	if got := s.Stats().PutMessages; got < int64(b.N) {
		b.Fatalf("%d puts, want %d", got, b.N)
	}
}
