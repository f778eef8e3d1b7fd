package proxy

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/apogeemq/apogee/internal/protocol"
	pb "github.com/apogeemq/apogee/internal/rmqpb"
)

// Server-owned settings (the reference proxy's defaults).
const (
	maxBodySize          = 4 << 20 // publishing.max_body_size, maxMessageSize
	receiveBatchSize     = 32
	longPollingTimeout   = 20 * time.Second
	defaultRetryMaxTimes = 16 // a group's retryMaxTimes; max_attempts = +1
	brokerCallTimeout    = 3 * time.Second
)

// consumerBackoff is the default customized retry policy of consumer groups.
var consumerBackoff = []time.Duration{
	time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 3 * time.Minute, 4 * time.Minute, 5 * time.Minute, 6 * time.Minute,
	7 * time.Minute, 8 * time.Minute, 9 * time.Minute, 10 * time.Minute, 20 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour,
}

// service implements pb.MessagingServiceServer. RPCs it does not implement
// are answered UNIMPLEMENTED by the embedded type.
type service struct {
	pb.UnimplementedMessagingServiceServer
	srv       *Server
	advertise string        // host:port routes report for this endpoint; set by Start
	lite      *liteSessions // lite.go: lite consumers' subscriptions
	txns      *transactions
	sender    *sender
	groups    *groupCache
	renewer   *renewer
	orphans   *orphans
	regs      clusterRegs // cluster_clients.go: brokers each client is registered at
}

func newService(s *Server) *service {
	svc := &service{srv: s, txns: newTransactions(), groups: newGroupCache()}
	svc.sender = newSender(svc)
	svc.renewer = newRenewer(svc)
	svc.orphans = newOrphans(svc)
	svc.lite = newLiteSessions()
	return svc
}

func (svc *service) close() {}

// clientGone runs when a client expires or terminates: the local broker
// forgets it, and so do its lite subscriptions (lite.go).
func (svc *service) clientGone(id string) {
	if group, parent, ok := svc.lite.drop(id); ok {
		svc.liteGone(id, group, parent) // lite.go: the brokers forget its subscriptions
	}
	if lb := svc.srv.cfg.Local; lb != nil {
		lb.UnregisterLocal(id)
	} else {
		svc.unregisterCluster(id) // cluster_clients.go
	}
}

// clientID returns x-mq-client-id from the request metadata.
func clientID(ctx context.Context) string {
	// ValueFromIncomingContext, not FromIncomingContext: no copy of
	// the whole header map on every RPC.
	if v := metadata.ValueFromIncomingContext(ctx, "x-mq-client-id"); len(v) > 0 {
		return strings.TrimSpace(v[0])
	}
	return ""
}

var errNoClientID = errStatus(pb.Code_CLIENT_ID_REQUIRED, "x-mq-client-id is required")

// begin checks the client id of a request and records the client's activity.
func (svc *service) begin(ctx context.Context) (string, error) {
	id := clientID(ctx)
	if id == "" {
		return "", errNoClientID
	}
	svc.srv.clients.touch(id)
	return id, nil
}

// endpoints returns the Endpoints routes report for this server.
func (svc *service) endpoints() *pb.Endpoints {
	host, port, _ := net.SplitHostPort(svc.advertise)
	p, _ := strconv.Atoi(port)
	scheme := pb.AddressScheme_DOMAIN_NAME
	if ip := net.ParseIP(host); ip != nil {
		scheme = pb.AddressScheme_IPv4
		if ip.To4() == nil {
			scheme = pb.AddressScheme_IPv6
		}
	}
	return &pb.Endpoints{Scheme: scheme, Addresses: []*pb.Address{{Host: host, Port: int32(p)}}}
}

