package protocol

// Custom headers of the name server's requests and responses (docs/protocol.md
// §3.2, §3.5, §3.8). They use the `ext` tags of DecodeHeader/EncodeHeader
// (headers_broker.go): `,req` marks fields the Java header class declares
// not-null; pointer fields are optional and nil when absent.

// GetRouteInfoRequestHeader is GET_ROUTEINFO_BY_TOPIC's (105) header.
type GetRouteInfoRequestHeader struct {
	Topic                  string `ext:"topic,req"`
	AcceptStandardJSONOnly *bool  `ext:"acceptStandardJsonOnly"`
}

// RegisterBrokerRequestHeader is REGISTER_BROKER's (103) header.
type RegisterBrokerRequestHeader struct {
	BrokerName   string `ext:"brokerName,req"`
	BrokerAddr   string `ext:"brokerAddr,req"`
	ClusterName  string `ext:"clusterName,req"`
	HaServerAddr string `ext:"haServerAddr,req"`
	BrokerID     int64  `ext:"brokerId,req"`
	// HeartbeatTimeoutMillis overrides the name server's expiry for this
	// broker; sent only in slave-acting-master mode.
	HeartbeatTimeoutMillis *int64 `ext:"heartbeatTimeoutMillis"`
	// EnableActingMaster is absent from brokers older than 5.0.
	EnableActingMaster *bool  `ext:"enableActingMaster"`
	Compressed         bool   `ext:"compressed"`
	BodyCrc32          int32  `ext:"bodyCrc32"` // CRC-32 of the body & 0x7FFFFFFF; 0 = unchecked
	ZoneName           string `ext:"__ZONE_NAME,omitempty"`
}

// RegisterBrokerResponseHeader answers REGISTER_BROKER; both fields are set
// only for a slave whose master is registered.
type RegisterBrokerResponseHeader struct {
	HaServerAddr string `ext:"haServerAddr,omitempty"`
	MasterAddr   string `ext:"masterAddr,omitempty"`
}

// BrokerIdentityHeader is the header of UNREGISTER_BROKER (104) and
// QUERY_DATA_VERSION (322).
type BrokerIdentityHeader struct {
	BrokerName  string `ext:"brokerName,req"`
	BrokerAddr  string `ext:"brokerAddr,req"`
	ClusterName string `ext:"clusterName,req"`
	BrokerID    int64  `ext:"brokerId,req"`
}

// QueryDataVersionResponseHeader answers QUERY_DATA_VERSION.
type QueryDataVersionResponseHeader struct {
	Changed bool `ext:"changed"`
}

// BrokerHeartbeatRequestHeader is BROKER_HEARTBEAT's (904) header.
type BrokerHeartbeatRequestHeader struct {
	ClusterName           string `ext:"clusterName,req"`
	BrokerAddr            string `ext:"brokerAddr,req"`
	BrokerName            string `ext:"brokerName,req"`
	BrokerID              *int64 `ext:"brokerId"`
	Epoch                 *int32 `ext:"epoch"`
	MaxOffset             *int64 `ext:"maxOffset"`
	ConfirmOffset         *int64 `ext:"confirmOffset"`
	HeartbeatTimeoutMills *int64 `ext:"heartbeatTimeoutMills"`
	ElectionPriority      *int32 `ext:"electionPriority"`
}

// RegisterTopicRequestHeader is REGISTER_TOPIC_IN_NAMESRV's (217) header.
type RegisterTopicRequestHeader struct {
	Topic string `ext:"topic,req"`
}

// GetBrokerMemberGroupRequestHeader is GET_BROKER_MEMBER_GROUP's (901) header.
type GetBrokerMemberGroupRequestHeader struct {
	ClusterName string `ext:"clusterName,req"`
	BrokerName  string `ext:"brokerName,req"`
}

// DeleteTopicFromNamesrvRequestHeader is DELETE_TOPIC_IN_NAMESRV's (216)
// header; with ClusterName only that cluster's brokers lose the topic.
type DeleteTopicFromNamesrvRequestHeader struct {
	Topic       string `ext:"topic,req"`
	ClusterName string `ext:"clusterName,omitempty"`
}

// GetTopicsByClusterRequestHeader is GET_TOPICS_BY_CLUSTER's (224) header.
type GetTopicsByClusterRequestHeader struct {
	Cluster string `ext:"cluster,req"`
}

// BrokerNameHeader is the header of WIPE_WRITE_PERM_OF_BROKER (205) and
// ADD_WRITE_PERM_OF_BROKER (327).
type BrokerNameHeader struct {
	BrokerName string `ext:"brokerName,req"`
}

// WipeWritePermOfBrokerResponseHeader answers 205.
type WipeWritePermOfBrokerResponseHeader struct {
	WipeTopicCount int32 `ext:"wipeTopicCount"`
}

// AddWritePermOfBrokerResponseHeader answers 327.
type AddWritePermOfBrokerResponseHeader struct {
	AddTopicCount int32 `ext:"addTopicCount"`
}

// PutKVConfigRequestHeader is PUT_KV_CONFIG's (100) header.
type PutKVConfigRequestHeader struct {
	Namespace string `ext:"namespace,req"`
	Key       string `ext:"key,req"`
	Value     string `ext:"value,req"`
}

// KVConfigKeyHeader is the header of GET_KV_CONFIG (101) and
// DELETE_KV_CONFIG (102).
type KVConfigKeyHeader struct {
	Namespace string `ext:"namespace,req"`
	Key       string `ext:"key,req"`
}

// GetKVConfigResponseHeader answers GET_KV_CONFIG.
type GetKVConfigResponseHeader struct {
	Value string `ext:"value"`
}

// NamespaceHeader is GET_KVLIST_BY_NAMESPACE's (219) header.
type NamespaceHeader struct {
	Namespace string `ext:"namespace,req"`
}
