package broker

import (
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestProxiedClientRegistrations: a cluster-mode endpoint registers each
// of its gRPC clients on its one connection (HEART_BEAT with
// ProxiedClientExt): the group lists every client id with its own
// address, UNREGISTER_CLIENT with the field removes one, and closing the
// endpoint's connection removes the rest. A plain HEART_BEAT on the same
// connection stays one channel per connection, as before.
func TestProxiedClientRegistrations(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	c := newClient(t)
	const group, topic = "GProxied", "TProxied"
	hb := func(id string) *protocol.Command {
		body, _ := protocol.MarshalJSON(&protocol.HeartbeatData{ClientID: id, ProducerDataSet: []protocol.ProducerData{},
			ConsumerDataSet: []protocol.ConsumerData{{GroupName: group, ConsumeType: protocol.ConsumeActively,
				MessageModel: protocol.MessageModelClustering, ConsumeFromWhere: protocol.ConsumeFromLastOffset,
				SubscriptionDataSet: []protocol.SubscriptionData{{Topic: topic, SubString: "*", ExpressionType: "TAG"}}}}})
		req := protocol.NewRequest(protocol.HeartBeat, map[string]string{ProxiedClientExt: "true",
			ProxiedClientAddrExt: "10.0.0." + id[len(id)-1:] + ":1234"}, body)
		req.Language = protocol.LanguageGo
		return req
	}
	ids := func() map[string]string {
		g, _ := b.Clients.ConsumerGroup(group)
		out := map[string]string{}
		for _, ch := range g.Channels {
			out[ch.ClientID] = ch.RemoteAddr()
		}
		return out
	}
	for _, id := range []string{"v5-1", "v5-2", "v5-3", "v5-1"} {
		mustCode(t, invoke(t, c, b.Addr(), hb(id)), protocol.Success)
	}
	if got := ids(); len(got) != 3 || got["v5-2"] != "10.0.0.2:1234" {
		t.Fatalf("proxied clients %v", got)
	}
	if l := b.Clients.ConsumerIDs(group); len(l) != 0 {
		t.Fatalf("gRPC clients in rebalancing: %v", l)
	}
	un := protocol.EncodeHeader(&protocol.UnregisterClientRequestHeader{ClientID: "v5-2"}, false)
	un[ProxiedClientExt] = "true"
	mustCode(t, invoke(t, c, b.Addr(), protocol.NewRequest(protocol.UnregisterClient, un, nil)), protocol.Success)
	if got := ids(); len(got) != 2 || got["v5-2"] != "" {
		t.Fatalf("after unregister %v", got)
	}
	c.Close()
	testutil.Eventually(t, 30*time.Second, func() bool { return len(ids()) == 0 }, "proxied clients outlived the endpoint's connection: %v", ids())
}
