package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/protocol"
)

func init() {
	adminCommands = append(adminCommands, cmdGetControllerMetaData, cmdGetSyncStateSet, cmdGetBrokerEpoch,
		cmdElectMaster, cmdGetControllerConfig, cmdUpdateControllerConfig, cmdCleanBrokerMetadata, cmdHAStatus)
}

func cmdGetControllerMetaData(g *globalFlags, af *adminFlags) *cobra.Command {
	var ctl string
	return adminCommand(g, af, "getControllerMetaData", "Show a controller group's leader and peers", func(c *cobra.Command) {
		c.Flags().StringVarP(&ctl, "controllerAddress", "a", "", "controller address (required)")
		c.MarkFlagRequired("controllerAddress")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		md, err := a.ControllerMetaData(ctx, ctl)
		if err != nil {
			return nil, err
		}
		return &result{value: md, header: []string{"#ControllerGroup", "#ControllerLeaderId", "#ControllerLeaderAddress", "#Peers", "#IsLeader"},
			rows: [][]string{{md.Group, md.ControllerLeaderID, md.ControllerLeaderAddress, md.Peers, strconv.FormatBool(md.IsLeader)}}}, nil
	})
}

func cmdGetSyncStateSet(g *globalFlags, af *adminFlags) *cobra.Command {
	var ctl, names, cluster string
	return adminCommand(g, af, "getSyncStateSet", "Show the master, epochs and SyncStateSet of broker sets (-b names or -c cluster)", func(c *cobra.Command) {
		c.Flags().StringVarP(&ctl, "controllerAddress", "a", "", "controller address; of a ';'-separated list the first is asked (required)")
		c.Flags().StringVarP(&names, "brokerName", "b", "", "broker names, ';'-separated (default all)")
		c.Flags().StringVarP(&cluster, "clusterName", "c", "", "every broker set of this cluster (from the name server)")
		intervalFlag(c, 3)
		c.MarkFlagRequired("controllerAddress")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		var list []string
		for _, n := range strings.Split(names, ";") {
			if n = strings.TrimSpace(n); n != "" {
				list = append(list, n)
			}
		}
		if len(list) == 0 && cluster != "" {
			ci, err := a.ClusterInfo(ctx)
			if err != nil {
				return nil, err
			}
			if list = ci.Clusters[strings.TrimSpace(cluster)]; len(list) == 0 {
				return nil, fmt.Errorf("cluster %s not found on the name server", cluster)
			}
		}
		first, _, _ := strings.Cut(ctl, ";")
		info, err := a.SyncStateData(ctx, strings.TrimSpace(first), list)
		if err != nil {
			return nil, err
		}
		r := &result{value: info, header: []string{"#brokerName", "#masterBrokerId", "#masterAddress", "#masterEpoch",
			"#syncStateSetEpoch", "#inSync", "#brokerId", "#brokerAddress", "#alive"}}
		for _, name := range slices.Sorted(maps.Keys(info.ReplicasInfoTable)) {
			ri := info.ReplicasInfoTable[name]
			for _, in := range []bool{true, false} {
				reps := ri.NotInSyncReplicas
				if in {
					reps = ri.InSyncReplicas
				}
				for _, rep := range reps {
					r.rows = append(r.rows, []string{name, strconv.FormatInt(ri.MasterBrokerID, 10), ri.MasterAddress,
						strconv.Itoa(int(ri.MasterEpoch)), strconv.Itoa(int(ri.SyncStateSetEpoch)), strconv.FormatBool(in),
						strconv.FormatInt(rep.BrokerID, 10), rep.BrokerAddress, strconv.FormatBool(rep.Alive)})
				}
			}
		}
		return r, nil
	})
}

