package client

import (
	"testing"

	"github.com/apogeemq/apogee/internal/protocol"
)

// repeatReader yields frame over and over: a connection's stream of
// identical responses.
type repeatReader struct {
	frame []byte
	off   int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		k := copy(p[n:], r.frame[r.off:])
		n += k
		r.off = (r.off + k) % len(r.frame)
	}
	return n, nil
}

// BenchmarkSendResponseDecode is the client's work on a send's answer
// after the socket read: decode the frame as the remoting client does for
// a send (ExtList), turn it into a SendResult and release the response.
// The response is an Apogee broker's (six ext fields).
func BenchmarkSendResponseDecode(b *testing.B) {
	p := newBenchIdleProducer(b)
	resp := &protocol.Command{Code: int32(protocol.Success), Opaque: 1, Flag: protocol.FlagResponse,
		SerializeType: protocol.SerializeRocketMQ, ExtList: protocol.AppendSendResponseHeader(nil, &protocol.SendMessageResponseHeader{
			MsgID: "0A00000100002A9F00000000004C4B40", QueueID: 2, QueueOffset: 1234567,
			TransactionID: "0A000007CF1218B4AAC2146A1C2D0001", MsgRegion: "DefaultRegion", TraceOn: "true"})}
	frame, err := protocol.AppendFrame(nil, resp)
	if err != nil {
		b.Fatal(err)
	}
	fr := protocol.NewFrameReader(&repeatReader{frame: frame}, 0, 0)
	fr.SetExtListResponses(func(int32) bool { return true })
	q := MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 2}
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		c, err := fr.Next()
		if err != nil {
			b.Fatal(err)
		}
		o := &outgoing{userTopic: "T", uniqIDs: "0A000007CF1218B4AAC2146A1C2D0001"}
		if _, err := p.result(o, q, "127.0.0.1:10911", c); err != nil {
			b.Fatal(err)
		}
		c.Release() // as the producer does once result returned
	}
}

func newBenchIdleProducer(b *testing.B) *Producer {
	p, err := NewProducer("pg", WithNameServers("127.0.0.1:1"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close() })
	return p
}
