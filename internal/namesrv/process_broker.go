package namesrv

// Requests brokers send (docs/protocol.md §3.5): REGISTER_BROKER (103),
// UNREGISTER_BROKER (104), QUERY_DATA_VERSION (322), BROKER_HEARTBEAT (904),
// REGISTER_TOPIC_IN_NAMESRV (217), GET_BROKER_MEMBER_GROUP (901).

import (
	"context"
	"errors"
	"hash/crc32"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// registerBroker handles REGISTER_BROKER (103). Java brokers send the
// RegisterBrokerBody JSON with compressed=false (even when their
// compressedRegister option deflated it: DecodeRegisterBrokerBody sniffs the
// zlib header); brokers older than V3_0_11 send a bare topic config wrapper.
// A non-zero bodyCrc32 must match CRC-32 & 0x7FFFFFFF of the body.
func (s *Server) registerBroker(_ context.Context, conn *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.RegisterBrokerRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	if h.BodyCrc32 != 0 && len(req.Body) > 0 {
		if crc := int32(crc32.ChecksumIEEE(req.Body) & 0x7FFFFFFF); crc != h.BodyCrc32 {
			s.logger.Warn("namesrv: register broker body crc32 mismatch", "brokerName", h.BrokerName,
				"brokerAddr", h.BrokerAddr, "want", h.BodyCrc32, "got", crc)
			return nil, protocol.Errorf(protocol.SystemError, "crc32 not match")
		}
	}
	body, err := protocol.DecodeRegisterBrokerBody(req.Body, h.Compressed, req.Version)
	if err != nil {
		s.logger.Warn("namesrv: bad register broker body", "brokerName", h.BrokerName, "brokerAddr", h.BrokerAddr, "err", err)
		return nil, protocol.Errorf(protocol.SystemError, "bad register broker body: %v", err)
	}
	wrapper := &body.TopicConfigSerializeWrapper
	if req.Version != 0 && req.Version < protocol.VersionV3_0_11 {
		// Old brokers' data versions are meaningless to us (Java resets them).
		wrapper.DataVersion = protocol.DataVersion{}
	}
	r := RegisterBrokerRequest{
		ClusterName: h.ClusterName, BrokerAddr: h.BrokerAddr, BrokerName: h.BrokerName, BrokerID: h.BrokerID,
		HaServerAddr: h.HaServerAddr, ZoneName: h.ZoneName, EnableActingMaster: h.EnableActingMaster,
		TopicConfig: wrapper, FilterServerList: body.FilterServerList,
	}
	if h.HeartbeatTimeoutMillis != nil && *h.HeartbeatTimeoutMillis > 0 {
		r.HeartbeatTimeout = time.Duration(*h.HeartbeatTimeoutMillis) * time.Millisecond
	}
	if conn != nil {
		r.Channel = conn
	}
	res, err := s.routes.RegisterBroker(r)
	if errors.Is(err, ErrRegisterRefused) {
		s.logger.Warn("namesrv: one-topic registration from an unregistered broker refused", "clusterName", h.ClusterName,
			"brokerName", h.BrokerName, "brokerId", h.BrokerID, "brokerAddr", h.BrokerAddr)
		return nil, protocol.Errorf(protocol.SystemError, "register broker failed")
	}
	if err != nil {
		return nil, err
	}
	switch {
	case res.Stale:
		s.logger.Warn("namesrv: registration with an older state version ignored", "clusterName", h.ClusterName,
			"brokerName", h.BrokerName, "brokerId", h.BrokerID, "brokerAddr", h.BrokerAddr)
	case res.NewBroker:
		s.logger.Info("namesrv: broker registered", "clusterName", h.ClusterName, "brokerName", h.BrokerName,
			"brokerId", h.BrokerID, "brokerAddr", h.BrokerAddr, "topics", len(wrapper.TopicConfigTable))
	default:
		s.logger.Debug("namesrv: broker re-registered", "brokerName", h.BrokerName, "brokerAddr", h.BrokerAddr,
			"topics", len(wrapper.TopicConfigTable))
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.ExtFields = protocol.EncodeHeader(&protocol.RegisterBrokerResponseHeader{
		HaServerAddr: res.HaServerAddr, MasterAddr: res.MasterAddr,
	}, false)
	if s.config().ReturnOrderTopicConfigToBroker {
		if table := s.kv.List(protocol.NamespaceOrderTopicConfig); table != nil {
			b, err := (&protocol.KVTable{Table: table}).Encode()
			if err != nil {
				return nil, err
			}
			resp.Body = b
		}
	}
	return resp, nil
}

// unregisterBroker handles UNREGISTER_BROKER (104), sent on orderly
// broker shutdown.
func (s *Server) unregisterBroker(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.BrokerIdentityHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	s.routes.UnregisterBroker(h.ClusterName, h.BrokerAddr, h.BrokerName)
	s.logger.Info("namesrv: broker unregistered", "clusterName", h.ClusterName, "brokerName", h.BrokerName,
		"brokerId", h.BrokerID, "brokerAddr", h.BrokerAddr)
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

// queryDataVersion handles QUERY_DATA_VERSION (322): brokers with
// forceRegister=false ask whether their topic data version is known, which
// also refreshes their liveness. Ext "changed" answers; the body carries the
// stored version, if any.
func (s *Server) queryDataVersion(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.BrokerIdentityHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	var dv protocol.DataVersion
	if len(req.Body) > 0 {
		d, err := protocol.DecodeDataVersion(req.Body)
		if err != nil {
			return nil, protocol.Errorf(protocol.SystemError, "bad data version body: %v", err)
		}
		dv = *d
	}
	changed := s.routes.IsBrokerTopicConfigChanged(h.ClusterName, h.BrokerAddr, dv)
	s.routes.UpdateBrokerInfoUpdateTimestamp(h.ClusterName, h.BrokerAddr, 0)
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.ExtFields = protocol.EncodeHeader(&protocol.QueryDataVersionResponseHeader{Changed: changed}, false)
	if stored := s.routes.QueryBrokerTopicConfig(h.ClusterName, h.BrokerAddr); stored != nil {
		b, err := stored.Encode()
		if err != nil {
			return nil, err
		}
		resp.Body = b
	}
	return resp, nil
}

// brokerHeartbeat handles BROKER_HEARTBEAT (904), sent oneway every second
// by brokers in slave-acting-master mode; heartbeatTimeoutMills, when
// present, replaces the broker's expiry.
func (s *Server) brokerHeartbeat(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.BrokerHeartbeatRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	var timeout time.Duration
	if h.HeartbeatTimeoutMills != nil && *h.HeartbeatTimeoutMills > 0 {
		timeout = time.Duration(*h.HeartbeatTimeoutMills) * time.Millisecond
	}
	if !s.routes.UpdateBrokerInfoUpdateTimestamp(h.ClusterName, h.BrokerAddr, timeout) {
		s.logger.Debug("namesrv: heartbeat from an unregistered broker", "brokerName", h.BrokerName, "brokerAddr", h.BrokerAddr)
	}
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

// registerTopic handles REGISTER_TOPIC_IN_NAMESRV (217): the body is a
// TopicRouteData whose queueDatas are merged into the topic's route. Queue
// data naming an unregistered broker is ignored (as Java does: logged,
// answered SUCCESS).
func (s *Server) registerTopic(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.RegisterTopicRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	if len(req.Body) > 0 {
		route, err := protocol.DecodeTopicRouteData(req.Body)
		if err != nil {
			return nil, protocol.Errorf(protocol.SystemError, "bad topic route body: %v", err)
		}
		if !s.routes.RegisterTopic(h.Topic, route.QueueDatas) {
			s.logger.Warn("namesrv: register topic names an unregistered broker", "topic", h.Topic)
		}
	}
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

// getBrokerMemberGroup handles GET_BROKER_MEMBER_GROUP (901).
func (s *Server) getBrokerMemberGroup(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.GetBrokerMemberGroupRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	body := protocol.GetBrokerMemberGroupResponseBody{BrokerMemberGroup: s.routes.GetBrokerMemberGroup(h.ClusterName, h.BrokerName)}
	return bodyResponse(req, &body)
}

// encoder is any body with an Encode method.
type encoder interface{ Encode() ([]byte, error) }

func bodyResponse(req *protocol.Command, body encoder) (*protocol.Command, error) {
	b, err := body.Encode()
	if err != nil {
		return nil, err
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = b
	return resp, nil
}
