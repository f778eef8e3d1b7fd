package proxy

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/apogeemq/apogee/internal/protocol"
)

// Cluster mode: each gRPC client is registered with the brokers of the
// topics it subscribes or publishes to, under its own client id, so that
// the brokers' consumerConnection, producerConnection, consumerProgress
// and console views list every v5 client, not the endpoint once. The
// endpoint sends HEART_BEAT with the client's consumer or producer data
// (built as local mode builds it) on each of the client's heartbeats and
// settings, and UNREGISTER_CLIENT when the client expires or terminates;
// both carry the ext fields below, which make the broker key the
// registration by client id instead of by connection. The brokers also
// drop them when the endpoint's connection closes, and after their
// channelExpiredTimeout. Such channels have no connection, so the brokers'
// transaction checks still go to the endpoint's own producer registration
// (orphan.go). Unlike Java's cluster-mode proxy, which keeps its clients
// to itself, this lets mqadmin-style tools see them on the brokers.

// Ext fields of a proxied registration (Apogee); the broker's
// ProxiedClientExt and ProxiedClientAddrExt.
const (
	extProxiedClient     = "apogeeGrpcClient"
	extProxiedClientAddr = "apogeeGrpcClientAddr"
)

// clusterRegs remembers which brokers each client was registered at, for
// its unregistration.
type clusterRegs struct {
	mu sync.Mutex
	at map[string]map[string]struct{} // client id -> broker addresses; guarded by mu
}

func (r *clusterRegs) add(id string, addrs []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.at == nil {
		r.at = map[string]map[string]struct{}{}
	}
	m := r.at[id]
	if m == nil {
		m = map[string]struct{}{}
		r.at[id] = m
	}
	for _, a := range addrs {
		m[a] = struct{}{}
	}
}

func (r *clusterRegs) take(id string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.at[id]
	delete(r.at, id)
	return slices.Sorted(maps.Keys(m))
}

// registerCluster sends hb to the master brokers of its subscribed or
// published topics (a gRPC producer's group is its topic), in the
// background: the client's RPC does not wait.
func (svc *service) registerCluster(ctx context.Context, hb *protocol.HeartbeatData) {
	reg := *hb
	body, err := protocol.MarshalJSON(&reg)
	if err != nil {
		return
	}
	var topics []string
	for _, cd := range reg.ConsumerDataSet {
		for _, sd := range cd.SubscriptionDataSet {
			topics = append(topics, sd.Topic)
		}
	}
	for _, pd := range reg.ProducerDataSet {
		topics = append(topics, pd.GroupName)
	}
	if len(topics) == 0 {
		return
	}
	ext := map[string]string{extProxiedClient: "true"}
	if ap := peerAddr(ctx); ap.IsValid() {
		ext[extProxiedClientAddr] = ap.String()
	}
	lang := clientLanguage(ctx)
	svc.srv.group.Go("grpc-client-register", func(ctx context.Context) {
		addrs := map[string]struct{}{}
		for _, t := range topics {
			cctx, cancel := context.WithTimeout(ctx, brokerCallTimeout)
			r, err := svc.srv.backend.route(cctx, t)
			cancel()
			if err != nil {
				continue
			}
			for _, b := range r.brokers {
				addrs[b.addr] = struct{}{}
			}
		}
		list := slices.Sorted(maps.Keys(addrs))
		svc.regs.add(reg.ClientID, list)
		for _, addr := range list {
			req := protocol.NewRequest(protocol.HeartBeat, maps.Clone(ext), body)
			req.Language = lang
			cctx, cancel := context.WithTimeout(ctx, brokerCallTimeout)
			resp, err := svc.srv.rc.InvokeSync(cctx, addr, req)
			cancel()
			if err == nil && resp.Code != int32(protocol.Success) {
				err = protocol.Errorf(protocol.ResponseCode(resp.Code), "%s", resp.Remark)
			}
			if err != nil {
				svc.srv.logger.Debug("grpc client heartbeat to broker failed", "clientId", reg.ClientID, "addr", addr, "err", err)
			}
		}
	})
}

// unregisterCluster removes a gone client from the brokers it was
// registered at.
func (svc *service) unregisterCluster(id string) {
	addrs := svc.regs.take(id)
	if len(addrs) == 0 {
		return
	}
	ext := protocol.EncodeHeader(&protocol.UnregisterClientRequestHeader{ClientID: id}, false)
	ext[extProxiedClient] = "true"
	svc.srv.group.Go("grpc-client-unregister", func(ctx context.Context) {
		for _, addr := range addrs {
			cctx, cancel := context.WithTimeout(ctx, brokerCallTimeout)
			_, err := svc.srv.rc.InvokeSync(cctx, addr, protocol.NewRequest(protocol.UnregisterClient, maps.Clone(ext), nil))
			cancel()
			if err != nil {
				svc.srv.logger.Debug("grpc client unregister at broker failed", "clientId", id, "addr", addr, "err", err)
			}
		}
	})
}
