package namesrv

import (
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
)

// ErrRegisterRefused is returned by RegisterBroker for a registration that
// carries exactly one topic from a broker id not registered yet: it is an
// incremental registration that raced ahead of the broker's first full one
// (docs/broker.md §3.2, docs/protocol.md §3.5).
var ErrRegisterRefused = errors.New("namesrv: register broker failed")

// Channel is the connection a broker registered on. *remoting.Conn
// satisfies it; the registry only compares IDs and hands channels back to
// the caller to close.
type Channel interface {
	ID() uint64
	Close() error
}

// BrokerAddrInfo identifies one broker process: its cluster and address.
type BrokerAddrInfo struct {
	ClusterName string
	BrokerAddr  string
}

// brokerLiveInfo is the liveness entry of one broker process.
type brokerLiveInfo struct {
	lastUpdate   time.Time
	timeout      time.Duration // expiry after lastUpdate
	dataVersion  protocol.DataVersion
	channel      Channel // nil when registered without a connection (tests)
	haServerAddr string
}

// RouteOptions are the name-server settings the registry obeys. They may
// change at run time (UPDATE_NAMESRV_CONFIG).
type RouteOptions struct {
	// BrokerChannelExpiredTime is the default liveness timeout (120 s).
	BrokerChannelExpiredTime time.Duration
	// DeleteTopicWithBrokerRegistration drops a master's topics that its
	// full registration no longer lists.
	DeleteTopicWithBrokerRegistration bool
	// SupportActingMaster presents the lowest-id slave as master in routes
	// of read-only broker groups that lost their master.
	SupportActingMaster bool
}

// RouteInfoManager is the name server's route registry: pure logic over
// the tables of doc.go, with an injected clock. It does no I/O; channels of
// expired brokers are returned to the caller to close.
type RouteInfoManager struct {
	now    func() time.Time
	logger *slog.Logger

	// mu guards every field below. Readers (routes, lists) take it shared;
	// registrations, removals and admin changes take it exclusively. Nothing
	// under it blocks on I/O.
	mu   sync.RWMutex
	opts RouteOptions
	// topic -> brokerName -> queues. Invariant: no inner map is empty.
	topicQueueTable map[string]map[string]*protocol.QueueData
	// brokerName -> broker group. Invariant: BrokerAddrs is never empty.
	brokerAddrTable map[string]*protocol.BrokerData
	// clusterName -> set of broker names. Invariant: no set is empty.
	clusterAddrTable map[string]map[string]struct{}
	brokerLiveTable  map[BrokerAddrInfo]*brokerLiveInfo
	// legacy filter servers per broker process; kept only to answer routes.
	filterServerTable map[BrokerAddrInfo][]string
	// topic -> brokerName -> static-topic mapping (verbatim JSON).
	topicQueueMappingInfoTable map[string]map[string]json.RawMessage
	// topic -> brokerName -> name-server time (ms) of a DELETE_TOPIC_IN_NAMESRV.
	// A registration of that broker whose data version timestamp is older
	// was snapshotted before the broker deleted the topic and must not
	// re-add it. Entries live BrokerChannelExpiredTime and leave with their
	// broker group. Invariant: no inner map is empty.
	topicTombstones map[string]map[string]int64
}

