package proxy

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
	pb "github.com/apogeemq/apogee/internal/rmqpb"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestTLSAndPlaintextOnOnePort: the same port serves a TLS client (ALPN h2,
// self-signed certificate) and a plaintext HTTP/2 client (docs/grpc.md §0.1).
func TestTLSAndPlaintextOnOnePort(t *testing.T) {
	e := startEnv(t)
	e.createTopic(t, "RouteTopic", 3, "+message.type=FIFO")
	for _, useTLS := range []bool{true, false} {
		t.Run(fmt.Sprintf("tls=%v", useTLS), func(t *testing.T) {
			c := e.dial(t, useTLS)
			ctx := withClient(testutil.Context(t, 5*time.Second), "c1")
			resp, err := c.QueryRoute(ctx, &pb.QueryRouteRequest{Topic: &pb.Resource{Name: "RouteTopic"}})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Status.Code != pb.Code_OK || len(resp.MessageQueues) != 3 {
				t.Fatalf("route: %v", resp)
			}
			for i, q := range resp.MessageQueues {
				if q.Id != int32(i) || q.Permission != pb.Permission_READ_WRITE || q.Broker.GetName() != "broker-a" || q.Broker.GetId() != 0 {
					t.Errorf("queue %d: %v", i, q)
				}
				if len(q.AcceptMessageTypes) != 1 || q.AcceptMessageTypes[0] != pb.MessageType_FIFO {
					t.Errorf("queue %d accepts %v, want [FIFO]", i, q.AcceptMessageTypes)
				}
				if a := q.Broker.GetEndpoints().GetAddresses(); len(a) != 1 || fmt.Sprintf("%s:%d", a[0].Host, a[0].Port) != e.proxy.Addr().String() {
					t.Errorf("queue %d endpoints %v, want %s", i, a, e.proxy.Addr())
				}
			}
		})
	}
}

// TestBadInputStatuses: business statuses for bad requests, never a gRPC
// error (docs/grpc.md §0.15, §6.3).
func TestBadInputStatuses(t *testing.T) {
	e := startEnv(t)
	e.createTopic(t, "NormalTopic", 2, "+message.type=NORMAL")
	c := e.dial(t, false)
	ctx := withClient(testutil.Context(t, 10*time.Second), "bad-client")

	noID, err := c.QueryRoute(testutil.Context(t, 5*time.Second), &pb.QueryRouteRequest{Topic: &pb.Resource{Name: "NormalTopic"}})
	if err != nil || noID.Status.Code != pb.Code_CLIENT_ID_REQUIRED {
		t.Errorf("route without client id: %v %v", noID, err)
	}
	for _, tc := range []struct {
		topic string
		want  pb.Code
	}{
		{"NoSuchTopic", pb.Code_TOPIC_NOT_FOUND},
		{"bad topic!", pb.Code_ILLEGAL_TOPIC},
		{"", pb.Code_ILLEGAL_TOPIC},
		{"TBW102", pb.Code_ILLEGAL_TOPIC},
	} {
		r, err := c.QueryRoute(ctx, &pb.QueryRouteRequest{Topic: &pb.Resource{Name: tc.topic}})
		if err != nil || r.Status.Code != tc.want {
			t.Errorf("route %q: %v %v, want %v", tc.topic, r.GetStatus(), err, tc.want)
		}
	}

	msg := func(mut func(m *pb.Message)) *pb.Message {
		m := &pb.Message{Topic: &pb.Resource{Name: "NormalTopic"}, Body: []byte("x"),
			SystemProperties: &pb.SystemProperties{MessageId: "01ID", MessageType: pb.MessageType_NORMAL, BornTimestamp: timestamppb.Now()}}
		if mut != nil {
			mut(m)
		}
		return m
	}
	group := "g"
	blank := " "
	tag := "a|b"
	for _, tc := range []struct {
		name string
		m    *pb.Message
		want pb.Code
	}{
		{"ok", msg(nil), pb.Code_OK},
		{"empty body", msg(func(m *pb.Message) { m.Body = nil }), pb.Code_MESSAGE_BODY_EMPTY},
		{"body over 4 MiB", msg(func(m *pb.Message) { m.Body = make([]byte, 4<<20+1) }), pb.Code_MESSAGE_BODY_TOO_LARGE},
		{"no message id", msg(func(m *pb.Message) { m.SystemProperties.MessageId = "" }), pb.Code_ILLEGAL_MESSAGE_ID},
		{"reserved property", msg(func(m *pb.Message) { m.UserProperties = map[string]string{"UNIQ_KEY": "x"} }), pb.Code_ILLEGAL_MESSAGE_PROPERTY_KEY},
		{"tag with bar", msg(func(m *pb.Message) { m.SystemProperties.Tag = &tag }), pb.Code_ILLEGAL_MESSAGE_TAG},
		{"blank group", msg(func(m *pb.Message) { m.SystemProperties.MessageGroup = &blank }), pb.Code_ILLEGAL_MESSAGE_GROUP},
		{"FIFO to a NORMAL topic", msg(func(m *pb.Message) { m.SystemProperties.MessageGroup = &group }), pb.Code_MESSAGE_PROPERTY_CONFLICT_WITH_TYPE},
		{"delay two days ahead", msg(func(m *pb.Message) {
			m.SystemProperties.DeliveryTimestamp = timestamppb.New(time.Now().Add(48 * time.Hour))
		}), pb.Code_ILLEGAL_DELIVERY_TIME},
		{"unknown topic", msg(func(m *pb.Message) { m.Topic.Name = "NoSuchTopic" }), pb.Code_TOPIC_NOT_FOUND},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := c.SendMessage(ctx, &pb.SendMessageRequest{Messages: []*pb.Message{tc.m}})
			if err != nil {
				t.Fatal(err)
			}
			if r.Status.Code != tc.want {
				t.Errorf("status %v, want %v", r.Status, tc.want)
			}
		})
	}
	if r, err := c.SendMessage(ctx, &pb.SendMessageRequest{}); err != nil || r.Status.Code != pb.Code_MESSAGE_CORRUPTED {
		t.Errorf("send of nothing: %v %v", r.GetStatus(), err)
	}
	if r, err := c.Heartbeat(ctx, &pb.HeartbeatRequest{ClientType: pb.ClientType_PRODUCER}); err != nil || r.Status.Code != pb.Code_UNRECOGNIZED_CLIENT_TYPE {
		t.Errorf("heartbeat without settings: %v %v", r.GetStatus(), err)
	}
}

