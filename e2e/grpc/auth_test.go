package grpce2e

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"

	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/testutil"
)

// authArgs turn on ACL 2.0 with RocketMQ's documented init user.
var authArgs = []string{
	"--set", "authenticationEnabled=true", "--set", "authorizationEnabled=true",
	"--set", `initAuthenticationUser={"username":"rocketmq","password":"12345678"}`,
	"--set", `innerClientAuthenticationCredentials={"accessKey":"inner","secretKey":"inner-secret"}`,
}

// signedAdmin is an admin client signing as the init user.
func signedAdmin(t *testing.T, s *server) *admin.Admin {
	t.Helper()
	a, err := admin.New(admin.WithNameServers(s.namesrv), admin.WithCredentials("rocketmq", "12345678"))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// v5Send starts an official v5 producer with credentials and sends one
// message to topic.
func v5Send(t *testing.T, endpoint, ak, sk, topic string) error {
	t.Helper()
	cfg := &rmq.Config{Endpoint: endpoint, Credentials: &credentials.SessionCredentials{AccessKey: ak, AccessSecret: sk}}
	p, err := rmq.NewProducer(cfg, rmq.WithTopics(topic)) // Start queries the route: a refusal fails Start
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		return err
	}
	defer p.GracefulStop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m := &rmq.Message{Topic: topic, Body: []byte("over grpc")}
	_, err = p.Send(ctx, m)
	return err
}

// TestGRPCAuth: with authentication and authorization on, the official v5
// client's MQv2-HMAC-SHA1 authorization header is verified: the super user
// sends; a wrong secret and an unknown user are refused UNAUTHORIZED with
// RocketMQ's message; a normal user with Pub on one topic sends there and
// not elsewhere; nothing refused is stored.
func TestGRPCAuth(t *testing.T) {
	withSSL(t, true)
	s := startServer(t, "", authArgs...)
	a := signedAdmin(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	target := admin.Target{Cluster: "DefaultCluster"}
	for _, topic := range []string{"GrpcAuthOrders", "GrpcAuthOther"} {
		if err := a.CreateTopic(ctx, admin.TopicConfig{Topic: topic, ReadQueues: 2, WriteQueues: 2}, target); err != nil {
			t.Fatalf("create topic %s: %v", topic, err)
		}
	}
	if err := v5Send(t, s.grpc, "rocketmq", "12345678", "GrpcAuthOrders"); err != nil {
		t.Fatalf("super user over gRPC: %v", err)
	}
	refused := func(err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("got %v, want a refusal containing %q", err, want)
		}
	}
	refused(v5Send(t, s.grpc, "rocketmq", "wrong", "GrpcAuthOrders"), "check signature failed.")
	refused(v5Send(t, s.grpc, "ghost", "x", "GrpcAuthOrders"), "User:ghost is not found.")

	if err := a.CreateUser(ctx, target, admin.User{Username: "alice", Password: "alice-secret"}); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateACL(ctx, target, admin.ACLRequest{Subject: "User:alice", Resources: []string{"Topic:GrpcAuthOrders"},
		Actions: []string{"Pub"}, Decision: "Allow"}); err != nil {
		t.Fatal(err)
	}
	if err := v5Send(t, s.grpc, "alice", "alice-secret", "GrpcAuthOrders"); err != nil {
		t.Fatalf("alice to her topic: %v", err)
	}
	refused(v5Send(t, s.grpc, "alice", "alice-secret", "GrpcAuthOther"), "no matched policies.")

	stats, err := a.TopicStats(ctx, "GrpcAuthOther")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range stats {
		if q.MaxOffset != 0 {
			t.Fatalf("refused sends stored messages: %+v", stats)
		}
	}
}