// QueryRoute reports every master broker of the topic with this endpoint's
// address, queues expanded from the read/write counts as RocketMQ does, and
// accept_message_types from the topic's message.type.
func (svc *service) QueryRoute(ctx context.Context, req *pb.QueryRouteRequest) (*pb.QueryRouteResponse, error) {
	if _, err := svc.begin(ctx); err != nil {
		return &pb.QueryRouteResponse{Status: toStatus(err)}, nil
	}
	topic, err := checkTopic(req.GetTopic())
	if err != nil {
		return &pb.QueryRouteResponse{Status: toStatus(err)}, nil
	}
	cctx, cancel := withTimeout(ctx, brokerCallTimeout)
	defer cancel()
	r, err := svc.srv.backend.route(cctx, topic)
	if err != nil {
		return &pb.QueryRouteResponse{Status: toStatus(err)}, nil
	}
	accept := acceptTypes(r.messageType)
	ep := svc.endpoints()
	var mqs []*pb.MessageQueue
	for _, b := range r.brokers {
		broker := &pb.Broker{Name: b.name, Id: 0, Endpoints: ep}
		for _, q := range expandQueues(b.read, b.write, b.perm) {
			mqs = append(mqs, &pb.MessageQueue{
				Topic: req.GetTopic(), Id: q.id, Permission: q.perm, Broker: broker, AcceptMessageTypes: accept,
			})
		}
	}
	if len(mqs) == 0 {
		return &pb.QueryRouteResponse{Status: statusf(pb.Code_TOPIC_NOT_FOUND, "topic %s has no queues", topic)}, nil
	}
	return &pb.QueryRouteResponse{Status: okStatus(), MessageQueues: mqs}, nil
}

type queueSpec struct {
	id   int32
	perm pb.Permission
}

// expandQueues turns a broker's read/write queue counts and permission into
// route entries: min(read, write) READ_WRITE queues, the extra read-only and
// write-only ones, ids from 0 in the order READ, WRITE, READ_WRITE; a topic
// with neither permission gets max(read, write, 1) NONE entries.
func expandQueues(read, write, perm int32) []queueSpec {
	r, w := protocol.PermReadable(perm), protocol.PermWritable(perm)
	var rw, ro, wo, none int32
	switch {
	case r && w:
		rw = min(read, write)
		ro, wo = read-rw, write-rw
	case r:
		ro = read
	case w:
		wo = write
	default:
		none = max(read, write, 1)
	}
	out := make([]queueSpec, 0, ro+wo+rw+none)
	id := int32(0)
	add := func(n int32, p pb.Permission) {
		for range n {
			out = append(out, queueSpec{id, p})
			id++
		}
	}
	add(ro, pb.Permission_READ)
	add(wo, pb.Permission_WRITE)
	add(rw, pb.Permission_READ_WRITE)
	add(none, pb.Permission_NONE)
	return out
}

// acceptTypes maps a topic's message.type attribute to the message types
// clients may send to it; a topic without the attribute is NORMAL.
func acceptTypes(t string) []pb.MessageType {
	switch strings.ToUpper(t) {
	case "", "NORMAL":
		return []pb.MessageType{pb.MessageType_NORMAL}
	case "FIFO":
		return []pb.MessageType{pb.MessageType_FIFO}
	case "DELAY":
		return []pb.MessageType{pb.MessageType_DELAY}
	case "TRANSACTION":
		return []pb.MessageType{pb.MessageType_TRANSACTION}
	case "PRIORITY":
		return []pb.MessageType{pb.MessageType_PRIORITY}
	case "LITE":
		return []pb.MessageType{pb.MessageType_LITE}
	case "MIXED":
		return []pb.MessageType{pb.MessageType_NORMAL, pb.MessageType_FIFO, pb.MessageType_DELAY, pb.MessageType_TRANSACTION}
	}
	return []pb.MessageType{pb.MessageType_MESSAGE_TYPE_UNSPECIFIED}
}

