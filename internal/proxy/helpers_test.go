package proxy

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	pb "github.com/apogeemq/apogee/internal/rmqpb"
	"github.com/apogeemq/apogee/internal/testutil"
)

// env is a real broker (temp store, free port) with a local-mode proxy in
// front of it.
type env struct {
	broker *broker.Broker
	proxy  *Server
	admin  *remoting.Client
}

func startEnv(t *testing.T) *env { t.Helper(); return startEnvWith(t, true) }

// startEnvWith starts an env whose proxy sends in-process (local, as
// apogee broker runs it) or over loopback remoting.
func startEnvWith(t *testing.T, local bool) *env {
	t.Helper()
	cfg := broker.DefaultConfig()
	cfg.BrokerName = "broker-a"
	cfg.ListenPort = 0
	cfg.VIPChannelEnable = false
	cfg.Store.StorePathRootDir = t.TempDir()
	cfg.Store.MappedFileSizeCommitLog = 8 << 20
	cfg.Store.MappedFileSizeConsumeQueue = 20 * 1000
	cfg.Store.MessageIndexEnable = false
	cfg.SendMessageThreadPoolNums = 2
	cfg.PullMessageThreadPoolNums = 4
	b, err := broker.New(cfg, testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	pcfg := Config{ListenAddr: "127.0.0.1:0", BrokerName: cfg.BrokerName, BrokerAddr: b.Addr(), Logger: testutil.Logger(t)}
	if local {
		pcfg.Local = b
	}
	p, err := New(pcfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	rc := remoting.NewClient(remoting.ClientConfig{Logger: testutil.Logger(t)})
	if err := rc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	return &env{broker: b, proxy: p, admin: rc}
}

// createTopic creates topic on the broker with attributes ("" = none).
func (e *env) createTopic(t *testing.T, topic string, queues int32, attributes string) {
	t.Helper()
	h := protocol.CreateTopicRequestHeader{Topic: topic, DefaultTopic: "TBW102", ReadQueueNums: queues, WriteQueueNums: queues,
		Perm: 6, TopicFilterType: "SINGLE_TAG", Attributes: attributes}
	resp, err := e.admin.InvokeSync(testutil.Context(t, 5*time.Second), e.broker.Addr(),
		protocol.NewRequest(protocol.UpdateAndCreateTopic, protocol.EncodeHeader(&h, false), nil))
	if err != nil || resp.Code != int32(protocol.Success) {
		t.Fatalf("create topic %s: %v %+v", topic, err, resp)
	}
}

// dial returns a MessagingService client over TLS (certificate checks off,
// as the official Go client does) or plaintext.
func (e *env) dial(t *testing.T, useTLS bool) pb.MessagingServiceClient {
	t.Helper()
	creds := insecure.NewCredentials()
	if useTLS {
		creds = credentials.NewTLS(&tls.Config{InsecureSkipVerify: true})
	}
	cc, err := grpc.NewClient(e.proxy.Addr().String(), grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return pb.NewMessagingServiceClient(cc)
}

// withClient adds the x-mq-client-id header.
func withClient(ctx context.Context, id string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", id, "x-mq-language", "GO")
}
