package client

import (
	"context"
	"testing"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

// BenchmarkPrepareAndEncode measures the producer's own per-message work:
// validation, UNIQ_KEY, properties and the send request (its ext list).
func BenchmarkPrepareAndEncode(b *testing.B) {
	p, err := NewProducer("pg", WithNameServers("127.0.0.1:1"), WithLogger(testutil.DiscardLogger()))
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	body := make([]byte, 1024)
	q := MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 3}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	defer reportCPU(b)()
	for b.Loop() {
		o, err := p.prepare(NewMessage("T", body).WithTag("TagA").WithKeys("k1"), nil)
		if err != nil {
			b.Fatal(err)
		}
		_ = p.request(o, q, 1700000000000)
	}
}

// BenchmarkSendRequestFrame measures one attempt's request as remoting
// sends it: build the request of a prepared message and encode its frame
// header (what SendAsync pays per attempt besides preparing and the wire).
func BenchmarkSendRequestFrame(b *testing.B) {
	p, err := NewProducer("pg", WithNameServers("127.0.0.1:1"), WithLogger(testutil.DiscardLogger()))
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	o, err := p.prepare(NewMessage("T", make([]byte, 1024)).WithTag("TagA").WithKeys("k1"), nil)
	if err != nil {
		b.Fatal(err)
	}
	q := MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 3}
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	defer reportCPU(b)()
	born := int64(1700000000000)
	for b.Loop() {
		born++
		r := p.newRequest(o, q, born)
		if buf, err = protocol.AppendFrameHeader(buf[:0], &r.cmd); err != nil {
			b.Fatal(err)
		}
		p.releaseRequest(r)
	}
}

// BenchmarkSendSyncFakeBroker is a full synchronous send over loopback to
// the fake broker (which does no storage work): the SDK plus remoting.
func BenchmarkSendSyncFakeBroker(b *testing.B) {
	fb, p := startBenchProducer(b)
	body := make([]byte, 1024)
	ctx := context.Background()
	fb.ResetSends()
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	defer reportCPU(b)()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := p.Send(ctx, NewMessage("T", body)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
