package client

import (
	"context"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/testutil"
	"github.com/apogeemq/apogee/internal/testutil/fakebroker"
)

// BenchmarkSendAsyncPipelined keeps up to 256 SendAsync calls in flight to
// the fake broker: the pipelined publish path (SDK plus remoting, no
// storage) that benchmarks/nats measures against nats.go.
func BenchmarkSendAsyncPipelined(b *testing.B) {
	benchSendAsyncPipelined(b)
}

// BenchmarkSendAsyncPipelinedTimeout10s is BenchmarkSendAsyncPipelined
// with benchmarks/nats's 10 s send timeout: run it for longer than
// 4 s (-benchtime 8s) so its shared deadline contexts reach their steady
// state.
func BenchmarkSendAsyncPipelinedTimeout10s(b *testing.B) {
	benchSendAsyncPipelined(b, WithSendTimeout(10*time.Second))
}

func benchSendAsyncPipelined(b *testing.B, opts ...ProducerOpt) {
	_, p := startBenchProducer(b, opts...)
	body := make([]byte, 1024)
	ctx := context.Background()
	window := make(chan struct{}, 256)
	errs := make(chan error, 1)
	cb := func(_ *SendResult, err error) {
		if err != nil {
			select {
			case errs <- err:
			default:
			}
		}
		<-window
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	defer reportCPU(b)()
	for b.Loop() {
		window <- struct{}{}
		if err := p.SendAsync(ctx, NewMessage("T", body), cb); err != nil {
			b.Fatal(err)
		}
	}
	for range cap(window) {
		window <- struct{}{}
	}
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
}

// reportCPU starts measuring the process's CPU time; the function it
// returns reports it per operation as cpu-ns/op (wall time is unreliable on
// a machine shared with other work; CPU per operation is what we cut).
func reportCPU(b *testing.B) func() {
	start := processCPU()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
		}
	}
}

// pullBody is a pull response body of n 1 KiB messages as a broker returns
// them: tag, keys, UNIQ_KEY and WAIT properties, one producer host.
func pullBody(tb testing.TB, n int) []byte {
	tb.Helper()
	var out []byte
	born := netip.MustParseAddrPort("10.0.0.7:53012")
	store := netip.MustParseAddrPort("10.0.0.1:10911")
	ids := message.NewUniqIDGenerator(born.Addr(), 4242)
	for i := range n {
		e := &message.Ext{
			Message: message.Message{
				Topic: "T",
				Body:  make([]byte, 1024),
				Properties: map[string]string{
					message.PropertyTags: "TagA", message.PropertyKeys: "k" + strconv.Itoa(i),
					message.PropertyUniqClientMessageIDKeyidx: ids.Next(), message.PropertyWaitStoreMsgOK: "true",
				},
			},
			QueueID: 1, QueueOffset: int64(i), CommitLogOffset: int64(i) * 1200,
			BornTimestamp: 1764400000000, BornHost: born, StoreTimestamp: 1764400000001, StoreHost: store,
		}
		var err error
		if out, err = message.AppendStored(out, e); err != nil {
			tb.Fatal(err)
		}
	}
	return out
}

// BenchmarkDecodePulled32 turns a 32-message pull body into the
// MessageExts a listener receives (decode, filter, convert): the consume
// path's per-message client work. Reported per message.
func BenchmarkDecodePulled32(b *testing.B) {
	const n = 32
	body := pullBody(b, n)
	mq := MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 1}
	sub, err := newSubscription("T", Selector{Expression: "*"})
	if err != nil {
		b.Fatal(err)
	}
	var scratch message.ExtScratch // the pull loop's, reused per pull
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	defer reportCPU(b)()
	for b.Loop() {
		if msgs := decodePulledForBench(b, body, mq, sub, &scratch); len(msgs) != n {
			b.Fatalf("%d messages", len(msgs))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/msg")
}

// decodePulledForBench is what consumerAPI.pull and the push pull loop do
// with a pull body.
func decodePulledForBench(b *testing.B, body []byte, mq MessageQueue, sub *subscription, scratch *message.ExtScratch) []*MessageExt {
	// A response frame is read for its call, so the decode may alias it
	// (the body is only read here, so reusing it is fine).
	es, err := message.DecodeStoredAllOwnedScratch(body, message.DecodeOptions{Decompress: true}, scratch)
	if err != nil {
		b.Fatal(err)
	}
	msgs := messageExts(es, sub.match, mq, "g", "")
	scratch.Clear()
	return msgs
}

// startBenchProducer starts a producer against a fake broker serving topic
// T, closed by b.Cleanup, and sends once so the route is cached.
func startBenchProducer(b *testing.B, opts ...ProducerOpt) (*fakebroker.Broker, *Producer) {
	b.Helper()
	fb := newFakeBroker(b, "broker-a")
	fb.Serve("T", fb)
	p, err := NewProducer("pg", append([]ProducerOpt{WithNameServers(fb.Addr()), WithLogger(testutil.DiscardLogger())}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	if _, err := p.Send(context.Background(), NewMessage("T", make([]byte, 1024))); err != nil {
		b.Fatal(err)
	}
	return fb, p
}