// QueryAssignment gives push consumers one assignment per readable broker
// with queue id -1: POP on the broker decides which consumer gets which
// message, so there is no balancing between consumers.
func (svc *service) QueryAssignment(ctx context.Context, req *pb.QueryAssignmentRequest) (*pb.QueryAssignmentResponse, error) {
	if _, err := svc.begin(ctx); err != nil {
		return &pb.QueryAssignmentResponse{Status: toStatus(err)}, nil
	}
	topic, err := checkTopic(req.GetTopic())
	if err != nil {
		return &pb.QueryAssignmentResponse{Status: toStatus(err)}, nil
	}
	if _, err := checkGroup(req.GetGroup()); err != nil {
		return &pb.QueryAssignmentResponse{Status: toStatus(err)}, nil
	}
	cctx, cancel := withTimeout(ctx, brokerCallTimeout)
	defer cancel()
	r, err := svc.srv.backend.route(cctx, topic)
	if err != nil {
		return &pb.QueryAssignmentResponse{Status: toStatus(err)}, nil
	}
	ep := svc.endpoints()
	var as []*pb.Assignment
	for _, b := range r.brokers {
		if !protocol.PermReadable(b.perm) || b.read <= 0 {
			continue
		}
		as = append(as, &pb.Assignment{MessageQueue: &pb.MessageQueue{
			Topic: req.GetTopic(), Id: -1, Permission: pb.Permission_READ_WRITE,
			Broker: &pb.Broker{Name: b.name, Id: 0, Endpoints: ep},
		}})
	}
	if len(as) == 0 {
		return &pb.QueryAssignmentResponse{Status: statusf(pb.Code_FORBIDDEN, "no readable queue")}, nil
	}
	return &pb.QueryAssignmentResponse{Status: okStatus(), Assignments: as}, nil
}

// Heartbeat keeps a client alive. Without settings from Telemetry it answers
// UNRECOGNIZED_CLIENT_TYPE, which makes Go clients resend their settings.
func (svc *service) Heartbeat(ctx context.Context, req *pb.HeartbeatRequest) (*pb.HeartbeatResponse, error) {
	id, err := svc.begin(ctx)
	if err != nil {
		return &pb.HeartbeatResponse{Status: toStatus(err)}, nil
	}
	st := svc.srv.clients.settings(id)
	switch st.GetClientType() {
	case pb.ClientType_PRODUCER:
	case pb.ClientType_PUSH_CONSUMER, pb.ClientType_SIMPLE_CONSUMER, pb.ClientType_LITE_PUSH_CONSUMER, pb.ClientType_LITE_SIMPLE_CONSUMER:
		if _, err := checkGroup(req.GetGroup()); err != nil {
			return &pb.HeartbeatResponse{Status: toStatus(err)}, nil
		}
	default:
		return &pb.HeartbeatResponse{Status: statusf(pb.Code_UNRECOGNIZED_CLIENT_TYPE, "no settings known for client %s", id)}, nil
	}
	svc.registerLocal(ctx, id)
	return &pb.HeartbeatResponse{Status: okStatus()}, nil
}

// NotifyClientTermination forgets the client. Only Node sends it; the Go
// client never does, so expiry does not depend on it.
func (svc *service) NotifyClientTermination(ctx context.Context, req *pb.NotifyClientTerminationRequest) (*pb.NotifyClientTerminationResponse, error) {
	id := clientID(ctx)
	if id == "" {
		return &pb.NotifyClientTerminationResponse{Status: toStatus(errNoClientID)}, nil
	}
	if _, ok := svc.srv.clients.remove(id); !ok {
		return &pb.NotifyClientTerminationResponse{Status: statusf(pb.Code_UNRECOGNIZED_CLIENT_TYPE, "no settings known for client %s", id)}, nil
	}
	svc.clientGone(id)
	return &pb.NotifyClientTerminationResponse{Status: okStatus()}, nil
}

// telemetryStream serializes writes to one Telemetry stream: the handler's
// settings replies and server-initiated commands from other goroutines.
type telemetryStream struct {
	clientID string
	mu       sync.Mutex
	stream   pb.MessagingService_TelemetryServer
}

