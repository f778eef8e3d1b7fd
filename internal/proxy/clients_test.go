package proxy

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
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

// TestLocalClientsInAdminViews: in local mode a gRPC consumer and producer
// appear in GET_CONSUMER_CONNECTION_LIST / GET_PRODUCER_CONNECTION_LIST as
// remoting clients do (client id, the client's address, language, the
// consumer's subscription), and leave them when they terminate or expire.
func TestLocalClientsInAdminViews(t *testing.T) {
	for _, local := range []bool{true, false} {
		t.Run(map[bool]string{true: "local", false: "cluster"}[local], func(t *testing.T) { testClientsInAdminViews(t, local) })
	}
}

// testClientsInAdminViews: local mode registers the clients in-process;
// cluster mode registers each one over remoting under its own client id
// (cluster_clients.go).
func testClientsInAdminViews(t *testing.T, local bool) {
	e := startEnvWith(t, local)
	e.createTopic(t, "AdminViewTopic", 2, "")
	c := e.dial(t, false)
	ctx := testutil.Context(t, 20*time.Second)

	streams := map[string]context.CancelFunc{}
	settings := func(id string, s *pb.Settings) {
		t.Helper()
		sctx, cancel := context.WithCancel(ctx)
		streams[id] = cancel
		stream, err := c.Telemetry(withClient(sctx, id))
		if err != nil {
			t.Fatal(err)
		}
		if err := stream.Send(&pb.TelemetryCommand{Command: &pb.TelemetryCommand_Settings{Settings: s}}); err != nil {
			t.Fatal(err)
		}
		if r, err := stream.Recv(); err != nil || r.GetStatus().GetCode() != pb.Code_OK {
			t.Fatalf("settings of %s: %v %v", id, r, err)
		}
	}
	consumer, producer := pb.ClientType_SIMPLE_CONSUMER, pb.ClientType_PRODUCER
	settings("cons-admin", &pb.Settings{ClientType: &consumer, PubSub: &pb.Settings_Subscription{Subscription: &pb.Subscription{
		Group: &pb.Resource{Name: "GAdminView"}, Subscriptions: []*pb.SubscriptionEntry{{Topic: &pb.Resource{Name: "AdminViewTopic"},
			Expression: &pb.FilterExpression{Type: pb.FilterType_TAG, Expression: "TagA || TagB"}}}}}})
	settings("prod-admin", &pb.Settings{ClientType: &producer, PubSub: &pb.Settings_Publishing{Publishing: &pb.Publishing{
		Topics: []*pb.Resource{{Name: "AdminViewTopic"}}}}})
	if r, err := c.Heartbeat(withClient(ctx, "cons-admin"), &pb.HeartbeatRequest{Group: &pb.Resource{Name: "GAdminView"},
		ClientType: pb.ClientType_SIMPLE_CONSUMER}); err != nil || r.GetStatus().GetCode() != pb.Code_OK {
		t.Fatalf("heartbeat: %v %v", r, err)
	}

	admin := func(code protocol.RequestCode, ext map[string]string, body any) protocol.ResponseCode {
		t.Helper()
		resp, err := e.admin.InvokeSync(testutil.Context(t, 5*time.Second), e.broker.Addr(), protocol.NewRequest(code, ext, nil))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Code == int32(protocol.Success) {
			if err := protocol.UnmarshalFastJSON(resp.Body, body); err != nil {
				t.Fatalf("decode %d body: %v", code, err)
			}
		}
		return protocol.ResponseCode(resp.Code)
	}
	var cc protocol.ConsumerConnection
	// Cluster mode registers in the background.
	testutil.Eventually(t, 10*time.Second, func() bool {
		return admin(protocol.GetConsumerConnectionList, map[string]string{"consumerGroup": "GAdminView"}, &cc) == protocol.Success
	}, "consumer connections of GAdminView")
	if len(cc.ConnectionSet) != 1 || cc.ConnectionSet[0].ClientID != "cons-admin" || cc.ConnectionSet[0].Language != "GO" ||
		!strings.HasPrefix(cc.ConnectionSet[0].ClientAddr, "127.0.0.1:") || cc.ConsumeType != protocol.ConsumeActively ||
		cc.MessageModel != protocol.MessageModelClustering {
		t.Errorf("consumer connection: %+v", cc)
	}
	if s, ok := cc.SubscriptionTable["AdminViewTopic"]; !ok || s.SubString != "TagA || TagB" || len(s.TagsSet) != 2 {
		t.Errorf("subscription table: %+v", cc.SubscriptionTable)
	}
	var pc protocol.ProducerConnection
	testutil.Eventually(t, 10*time.Second, func() bool {
		if code := admin(protocol.GetProducerConnectionList, map[string]string{"producerGroup": "AdminViewTopic"}, &pc); code != protocol.Success {
			return false
		}
		for _, conn := range pc.ConnectionSet {
			if conn.ClientID == "prod-admin" && strings.HasPrefix(conn.ClientAddr, "127.0.0.1:") {
				return true
			}
		}
		return false
	}, "producer connection of prod-admin")
	// The producer says goodbye (NotifyClientTermination, as Node does);
	// the consumer, as the Go client, only closes its Telemetry stream and
	// expires clientExpiry later.
	if r, err := c.NotifyClientTermination(withClient(ctx, "prod-admin"), &pb.NotifyClientTerminationRequest{}); err != nil || r.GetStatus().GetCode() != pb.Code_OK {
		t.Fatalf("terminate prod-admin: %v %v", r, err)
	}
	streams["cons-admin"]()
	testutil.Eventually(t, 5*time.Second, func() bool {
		e.proxy.clients.mu.Lock()
		defer e.proxy.clients.mu.Unlock()
		return len(e.proxy.clients.clients["cons-admin"].streams) == 0
	})
	e.proxy.expireClients()
	if code := admin(protocol.GetConsumerConnectionList, map[string]string{"consumerGroup": "GAdminView"}, &cc); code != protocol.Success {
		t.Fatalf("consumer expired before clientExpiry: code %v", code)
	}
	e.proxy.clients.mu.Lock()
	e.proxy.clients.now = func() time.Time { return time.Now().Add(clientExpiry) }
	e.proxy.clients.mu.Unlock()
	e.proxy.expireClients()
	testutil.Eventually(t, 10*time.Second, func() bool {
		return admin(protocol.GetConsumerConnectionList, map[string]string{"consumerGroup": "GAdminView"}, &cc) == protocol.ConsumerNotOnline
	}, "consumer connections after expiry, want CONSUMER_NOT_ONLINE")
	testutil.Eventually(t, 10*time.Second, func() bool {
		pc = protocol.ProducerConnection{}
		admin(protocol.GetProducerConnectionList, map[string]string{"producerGroup": "AdminViewTopic"}, &pc)
		for _, conn := range pc.ConnectionSet {
			if conn.ClientID == "prod-admin" {
				return false
			}
		}
		return true
	}, "producer still listed after termination: %+v", &pc)
}

// TestConsumeType: simple consumers register CONSUME_ACTIVELY, push
// consumers CONSUME_PASSIVELY, lite ones as their plain counterparts.
func TestConsumeType(t *testing.T) {
	for ct, want := range map[pb.ClientType]string{
		pb.ClientType_SIMPLE_CONSUMER: protocol.ConsumeActively, pb.ClientType_LITE_SIMPLE_CONSUMER: protocol.ConsumeActively,
		pb.ClientType_PUSH_CONSUMER: protocol.ConsumePassively, pb.ClientType_LITE_PUSH_CONSUMER: protocol.ConsumePassively,
	} {
		if got := consumeType(ct); got != want {
			t.Errorf("%v: %s, want %s", ct, got, want)
		}
	}
}