// TestTelemetrySettingsAndSend: every settings command gets the merged
// settings (max_body_size, exponential backoff; consumer batch size, long
// polling, customized backoff); a send stores the client's message id as
// UNIQ_KEY with tag, keys and user properties (docs/grpc.md §7.3, §9.1).
func TestTelemetrySettingsAndSend(t *testing.T) {
	e := startEnv(t)
	e.createTopic(t, "SendTopic", 2, "")
	c := e.dial(t, true)
	ctx := withClient(testutil.Context(t, 10*time.Second), "prod-1")
	stream, err := c.Telemetry(ctx)
	if err != nil {
		t.Fatal(err)
	}
	producer := pb.ClientType_PRODUCER
	for range 2 { // every settings command is answered, not only the first
		if err := stream.Send(&pb.TelemetryCommand{Command: &pb.TelemetryCommand_Settings{Settings: &pb.Settings{
			ClientType: &producer, PubSub: &pb.Settings_Publishing{Publishing: &pb.Publishing{Topics: []*pb.Resource{{Name: "SendTopic"}}}},
		}}}); err != nil {
			t.Fatal(err)
		}
		reply, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		s := reply.GetSettings()
		if reply.GetStatus().GetCode() != pb.Code_OK || s.GetPublishing().GetMaxBodySize() != 4<<20 ||
			!s.GetPublishing().GetValidateMessageType() || s.GetBackoffPolicy().GetExponentialBackoff() == nil || s.GetMetric().GetOn() {
			t.Fatalf("producer settings reply: %v", reply)
		}
	}
	if r, err := c.Heartbeat(ctx, &pb.HeartbeatRequest{ClientType: pb.ClientType_PRODUCER}); err != nil || r.Status.Code != pb.Code_OK {
		t.Errorf("heartbeat after settings: %v %v", r.GetStatus(), err)
	}

	sendAndReadBack(t, e, c, ctx, "SendTopic")

	consumer := pb.ClientType_SIMPLE_CONSUMER
	cs, err := c.Telemetry(withClient(ctx, "cons-1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Send(&pb.TelemetryCommand{Command: &pb.TelemetryCommand_Settings{Settings: &pb.Settings{
		ClientType: &consumer, PubSub: &pb.Settings_Subscription{Subscription: &pb.Subscription{Group: &pb.Resource{Name: "G1"},
			Subscriptions: []*pb.SubscriptionEntry{{Topic: &pb.Resource{Name: "SendTopic"}, Expression: &pb.FilterExpression{Type: pb.FilterType_TAG, Expression: "*"}}}}},
	}}}); err != nil {
		t.Fatal(err)
	}
	reply, err := cs.Recv()
	if err != nil {
		t.Fatal(err)
	}
	sub := reply.GetSettings().GetSubscription()
	if sub.GetReceiveBatchSize() != 32 || sub.GetLongPollingTimeout().AsDuration() != 20*time.Second || sub.Fifo == nil ||
		reply.GetSettings().GetBackoffPolicy().GetMaxAttempts() != 17 || len(reply.GetSettings().GetBackoffPolicy().GetCustomizedBackoff().GetNext()) == 0 {
		t.Errorf("consumer settings reply: %v", reply)
	}
}

// TestSendOverRemoting sends through an endpoint without the in-process
// path (cluster mode's code path for sends, against one broker): the
// stored message is the one the local path stores.
func TestSendOverRemoting(t *testing.T) {
	e := startEnvWith(t, false)
	e.createTopic(t, "SendTopicRemoting", 2, "")
	c := e.dial(t, false)
	sendAndReadBack(t, e, c, withClient(testutil.Context(t, 10*time.Second), "prod-2"), "SendTopicRemoting")
}