func (ts *telemetryStream) send(cmd *pb.TelemetryCommand) error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.stream.Send(cmd)
}

// Telemetry answers every settings command with the merged settings and
// keeps the stream for server commands (orphaned-transaction recovery). The
// client is registered while the stream is open.
func (svc *service) Telemetry(stream pb.MessagingService_TelemetryServer) error {
	ctx := stream.Context()
	id := clientID(ctx)
	if id == "" {
		_ = stream.Send(&pb.TelemetryCommand{Status: toStatus(errNoClientID)})
		return grpcstatus.Error(codes.InvalidArgument, "x-mq-client-id is required")
	}
	ts := &telemetryStream{clientID: id, stream: stream}
	svc.srv.clients.attach(id, ts)
	defer svc.srv.clients.detach(id, ts)
	for {
		cmd, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		svc.srv.clients.touch(id)
		switch c := cmd.GetCommand().(type) {
		case *pb.TelemetryCommand_Settings:
			merged, err := svc.applySettings(ctx, id, c.Settings)
			if err != nil {
				st := toStatus(err)
				_ = ts.send(&pb.TelemetryCommand{Status: st})
				code := codes.Internal
				if st.Code >= 40000 && st.Code < 50000 {
					code = codes.InvalidArgument
				}
				return grpcstatus.Error(code, st.Message)
			}
			if err := ts.send(&pb.TelemetryCommand{Status: okStatus(), Command: &pb.TelemetryCommand_Settings{Settings: merged}}); err != nil {
				return err
			}
			svc.registerLocal(ctx, id)
		default:
			// Thread stack traces and verify results answer admin
			// requests this server does not make; other commands are
			// server-to-client only.
			svc.srv.logger.Debug("grpc telemetry command ignored", "clientId", id, "command", cmd.String())
		}
	}
}

// applySettings validates a client's settings, stores them and returns the
// merged settings the server answers with: the client's own values plus
// the server-owned backoff policy, body limit, batch size, long-polling time
// and FIFO flag, with metrics switched off.
func (svc *service) applySettings(ctx context.Context, id string, in *pb.Settings) (*pb.Settings, error) {
	out := proto.Clone(in).(*pb.Settings)
	out.Metric = &pb.Metric{On: false}
	switch ps := in.GetPubSub().(type) {
	case *pb.Settings_Publishing:
		if ps.Publishing == nil {
			return nil, errStatus(pb.Code_BAD_REQUEST, "settings carry an empty publishing")
		}
		for _, t := range ps.Publishing.GetTopics() {
			if _, err := checkTopic(t); err != nil {
				return nil, err
			}
		}
		attempts := in.GetBackoffPolicy().GetMaxAttempts()
		if attempts <= 0 {
			attempts = 3
		}
		out.BackoffPolicy = &pb.RetryPolicy{MaxAttempts: attempts, Strategy: &pb.RetryPolicy_ExponentialBackoff{
			ExponentialBackoff: &pb.ExponentialBackoff{Initial: durationpb.New(10 * time.Millisecond), Max: durationpb.New(time.Second), Multiplier: 2},
		}}
		out.GetPublishing().MaxBodySize = maxBodySize
		out.GetPublishing().ValidateMessageType = true
	case *pb.Settings_Subscription:
		sub := out.GetSubscription()
		if sub == nil {
			return nil, errStatus(pb.Code_BAD_REQUEST, "settings carry an empty subscription")
		}
		group, err := checkGroup(sub.GetGroup())
		if err != nil {
			return nil, err
		}
		for _, e := range sub.GetSubscriptions() {
			if _, err := checkTopic(e.GetTopic()); err != nil {
				return nil, err
			}
			if err := checkFilter(e.GetExpression()); err != nil {
				return nil, err
			}
		}
		cctx, cancel := withTimeout(ctx, brokerCallTimeout)
		gc := svc.groupConfig(cctx, group, sub.GetSubscriptions())
		cancel()
		fifo := gc.ConsumeMessageOrderly
		sub.Fifo = &fifo
		batch := int32(receiveBatchSize)
		sub.ReceiveBatchSize = &batch
		sub.LongPollingTimeout = durationpb.New(longPollingTimeout)
		liteSettings(out, sub, gc.Attributes) // lite.go: FIFO, lite quotas
		next := make([]*durationpb.Duration, len(consumerBackoff))
		for i, d := range consumerBackoff {
			next[i] = durationpb.New(d)
		}
		out.BackoffPolicy = &pb.RetryPolicy{MaxAttempts: gc.RetryMaxTimes + 1, Strategy: &pb.RetryPolicy_CustomizedBackoff{
			CustomizedBackoff: &pb.CustomizedBackoff{Next: next},
		}}
	default:
		return nil, errStatus(pb.Code_BAD_REQUEST, "settings carry neither publishing nor subscription")
	}
	svc.srv.clients.setSettings(id, out)
	if out.GetClientType() == pb.ClientType_PRODUCER {
		// Register the producer groups with the brokers now, so that a
		// transaction check can reach this producer from its start.
		svc.srv.group.Go("producer-heartbeat", svc.orphans.heartbeat)
	}
	return proto.Clone(out).(*pb.Settings), nil
}