// cmdGetBrokerEpoch is mqadmin's getBrokerEpoch: the epoch entries of
// every broker of a set (-b brokerName) or of a cluster (-c), resolved
// through the name server. A -b value holding a colon is taken as one
// broker's address (Apogee's earlier -b brokerAddr).
func cmdGetBrokerEpoch(g *globalFlags, af *adminFlags) *cobra.Command {
	var name, cluster string
	return adminCommand(g, af, "getBrokerEpoch", "Show the epoch entries of a broker set (-b brokerName) or cluster (-c) in controller mode", func(c *cobra.Command) {
		c.Flags().StringVarP(&name, "brokerName", "b", "", "broker name: every broker of the set (a host:port is one broker)")
		c.Flags().StringVarP(&cluster, "clusterName", "c", "", "every broker of this cluster")
		intervalFlag(c, 3)
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		addrs, err := setOrClusterAddrs(ctx, a, strings.TrimSpace(name), strings.TrimSpace(cluster))
		if err != nil {
			return nil, err
		}
		all := []*protocol.EpochEntryCache{}
		r := &result{header: []string{"#ClusterName", "#BrokerName", "#BrokerAddr", "#BrokerId", "#Epoch", "#StartOffset", "#EndOffset"}}
		for _, addr := range addrs {
			ec, err := a.BrokerEpoch(ctx, addr)
			if err != nil {
				return nil, fmt.Errorf("broker %s: %w", addr, err)
			}
			// As mqadmin: the newest epoch ends at the commit log's max offset.
			if n := len(ec.EpochList); n > 0 {
				ec.EpochList[n-1].EndOffset = ec.MaxOffset
			}
			all = append(all, ec)
			for _, e := range ec.EpochList {
				r.rows = append(r.rows, []string{ec.ClusterName, ec.BrokerName, addr, strconv.FormatInt(ec.BrokerID, 10),
					strconv.Itoa(int(e.Epoch)), strconv.FormatInt(e.StartOffset, 10), strconv.FormatInt(e.EndOffset, 10)})
			}
		}
		r.value = all
		if len(all) == 1 {
			r.value = all[0] // one broker: the cache itself, as before
		}
		return r, nil
	})
}

// setOrClusterAddrs is mqadmin's CommandUtil fetchMasterAndSlaveAddrBy...:
// the addresses of every broker of the set name (or, with a colon in name,
// that one address), else of every broker of cluster, sorted.
func setOrClusterAddrs(ctx context.Context, a *admin.Admin, name, cluster string) ([]string, error) {
	if strings.Contains(name, ":") {
		return []string{name}, nil
	}
	if name == "" && cluster == "" {
		return nil, fmt.Errorf("give -b brokerName or -c clusterName")
	}
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	sets := []string{name}
	if name == "" {
		sets = ci.Clusters[cluster]
	}
	var addrs []string
	for _, set := range sets {
		for _, addr := range ci.Brokers[set].Addrs {
			addrs = append(addrs, addr)
		}
	}
	if len(addrs) == 0 {
		if name != "" {
			return nil, fmt.Errorf("broker %s not found on the name server", name)
		}
		return nil, fmt.Errorf("cluster %s has no broker", cluster)
	}
	slices.Sort(addrs)
	return addrs, nil
}

// cmdElectMaster is mqadmin's electMaster: -a controller, -b brokerId,
// -bn brokerName (rewritten to --brokerName, admin_compat.go), -c cluster.
func cmdElectMaster(g *globalFlags, af *adminFlags) *cobra.Command {
	var ctl, name, cluster string
	var id int64
	return adminCommand(g, af, "electMaster", "Make a broker the master of its set (-a controller -b brokerId -bn brokerName -c clusterName)", func(c *cobra.Command) {
		c.Flags().StringVarP(&ctl, "controllerAddress", "a", "", "controller address (required)")
		c.Flags().Int64VarP(&id, "brokerId", "b", 0, "controller-assigned id of the broker to make master (required)")
		c.Flags().StringVar(&name, "brokerName", "", "broker name, mqadmin's -bn (required)")
		c.Flags().StringVarP(&cluster, "clusterName", "c", "", "cluster name (required)")
		c.MarkFlagRequired("controllerAddress")
		c.MarkFlagRequired("brokerName")
		c.MarkFlagRequired("brokerId")
		c.MarkFlagRequired("clusterName")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		h, err := a.ElectMaster(ctx, strings.TrimSpace(ctl), strings.TrimSpace(cluster), strings.TrimSpace(name), id)
		if err != nil {
			return nil, err
		}
		var mid int64
		var ep int32
		if h.MasterBrokerID != nil {
			mid = *h.MasterBrokerID
		}
		if h.MasterEpoch != nil {
			ep = *h.MasterEpoch
		}
		return &result{value: h, header: []string{"#ClusterName", "#BrokerName", "#BrokerMasterAddr", "#MasterId", "#MasterEpoch"},
			rows: [][]string{{cluster, name, h.MasterAddress, strconv.FormatInt(mid, 10), strconv.Itoa(int(ep))}}}, nil
	})
}