// sendAndReadBack sends one message with tag, keys, a user property, born
// time and born host to topic (2 queues) and checks what the broker stored.
func sendAndReadBack(t *testing.T, e *env, c pb.MessagingServiceClient, ctx context.Context, topic string) {
	t.Helper()
	tag := "TagA"
	r, err := c.SendMessage(ctx, &pb.SendMessageRequest{Messages: []*pb.Message{{
		Topic: &pb.Resource{Name: topic}, Body: []byte("hello"), UserProperties: map[string]string{"k": "v"},
		SystemProperties: &pb.SystemProperties{MessageId: "0123456789ABCDEF0123456789ABCDEF01", Tag: &tag, Keys: []string{"k1", "k2"},
			MessageType: pb.MessageType_NORMAL, BornTimestamp: timestamppb.New(time.UnixMilli(1700000000123)), BornHost: "client-host"},
	}}})
	if err != nil || r.Status.Code != pb.Code_OK || len(r.Entries) != 1 || r.Entries[0].MessageId != "0123456789ABCDEF0123456789ABCDEF01" {
		t.Fatalf("send: %v %v", r, err)
	}

	// Read it back over remoting: QUERY by UNIQ_KEY is another package's;
	// pull both queues from offset 0 instead.
	// A send is acknowledged before its consume-queue entry exists: poll.
	var found *message.Ext
	testutil.Eventually(t, 5*time.Second, func() bool {
		for q := range 2 {
			h := protocol.PullMessageRequestHeader{ConsumerGroup: "check", Topic: topic, QueueID: int32(q), QueueOffset: 0,
				MaxMsgNums: 32, SysFlag: protocol.PullFlagSubscription, Subscription: "*", ExpressionType: "TAG"}
			resp, err := e.admin.InvokeSync(testutil.Context(t, 5*time.Second), e.broker.Addr(),
				protocol.NewRequest(protocol.PullMessage, protocol.EncodeHeader(&h, false), nil))
			if err != nil || resp.Code != int32(protocol.Success) {
				continue
			}
			if msgs, err := message.DecodeStoredAll(resp.Body, message.DecodeOptions{}); err == nil && len(msgs) > 0 {
				found = msgs[0]
				return true
			}
		}
		return false
	})
	if found == nil {
		t.Fatal("message not found on either queue")
	}
	p := found.Properties
	if string(found.Body) != "hello" || p["UNIQ_KEY"] != "0123456789ABCDEF0123456789ABCDEF01" || p["TAGS"] != "TagA" ||
		p["KEYS"] != "k1 k2" || p["k"] != "v" || found.BornTimestamp != 1700000000123 || p["__BORNHOST"] != "client-host" {
		t.Errorf("stored message: body %q props %v born %d", found.Body, p, found.BornTimestamp)
	}

}

// TestExpandQueues follows RocketMQ's route expansion (docs/grpc.md §6.1 step 4).
func TestExpandQueues(t *testing.T) {
	for _, tc := range []struct {
		read, write, perm int32
		want              string
	}{
		{4, 4, 6, "0:READ_WRITE 1:READ_WRITE 2:READ_WRITE 3:READ_WRITE"},
		{3, 1, 6, "0:READ 1:READ 2:READ_WRITE"},
		{1, 2, 6, "0:WRITE 1:READ_WRITE"},
		{2, 2, 4, "0:READ 1:READ"},
		{2, 3, 2, "0:WRITE 1:WRITE 2:WRITE"},
		{0, 0, 0, "0:NONE"},
	} {
		var got string
		for i, q := range expandQueues(tc.read, tc.write, tc.perm) {
			if i > 0 {
				got += " "
			}
			got += fmt.Sprintf("%d:%s", q.id, q.perm)
		}
		if got != tc.want {
			t.Errorf("expand(%d, %d, %d) = %s, want %s", tc.read, tc.write, tc.perm, got, tc.want)
		}
	}
}

// TestConsistentHash: the group-to-queue mapping is stable and moves few
// groups when a queue is added (the property FIFO ordering relies on).
func TestConsistentHash(t *testing.T) {
	moved := 0
	for i := range 1000 {
		g := fmt.Sprintf("group-%d", i)
		a := consistentHash(int64(javaStringHash(g)), 8)
		if a != consistentHash(int64(javaStringHash(g)), 8) || a < 0 || a >= 8 {
			t.Fatalf("unstable or out of range: %d", a)
		}
		if consistentHash(int64(javaStringHash(g)), 9) != a {
			moved++
		}
	}
	if moved > 250 { // ideally 1000/9 ≈ 111
		t.Errorf("%d of 1000 groups moved going from 8 to 9 queues", moved)
	}
	if javaStringHash("hello") != 99162322 {
		t.Errorf("javaStringHash(hello) = %d, want Java's 99162322", javaStringHash("hello"))
	}
}
