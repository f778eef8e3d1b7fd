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
	var ctl, names string
	return adminCommand(g, af, "getSyncStateSet", "Show the master, epochs and SyncStateSet of broker sets", func(c *cobra.Command) {
		c.Flags().StringVarP(&ctl, "controllerAddress", "a", "", "controller address (required)")
		c.Flags().StringVarP(&names, "brokerName", "b", "", "broker names, ';'-separated (default all)")
		c.MarkFlagRequired("controllerAddress")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		var list []string
		for _, n := range strings.Split(names, ";") {
			if n = strings.TrimSpace(n); n != "" {
				list = append(list, n)
			}
		}
		info, err := a.SyncStateData(ctx, ctl, list)
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

func cmdGetBrokerEpoch(g *globalFlags, af *adminFlags) *cobra.Command {
	var addr string
	return adminCommand(g, af, "getBrokerEpoch", "Show a broker's epoch entries (controller mode)", func(c *cobra.Command) {
		c.Flags().StringVarP(&addr, "brokerAddr", "b", "", "broker address (required)")
		c.MarkFlagRequired("brokerAddr")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		ec, err := a.BrokerEpoch(ctx, addr)
		if err != nil {
			return nil, err
		}
		r := &result{value: ec, header: []string{"#ClusterName", "#BrokerName", "#BrokerAddr", "#BrokerId", "#Epoch", "#StartOffset", "#EndOffset"}}
		for _, e := range ec.EpochList {
			r.rows = append(r.rows, []string{ec.ClusterName, ec.BrokerName, addr, strconv.FormatInt(ec.BrokerID, 10),
				strconv.Itoa(int(e.Epoch)), strconv.FormatInt(e.StartOffset, 10), strconv.FormatInt(e.EndOffset, 10)})
		}
		return r, nil
	})
}

func cmdElectMaster(g *globalFlags, af *adminFlags) *cobra.Command {
	var ctl, name, cluster string
	var id int64
	var cmd *cobra.Command
	cmd = adminCommand(g, af, "electMaster", "Make a broker the master of its set (-a controller -b brokerName -n cluster -i brokerId)", func(c *cobra.Command) {
		c.Flags().StringVarP(&ctl, "controllerAddress", "a", "", "controller address (required)")
		c.Flags().StringVarP(&name, "brokerName", "b", "", "broker name (required)")
		c.Flags().StringVar(&cluster, "clusterName", "", "cluster name (or -n)")
		c.Flags().Int64VarP(&id, "brokerId", "i", 0, "controller-assigned broker id (required)")
		c.MarkFlagRequired("controllerAddress")
		c.MarkFlagRequired("brokerName")
		c.MarkFlagRequired("brokerId")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		// mqadmin's electMaster takes the cluster as -n; here -n is the
		// shared name-server flag, which electMaster does not use.
		if cluster == "" && cmd.Flags().Changed("namesrv") {
			cluster = af.namesrv
		}
		h, err := a.ElectMaster(ctx, ctl, cluster, name, id)
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
	return cmd
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

func cmdCleanBrokerMetadata(g *globalFlags, af *adminFlags) *cobra.Command {
	var ctl, name, cluster, ids string
	var living bool
	return adminCommand(g, af, "cleanBrokerMetadata", "Remove brokers from a controller's metadata", func(c *cobra.Command) {
		c.Flags().StringVarP(&ctl, "controllerAddress", "a", "", "controller address (required)")
		c.Flags().StringVarP(&name, "brokerName", "b", "", "broker name (required)")
		c.Flags().StringVarP(&cluster, "clusterName", "c", "", "cluster name")
		c.Flags().StringVarP(&ids, "brokerControllerIdsToClean", "i", "", "broker ids, ';'-separated (default: the whole set)")
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
				return nil, fmt.Errorf("-i %q: %w", ids, err)
			}
			list = append(list, id)
		}
		if err := a.CleanBrokerMetadata(ctx, ctl, cluster, name, list, living); err != nil {
			return nil, err
		}
		return &result{text: fmt.Sprintf("cleaned broker metadata of %s", name)}, nil
	})
}

func cmdHAStatus(g *globalFlags, af *adminFlags) *cobra.Command {
	var addr string
	return adminCommand(g, af, "haStatus", "Show a broker's replication state (GET_BROKER_HA_STATUS)", func(c *cobra.Command) {
		c.Flags().StringVarP(&addr, "brokerAddr", "b", "", "broker address (required)")
		c.MarkFlagRequired("brokerAddr")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
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
	})
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
