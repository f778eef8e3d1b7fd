package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
)

// ControllerMetaData is GET_METADATA_INFO's answer (getControllerMetaData).
type ControllerMetaData struct {
	Group                   string `json:"group"`
	ControllerLeaderID      string `json:"controllerLeaderId"`
	ControllerLeaderAddress string `json:"controllerLeaderAddress"`
	IsLeader                bool   `json:"isLeader"`
	Peers                   string `json:"peers"`
}

// ControllerMetaData asks the controller at addr (CONTROLLER_GET_METADATA_INFO).
func (a *Admin) ControllerMetaData(ctx context.Context, addr string) (*ControllerMetaData, error) {
	resp, err := a.invokeOK(ctx, addr, "", protocol.NewRequest(protocol.ControllerGetMetadataInfo, nil, nil))
	if err != nil {
		return nil, err
	}
	var h protocol.GetMetaDataResponseHeader
	if err := protocol.DecodeHeader(resp.ExtFields, &h, false); err != nil {
		return nil, fmt.Errorf("admin: metadata header: %w", err)
	}
	return &ControllerMetaData{Group: h.Group, ControllerLeaderID: h.ControllerLeaderID,
		ControllerLeaderAddress: h.ControllerLeaderAddress, IsLeader: h.IsLeader, Peers: h.Peers}, nil
}

// SyncStateData asks a controller for the SyncStateSets of brokerNames
// (CONTROLLER_GET_SYNC_STATE_DATA; every set when empty).
func (a *Admin) SyncStateData(ctx context.Context, addr string, brokerNames []string) (*protocol.BrokerReplicasInfo, error) {
	if brokerNames == nil {
		brokerNames = []string{}
	}
	body, _ := json.Marshal(brokerNames)
	resp, err := a.invokeOK(ctx, addr, "", protocol.NewRequest(protocol.ControllerGetSyncStateData, nil, body))
	if err != nil {
		return nil, err
	}
	var info protocol.BrokerReplicasInfo
	if err := json.Unmarshal(resp.Body, &info); err != nil {
		return nil, fmt.Errorf("admin: sync state data: %w", err)
	}
	return &info, nil
}

// ElectMaster asks a controller to make brokerID the master of brokerName
// (CONTROLLER_ELECT_MASTER with designateElect).
func (a *Admin) ElectMaster(ctx context.Context, addr, cluster, brokerName string, brokerID int64) (*protocol.ReplicaHeader, error) {
	h := protocol.ElectMasterRequestHeader{ClusterName: cluster, BrokerName: brokerName, BrokerID: brokerID,
		DesignateElect: true, InvokeTime: time.Now().UnixMilli()}
	resp, err := a.invokeOK(ctx, addr, "", protocol.NewRequest(protocol.ControllerElectMaster, protocol.EncodeHeader(&h, false), nil))
	if err != nil {
		return nil, err
	}
	var out protocol.ReplicaHeader
	if err := protocol.DecodeHeader(resp.ExtFields, &out, false); err != nil {
		return nil, fmt.Errorf("admin: elect master header: %w", err)
	}
	return &out, nil
}

// ControllerConfig returns a controller's configuration (GET_CONTROLLER_CONFIG).
func (a *Admin) ControllerConfig(ctx context.Context, addr string) (map[string]string, error) {
	resp, err := a.invokeOK(ctx, addr, "", protocol.NewRequest(protocol.GetControllerConfig, nil, nil))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(resp.Body), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			out[k] = v
		}
	}
	return out, nil
}

// UpdateControllerConfig changes run-time controller.conf keys on the
// controller at addr (UPDATE_CONTROLLER_CONFIG; each controller applies it
// for itself and writes it back to its config file).
func (a *Admin) UpdateControllerConfig(ctx context.Context, addr string, kv map[string]string) error {
	if len(kv) == 0 {
		return fmt.Errorf("admin: no key to update")
	}
	var sb strings.Builder
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		if k == "" || strings.ContainsAny(k, "=:\n\r ") || strings.ContainsAny(kv[k], "\n\r") {
			return fmt.Errorf("admin: bad controller config entry %q=%q", k, kv[k])
		}
		sb.WriteString(k + "=" + kv[k] + "\n")
	}
	_, err := a.invokeOK(ctx, addr, "", protocol.NewRequest(protocol.UpdateControllerConfig, nil, []byte(sb.String())))
	return err
}

// CleanBrokerMetadata removes brokers (ids; all of the set when empty)
// from a controller's metadata (CLEAN_BROKER_DATA).
func (a *Admin) CleanBrokerMetadata(ctx context.Context, addr, cluster, brokerName string, ids []int64, cleanLiving bool) error {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	h := protocol.CleanControllerBrokerDataRequestHeader{ClusterName: cluster, BrokerName: brokerName,
		BrokerControllerIDsToClean: strings.Join(parts, ";"), IsCleanLivingBroker: cleanLiving, InvokeTime: time.Now().UnixMilli()}
	_, err := a.invokeOK(ctx, addr, "", protocol.NewRequest(protocol.CleanBrokerData, protocol.EncodeHeader(&h, false), nil))
	return err
}

// BrokerEpoch returns a broker's epoch entries (GET_BROKER_EPOCH_CACHE).
func (a *Admin) BrokerEpoch(ctx context.Context, brokerAddr string) (*protocol.EpochEntryCache, error) {
	resp, err := a.invokeOK(ctx, brokerAddr, "", protocol.NewRequest(protocol.GetBrokerEpochCache, nil, nil))
	if err != nil {
		return nil, err
	}
	var c protocol.EpochEntryCache
	if err := json.Unmarshal(resp.Body, &c); err != nil {
		return nil, fmt.Errorf("admin: epoch cache: %w", err)
	}
	return &c, nil
}

// HAStatus returns a broker's replication state (GET_BROKER_HA_STATUS).
func (a *Admin) HAStatus(ctx context.Context, brokerAddr string) (*protocol.HARuntimeInfo, error) {
	resp, err := a.invokeOK(ctx, brokerAddr, "", protocol.NewRequest(protocol.GetBrokerHAStatus, nil, nil))
	if err != nil {
		return nil, err
	}
	var h protocol.HARuntimeInfo
	if err := json.Unmarshal(resp.Body, &h); err != nil {
		return nil, fmt.Errorf("admin: HA status: %w", err)
	}
	return &h, nil
}
