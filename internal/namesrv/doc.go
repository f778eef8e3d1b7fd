// Package namesrv is Apogee's name server: the route registry brokers
// register with and clients query (docs/broker.md §3, docs/protocol.md
// §3.2, §3.5, §3.8).
//
// It owns the route tables, broker liveness (expiry scan and removal on
// connection loss), the KV config and the request processors. It never
// touches the store or the broker, and keeps nothing on disk but the KV
// config file.
//
// # Tables
//
// RouteInfoManager holds its tables behind ONE sync.RWMutex (mu). Route
// reads take it shared; registrations, removals and admin changes take it
// exclusively. No I/O happens under it: expired brokers' connections are
// returned by ScanNotActiveBroker and closed by the Server afterwards.
//
//	topicQueueTable       topic ──► brokerName ──► QueueData{read/write queue nums, perm, sysFlag}
//	brokerAddrTable       brokerName ──► BrokerData{cluster, brokerAddrs: brokerId ──► "host:port"}
//	clusterAddrTable      clusterName ──► {brokerName}
//	brokerLiveTable       (clusterName, brokerAddr) ──► {lastUpdate, timeout, dataVersion, channel, haServerAddr}
//	filterServerTable     (clusterName, brokerAddr) ──► [filter server addr]   (legacy)
//	topicQueueMappingInfo topic ──► brokerName ──► static-topic mapping JSON
//	topicTombstones       topic ──► brokerName ──► deletion time (ms, name-server clock)
//
// A tombstone is left by DELETE_TOPIC_IN_NAMESRV for every broker group in
// scope. A broker registers a snapshot of its topic table, so a snapshot
// taken before the broker deleted the topic can arrive after the name-server
// deletion; while the tombstone lives, a registration whose
// dataVersion.timestamp (the broker's last topic-table change) is older
// does not re-add the topic for that broker, and a newer one (re-created
// since) re-adds it and drops the tombstone. Tombstones expire after
// brokerChannelExpiredTime (dropped by the liveness scan) and leave with
// their broker group.
//
// Invariants: no inner map or set is empty (the outer entry goes with its
// last element); a broker address appears under one id per broker name;
// only masters (id 0) — or the lowest-id slave of an acting-master group —
// contribute QueueData.
//
// # Liveness
//
//	REGISTER_BROKER / QUERY_DATA_VERSION / BROKER_HEARTBEAT ──► lastUpdate = now
//	scan every scanNotActiveBrokerInterval: lastUpdate + timeout < now ──► remove, close channel
//	connection close / exception / idle ──► remove every broker registered on it
//
// Removing the last address of a broker name removes the name from its
// cluster and its QueueData from every topic (a topic without QueueData
// has no route: TOPIC_NOT_EXIST).
//
// # KV config
//
// KVConfigManager has its own RWMutex over namespace ──► key ──► value and
// persists {"configTable":{...}} to kvConfigPath after every change:
// temp file, fsync, rename, directory fsync, outside its lock.
//
// # Concurrency
//
// Server starts the remoting server (processors on two pools: routes on
// clientRequestThreadPoolNums workers, everything else on
// defaultThreadPoolNums) and one scan goroutine; Close stops both and
// waits for them.
package namesrv
