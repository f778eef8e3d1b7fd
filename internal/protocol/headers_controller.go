package protocol

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Headers and bodies of RocketMQ 5's controller requests (1001-1017) and
// of the broker requests controller mode adds (GET_BROKER_EPOCH_CACHE,
// NOTIFY_BROKER_ROLE_CHANGED, GET_BROKER_HA_STATUS). Field names are the
// Java classes' (org.apache.rocketmq.remoting.protocol.header.controller);
// part of the wire format, never rename.

// GetNextBrokerIDRequestHeader is CONTROLLER_GET_NEXT_BROKER_ID's (1012).
type GetNextBrokerIDRequestHeader struct {
	ClusterName string `ext:"clusterName"`
	BrokerName  string `ext:"brokerName"`
}

// GetNextBrokerIDResponseHeader answers 1012.
type GetNextBrokerIDResponseHeader struct {
	ClusterName  string `ext:"clusterName"`
	BrokerName   string `ext:"brokerName"`
	NextBrokerID *int64 `ext:"nextBrokerId"`
}

// ApplyBrokerIDRequestHeader is CONTROLLER_APPLY_BROKER_ID's (1013). The
// check code (brokerAddr;timestamp in RocketMQ) lets a broker that lost
// its identity file re-apply for the id it applied for before.
type ApplyBrokerIDRequestHeader struct {
	ClusterName       string `ext:"clusterName"`
	BrokerName        string `ext:"brokerName"`
	AppliedBrokerID   int64  `ext:"appliedBrokerId"`
	RegisterCheckCode string `ext:"registerCheckCode"`
}

// ApplyBrokerIDResponseHeader answers 1013.
type ApplyBrokerIDResponseHeader struct {
	ClusterName string `ext:"clusterName"`
	BrokerName  string `ext:"brokerName"`
}

// RegisterBrokerToControllerRequestHeader is CONTROLLER_REGISTER_BROKER's
// (1003).
type RegisterBrokerToControllerRequestHeader struct {
	ClusterName   string `ext:"clusterName"`
	BrokerName    string `ext:"brokerName"`
	BrokerID      int64  `ext:"brokerId"`
	BrokerAddress string `ext:"brokerAddress"`
	InvokeTime    int64  `ext:"invokeTime"`
	// HeartbeatTimeoutMills is an Apogee extension: the broker's
	// controllerHeartBeatTimeoutMills, kept in the replicated state so a new
	// controller leader times the broker out as configured (Java brokers do
	// not send it: 10 s).
	HeartbeatTimeoutMills *int64 `ext:"heartbeatTimeoutMills"`
}

// ReplicaHeader is the master view shared by the answers of 1003, 1004,
// 1002 and the NOTIFY_BROKER_ROLE_CHANGED request: RegisterBrokerToController-,
// GetReplicaInfo- and ElectMasterResponseHeader carry these fields (1004
// without syncStateSetEpoch). A nil id or empty address means no master.
type ReplicaHeader struct {
	ClusterName       string `ext:"clusterName,omitempty"`
	BrokerName        string `ext:"brokerName,omitempty"`
	MasterBrokerID    *int64 `ext:"masterBrokerId"`
	MasterAddress     string `ext:"masterAddress,omitempty"`
	MasterEpoch       *int32 `ext:"masterEpoch"`
	SyncStateSetEpoch *int32 `ext:"syncStateSetEpoch"`
}

// GetReplicaInfoRequestHeader is CONTROLLER_GET_REPLICA_INFO's (1004).
type GetReplicaInfoRequestHeader struct {
	BrokerName string `ext:"brokerName"`
}

// AlterSyncStateSetRequestHeader is CONTROLLER_ALTER_SYNC_STATE_SET's
// (1001); the body is the proposed SyncStateSet.
type AlterSyncStateSetRequestHeader struct {
	BrokerName     string `ext:"brokerName"`
	MasterBrokerID int64  `ext:"masterBrokerId"`
	MasterEpoch    int32  `ext:"masterEpoch"`
	InvokeTime     int64  `ext:"invokeTime"`
}

// AlterSyncStateSetResponseHeader answers 1001.
type AlterSyncStateSetResponseHeader struct {
	NewSyncStateSetEpoch int32 `ext:"newSyncStateSetEpoch"`
}

// ElectMasterRequestHeader is CONTROLLER_ELECT_MASTER's (1002).
// DesignateElect (admin electMaster) makes BrokerID the master if it is
// alive and, unless unclean election is enabled, in the SyncStateSet.
type ElectMasterRequestHeader struct {
	ClusterName    string `ext:"clusterName"`
	BrokerName     string `ext:"brokerName"`
	BrokerID       int64  `ext:"brokerId"`
	DesignateElect bool   `ext:"designateElect"`
	InvokeTime     int64  `ext:"invokeTime"`
}

// GetMetaDataResponseHeader answers CONTROLLER_GET_METADATA_INFO (1005).
type GetMetaDataResponseHeader struct {
	Group                   string `ext:"group"`
	ControllerLeaderID      string `ext:"controllerLeaderId"`
	ControllerLeaderAddress string `ext:"controllerLeaderAddress"`
	IsLeader                bool   `ext:"isLeader"`
	Peers                   string `ext:"peers"`
}

// CleanControllerBrokerDataRequestHeader is CLEAN_BROKER_DATA's (1011).
// BrokerControllerIDsToClean is ';'-separated; empty cleans the whole
// broker set.
type CleanControllerBrokerDataRequestHeader struct {
	ClusterName                string `ext:"clusterName"`
	BrokerName                 string `ext:"brokerName"`
	BrokerControllerIDsToClean string `ext:"brokerControllerIdsToClean"`
	IsCleanLivingBroker        bool   `ext:"isCleanLivingBroker"`
	InvokeTime                 int64  `ext:"invokeTime"`
}