// NewRouteInfoManager returns an empty registry. now is the clock (nil means
// time.Now); logger may be nil.
func NewRouteInfoManager(opts RouteOptions, now func() time.Time, logger *slog.Logger) *RouteInfoManager {
	if now == nil {
		now = time.Now
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if opts.BrokerChannelExpiredTime <= 0 {
		opts.BrokerChannelExpiredTime = DefaultBrokerChannelExpiredTime
	}
	return &RouteInfoManager{
		now:                        now,
		logger:                     logger,
		opts:                       opts,
		topicQueueTable:            make(map[string]map[string]*protocol.QueueData),
		brokerAddrTable:            make(map[string]*protocol.BrokerData),
		clusterAddrTable:           make(map[string]map[string]struct{}),
		brokerLiveTable:            make(map[BrokerAddrInfo]*brokerLiveInfo),
		filterServerTable:          make(map[BrokerAddrInfo][]string),
		topicQueueMappingInfoTable: make(map[string]map[string]json.RawMessage),
		topicTombstones:            make(map[string]map[string]int64),
	}
}

// SetOptions replaces the registry's options.
func (m *RouteInfoManager) SetOptions(opts RouteOptions) {
	if opts.BrokerChannelExpiredTime <= 0 {
		opts.BrokerChannelExpiredTime = DefaultBrokerChannelExpiredTime
	}
	m.mu.Lock()
	m.opts = opts
	m.mu.Unlock()
}

// RegisterBrokerRequest is one REGISTER_BROKER, decoded.
type RegisterBrokerRequest struct {
	ClusterName  string
	BrokerAddr   string
	BrokerName   string
	BrokerID     int64
	HaServerAddr string
	ZoneName     string
	// HeartbeatTimeout overrides RouteOptions.BrokerChannelExpiredTime when > 0.
	HeartbeatTimeout time.Duration
	// EnableActingMaster is nil for brokers older than 5.0.
	EnableActingMaster *bool
	// TopicConfig is the broker's (possibly partial) topic table; may be nil.
	TopicConfig      *protocol.TopicConfigSerializeWrapper
	FilterServerList []string // nil = leave unchanged; empty = clear
	Channel          Channel  // may be nil
}

// RegisterBrokerResult is what the registering broker is told.
type RegisterBrokerResult struct {
	HaServerAddr string // the master's HA address, for a slave whose master is live
	MasterAddr   string
	// Stale is set when the registration was ignored because another address
	// already holds this broker id with a newer state version.
	Stale bool
	// NewBroker is set when this broker process had no liveness entry.
	NewBroker bool
}

// RegisterBroker applies a broker registration (docs/broker.md
// §3.2): the broker joins its cluster and group, an address registered
// under another id of the group moves to this id, and a master's (or
// acting-master prime slave's) topics are upserted into the queue table when
// this is its first registration, its data version changed, or the topic has
// no entry for the broker yet. Topics not listed are kept (docs/protocol.md §9.5 item 42)
// unless DeleteTopicWithBrokerRegistration is on. A topic deleted by
// DeleteTopic is not re-added from a registration whose data version
// timestamp is older than the deletion (a snapshot taken before the broker
// deleted it); a newer one (re-created since) re-adds it. The liveness entry
// is refreshed with the request's channel.
func (m *RouteInfoManager) RegisterBroker(req RegisterBrokerRequest) (RegisterBrokerResult, error) {
	var res RegisterBrokerResult
	now := m.now()
	var dataVersion protocol.DataVersion
	var topicCount int
	if req.TopicConfig != nil {
		dataVersion = req.TopicConfig.DataVersion
		topicCount = len(req.TopicConfig.TopicConfigTable)
	}
	addrInfo := BrokerAddrInfo{req.ClusterName, req.BrokerAddr}

	m.mu.Lock()
	defer m.mu.Unlock()

	brokerData := m.brokerAddrTable[req.BrokerName]
	registerFirst := brokerData == nil
	var known map[int64]string
	if brokerData != nil {
		known = brokerData.BrokerAddrs
	}
	// Another address holds this id with a newer state version: the
	// registering process is a stale master; forget it.
	if oldAddr, ok := known[req.BrokerID]; ok && oldAddr != req.BrokerAddr {
		if old := m.brokerLiveTable[BrokerAddrInfo{req.ClusterName, oldAddr}]; old != nil &&
			old.dataVersion.StateVersion > dataVersion.StateVersion {
			delete(m.brokerLiveTable, addrInfo)
			res.Stale = true
			return res, nil
		}
	}
	if _, ok := known[req.BrokerID]; !ok && topicCount == 1 {
		return res, ErrRegisterRefused
	}

	names := m.clusterAddrTable[req.ClusterName]
	if names == nil {
		names = make(map[string]struct{})
		m.clusterAddrTable[req.ClusterName] = names
	}
	names[req.BrokerName] = struct{}{}
	if brokerData == nil {
		brokerData = &protocol.BrokerData{Cluster: req.ClusterName, BrokerName: req.BrokerName, BrokerAddrs: make(map[int64]string)}
		m.brokerAddrTable[req.BrokerName] = brokerData
	}
	oldVersionBroker := req.EnableActingMaster == nil
	brokerData.EnableActingMaster = !oldVersionBroker && *req.EnableActingMaster
	brokerData.ZoneName = req.ZoneName

	// One address has one id: a slave promoted to master re-registers with
	// id 0 from the same address, which replaces its old id.
	for id, addr := range brokerData.BrokerAddrs {
		if addr == req.BrokerAddr && id != req.BrokerID {
			delete(brokerData.BrokerAddrs, id)
		}
	}
	oldAddr := brokerData.BrokerAddrs[req.BrokerID]
	brokerData.BrokerAddrs[req.BrokerID] = req.BrokerAddr
	registerFirst = registerFirst || oldAddr == ""

	isMaster := req.BrokerID == protocol.MasterID
	isPrimeSlave := !oldVersionBroker && !isMaster && req.BrokerID == minKey(brokerData.BrokerAddrs)
	if req.TopicConfig != nil && (isMaster || isPrimeSlave) {
		tcTable := req.TopicConfig.TopicConfigTable
		mappings := req.TopicConfig.TopicQueueMappingInfoMap
		if m.opts.DeleteTopicWithBrokerRegistration && len(mappings) == 0 {
			for topic, qdMap := range m.topicQueueTable {
				if _, listed := tcTable[topic]; listed {
					continue
				}
				if _, ok := qdMap[req.BrokerName]; ok {
					delete(qdMap, req.BrokerName)
					if len(qdMap) == 0 {
						delete(m.topicQueueTable, topic)
					}
				}
			}
		}
		versionChanged := m.brokerTopicConfigChangedLocked(addrInfo, dataVersion)
		for key, tc := range tcTable {
			topic := tc.TopicName
			if topic == "" {
				topic = key
			}
			if !registerFirst && !versionChanged && m.topicHasBrokerLocked(topic, req.BrokerName) {
				continue
			}
			if m.deletedSinceLocked(topic, req.BrokerName, dataVersion.Timestamp, now) {
				continue
			}
			perm := tc.Perm
			if isPrimeSlave && brokerData.EnableActingMaster {
				perm &^= protocol.PermWrite // the acting master is read-only
			}
			m.upsertQueueDataLocked(topic, protocol.QueueData{
				BrokerName: req.BrokerName, ReadQueueNums: tc.ReadQueueNums, WriteQueueNums: tc.WriteQueueNums,
				Perm: perm, TopicSysFlag: tc.TopicSysFlag,
			})
		}
		if versionChanged || registerFirst {
			for topic, raw := range mappings {
				if m.tombstonedLocked(topic, req.BrokerName) {
					continue
				}
				bname := mappingBrokerName(raw, req.BrokerName)
				inner := m.topicQueueMappingInfoTable[topic]
				if inner == nil {
					inner = make(map[string]json.RawMessage)
					m.topicQueueMappingInfoTable[topic] = inner
				}
				inner[bname] = raw
			}
		}
	}

	timeout := req.HeartbeatTimeout
	if timeout <= 0 {
		timeout = m.opts.BrokerChannelExpiredTime
	}
	_, wasLive := m.brokerLiveTable[addrInfo]
	res.NewBroker = !wasLive
	m.brokerLiveTable[addrInfo] = &brokerLiveInfo{
		lastUpdate: now, timeout: timeout, dataVersion: dataVersion,
		channel: req.Channel, haServerAddr: req.HaServerAddr,
	}
	if req.FilterServerList != nil {
		if len(req.FilterServerList) == 0 {
			delete(m.filterServerTable, addrInfo)
		} else {
			m.filterServerTable[addrInfo] = slices.Clone(req.FilterServerList)
		}
	}
	if !isMaster {
		if masterAddr := brokerData.BrokerAddrs[protocol.MasterID]; masterAddr != "" {
			if ml := m.brokerLiveTable[BrokerAddrInfo{req.ClusterName, masterAddr}]; ml != nil {
				res.HaServerAddr = ml.haServerAddr
				res.MasterAddr = masterAddr
			}
		}
	}
	return res, nil
}

// mappingBrokerName reads "bname" from a static-topic mapping.
func mappingBrokerName(raw json.RawMessage, fallback string) string {
	var v struct {
		Bname string `json:"bname"`
	}
	if json.Unmarshal(raw, &v) == nil && v.Bname != "" {
		return v.Bname
	}
	return fallback
}

func minKey(m map[int64]string) int64 {
	first := true
	var lo int64
	for k := range m {
		if first || k < lo {
			lo, first = k, false
		}
	}
	return lo
}

// REQUIRES: m.mu held.
func (m *RouteInfoManager) brokerTopicConfigChangedLocked(addr BrokerAddrInfo, dv protocol.DataVersion) bool {
	live := m.brokerLiveTable[addr]
	return live == nil || live.dataVersion != dv
}

// deletedSinceLocked reports whether topic was deleted for brokerName after
// the broker's topic table was last changed (versionTS, broker ms): the
// registration carrying it is stale for that topic. A newer registration
// (the topic was re-created) drops the tombstone; an expired one is
// dropped too.
//
// REQUIRES: m.mu held exclusively.
func (m *RouteInfoManager) deletedSinceLocked(topic, brokerName string, versionTS int64, now time.Time) bool {
	inner := m.topicTombstones[topic]
	deletedAt, ok := inner[brokerName]
	if !ok {
		return false
	}
	if versionTS < deletedAt && now.UnixMilli()-deletedAt <= m.opts.BrokerChannelExpiredTime.Milliseconds() {
		m.logger.Debug("namesrv: stale registration does not re-add a deleted topic", "topic", topic,
			"brokerName", brokerName, "dataVersionTimestamp", versionTS, "deletedAt", deletedAt)
		return true
	}
	delete(inner, brokerName)
	if len(inner) == 0 {
		delete(m.topicTombstones, topic)
	}
	return false
}

// tombstonedLocked reports whether topic still has a tombstone for
// brokerName (the registration's topic loop has already dropped those it
// overrode).
//
// REQUIRES: m.mu held.
func (m *RouteInfoManager) tombstonedLocked(topic, brokerName string) bool {
	_, ok := m.topicTombstones[topic][brokerName]
	return ok
}

// tombstoneLocked records that topic was deleted for brokerName now.
//
// REQUIRES: m.mu held exclusively.
func (m *RouteInfoManager) tombstoneLocked(topic, brokerName string, nowMs int64) {
	inner := m.topicTombstones[topic]
	if inner == nil {
		inner = make(map[string]int64)
		m.topicTombstones[topic] = inner
	}
	inner[brokerName] = nowMs
}

// dropTombstonesLocked forgets every tombstone keep rejects.
//
// REQUIRES: m.mu held exclusively.
func (m *RouteInfoManager) dropTombstonesLocked(keep func(brokerName string, deletedAt int64) bool) {
	for topic, inner := range m.topicTombstones {
		for name, at := range inner {
			if !keep(name, at) {
				delete(inner, name)
			}
		}
		if len(inner) == 0 {
			delete(m.topicTombstones, topic)
		}
	}
}

// REQUIRES: m.mu held.
func (m *RouteInfoManager) topicHasBrokerLocked(topic, brokerName string) bool {
	_, ok := m.topicQueueTable[topic][brokerName]
	return ok
}

// REQUIRES: m.mu held exclusively.
func (m *RouteInfoManager) upsertQueueDataLocked(topic string, qd protocol.QueueData) {
	qdMap := m.topicQueueTable[topic]
	if qdMap == nil {
		qdMap = make(map[string]*protocol.QueueData)
		m.topicQueueTable[topic] = qdMap
	}
	if old := qdMap[qd.BrokerName]; old == nil || *old != qd {
		q := qd
		qdMap[qd.BrokerName] = &q
	}
}

// IsBrokerTopicConfigChanged reports whether dv differs from the data
// version the broker last registered (true for an unknown broker).
func (m *RouteInfoManager) IsBrokerTopicConfigChanged(clusterName, brokerAddr string, dv protocol.DataVersion) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.brokerTopicConfigChangedLocked(BrokerAddrInfo{clusterName, brokerAddr}, dv)
}