func cmdGetControllerConfig(g *globalFlags, af *adminFlags) *cobra.Command {
	var ctl string
	return adminCommand(g, af, "getControllerConfig", "Show a controller's configuration", func(c *cobra.Command) {
		c.Flags().StringVarP(&ctl, "controllerAddress", "a", "", "controller address(es), ';'-separated (required)")
		c.MarkFlagRequired("controllerAddress")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		all := map[string]map[string]string{}
		r := &result{header: []string{"#CONTROLLER", "#KEY", "#VALUE"}}
		for _, addr := range strings.Split(ctl, ";") {
			if addr = strings.TrimSpace(addr); addr == "" {
				continue
			}
			kv, err := a.ControllerConfig(ctx, addr)
			if err != nil {
				return nil, err
			}
			all[addr] = kv
			for _, k := range slices.Sorted(maps.Keys(kv)) {
				r.rows = append(r.rows, []string{addr, k, kv[k]})
			}
		}
		r.value = all
		return r, nil
	})
}

func cmdUpdateControllerConfig(g *globalFlags, af *adminFlags) *cobra.Command {
	var ctl, key, value string
	return adminCommand(g, af, "updateControllerConfig", "Change a controller.conf key at run time on each controller (written back to its -c file)", func(c *cobra.Command) {
		c.Flags().StringVarP(&ctl, "controllerAddress", "a", "", "controller address(es), ';'-separated (required)")
		c.Flags().StringVarP(&key, "key", "k", "", "config key (required)")
		c.Flags().StringVarP(&value, "value", "v", "", "config value (required)")
		c.MarkFlagRequired("controllerAddress")
		c.MarkFlagRequired("key")
		c.MarkFlagRequired("value")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		r := &result{header: []string{"#CONTROLLER", "#KEY", "#VALUE"}}
		var done []string
		for _, addr := range strings.Split(ctl, ";") {
			if addr = strings.TrimSpace(addr); addr == "" {
				continue
			}
			if err := a.UpdateControllerConfig(ctx, addr, map[string]string{key: value}); err != nil {
				return nil, fmt.Errorf("update controller config on %s: %w", addr, err)
			}
			done = append(done, addr)
			r.rows = append(r.rows, []string{addr, key, value})
		}
		r.value = map[string]any{"controllers": done, "key": key, "value": value}
		return r, nil
	})
}

// cmdCleanBrokerMetadata is mqadmin's cleanBrokerMetadata: -a controller,
// -bn brokerName, -b ids to clean, -c cluster, -l living brokers too.
func cmdCleanBrokerMetadata(g *globalFlags, af *adminFlags) *cobra.Command {
	var ctl, name, cluster, ids string
	var living bool
	return adminCommand(g, af, "cleanBrokerMetadata", "Remove brokers from a controller's metadata (-a controller -bn brokerName [-b ids] [-c cluster] [-l])", func(c *cobra.Command) {
		c.Flags().StringVarP(&ctl, "controllerAddress", "a", "", "controller address (required)")
		c.Flags().StringVar(&name, "brokerName", "", "broker name, mqadmin's -bn (required)")
		c.Flags().StringVarP(&cluster, "clusterName", "c", "", "cluster name (required without -l)")
		c.Flags().StringVarP(&ids, "brokerControllerIdsToClean", "b", "", "broker ids, ';'-separated, e.g. 1;2;3 (default: the whole set)")
		c.Flags().BoolVarP(&living, "cleanLivingBroker", "l", false, "also clean brokers that are alive")
		c.MarkFlagRequired("controllerAddress")
		c.MarkFlagRequired("brokerName")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		var list []int64
		for _, s := range strings.Split(ids, ";") {
			if s = strings.TrimSpace(s); s == "" {
				continue
			}
			id, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("-b %q: want broker ids like 1;2;3", ids)
			}
			list = append(list, id)
		}
		cluster = strings.TrimSpace(cluster)
		if !living && cluster == "" {
			return nil, fmt.Errorf("cleanLivingBroker option is false, clusterName option can not be empty")
		}
		if err := a.CleanBrokerMetadata(ctx, strings.TrimSpace(ctl), cluster, strings.TrimSpace(name), list, living); err != nil {
			return nil, err
		}
		return okText("clear broker %s metadata from controller success!", name), nil
	})
}

