package namesrv

// Requests clients and admin tools send (docs/protocol.md §3.2, §3.8):
// GET_ROUTEINFO_BY_TOPIC (105), GET_BROKER_CLUSTER_INFO (106),
// GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206), GET_TOPICS_BY_CLUSTER (224),
// GET_SYSTEM_TOPIC_LIST_FROM_NS (304), GET_UNIT_TOPIC_LIST (311),
// GET_HAS_UNIT_SUB_TOPIC_LIST (312), GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST (313),
// DELETE_TOPIC_IN_NAMESRV (216), WIPE_WRITE_PERM_OF_BROKER (205),
// ADD_WRITE_PERM_OF_BROKER (327).

import (
	"context"
	"strings"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// topicNotExistRemark is what Java answers for a topic without a route; the
// FAQ pointer is informational.
const topicNotExistRemark = "No topic route info in name server for the topic: %s\n" +
	"See https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."

// getRouteInfo handles GET_ROUTEINFO_BY_TOPIC (105). Every client sends it
// (the Go client at version 317 with only "topic"; Java 5.x clients may add
// acceptStandardJsonOnly). The body is always standard JSON with quoted
// broker-id keys, which all clients parse (docs/protocol.md §5.2). With orderMessageEnable
// the ORDER_TOPIC_CONFIG KV entry of the topic becomes orderTopicConf.
func (s *Server) getRouteInfo(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.GetRouteInfoRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	cfg := s.config()
	if cfg.NeedWaitForService && time.Since(s.startedAt()) < time.Duration(cfg.WaitSecondsForService)*time.Second {
		return nil, protocol.Errorf(protocol.SystemError, "name server not ready")
	}
	route := s.routes.PickupTopicRouteData(h.Topic)
	if route == nil {
		return protocol.NewResponse(req, protocol.TopicNotExist, sprintf(topicNotExistRemark, h.Topic)), nil
	}
	if cfg.OrderMessageEnable {
		if conf, ok := s.kv.Get(protocol.NamespaceOrderTopicConfig, h.Topic); ok {
			route.OrderTopicConf = conf
		}
	}
	if req.ExtBool("__ZONE_MODE") {
		if zone := req.Ext("__ZONE_NAME"); zone != "" {
			filterByZone(route, zone)
		}
	}
	return bodyResponse(req, route)
}

// filterByZone keeps, for a requester that asked for its zone
// (__ZONE_MODE=true, __ZONE_NAME), the broker groups of that zone plus
// every group without a master (so consumers can still read from slaves),
// and the queue data of the kept groups (docs/protocol.md §2.6).
func filterByZone(route *protocol.TopicRouteData, zone string) {
	removed := make(map[string]bool)
	kept := route.BrokerDatas[:0]
	for _, bd := range route.BrokerDatas {
		if bd.MasterAddr() == "" || strings.EqualFold(bd.ZoneName, zone) {
			kept = append(kept, bd)
			continue
		}
		removed[bd.BrokerName] = true
		for _, addr := range bd.BrokerAddrs {
			delete(route.FilterServerTable, addr)
		}
	}
	route.BrokerDatas = kept
	qds := route.QueueDatas[:0]
	for _, qd := range route.QueueDatas {
		if !removed[qd.BrokerName] {
			qds = append(qds, qd)
		}
	}
	route.QueueDatas = qds
}

// startedAt is the start time (zero before Start).
func (s *Server) startedAt() time.Time {
	s.lifeMu.Lock()
	defer s.lifeMu.Unlock()
	return s.startTime
}

// getBrokerClusterInfo handles GET_BROKER_CLUSTER_INFO (106).
func (s *Server) getBrokerClusterInfo(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	return bodyResponse(req, s.routes.GetAllClusterInfo())
}

// getAllTopicList handles GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206); the Go
// admin's FetchAllTopicList decodes it with encoding/json.
func (s *Server) getAllTopicList(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	if !s.config().EnableAllTopicList {
		return nil, protocol.Errorf(protocol.SystemError, "disable")
	}
	return bodyResponse(req, &protocol.TopicList{TopicList: s.routes.GetAllTopicList()})
}

// getTopicsByCluster handles GET_TOPICS_BY_CLUSTER (224).
func (s *Server) getTopicsByCluster(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	if !s.config().EnableTopicList {
		return nil, protocol.Errorf(protocol.SystemError, "disable")
	}
	var h protocol.GetTopicsByClusterRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	return bodyResponse(req, &protocol.TopicList{TopicList: s.routes.GetTopicsByCluster(h.Cluster)})
}

// getSystemTopicList handles GET_SYSTEM_TOPIC_LIST_FROM_NS (304).
func (s *Server) getSystemTopicList(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	tl := s.routes.GetSystemTopicList()
	return bodyResponse(req, &tl)
}

// getUnitTopicList handles 311, 312 and 313.
func (s *Server) getUnitTopicList(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	if !s.config().EnableTopicList {
		return nil, protocol.Errorf(protocol.SystemError, "disable")
	}
	kind := UnitTopics
	switch protocol.RequestCode(req.Code) {
	case protocol.GetHasUnitSubTopicList:
		kind = HasUnitSubTopics
	case protocol.GetHasUnitSubUnunitTopicList:
		kind = HasUnitSubUnunitTopics
	}
	return bodyResponse(req, &protocol.TopicList{TopicList: s.routes.GetUnitTopicList(kind)})
}

// deleteTopicInNamesrv handles DELETE_TOPIC_IN_NAMESRV (216); the Go admin
// sends only "topic", mqadmin may add "clusterName".
func (s *Server) deleteTopicInNamesrv(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.DeleteTopicFromNamesrvRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	s.routes.DeleteTopic(h.Topic, h.ClusterName)
	s.logger.Info("namesrv: topic deleted", "topic", h.Topic, "clusterName", h.ClusterName)
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

// writePerm handles WIPE_WRITE_PERM_OF_BROKER (205) and
// ADD_WRITE_PERM_OF_BROKER (327), answering the number of topics touched.
func (s *Server) writePerm(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.BrokerNameHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	if protocol.RequestCode(req.Code) == protocol.WipeWritePermOfBroker {
		n := s.routes.WipeWritePermOfBroker(h.BrokerName)
		resp.ExtFields = protocol.EncodeHeader(&protocol.WipeWritePermOfBrokerResponseHeader{WipeTopicCount: int32(n)}, false)
		s.logger.Info("namesrv: write permission wiped", "brokerName", h.BrokerName, "topics", n)
	} else {
		n := s.routes.AddWritePermOfBroker(h.BrokerName)
		resp.ExtFields = protocol.EncodeHeader(&protocol.AddWritePermOfBrokerResponseHeader{AddTopicCount: int32(n)}, false)
		s.logger.Info("namesrv: write permission added", "brokerName", h.BrokerName, "topics", n)
	}
	return resp, nil
}
