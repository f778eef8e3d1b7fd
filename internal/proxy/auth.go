package proxy

import (
	"context"
	"errors"
	"net"
	"net/netip"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/apogeemq/apogee/internal/auth"
	pb "github.com/apogeemq/apogee/internal/rmqpb"
)

// ACL 2.0 on the gRPC endpoint (Config.Guard): every RPC is authenticated
// by its authorization and x-mq-date-time headers (MQv2-HMAC-SHA1) and
// authorized with the checks RocketMQ's proxy derives from the request.
// A refusal is the business status UNAUTHORIZED (40100) with RocketMQ's
// message in the RPC's own response, as the reference proxy answers; a
// Telemetry stream gets one TelemetryCommand with that status and ends.
// The endpoint's own calls to the broker are signed with the broker's inner
// credentials (Config.Sign), so they pass the broker's checks.

// grpcChecks is what a request asks (RocketMQ's
// DefaultAuthorizationContextBuilder for gRPC).
func grpcChecks(req any) []auth.Check {
	topic := func(r *pb.Resource) auth.Check {
		return auth.Check{Resource: auth.Topic(r.GetName()), Actions: pubActions}
	}
	sub := func(group, topic *pb.Resource) []auth.Check {
		out := []auth.Check{{Resource: auth.Group(group.GetName()), Actions: subActions}}
		if topic != nil {
			out = append(out, auth.Check{Resource: auth.Topic(topic.GetName()), Actions: subActions})
		}
		return out
	}
	switch r := req.(type) {
	case *pb.SendMessageRequest:
		if len(r.GetMessages()) > 0 {
			return []auth.Check{topic(r.GetMessages()[0].GetTopic())}
		}
	case *pb.EndTransactionRequest:
		return []auth.Check{topic(r.GetTopic())}
	case *pb.HeartbeatRequest:
		switch r.GetClientType() {
		case pb.ClientType_PUSH_CONSUMER, pb.ClientType_SIMPLE_CONSUMER, pb.ClientType_PULL_CONSUMER,
			pb.ClientType_LITE_PUSH_CONSUMER, pb.ClientType_LITE_SIMPLE_CONSUMER:
			return sub(r.GetGroup(), nil)
		}
	case *pb.SyncLiteSubscriptionRequest:
		return sub(r.GetGroup(), r.GetTopic())
	case *pb.ReceiveMessageRequest:
		return sub(r.GetGroup(), r.GetMessageQueue().GetTopic())
	case *pb.AckMessageRequest:
		return sub(r.GetGroup(), r.GetTopic())
	case *pb.ForwardMessageToDeadLetterQueueRequest:
		return sub(r.GetGroup(), r.GetTopic())
	case *pb.ChangeInvisibleDurationRequest:
		return sub(r.GetGroup(), nil)
	case *pb.NotifyClientTerminationRequest:
		if r.GetGroup().GetName() != "" {
			return sub(r.GetGroup(), nil)
		}
	case *pb.QueryRouteRequest:
		return []auth.Check{{Resource: auth.Topic(r.GetTopic().GetName()), Actions: routeActions}}
	case *pb.QueryAssignmentRequest:
		return sub(r.GetGroup(), r.GetTopic())
	case *pb.TelemetryCommand:
		s := r.GetSettings()
		if s == nil {
			return nil
		}
		var out []auth.Check
		for _, t := range s.GetPublishing().GetTopics() {
			out = append(out, topic(t))
		}
		if sb := s.GetSubscription(); sb != nil {
			out = append(out, sub(sb.GetGroup(), nil)...)
			for _, e := range sb.GetSubscriptions() {
				out = append(out, auth.Check{Resource: auth.Topic(e.GetTopic().GetName()), Actions: subActions})
			}
		}
		return out
	}
	return nil
}

var (
	pubActions   = []auth.Action{auth.ActionPub}
	subActions   = []auth.Action{auth.ActionSub}
	routeActions = []auth.Action{auth.ActionPub, auth.ActionSub}
)