// QueryBrokerTopicConfig returns the data version the broker last
// registered, or nil for an unknown broker.
func (m *RouteInfoManager) QueryBrokerTopicConfig(clusterName, brokerAddr string) *protocol.DataVersion {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if live := m.brokerLiveTable[BrokerAddrInfo{clusterName, brokerAddr}]; live != nil {
		dv := live.dataVersion
		return &dv
	}
	return nil
}

// UpdateBrokerInfoUpdateTimestamp refreshes a registered broker's liveness
// (QUERY_DATA_VERSION, BROKER_HEARTBEAT). A timeout > 0 also replaces its
// expiry. It reports whether the broker is registered.
func (m *RouteInfoManager) UpdateBrokerInfoUpdateTimestamp(clusterName, brokerAddr string, timeout time.Duration) bool {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	live := m.brokerLiveTable[BrokerAddrInfo{clusterName, brokerAddr}]
	if live == nil {
		return false
	}
	live.lastUpdate = now
	if timeout > 0 {
		live.timeout = timeout
	}
	return true
}

// UnregisterBroker removes one broker process (UNREGISTER_BROKER). Its
// address leaves the group; a group left without addresses leaves its
// cluster and every topic's queue data; a group left without a master in
// acting-master mode loses write permission on its queues.
func (m *RouteInfoManager) UnregisterBroker(clusterName, brokerAddr, brokerName string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.unregisterLocked(clusterName, brokerAddr, brokerName)
}

