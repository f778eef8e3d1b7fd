package admin

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/apogeemq/apogee/internal/protocol"
)

// Broker is one broker group: its cluster, name and addresses by broker id
// (0 = master).
type Broker struct {
	Cluster string
	Name    string
	Addrs   map[int64]string
}

// MasterAddr returns the id-0 address, "" without a master.
func (b Broker) MasterAddr() string { return b.Addrs[0] }

// ClusterInfo is the name server's view: clusters and their brokers.
type ClusterInfo struct {
	Clusters map[string][]string // cluster -> broker names (sorted)
	Brokers  map[string]Broker   // broker name -> broker
}

// ClusterInfo asks a name server for every cluster and broker
// (GET_BROKER_CLUSTER_INFO).
func (a *Admin) ClusterInfo(ctx context.Context) (*ClusterInfo, error) {
	resp, err := a.nameServerOK(ctx, "", protocol.NewRequest(protocol.GetBrokerClusterInfo, nil, nil))
	if err != nil {
		return nil, err
	}
	ci, err := protocol.DecodeClusterInfo(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("admin: cluster info: %w", err)
	}
	out := &ClusterInfo{Clusters: map[string][]string{}, Brokers: map[string]Broker{}}
	for c, names := range ci.ClusterAddrTable {
		out.Clusters[c] = slices.Sorted(slices.Values(names))
	}
	for name, b := range ci.BrokerAddrTable {
		if b == nil {
			continue
		}
		out.Brokers[name] = Broker{Cluster: b.Cluster, Name: name, Addrs: maps.Clone(b.BrokerAddrs)}
	}
	return out, nil
}

// BrokerRuntimeInfo returns a broker's runtime statistics
// (GET_BROKER_RUNTIME_INFO: brokerVersionDesc, putTps, commitLogMaxOffset,
// ...).
func (a *Admin) BrokerRuntimeInfo(ctx context.Context, brokerAddr string) (map[string]string, error) {
	resp, err := a.invokeOK(ctx, brokerAddr, "", protocol.NewRequest(protocol.GetBrokerRuntimeInfo, nil, nil))
	if err != nil {
		return nil, err
	}
	kv, err := protocol.DecodeKVTable(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("admin: runtime info of %s: %w", brokerAddr, err)
	}
	if kv.Table == nil {
		kv.Table = map[string]string{}
	}
	return kv.Table, nil
}