// TestGRPCTLSEnforcing: with tlsMode=enforcing the gRPC endpoint (like the
// remoting ports) takes the v5 client over TLS and refuses plaintext.
func TestGRPCTLSEnforcing(t *testing.T) {
	f := testutil.WriteTLSFiles(t)
	s := startServer(t, "", "--set", "tlsMode=enforcing", "--set", "tlsServerCertPath="+f.ServerCert, "--set", "tlsServerKeyPath="+f.ServerKey)
	a, err := admin.New(admin.WithNameServers(s.namesrv), admin.WithTLS(&tls.Config{InsecureSkipVerify: true}))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.CreateTopic(ctx, admin.TopicConfig{Topic: "GrpcTLSTopic", ReadQueues: 2, WriteQueues: 2}, admin.Target{Cluster: "DefaultCluster"}); err != nil {
		t.Fatalf("create topic over TLS: %v", err)
	}
	t.Run("tls", func(t *testing.T) {
		withSSL(t, true)
		if err := v5Send(t, s.grpc, "", "", "GrpcTLSTopic"); err != nil {
			t.Fatalf("v5 over TLS: %v", err)
		}
	})
	t.Run("plaintext", func(t *testing.T) {
		withSSL(t, false)
		if err := v5Send(t, s.grpc, "", "", "GrpcTLSTopic"); err == nil {
			t.Fatal("v5 over plaintext accepted in enforcing mode")
		}
	})
}

// TestGRPCAuthSimpleConsumer: a v5 SimpleConsumer with credentials needs
// Sub on its topic and its group: without the topic it cannot start; with
// both it receives and acks what the super user sent.
func TestGRPCAuthSimpleConsumer(t *testing.T) {
	withSSL(t, true)
	s := startServer(t, "", authArgs...)
	a := signedAdmin(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	target := admin.Target{Cluster: "DefaultCluster"}
	const topic, group = "GrpcAuthConsume", "GrpcAuthGroup"
	if err := a.CreateTopic(ctx, admin.TopicConfig{Topic: topic, ReadQueues: 2, WriteQueues: 2}, target); err != nil {
		t.Fatal(err)
	}
	if err := v5Send(t, s.grpc, "rocketmq", "12345678", topic); err != nil {
		t.Fatalf("super user send: %v", err)
	}
	if err := a.CreateUser(ctx, target, admin.User{Username: "bob", Password: "bob-secret"}); err != nil {
		t.Fatal(err)
	}
	grant := func(res string) {
		t.Helper()
		if err := a.CreateACL(ctx, target, admin.ACLRequest{Subject: "User:bob", Resources: []string{res}, Actions: []string{"Sub"}, Decision: "Allow"}); err != nil {
			t.Fatal(err)
		}
	}
	newConsumer := func() (rmq.SimpleConsumer, error) {
		cfg := &rmq.Config{Endpoint: s.grpc, ConsumerGroup: group,
			Credentials: &credentials.SessionCredentials{AccessKey: "bob", AccessSecret: "bob-secret"}}
		c, err := rmq.NewSimpleConsumer(cfg, rmq.WithSimpleAwaitDuration(5*time.Second),
			rmq.WithSimpleSubscriptionExpressions(map[string]*rmq.FilterExpression{topic: rmq.SUB_ALL}))
		if err != nil {
			t.Fatal(err)
		}
		return c, c.Start()
	}
	grant("Group:" + group)
	if c, err := newConsumer(); err == nil {
		c.GracefulStop()
		t.Fatal("consumer without Sub on the topic started")
	} else if !strings.Contains(err.Error(), "no matched policies.") {
		t.Fatalf("start without Sub on the topic: %v", err)
	}
	grant("Topic:" + topic)
	c, err := newConsumer()
	if err != nil {
		t.Fatalf("start with Sub on topic and group: %v", err)
	}
	defer c.GracefulStop()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		rctx, rcancel := context.WithTimeout(context.Background(), 12*time.Second)
		mvs, err := c.Receive(rctx, 16, 20*time.Second)
		rcancel()
		if err != nil {
			if strings.Contains(err.Error(), "MESSAGE_NOT_FOUND") {
				continue
			}
			t.Fatalf("receive: %v", err)
		}
		for _, mv := range mvs {
			if err := c.Ack(context.Background(), mv); err != nil {
				t.Fatalf("ack: %v", err)
			}
		}
		if len(mvs) > 0 {
			return
		}
	}
	t.Fatal("bob received nothing")
}