// SyncStateSet is the body of 1001, 1003, 1004 and 1008: the ids of the
// replicas considered in sync (the master included) and the set's epoch.
type SyncStateSet struct {
	SyncStateSet      []int64 `json:"syncStateSet"`
	SyncStateSetEpoch int32   `json:"syncStateSetEpoch"`
}

// Encode renders the body (ids sorted, never null).
func (s SyncStateSet) Encode() []byte {
	ids := slices.Clone(s.SyncStateSet)
	if ids == nil {
		ids = []int64{}
	}
	slices.Sort(ids)
	b, _ := json.Marshal(SyncStateSet{SyncStateSet: ids, SyncStateSetEpoch: s.SyncStateSetEpoch})
	return b
}

// DecodeSyncStateSet parses a SyncStateSet body.
func DecodeSyncStateSet(body []byte) (SyncStateSet, error) {
	var s SyncStateSet
	if len(body) == 0 {
		return s, fmt.Errorf("protocol: empty SyncStateSet body")
	}
	if err := UnmarshalFastJSON(body, &s); err != nil {
		return s, fmt.Errorf("protocol: SyncStateSet body: %w", err)
	}
	return s, nil
}

// ElectMasterResponseBody is the body of a successful 1002.
type ElectMasterResponseBody struct {
	BrokerMemberGroup *BrokerMemberGroup `json:"brokerMemberGroup"`
	SyncStateSet      []int64            `json:"syncStateSet"`
}

// ReplicaIdentity is one replica in BrokerReplicasInfo.
type ReplicaIdentity struct {
	BrokerName    string `json:"brokerName"`
	BrokerID      int64  `json:"brokerId"`
	BrokerAddress string `json:"brokerAddress"`
	Alive         bool   `json:"alive"`
}

// ReplicasInfo is one broker set's view in BrokerReplicasInfo.
type ReplicasInfo struct {
	MasterBrokerID    int64             `json:"masterBrokerId"`
	MasterAddress     string            `json:"masterAddress"`
	MasterEpoch       int32             `json:"masterEpoch"`
	SyncStateSetEpoch int32             `json:"syncStateSetEpoch"`
	InSyncReplicas    []ReplicaIdentity `json:"inSyncReplicas"`
	NotInSyncReplicas []ReplicaIdentity `json:"notInSyncReplicas"`
}

// BrokerReplicasInfo answers CONTROLLER_GET_SYNC_STATE_DATA (1006), whose
// request body is a JSON array of broker names.
type BrokerReplicasInfo struct {
	ReplicasInfoTable map[string]ReplicasInfo `json:"replicasInfoTable"`
}

// EpochEntry is one master epoch of a broker's commit log: the epoch and
// the commit-log offset where it starts. EndOffset is the next entry's
// start (or the log end for the last one) in GET_BROKER_EPOCH_CACHE.
type EpochEntry struct {
	Epoch       int32 `json:"epoch"`
	StartOffset int64 `json:"startOffset"`
	EndOffset   int64 `json:"endOffset"`
}

// EpochEntryCache answers GET_BROKER_EPOCH_CACHE (1007).
type EpochEntryCache struct {
	ClusterName string       `json:"clusterName"`
	BrokerName  string       `json:"brokerName"`
	BrokerID    int64        `json:"brokerId"`
	EpochList   []EpochEntry `json:"epochList"`
	MaxOffset   int64        `json:"maxOffset"`
}

// HAConnectionRuntimeInfo is one slave connection in HARuntimeInfo. Fields
// a broker does not measure are omitted (omitempty), never sent as 0.
type HAConnectionRuntimeInfo struct {
	Addr                    string `json:"addr"`
	SlaveAckOffset          int64  `json:"slaveAckOffset"`
	Diff                    int64  `json:"diff"`
	InSync                  bool   `json:"inSync"`
	TransferredByteInSecond int64  `json:"transferredByteInSecond,omitempty"`
	TransferFromWhere       int64  `json:"transferFromWhere,omitempty"`
}

// HAClientRuntimeInfo is a slave's side in HARuntimeInfo.
type HAClientRuntimeInfo struct {
	MasterAddr              string `json:"masterAddr"`
	TransferredByteInSecond int64  `json:"transferredByteInSecond,omitempty"`
	MaxOffset               int64  `json:"maxOffset"`
	LastReadTimestamp       int64  `json:"lastReadTimestamp,omitempty"`
	LastWriteTimestamp      int64  `json:"lastWriteTimestamp,omitempty"`
	MasterFlushOffset       int64  `json:"masterFlushOffset,omitempty"`
	IsActivated             bool   `json:"isActivated"`
}

// HARuntimeInfo answers GET_BROKER_HA_STATUS (907).
type HARuntimeInfo struct {
	Master                   bool                      `json:"master"`
	MasterCommitLogMaxOffset int64                     `json:"masterCommitLogMaxOffset"`
	InSyncSlaveNums          int                       `json:"inSyncSlaveNums"`
	HAConnectionInfo         []HAConnectionRuntimeInfo `json:"haConnectionInfo"`
	HAClientRuntimeInfo      *HAClientRuntimeInfo      `json:"haClientRuntimeInfo"`
}

// BrokerCloseChannelRequestHeader is BROKER_CLOSE_CHANNEL_REQUEST's (1014):
// the broker's connection is gone, treat it as inactive now.
type BrokerCloseChannelRequestHeader struct {
	ClusterName string `ext:"clusterName,omitempty"`
	BrokerName  string `ext:"brokerName"`
	BrokerID    int64  `ext:"brokerId"`
}