// checkRPC runs the guard for one request.
func (s *Server) checkRPC(ctx context.Context, req any) error {
	md, _ := metadata.FromIncomingContext(ctx)
	first := func(k string) string {
		if v := md.Get(k); len(v) > 0 {
			return v[0]
		}
		return ""
	}
	_, err := s.cfg.Guard.CheckGRPC(first(auth.HeaderAuthorization), first(auth.HeaderDateTime), grpcChecks(req), peerIP(ctx))
	return err
}

func peerIP(ctx context.Context) netip.Addr {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return netip.Addr{}
	}
	if ap, err := netip.ParseAddrPort(p.Addr.String()); err == nil {
		return ap.Addr()
	}
	host, _, _ := net.SplitHostPort(p.Addr.String())
	a, _ := netip.ParseAddr(host)
	return a
}

func refusalMessage(err error) string {
	var ae *auth.Error
	if errors.As(err, &ae) {
		return ae.Msg
	}
	return err.Error()
}

// unaryAuth refuses unary RPCs the guard refuses.
func (s *Server) unaryAuth(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := s.checkRPC(ctx, req); err != nil {
		st := statusf(pb.Code_UNAUTHORIZED, "%s", refusalMessage(err))
		if resp := unauthorizedResponse(req, st); resp != nil {
			return resp, nil
		}
		return nil, grpcstatus.Error(codes.Unauthenticated, st.GetMessage())
	}
	return handler(ctx, req)
}

// unauthorizedResponse is the RPC's own response carrying st.
func unauthorizedResponse(req any, st *pb.Status) any {
	switch req.(type) {
	case *pb.SendMessageRequest:
		return &pb.SendMessageResponse{Status: st}
	case *pb.QueryRouteRequest:
		return &pb.QueryRouteResponse{Status: st}
	case *pb.QueryAssignmentRequest:
		return &pb.QueryAssignmentResponse{Status: st}
	case *pb.HeartbeatRequest:
		return &pb.HeartbeatResponse{Status: st}
	case *pb.EndTransactionRequest:
		return &pb.EndTransactionResponse{Status: st}
	case *pb.NotifyClientTerminationRequest:
		return &pb.NotifyClientTerminationResponse{Status: st}
	case *pb.AckMessageRequest:
		return &pb.AckMessageResponse{Status: st}
	case *pb.ChangeInvisibleDurationRequest:
		return &pb.ChangeInvisibleDurationResponse{Status: st}
	case *pb.ForwardMessageToDeadLetterQueueRequest:
		return &pb.ForwardMessageToDeadLetterQueueResponse{Status: st}
	}
	return nil
}

// streamAuth authenticates a stream when it opens and authorizes each
// message the client sends on it (Telemetry settings, the ReceiveMessage
// request).
func (s *Server) streamAuth(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := s.checkRPC(ss.Context(), nil); err != nil {
		return s.refuseStream(ss, info, err)
	}
	return handler(srv, &authStream{ServerStream: ss, s: s, info: info})
}

// refuseStream answers a refused stream with its status and ends it.
func (s *Server) refuseStream(ss grpc.ServerStream, info *grpc.StreamServerInfo, err error) error {
	st := statusf(pb.Code_UNAUTHORIZED, "%s", refusalMessage(err))
	switch info.FullMethod {
	case pb.MessagingService_Telemetry_FullMethodName:
		_ = ss.SendMsg(&pb.TelemetryCommand{Status: st})
	case pb.MessagingService_ReceiveMessage_FullMethodName:
		_ = ss.SendMsg(&pb.ReceiveMessageResponse{Content: &pb.ReceiveMessageResponse_Status{Status: st}})
	}
	return grpcstatus.Error(codes.Unauthenticated, st.GetMessage())
}

// authStream checks every message received on a stream.
type authStream struct {
	grpc.ServerStream
	s    *Server
	info *grpc.StreamServerInfo
}

func (a *authStream) RecvMsg(m any) error {
	if err := a.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if len(grpcChecks(m)) == 0 {
		return nil
	}
	if err := a.s.checkRPC(a.Context(), m); err != nil {
		return a.s.refuseStream(a.ServerStream, a.info, err)
	}
	return nil
}