// REQUIRES: m.mu held exclusively.
func (m *RouteInfoManager) unregisterLocked(clusterName, brokerAddr, brokerName string) {
	addrInfo := BrokerAddrInfo{clusterName, brokerAddr}
	delete(m.brokerLiveTable, addrInfo)
	delete(m.filterServerTable, addrInfo)

	brokerData := m.brokerAddrTable[brokerName]
	if brokerData == nil {
		return
	}
	for id, addr := range brokerData.BrokerAddrs {
		if addr == brokerAddr {
			delete(brokerData.BrokerAddrs, id)
		}
	}
	if len(brokerData.BrokerAddrs) > 0 {
		if brokerData.EnableActingMaster && minKey(brokerData.BrokerAddrs) > protocol.MasterID {
			for _, qdMap := range m.topicQueueTable {
				if qd := qdMap[brokerName]; qd != nil {
					qd.Perm &^= protocol.PermWrite
				}
			}
		}
		return
	}
	delete(m.brokerAddrTable, brokerName)
	m.dropTombstonesLocked(func(name string, _ int64) bool { return name != brokerName })
	// A broker name re-registered under another cluster is listed in both;
	// drop it from every cluster, not only the request's.
	for cluster, names := range m.clusterAddrTable {
		delete(names, brokerName)
		if len(names) == 0 {
			delete(m.clusterAddrTable, cluster)
		}
	}
	for topic, qdMap := range m.topicQueueTable {
		if _, ok := qdMap[brokerName]; !ok {
			continue
		}
		delete(qdMap, brokerName)
		if len(qdMap) == 0 {
			delete(m.topicQueueTable, topic)
			delete(m.topicQueueMappingInfoTable, topic)
		}
	}
}

