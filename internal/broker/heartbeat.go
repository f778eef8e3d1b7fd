package broker

import (
	"context"
	"time"

	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// processHeartbeat serves HEART_BEAT (34). The Go client sends it every 30 s
// with an empty header and a HeartbeatData body (codeSet as strings,
// subVersion in ns); Java may send heartbeat v2 (withoutSub).
//
// Per consumer group: find or auto-create the subscription group (a group
// that cannot be found is silently skipped, docs/protocol.md §9.5 #38), create
// %RETRY%<group>, record the channel and subscriptions. Per producer group:
// record the channel.
func (b *Broker) processHeartbeat(_ context.Context, conn *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	hb, err := protocol.DecodeHeartbeat(req.Body)
	if err != nil {
		return nil, protocol.Errorf(protocol.SystemError, "%v", err)
	}
	if proxiedClient(req) {
		b.heartbeatProxied(hb, conn, req) // client_local.go
		return protocol.NewResponse(req, protocol.Success, ""), nil
	}
	b.heartbeat(hb, ClientChannel{
		Conn:       conn,
		ClientID:   hb.ClientID,
		Language:   req.Language,
		Version:    req.Version,
		LastUpdate: b.now(),
	})
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.SetExt("IS_SUPPORT_HEART_BEAT_V2", "true")
	resp.SetExt("IS_SUB_CHANGE", "true")
	return resp, nil
}

// heartbeat registers hb's consumer and producer groups for ch. Consumer
// groups are found or auto-created (a group that cannot be found is
// skipped, docs/protocol.md §9.5 #38) and get %RETRY%<group>, which
// remoting consumers send back to and admin tools find a group's brokers
// by (its route).
func (b *Broker) heartbeat(hb *protocol.HeartbeatData, ch ClientChannel) {
	for i := range hb.ConsumerDataSet {
		data := &hb.ConsumerDataSet[i]
		gc, ok, err := b.Groups.FindOrCreate(data.GroupName, b.dyn.autoCreateGroup.Load())
		if err != nil {
			b.logger.Error("persist auto-created group", "group", data.GroupName, "err", err)
		}
		if !ok {
			b.logger.Warn("heartbeat for unknown subscription group ignored", "group", data.GroupName, "addr", ch.RemoteAddr())
			continue
		}
		if gc.RetryQueueNums > 0 {
			if _, err := b.Topics.CreateIfAbsent(names.RetryTopic(data.GroupName), gc.RetryQueueNums,
				protocol.PermRead|protocol.PermWrite, 0); err != nil {
				b.logger.Error("persist retry topic", "group", data.GroupName, "err", err)
			}
		}
		if b.Clients.RegisterConsumer(data, ch, hb.WithoutSub) {
			b.logger.Info("consumer registered", "group", data.GroupName, "clientId", hb.ClientID, "addr", ch.RemoteAddr())
		}
	}
	for _, p := range hb.ProducerDataSet {
		b.Clients.RegisterProducer(p.GroupName, ch)
	}
}

// processUnregisterClient serves UNREGISTER_CLIENT (35, Java clients on
// shutdown; header clientID, producerGroup, consumerGroup).
func (b *Broker) processUnregisterClient(_ context.Context, conn *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.UnregisterClientRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	if proxiedClient(req) {
		b.UnregisterLocal(h.ClientID) // client_local.go: a gRPC client behind an endpoint
		return protocol.NewResponse(req, protocol.Success, ""), nil
	}
	if h.ProducerGroup != "" {
		b.Clients.UnregisterProducer(h.ProducerGroup, conn.ID())
	}
	if h.ConsumerGroup != "" {
		b.Clients.UnregisterConsumer(h.ConsumerGroup, conn.ID())
	}
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

// processGetConsumerList serves GET_CONSUMER_LIST_BY_GROUP (38): the client
// ids used by rebalancing. The Go client reads the body whatever the code.
func (b *Broker) processGetConsumerList(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.ConsumerGroupHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	ids := b.Clients.ConsumerIDs(h.ConsumerGroup)
	if len(ids) == 0 {
		return nil, protocol.Errorf(protocol.SystemError, "no consumer for this group, %s", h.ConsumerGroup)
	}
	body, err := protocol.MarshalJSON(&protocol.ConsumerListBody{ConsumerIDList: ids})
	if err != nil {
		return nil, err
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = body
	return resp, nil
}

// processCheckClientConfig serves CHECK_CLIENT_CONFIG (46, Java clients with
// non-TAG subscriptions).
func (b *Broker) processCheckClientConfig(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var body protocol.CheckClientRequestBody
	if err := protocol.UnmarshalFastJSON(req.Body, &body); err != nil {
		return nil, protocol.Errorf(protocol.SystemError, "%v", err)
	}
	if body.SubscriptionData == nil || body.SubscriptionData.IsTag() {
		return protocol.NewResponse(req, protocol.Success, ""), nil
	}
	if _, perr := b.newSQLFilter(body.SubscriptionData); perr != nil { // filter_sql.go
		return nil, perr
	}
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

// notifyConsumerIDsChanged pushes NOTIFY_CONSUMER_IDS_CHANGED (40, oneway)
// to a group's remaining consumers after its membership changed, unless the
// group disables it. Runs on the caller's goroutine; writes never block.
func (b *Broker) notifyConsumerIDsChanged(group string, conns []*remoting.Conn) {
	if !b.cfg.NotifyConsumerIdsChangedEnable || len(conns) == 0 {
		return
	}
	if gc, ok := b.Groups.Get(group); ok && !gc.NotifyConsumerIdsChangedEnable {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for _, c := range conns {
		req := protocol.NewRequest(protocol.NotifyConsumerIDsChanged, map[string]string{"consumerGroup": group}, nil)
		req.Flag |= protocol.FlagOneway
		if err := b.invokeOneway(ctx, c, req); err != nil {
			b.logger.Debug("notify consumer ids changed", "group", group, "addr", c.RemoteAddr(), "err", err)
		}
	}
}

// invokeOneway sends a broker-to-client request. Any server's InvokeOneway
// works for a connection of either port: it only borrows a permit.
func (b *Broker) invokeOneway(ctx context.Context, c *remoting.Conn, req *protocol.Command) error {
	return b.server.InvokeOneway(ctx, c, req)
}
