package console

import (
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/apogeemq/apogee/client/admin"
)

// Pages no RocketMQ UI has as such: ACL 2.0 users and policies, and the
// controller's view of each broker group (SyncStateSet, epochs).

func (s *Server) aclPage(w http.ResponseWriter, r *http.Request) (string, any, error) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	ci, err := s.a(r).ClusterInfo(ctx)
	if err != nil {
		return "", nil, err
	}
	type clusterACL struct {
		Cluster string
		Users   []admin.User
		ACLs    []admin.ACL
		Err     string
	}
	var out []clusterACL
	for _, c := range slices.Sorted(maps.Keys(ci.Clusters)) {
		row := clusterACL{Cluster: c}
		users, err := s.a(r).ListUsers(ctx, admin.Target{Cluster: c}, "")
		if err == nil && len(users) > 0 {
			row.Users = users[0].Value // every broker of the cluster holds the same users
			var acls []admin.BrokerResult[[]admin.ACL]
			if acls, err = s.a(r).ListACLs(ctx, admin.Target{Cluster: c}, "", ""); err == nil && len(acls) > 0 {
				row.ACLs = acls[0].Value
			}
		}
		if err != nil {
			if refused(err) {
				return "", nil, err
			}
			row.Err = err.Error()
		}
		out = append(out, row)
	}
	return "acl", out, nil
}

func (s *Server) controllerPage(w http.ResponseWriter, r *http.Request) (string, any, error) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	ci, err := s.a(r).ClusterInfo(ctx)
	if err != nil {
		return "", nil, err
	}
	// The controller addresses come from the brokers' own configuration.
	addrs := map[string]bool{}
	var names []string
	for _, name := range slices.Sorted(maps.Keys(ci.Brokers)) {
		b := ci.Brokers[name]
		for _, a := range b.Addrs {
			conf, err := s.a(r).BrokerConfig(ctx, a)
			if err != nil {
				if refused(err) {
					return "", nil, err
				}
				continue
			}
			if conf["enableControllerMode"] != "true" {
				continue
			}
			names = append(names, name)
			for _, c := range strings.FieldsFunc(conf["controllerAddr"], func(r rune) bool { return r == ';' || r == ',' }) {
				addrs[strings.TrimSpace(c)] = true
			}
			break
		}
	}
	type view struct {
		Controllers []*admin.ControllerMetaData
		Errors      []string
		Groups      []groupState
	}
	var v view
	leader := ""
	for _, a := range slices.Sorted(maps.Keys(addrs)) {
		md, err := s.a(r).ControllerMetaData(ctx, a)
		if err != nil {
			v.Errors = append(v.Errors, a+": "+err.Error())
			continue
		}
		v.Controllers = append(v.Controllers, md)
		if md.IsLeader {
			leader = a
		} else if leader == "" && md.ControllerLeaderAddress != "" {
			leader = md.ControllerLeaderAddress
		}
	}
	if leader != "" && len(names) > 0 {
		info, err := s.a(r).SyncStateData(ctx, leader, names)
		if err != nil {
			v.Errors = append(v.Errors, leader+": "+err.Error())
		} else {
			for _, n := range slices.Sorted(maps.Keys(info.ReplicasInfoTable)) {
				ri := info.ReplicasInfoTable[n]
				g := groupState{Broker: n, MasterID: ri.MasterBrokerID, MasterAddr: ri.MasterAddress,
					MasterEpoch: ri.MasterEpoch, SyncStateSetEpoch: ri.SyncStateSetEpoch}
				for _, x := range ri.InSyncReplicas {
					g.InSync = append(g.InSync, x.BrokerAddress)
				}
				for _, x := range ri.NotInSyncReplicas {
					g.NotInSync = append(g.NotInSync, x.BrokerAddress)
				}
				v.Groups = append(v.Groups, g)
			}
		}
	}
	return "controller", v, nil
}

type groupState struct {
	Broker                         string
	MasterID                       int64
	MasterAddr                     string
	MasterEpoch, SyncStateSetEpoch int32
	InSync, NotInSync              []string
}
