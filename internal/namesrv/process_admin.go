package namesrv

// KV config and name-server config requests (docs/protocol.md §3.8):
// PUT_KV_CONFIG (100), GET_KV_CONFIG (101), DELETE_KV_CONFIG (102),
// GET_KVLIST_BY_NAMESPACE (219), UPDATE_NAMESRV_CONFIG (318),
// GET_NAMESRV_CONFIG (319). Also the processor table.

import (
	"bytes"
	"context"
	"fmt"
	"github.com/apogeemq/apogee/internal/auth"
	"maps"
	"slices"

	"github.com/apogeemq/apogee/internal/config"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// handler is one request family's processor.
type handler = remoting.Processor

// handlers maps every code the name server serves, except
// GET_ROUTEINFO_BY_TOPIC (on its own pool), to its handler.
func (s *Server) handlers() map[protocol.RequestCode]handler {
	return map[protocol.RequestCode]handler{
		protocol.RegisterBroker:                s.registerBroker,
		protocol.UnregisterBroker:              s.unregisterBroker,
		protocol.QueryDataVersion:              s.queryDataVersion,
		protocol.BrokerHeartbeat:               s.brokerHeartbeat,
		protocol.RegisterTopicInNamesrv:        s.registerTopic,
		protocol.GetBrokerMemberGroup:          s.getBrokerMemberGroup,
		protocol.GetBrokerClusterInfo:          s.getBrokerClusterInfo,
		protocol.GetAllTopicListFromNameServer: s.getAllTopicList,
		protocol.GetTopicsByCluster:            s.getTopicsByCluster,
		protocol.GetSystemTopicListFromNS:      s.getSystemTopicList,
		protocol.GetUnitTopicList:              s.getUnitTopicList,
		protocol.GetHasUnitSubTopicList:        s.getUnitTopicList,
		protocol.GetHasUnitSubUnunitTopicList:  s.getUnitTopicList,
		protocol.DeleteTopicInNamesrv:          s.deleteTopicInNamesrv,
		protocol.WipeWritePermOfBroker:         s.writePerm,
		protocol.AddWritePermOfBroker:          s.writePerm,
		protocol.PutKVConfig:                   s.putKVConfig,
		protocol.GetKVConfig:                   s.getKVConfig,
		protocol.DeleteKVConfig:                s.deleteKVConfig,
		protocol.GetKVListByNamespace:          s.getKVListByNamespace,
		protocol.UpdateNamesrvConfig:           s.updateNamesrvConfig,
		protocol.GetNamesrvConfig:              s.getNamesrvConfig,
	}
}

// registerProcessors wires the handlers to the remoting server: routes on
// the client-request pool (clientRequestThreadPoolNums), the rest on the
// default pool (defaultThreadPoolNums). Unknown codes get remoting's
// REQUEST_CODE_NOT_SUPPORTED answer.
func (s *Server) registerProcessors() {
	cfg := s.cfg
	s.remoting.RegisterProcessor(protocol.GetRouteInfoByTopic, s.getRouteInfo, remoting.PoolConfig{
		Workers: cfg.ClientRequestThreadPoolNums, QueueSize: cfg.ClientRequestThreadPoolQueueCapacity,
	})
	table := s.handlers()
	codes := slices.Sorted(maps.Keys(table))
	s.remoting.RegisterProcessorShared(codes, func(ctx context.Context, conn *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
		h := table[protocol.RequestCode(req.Code)]
		if h == nil { // unreachable: remoting routes only the registered codes here
			return nil, protocol.Errorf(protocol.RequestCodeNotSupported, " request type %d not supported", req.Code)
		}
		return h(ctx, conn, req)
	}, remoting.PoolConfig{Workers: cfg.DefaultThreadPoolNums, QueueSize: cfg.DefaultThreadPoolQueueCapacity})
}

// putKVConfig handles PUT_KV_CONFIG (100).
func (s *Server) putKVConfig(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.PutKVConfigRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	if err := s.kv.Put(h.Namespace, h.Key, h.Value); err != nil {
		s.logger.Error("namesrv: persist kv config failed", "err", err)
		return nil, protocol.Errorf(protocol.SystemError, "persist kv config failed")
	}
	s.logger.Info("namesrv: kv config put", "namespace", h.Namespace, "key", h.Key, "value", h.Value)
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

// getKVConfig handles GET_KV_CONFIG (101); QUERY_NOT_FOUND when absent.
func (s *Server) getKVConfig(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.KVConfigKeyHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	v, ok := s.kv.Get(h.Namespace, h.Key)
	if !ok {
		return protocol.NewResponse(req, protocol.QueryNotFound,
			sprintf("No config item, Namespace: %s Key: %s", h.Namespace, h.Key)), nil
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.ExtFields = protocol.EncodeHeader(&protocol.GetKVConfigResponseHeader{Value: v}, false)
	return resp, nil
}

// deleteKVConfig handles DELETE_KV_CONFIG (102).
func (s *Server) deleteKVConfig(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.KVConfigKeyHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	if err := s.kv.Delete(h.Namespace, h.Key); err != nil {
		s.logger.Error("namesrv: persist kv config failed", "err", err)
		return nil, protocol.Errorf(protocol.SystemError, "persist kv config failed")
	}
	s.logger.Info("namesrv: kv config deleted", "namespace", h.Namespace, "key", h.Key)
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

// getKVListByNamespace handles GET_KVLIST_BY_NAMESPACE (219): a KVTable,
// or QUERY_NOT_FOUND for an absent or empty namespace.
func (s *Server) getKVListByNamespace(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.NamespaceHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	table := s.kv.List(h.Namespace)
	if table == nil {
		return protocol.NewResponse(req, protocol.QueryNotFound, sprintf("No config item, Namespace: %s", h.Namespace)), nil
	}
	return bodyResponse(req, &protocol.KVTable{Table: table})
}

// updateNamesrvConfig handles UPDATE_NAMESRV_CONFIG (318): the body is
// properties text. Blacklisted keys (configBlackList) are refused with
// NO_PERMISSION; keys that need a restart, unknown keys and bad values with
// SYSTEM_ERROR. Nothing changes unless every key applies. Changes live in
// memory only.
func (s *Server) updateNamesrvConfig(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	props, err := config.Parse(bytes.NewReader(req.Body))
	if err != nil {
		return nil, protocol.Errorf(protocol.SystemError, "bad properties: %v", err)
	}
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	next := s.cfg
	for _, key := range props.Keys() {
		value, _ := props.Get(key)
		if next.blackListed(key) {
			return nil, protocol.Errorf(protocol.NoPermission, "Can not update config in black list.")
		}
		if restartOnly(key) {
			return nil, protocol.Errorf(protocol.SystemError, "config %s cannot change at run time", key)
		}
		known, err := config.SetKey(&next, key, value)
		if err != nil {
			return nil, protocol.Errorf(protocol.SystemError, "%v", err)
		}
		if !known {
			return nil, protocol.Errorf(protocol.SystemError, "unknown config key %s", key)
		}
	}
	if err := next.Validate(); err != nil {
		return nil, protocol.Errorf(protocol.SystemError, "%v", err)
	}
	s.cfg = next
	s.routes.SetOptions(next.routeOptions())
	s.logger.Info("namesrv: config updated", "keys", props.Keys())
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

// getNamesrvConfig handles GET_NAMESRV_CONFIG (319): every key as
// "key=value" lines, sorted.
func (s *Server) getNamesrvConfig(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	cfg := s.config()
	m := config.ToMap(&cfg)
	auth.MaskSecrets(m)
	var b bytes.Buffer
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(m[k])
		b.WriteByte('\n')
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = b.Bytes()
	return resp, nil
}
