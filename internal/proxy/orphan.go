package proxy

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	pb "github.com/apogeemq/apogee/internal/rmqpb"
)

// Orphaned-transaction recovery. A gRPC producer's group is its topic. The
// endpoint heartbeats to the brokers of every topic its live producers
// publish to, registering itself as a producer of group = topic, so the
// broker's transaction checker sends CHECK_TRANSACTION_STATE to it; the
// endpoint forwards each check to one live producer of the topic as a
// RecoverOrphanedTransactionCommand on its Telemetry stream, and the
// producer's EndTransaction resolves it.

// producerHeartbeatInterval is how often the endpoint re-registers its
// producer groups; brokers expire producer channels silent for 120 s.
const producerHeartbeatInterval = 10 * time.Second

// orphans owns the producer registration and the check forwarding.
type orphans struct {
	svc      *service
	clientID string
	rr       atomic.Uint64 // spreads checks over a topic's producers
}

func newOrphans(svc *service) *orphans {
	host, _ := os.Hostname()
	return &orphans{svc: svc, clientID: fmt.Sprintf("%s@%d@grpc-proxy", host, os.Getpid())}
}

// heartbeat registers the endpoint as a producer of every topic a live
// gRPC producer publishes to, on each master broker of those topics.
func (o *orphans) heartbeat(ctx context.Context) {
	topics := o.svc.srv.clients.publishedTopics()
	if len(topics) == 0 {
		return
	}
	byBroker := map[string][]protocol.ProducerData{}
	for _, t := range topics {
		cctx, cancel := context.WithTimeout(ctx, brokerCallTimeout)
		r, err := o.svc.srv.backend.route(cctx, t)
		cancel()
		if err != nil {
			continue
		}
		for _, b := range r.brokers {
			byBroker[b.addr] = append(byBroker[b.addr], protocol.ProducerData{GroupName: t})
		}
	}
	for addr, groups := range byBroker {
		slices.SortFunc(groups, func(a, b protocol.ProducerData) int {
			if a.GroupName < b.GroupName {
				return -1
			}
			if a.GroupName > b.GroupName {
				return 1
			}
			return 0
		})
		body, err := protocol.MarshalJSON(&protocol.HeartbeatData{ClientID: o.clientID, ProducerDataSet: groups,
			ConsumerDataSet: []protocol.ConsumerData{}})
		if err != nil {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, brokerCallTimeout)
		if _, err := o.svc.srv.rc.InvokeSync(cctx, addr, protocol.NewRequest(protocol.HeartBeat, nil, body)); err != nil {
			o.svc.srv.logger.Debug("grpc producer heartbeat failed", "addr", addr, "err", err)
		}
		cancel()
	}
}

// processCheck serves CHECK_TRANSACTION_STATE (39) from a broker: the body
// is the half message as its producer sent it. It goes to one live
// producer of the topic; with none, the broker checks again later.
func (o *orphans) processCheck(_ context.Context, conn *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.CheckTransactionStateRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, nil
	}
	m, _, err := message.DecodeStored(req.Body, message.DecodeOptions{Decompress: true})
	if err != nil {
		o.svc.srv.logger.Warn("grpc: undecodable transaction check", "addr", conn.RemoteAddr(), "err", err)
		return nil, nil
	}
	topic := h.Topic
	if topic == "" {
		topic = m.Topic
	}
	txID := h.TransactionID
	if txID == "" {
		txID = m.MsgID()
	}
	streams := o.svc.srv.clients.producerStreams(topic)
	if len(streams) == 0 {
		return nil, nil
	}
	o.svc.txns.put(txnRecord{id: txID, topic: topic, brokerName: h.BrokerName, brokerAddr: conn.RemoteAddr(),
		commitLogOffset: h.CommitLogOffset, queueOffset: h.TranStateTableOffset, offsetMsgID: h.OffsetMsgID, fromCheck: true})
	dm := deliveredMessage(m, "")
	dm.Topic = &pb.Resource{Name: topic}
	dm.SystemProperties.MessageType = pb.MessageType_TRANSACTION
	cmd := &pb.TelemetryCommand{Command: &pb.TelemetryCommand_RecoverOrphanedTransactionCommand{
		RecoverOrphanedTransactionCommand: &pb.RecoverOrphanedTransactionCommand{Message: dm, TransactionId: txID}}}
	ts := streams[int(o.rr.Add(1)%uint64(len(streams)))]
	if err := ts.send(cmd); err != nil {
		o.svc.srv.logger.Debug("grpc: forward transaction check", "clientId", ts.clientID, "err", err)
	}
	return nil, nil
}
