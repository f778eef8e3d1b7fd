package proxy

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/apogeemq/apogee/internal/protocol"
	pb "github.com/apogeemq/apogee/internal/rmqpb"
)

// LocalBroker is the broker a local-mode endpoint runs inside, reached
// in-process on the hot path instead of over a loopback remoting
// connection. *broker.Broker implements it; this package sees nothing else
// of the broker. Every other broker call still goes over remoting.
type LocalBroker interface {
	// SendLocal stores a SEND_MESSAGE_V2 as the broker's send path does for
	// a remoting connection and calls done exactly once with the response,
	// possibly on another goroutine; done must not block. done may never
	// run if the broker shuts down meanwhile, so callers bound their wait.
	SendLocal(h *protocol.SendMessageRequestHeader, body []byte, bornHost netip.AddrPort, done func(*protocol.Command))
	// HeartbeatLocal registers or refreshes a gRPC client in the broker's
	// producer and consumer groups, as HEART_BEAT does for a remoting
	// client, with addr as its address: admin views list it.
	HeartbeatLocal(hb *protocol.HeartbeatData, addr string, lang protocol.LanguageCode, version int32)
	// UnregisterLocal removes a gRPC client from every group.
	UnregisterLocal(clientID string)
}

// registerLocal registers client id, with its stored settings, in the
// local broker's groups (consumer: group and subscriptions; producer: one
// group per published topic, the group gRPC producers send as). It runs on
// every settings command and heartbeat, which keeps the registration
// fresh; clientGone removes it. In cluster mode the consumers are
// registered with the brokers of their topics instead (cluster_clients.go).
func (svc *service) registerLocal(ctx context.Context, id string) {
	hb := svc.heartbeatData(id)
	if hb == nil {
		return
	}
	lb := svc.srv.cfg.Local
	if lb == nil {
		svc.registerCluster(ctx, hb)
		return
	}
	addr := ""
	if ap := peerAddr(ctx); ap.IsValid() {
		addr = ap.String()
	}
	lb.HeartbeatLocal(hb, addr, clientLanguage(ctx), protocol.CurrentVersion)
}

// heartbeatData is client id's registration from its stored settings; nil
// before settings, or for a consumer without a group.
func (svc *service) heartbeatData(id string) *protocol.HeartbeatData {
	st := svc.srv.clients.settings(id)
	if st == nil {
		return nil
	}
	hb := &protocol.HeartbeatData{ClientID: id, ProducerDataSet: []protocol.ProducerData{}, ConsumerDataSet: []protocol.ConsumerData{}}
	switch st.GetClientType() {
	case pb.ClientType_PRODUCER:
		for _, t := range st.GetPublishing().GetTopics() {
			hb.ProducerDataSet = append(hb.ProducerDataSet, protocol.ProducerData{GroupName: t.GetName()})
		}
	case pb.ClientType_SIMPLE_CONSUMER, pb.ClientType_PUSH_CONSUMER, pb.ClientType_LITE_SIMPLE_CONSUMER, pb.ClientType_LITE_PUSH_CONSUMER:
		sub := st.GetSubscription()
		if sub.GetGroup().GetName() == "" {
			return nil
		}
		cd := protocol.ConsumerData{GroupName: sub.GetGroup().GetName(), ConsumeType: consumeType(st.GetClientType()),
			MessageModel: protocol.MessageModelClustering, ConsumeFromWhere: protocol.ConsumeFromLastOffset,
			SubscriptionDataSet: []protocol.SubscriptionData{}}
		version := time.Now().UnixMilli()
		for _, e := range sub.GetSubscriptions() {
			sd := protocol.SubscriptionData{Topic: e.GetTopic().GetName(), SubString: e.GetExpression().GetExpression(),
				ExpressionType: protocol.ExpressionTag, SubVersion: version}
			if e.GetExpression().GetType() == pb.FilterType_SQL {
				sd.ExpressionType = protocol.ExpressionSQL92
			}
			if sd.SubString == "" {
				sd.SubString = protocol.SubAll
			}
			cd.SubscriptionDataSet = append(cd.SubscriptionDataSet, sd)
		}
		hb.ConsumerDataSet = append(hb.ConsumerDataSet, cd)
	default:
		return nil
	}
	return hb
}

// consumeType is how a consumer of client type t is registered, as the
// reference registers them: simple consumers pull when they like
// (CONSUME_ACTIVELY), push consumers are fed (CONSUME_PASSIVELY); lite
// consumers as their plain counterparts.
func consumeType(t pb.ClientType) string {
	if t == pb.ClientType_PUSH_CONSUMER || t == pb.ClientType_LITE_PUSH_CONSUMER {
		return protocol.ConsumePassively
	}
	return protocol.ConsumeActively
}

// clientLanguage is the x-mq-language header as a language code (GO,
// JAVA, NODE_JS, ...); OTHER when absent or unknown. The client version
// is not mapped: like the reference, every gRPC client counts as the
// current version.
func clientLanguage(ctx context.Context) protocol.LanguageCode {
	if v := metadata.ValueFromIncomingContext(ctx, "x-mq-language"); len(v) > 0 {
		if l, ok := protocol.ParseLanguage(strings.ToUpper(strings.TrimSpace(v[0]))); ok {
			return l
		}
	}
	return protocol.LanguageOther
}

// sendLocal hands one send to the local broker and waits for its answer
// or ctx.
func sendLocal(ctx context.Context, lb LocalBroker, h *protocol.SendMessageRequestHeader, body []byte, bornHost netip.AddrPort) (*protocol.Command, error) {
	ch := make(chan *protocol.Command, 1)
	lb.SendLocal(h, body, bornHost, func(resp *protocol.Command) { ch <- resp })
	select {
	case resp := <-ch:
		return resp, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("proxy: local send to %s: %w", h.Topic, ctx.Err())
	}
}

// peerAddr is the gRPC client's address (the born host of what it sends);
// zero when unknown.
func peerAddr(ctx context.Context) netip.AddrPort {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return netip.AddrPort{}
	}
	if ta, ok := p.Addr.(*net.TCPAddr); ok {
		ap := ta.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	ap, _ := netip.ParseAddrPort(p.Addr.String())
	return ap
}