// removeBrokerAddrLocked unregisters the broker process addr, finding its
// broker name from the broker table (channel close and expiry know only
// the address).
//
// REQUIRES: m.mu held exclusively.
func (m *RouteInfoManager) removeBrokerAddrLocked(addr BrokerAddrInfo) {
	for name, bd := range m.brokerAddrTable {
		if bd.Cluster != addr.ClusterName {
			continue
		}
		for _, a := range bd.BrokerAddrs {
			if a == addr.BrokerAddr {
				m.unregisterLocked(addr.ClusterName, addr.BrokerAddr, name)
				return
			}
		}
	}
	delete(m.brokerLiveTable, addr)
	delete(m.filterServerTable, addr)
}

// OnChannelDestroy removes every broker that registered on the connection
// with this id (close, exception or idle). It returns the removed brokers.
func (m *RouteInfoManager) OnChannelDestroy(channelID uint64) []BrokerAddrInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	var removed []BrokerAddrInfo
	for addr, live := range m.brokerLiveTable {
		if live.channel != nil && live.channel.ID() == channelID {
			removed = append(removed, addr)
		}
	}
	for _, addr := range removed {
		m.removeBrokerAddrLocked(addr)
	}
	return removed
}

// ExpiredBroker is a broker removed by ScanNotActiveBroker.
type ExpiredBroker struct {
	BrokerAddrInfo
	Channel    Channel // to be closed by the caller; may be nil
	LastUpdate time.Time
}