// checkFilter validates a subscription filter: ILLEGAL_FILTER_EXPRESSION.
func checkFilter(f *pb.FilterExpression) error {
	if f == nil {
		return nil
	}
	if strings.TrimSpace(f.GetExpression()) == "" {
		return errStatus(pb.Code_ILLEGAL_FILTER_EXPRESSION, "filter expression cannot be blank")
	}
	return nil
}

// groupInfo is what the proxy needs of a subscription group.
type groupInfo struct {
	ConsumeMessageOrderly bool
	RetryMaxTimes         int32
	Attributes            map[string]string // the group's attributes (lite.sub.client.quota, ...)
	fetched               time.Time
}

// groupCache caches subscription group configs for routeTTL.
type groupCache struct {
	mu     sync.Mutex
	groups map[string]groupInfo // guarded by mu
}

func newGroupCache() *groupCache { return &groupCache{groups: map[string]groupInfo{}} }

// groupConfig returns the group's orderly flag and retry count from the
// broker (GET_SUBSCRIPTIONGROUP_CONFIG), RocketMQ's defaults when it cannot
// be read. topics locate a broker in cluster mode.
func (svc *service) groupConfig(ctx context.Context, group string, subs []*pb.SubscriptionEntry) groupInfo {
	gc := svc.groups
	gc.mu.Lock()
	g, ok := gc.groups[group]
	gc.mu.Unlock()
	if ok && time.Since(g.fetched) < routeTTL {
		return g
	}
	g = groupInfo{RetryMaxTimes: defaultRetryMaxTimes, fetched: time.Now()}
	addr := svc.srv.backend.localAddr
	if addr == "" {
		for _, s := range subs {
			if r, err := svc.srv.backend.route(ctx, s.GetTopic().GetName()); err == nil {
				addr = r.brokers[0].addr
				break
			}
		}
	}
	if addr != "" {
		resp, err := svc.srv.rc.InvokeSync(ctx, addr, protocol.NewRequest(protocol.GetSubscriptionGroupConfig, map[string]string{"group": group}, nil))
		if err == nil && resp.Code == int32(protocol.Success) {
			var c protocol.SubscriptionGroupConfig
			if protocol.UnmarshalFastJSON(resp.Body, &c) == nil {
				g.ConsumeMessageOrderly = c.ConsumeMessageOrderly
				g.Attributes = c.Attributes
				if c.RetryMaxTimes >= 0 {
					g.RetryMaxTimes = c.RetryMaxTimes
				}
			}
		}
	}
	gc.mu.Lock()
	gc.groups[group] = g
	gc.mu.Unlock()
	return g
}