func cmdHAStatus(g *globalFlags, af *adminFlags) *cobra.Command {
	var broker, cluster string
	return adminCommand(g, af, "haStatus", "Show the replication state of a broker (-b) or of a cluster's masters (-c) (GET_BROKER_HA_STATUS)", func(c *cobra.Command) {
		c.Flags().StringVarP(&broker, "brokerAddr", "b", "", "broker address")
		c.Flags().StringVarP(&cluster, "clusterName", "c", "", "every master of this cluster")
		intervalFlag(c, 3)
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		addrs, err := brokerAddrs(ctx, a, broker, cluster, true) // admin_broker.go
		if err != nil {
			return nil, err
		}
		if len(addrs) == 1 {
			return haStatusRows(ctx, a, addrs[0])
		}
		all := map[string]any{}
		var out *result
		for _, addr := range addrs {
			r, err := haStatusRows(ctx, a, addr)
			if err != nil {
				return nil, fmt.Errorf("broker %s: %w", addr, err)
			}
			all[addr] = r.value
			if out == nil {
				out = r
			} else {
				out.rows = append(out.rows, r.rows...)
			}
		}
		out.value = all
		return out, nil
	})
}

// haStatusRows is haStatus of one broker: a master's slaves, or a slave's
// master connection.
func haStatusRows(ctx context.Context, a *admin.Admin, addr string) (*result, error) {
	h, err := a.HAStatus(ctx, addr)
	if err != nil {
		return nil, err
	}
	r := &result{value: h}
	if h.Master {
		r.header = []string{"#MasterAddr", "#MasterCommitLogMaxOffset", "#SlaveNum", "#SlaveAddr", "#SlaveAckOffset", "#Diff", "#InSync"}
		for _, c := range h.HAConnectionInfo {
			r.rows = append(r.rows, []string{addr, strconv.FormatInt(h.MasterCommitLogMaxOffset, 10), strconv.Itoa(len(h.HAConnectionInfo)),
				c.Addr, strconv.FormatInt(c.SlaveAckOffset, 10), strconv.FormatInt(c.Diff, 10), strconv.FormatBool(c.InSync)})
		}
		if len(r.rows) == 0 {
			r.rows = append(r.rows, []string{addr, strconv.FormatInt(h.MasterCommitLogMaxOffset, 10), "0", "", "", "", ""})
		}
	} else if c := h.HAClientRuntimeInfo; c != nil {
		r.header = []string{"#MasterAddr", "#MaxOffset", "#IsActivated", "#LastReadTimestamp"}
		r.rows = [][]string{{c.MasterAddr, strconv.FormatInt(c.MaxOffset, 10), strconv.FormatBool(c.IsActivated), strconv.FormatInt(c.LastReadTimestamp, 10)}}
	}
	return r, nil
}

// brokerRoleEpoch is clusterList's role (id 0 is the master) and master
// epoch (controller mode: the newest entry of GET_BROKER_EPOCH_CACHE; "-"
// for a classic broker or when the broker does not answer).
func brokerRoleEpoch(ctx context.Context, a *admin.Admin, id int64, addr string) (string, string) {
	role := "SLAVE"
	if id == 0 {
		role = "MASTER"
	}
	ec, err := a.BrokerEpoch(ctx, addr)
	if err != nil || len(ec.EpochList) == 0 {
		return role, "-"
	}
	return role, strconv.Itoa(int(ec.EpochList[len(ec.EpochList)-1].Epoch))
}