// ScanNotActiveBroker removes brokers whose last registration or heartbeat
// is older than their timeout (docs/broker.md §3.3) and returns
// them; the caller closes their channels, outside the registry's lock.
func (m *RouteInfoManager) ScanNotActiveBroker() []ExpiredBroker {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	var expired []ExpiredBroker
	for addr, live := range m.brokerLiveTable {
		if live.lastUpdate.Add(live.timeout).Before(now) {
			expired = append(expired, ExpiredBroker{BrokerAddrInfo: addr, Channel: live.channel, LastUpdate: live.lastUpdate})
		}
	}
	for _, e := range expired {
		m.removeBrokerAddrLocked(e.BrokerAddrInfo)
	}
	cutoff := now.UnixMilli() - m.opts.BrokerChannelExpiredTime.Milliseconds()
	m.dropTombstonesLocked(func(_ string, at int64) bool { return at >= cutoff })
	return expired
}

// PickupTopicRouteData assembles the route of topic (docs/broker.md
// §3.4), or returns nil when no live broker serves it. The result is a
// copy, sorted by broker name. OrderTopicConf is left to the caller.
func (m *RouteInfoManager) PickupTopicRouteData(topic string) *protocol.TopicRouteData {
	m.mu.RLock()
	defer m.mu.RUnlock()
	qdMap := m.topicQueueTable[topic]
	if len(qdMap) == 0 {
		return nil
	}
	route := &protocol.TopicRouteData{FilterServerTable: map[string][]string{}}
	for _, name := range slices.Sorted(maps.Keys(qdMap)) {
		route.QueueDatas = append(route.QueueDatas, *qdMap[name])
		bd := m.brokerAddrTable[name]
		if bd == nil {
			continue
		}
		clone := bd.Clone()
		route.BrokerDatas = append(route.BrokerDatas, *clone)
		for _, addr := range clone.BrokerAddrs {
			if fs := m.filterServerTable[BrokerAddrInfo{clone.Cluster, addr}]; len(fs) > 0 {
				route.FilterServerTable[addr] = slices.Clone(fs)
			}
		}
	}
	if len(route.BrokerDatas) == 0 {
		return nil
	}
	if mp := m.topicQueueMappingInfoTable[topic]; len(mp) > 0 {
		route.TopicQueueMappingByBroker = maps.Clone(mp)
	}
	if m.opts.SupportActingMaster {
		applyActingMaster(route)
	}
	return route
}

