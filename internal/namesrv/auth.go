package namesrv

import (
	"errors"
	"fmt"

	"github.com/apogeemq/apogee/internal/auth"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// openCodes stay open to unsigned clients when authentication is on:
// route and cluster-info queries, which every client makes before it
// knows any broker. Everything else (registrations, KV and config writes,
// topic deletes, permission changes) needs a signed request of a user the
// name server knows: the initAuthenticationUser and the
// innerClientAuthenticationCredentials of namesrv.conf, both Super.
var openCodes = []protocol.RequestCode{
	protocol.GetRouteInfoByTopic, protocol.GetBrokerClusterInfo, protocol.GetAllTopicListFromNameServer,
	protocol.GetTopicsByCluster, protocol.GetSystemTopicListFromNS, protocol.GetUnitTopicList,
	protocol.GetHasUnitSubTopicList, protocol.GetHasUnitSubUnunitTopicList, protocol.GetKVConfig,
	protocol.GetKVListByNamespace,
}

// startAuth installs the ACL hook when authenticationEnabled or
// authorizationEnabled is set. The users live in memory: they come from
// namesrv.conf at every start.
func (s *Server) startAuth(cfg Config) error {
	if !cfg.AuthConfig.Enabled() {
		return nil
	}
	if err := cfg.AuthConfig.Validate(); err != nil {
		return fmt.Errorf("namesrv: %w", err)
	}
	st, err := auth.Open("")
	if err != nil {
		return fmt.Errorf("namesrv: %w", err)
	}
	if err := auth.Init(cfg.AuthConfig, st); err != nil {
		return fmt.Errorf("namesrv: %w", err)
	}
	g, err := auth.NewGuard(cfg.AuthConfig, st, auth.SystemRules{}, openCodes...)
	if err != nil {
		return fmt.Errorf("namesrv: %w", err)
	}
	s.remoting.AddHook(authHook{g})
	s.logger.Info("namesrv: authentication enabled", "users", len(st.Users("")))
	return nil
}

// authHook refuses what the guard refuses: NO_PERMISSION with RocketMQ's
// remark, on the same connection.
type authHook struct{ g *auth.Guard }

func (h authHook) Before(conn *remoting.Conn, req *protocol.Command) error {
	if _, err := h.g.CheckRemoting(req, conn.RemoteAddrPort().Addr()); err != nil {
		var ae *auth.Error
		if errors.As(err, &ae) {
			return protocol.Errorf(protocol.NoPermission, "%s", ae.Msg)
		}
		return protocol.Errorf(protocol.NoPermission, "%v", err)
	}
	return nil
}

func (h authHook) After(*remoting.Conn, *protocol.Command, *protocol.Command) {}
