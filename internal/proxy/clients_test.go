package proxy

import (
	"bufio"
	"net"
	"testing"
	"time"

	pb "github.com/apogeemq/apogee/internal/rmqpb"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestClientExpiry: a client lives while it has a Telemetry stream; once
// the stream closes it expires after clientExpiry of silence, and any RPC
// in between keeps it (docs/grpc.md §0.13: the Go client never says goodbye).
func TestClientExpiry(t *testing.T) {
	now := time.Unix(1000, 0)
	r := newRegistry(func() time.Time { return now })
	producer := pb.ClientType_PRODUCER
	r.setSettings("p1", &pb.Settings{ClientType: &producer, PubSub: &pb.Settings_Publishing{Publishing: &pb.Publishing{
		Topics: []*pb.Resource{{Name: "T"}}}}})
	ts := &telemetryStream{clientID: "p1"}
	r.attach("p1", ts)
	now = now.Add(10 * clientExpiry)
	if gone := r.expire(); len(gone) != 0 || !r.live("p1") {
		t.Fatalf("client with an open stream expired: %v", gone)
	}
	if got := r.producerStreams("T"); len(got) != 1 || got[0] != ts {
		t.Fatalf("producer streams of T: %v", got)
	}
	if got := r.publishedTopics(); len(got) != 1 || got[0] != "T" {
		t.Fatalf("published topics: %v", got)
	}
	r.detach("p1", ts)
	now = now.Add(clientExpiry - time.Second)
	r.touch("p1") // a heartbeat
	now = now.Add(clientExpiry - time.Second)
	if gone := r.expire(); len(gone) != 0 {
		t.Fatalf("client active %s ago expired", clientExpiry-time.Second)
	}
	now = now.Add(2 * time.Second)
	if gone := r.expire(); len(gone) != 1 || gone[0] != "p1" {
		t.Fatalf("silent client not expired: %v", gone)
	}
	if r.count() != 0 || len(r.producerStreams("T")) != 0 {
		t.Fatal("expired client still registered")
	}
}

// TestListenerSurvivesBadClients: connections that send nothing, garbage,
// or a broken TLS hello are dropped without affecting the next client.
func TestListenerSurvivesBadClients(t *testing.T) {
	e := startEnv(t)
	addr := e.proxy.Addr().String()
	for _, first := range [][]byte{[]byte("GARBAGE\r\n\r\n"), {0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5}, nil} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if first != nil {
			c.Write(first)
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, _ = bufio.NewReader(c).ReadByte() // the server answers or closes
		}
		c.Close()
	}
	client := e.dial(t, true)
	ctx := withClient(testutil.Context(t, 5*time.Second), "after-garbage")
	if r, err := client.Heartbeat(ctx, &pb.HeartbeatRequest{ClientType: pb.ClientType_PRODUCER}); err != nil || r.Status == nil {
		t.Fatalf("heartbeat after bad clients: %v %v", r, err)
	}
}