// applyActingMaster presents, for each acting-master broker group without
// a master whose queues are read-only, its lowest-id slave as id 0.
func applyActingMaster(route *protocol.TopicRouteData) {
	for i := range route.BrokerDatas {
		bd := &route.BrokerDatas[i]
		if len(bd.BrokerAddrs) == 0 || !bd.EnableActingMaster {
			continue
		}
		if _, ok := bd.BrokerAddrs[protocol.MasterID]; ok {
			continue
		}
		for _, qd := range route.QueueDatas {
			if qd.BrokerName != bd.BrokerName {
				continue
			}
			if !protocol.PermWritable(qd.Perm) {
				lo := minKey(bd.BrokerAddrs)
				addr := bd.BrokerAddrs[lo]
				delete(bd.BrokerAddrs, lo)
				bd.BrokerAddrs[protocol.MasterID] = addr
			}
			break
		}
	}
}

// RegisterTopic merges queue data into a topic's route
// (REGISTER_TOPIC_IN_NAMESRV). Every queue data must name a registered
// broker group, or nothing changes and it returns false.
func (m *RouteInfoManager) RegisterTopic(topic string, queueDatas []protocol.QueueData) bool {
	if len(queueDatas) == 0 {
		return true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, qd := range queueDatas {
		if m.brokerAddrTable[qd.BrokerName] == nil {
			return false
		}
	}
	for _, qd := range queueDatas {
		m.upsertQueueDataLocked(topic, qd)
		if inner := m.topicTombstones[topic]; inner != nil {
			delete(inner, qd.BrokerName)
			if len(inner) == 0 {
				delete(m.topicTombstones, topic)
			}
		}
	}
	return true
}

// DeleteTopic removes a topic's route, or with clusterName only the queue
// data of that cluster's broker groups. It leaves a tombstone per affected
// registered broker group so that a registration snapshotted before the
// broker deleted the topic, arriving after this, does not re-add it.
func (m *RouteInfoManager) DeleteTopic(topic, clusterName string) {
	nowMs := m.now().UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	// Every registered group of the scope, not only those routing the
	// topic: the stale registration may be the first to list it.
	if clusterName == "" {
		for name := range m.brokerAddrTable {
			m.tombstoneLocked(topic, name, nowMs)
		}
	} else {
		for name := range m.clusterAddrTable[clusterName] {
			m.tombstoneLocked(topic, name, nowMs)
		}
	}
	if clusterName == "" {
		delete(m.topicQueueTable, topic)
		delete(m.topicQueueMappingInfoTable, topic)
		return
	}
	qdMap := m.topicQueueTable[topic]
	if qdMap == nil {
		return
	}
	for name := range m.clusterAddrTable[clusterName] {
		delete(qdMap, name)
	}
	if len(qdMap) == 0 {
		delete(m.topicQueueTable, topic)
		delete(m.topicQueueMappingInfoTable, topic)
	}
}

// WipeWritePermOfBroker clears the write bit of every queue data of a
// broker group and returns how many topics it touched.
func (m *RouteInfoManager) WipeWritePermOfBroker(brokerName string) int {
	return m.operateWritePerm(brokerName, func(perm int32) int32 { return perm &^ protocol.PermWrite })
}

// AddWritePermOfBroker sets every queue data of a broker group to
// read-write (as RocketMQ does, dropping other bits) and returns how many
// topics it touched.
func (m *RouteInfoManager) AddWritePermOfBroker(brokerName string) int {
	return m.operateWritePerm(brokerName, func(int32) int32 { return protocol.PermRead | protocol.PermWrite })
}

func (m *RouteInfoManager) operateWritePerm(brokerName string, f func(int32) int32) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, qdMap := range m.topicQueueTable {
		if qd := qdMap[brokerName]; qd != nil {
			qd.Perm = f(qd.Perm)
			n++
		}
	}
	return n
}

