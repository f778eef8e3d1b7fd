package broker

import (
	"hash/fnv"
	"net"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// Clients of the in-process gRPC endpoint (local mode) in the client
// manager, so that consumerConnection, producerConnection, consumerProgress
// and the console list them as they list remoting clients. They have no
// remoting connection (ClientChannel.Conn is nil): nothing is pushed to
// them over remoting (no NOTIFY_CONSUMER_IDS_CHANGED, relays or status
// requests), and transaction checks reach gRPC producers through the
// endpoint's own remoting registration.

// localKeyBase is the first key of gRPC client channels: remoting
// connection ids count up from 1 and never reach it.
const localKeyBase = 1 << 62

// localKey is the channel key of a gRPC client: a hash of its client id
// above localKeyBase, so that every registration of one client lands on
// one channel without any table to keep.
func localKey(clientID string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(clientID))
	return localKeyBase | h.Sum64()&(localKeyBase-1)
}

// HeartbeatLocal registers, or refreshes, a client of the in-process gRPC
// endpoint: hb's consumer and producer groups as HEART_BEAT registers a
// remoting client's (%RETRY%<group> included: admin tools locate a
// group's brokers by its route), at addr, the client's "ip:port". The endpoint calls it on
// the client's heartbeats and settings, well within
// channelExpiredTimeout, after which an unrefreshed client is dropped.
func (b *Broker) HeartbeatLocal(hb *protocol.HeartbeatData, addr string, lang protocol.LanguageCode, version int32) {
	b.heartbeat(hb, ClientChannel{
		Addr:       addr,
		key:        localKey(hb.ClientID),
		ClientID:   hb.ClientID,
		Language:   lang,
		Version:    version,
		LastUpdate: b.now(),
	})
}

// UnregisterLocal removes a gRPC client from every group (it expired or
// terminated at the endpoint).
func (b *Broker) UnregisterLocal(clientID string) {
	key := localKey(clientID)
	b.Clients.removeConns(func(c *ClientChannel) bool { return c.Conn == nil && c.key == key })
}

// Clients of a cluster-mode endpoint (`apogee proxy -n`) are registered the
// same way, one channel per gRPC client: the endpoint sends HEART_BEAT and
// UNREGISTER_CLIENT for each of them on its own remoting connection with
// the ext field ProxiedClientExt=true and the client's address in
// ProxiedClientAddrExt (Apogee fields). Without them the broker would see
// one client, the endpoint, in every group. The channels also leave when
// the endpoint's connection closes.
const (
	ProxiedClientExt     = "apogeeGrpcClient"
	ProxiedClientAddrExt = "apogeeGrpcClientAddr"
)

func proxiedClient(req *protocol.Command) bool { return req.Ext(ProxiedClientExt) == "true" }

// heartbeatProxied registers hb's client, a gRPC client of the endpoint at
// conn.
func (b *Broker) heartbeatProxied(hb *protocol.HeartbeatData, conn *remoting.Conn, req *protocol.Command) {
	addr := req.Ext(ProxiedClientAddrExt)
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = conn.RemoteAddr()
	}
	b.heartbeat(hb, ClientChannel{
		Addr:       addr,
		key:        localKey(hb.ClientID),
		via:        conn.ID(),
		ClientID:   hb.ClientID,
		Language:   req.Language,
		Version:    req.Version,
		LastUpdate: b.now(),
	})
}