// GetBrokerMemberGroup lists the addresses of a broker group.
func (m *RouteInfoManager) GetBrokerMemberGroup(clusterName, brokerName string) protocol.BrokerMemberGroup {
	g := protocol.BrokerMemberGroup{Cluster: clusterName, BrokerName: brokerName, BrokerAddrs: map[int64]string{}}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if bd := m.brokerAddrTable[brokerName]; bd != nil {
		maps.Copy(g.BrokerAddrs, bd.BrokerAddrs)
	}
	return g
}

// GetAllClusterInfo returns a copy of the broker and cluster tables
// (GET_BROKER_CLUSTER_INFO).
func (m *RouteInfoManager) GetAllClusterInfo() *protocol.ClusterInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ci := &protocol.ClusterInfo{
		BrokerAddrTable:  make(map[string]*protocol.BrokerData, len(m.brokerAddrTable)),
		ClusterAddrTable: make(map[string][]string, len(m.clusterAddrTable)),
	}
	for name, bd := range m.brokerAddrTable {
		ci.BrokerAddrTable[name] = bd.Clone()
	}
	for cluster, names := range m.clusterAddrTable {
		ci.ClusterAddrTable[cluster] = slices.Sorted(maps.Keys(names))
	}
	return ci
}

// GetAllTopicList lists every topic with a route.
func (m *RouteInfoManager) GetAllTopicList() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Sorted(maps.Keys(m.topicQueueTable))
}

// GetTopicsByCluster lists the topics served by a cluster's broker groups.
func (m *RouteInfoManager) GetTopicsByCluster(clusterName string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	names := m.clusterAddrTable[clusterName]
	var out []string
	for topic, qdMap := range m.topicQueueTable {
		for name := range names {
			if _, ok := qdMap[name]; ok {
				out = append(out, topic)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// GetSystemTopicList returns the cluster and broker names (RocketMQ treats
// them as system topics) and one registered broker address
// (GET_SYSTEM_TOPIC_LIST_FROM_NS).
func (m *RouteInfoManager) GetSystemTopicList() protocol.TopicList {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var tl protocol.TopicList
	for _, cluster := range slices.Sorted(maps.Keys(m.clusterAddrTable)) {
		tl.TopicList = append(tl.TopicList, cluster)
		tl.TopicList = append(tl.TopicList, slices.Sorted(maps.Keys(m.clusterAddrTable[cluster]))...)
	}
	for _, name := range slices.Sorted(maps.Keys(m.brokerAddrTable)) {
		bd := m.brokerAddrTable[name]
		if len(bd.BrokerAddrs) > 0 {
			tl.BrokerAddr = bd.BrokerAddrs[minKey(bd.BrokerAddrs)]
			break
		}
	}
	return tl
}

// Unit topic list kinds (GET_UNIT_TOPIC_LIST and friends).
const (
	UnitTopics             = iota // unit flag set
	HasUnitSubTopics              // unit-subscription flag set
	HasUnitSubUnunitTopics        // unit-subscription flag set, unit flag clear
)

// GetUnitTopicList lists topics by their sys flags; kind is one of
// UnitTopics, HasUnitSubTopics, HasUnitSubUnunitTopics.
func (m *RouteInfoManager) GetUnitTopicList(kind int) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []string
	for topic, qdMap := range m.topicQueueTable {
		for _, qd := range qdMap {
			unit := qd.TopicSysFlag&protocol.TopicSysFlagUnit != 0
			unitSub := qd.TopicSysFlag&protocol.TopicSysFlagUnitSub != 0
			if (kind == UnitTopics && unit) || (kind == HasUnitSubTopics && unitSub) ||
				(kind == HasUnitSubUnunitTopics && unitSub && !unit) {
				out = append(out, topic)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// Stats is a snapshot of the registry's sizes.
type Stats struct {
	Topics, BrokerGroups, Clusters, LiveBrokers int
}

// Stats returns the table sizes.
func (m *RouteInfoManager) Stats() Stats {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return Stats{
		Topics: len(m.topicQueueTable), BrokerGroups: len(m.brokerAddrTable),
		Clusters: len(m.clusterAddrTable), LiveBrokers: len(m.brokerLiveTable),
	}
}
