package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apogeemq/apogee/internal/config"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// handler serves one request on the ready leader.
type handler func(ctx context.Context, conn *remoting.Conn, req *protocol.Command) (*protocol.Command, error)

// registerProcessors installs every controller request. Requests that need
// the leader's state are forwarded by a follower to the leader (answered
// CONTROLLER_NOT_LEADER when none is known); GET_METADATA_INFO and
// GET_CONTROLLER_CONFIG and UPDATE_CONTROLLER_CONFIG are answered by every
// node (for itself).
func (c *Controller) registerProcessors(s *remoting.Server) {
	pool := remoting.PoolConfig{Workers: c.cfg.ControllerThreadPoolNums, QueueSize: c.cfg.ControllerRequestThreadPoolQueueCapacity}
	leader := map[protocol.RequestCode]handler{
		protocol.ControllerAlterSyncStateSet: c.alterSyncStateSet,
		protocol.ControllerElectMaster:       c.electMaster,
		protocol.ControllerRegisterBroker:    c.registerBroker,
		protocol.ControllerGetReplicaInfo:    c.getReplicaInfo,
		protocol.ControllerGetSyncStateData:  c.getSyncStateData,
		protocol.GetSyncStateDataRequest:     c.getSyncStateData,
		protocol.CleanBrokerData:             c.cleanBrokerData,
		protocol.ControllerGetNextBrokerID:   c.getNextBrokerID,
		protocol.ControllerApplyBrokerID:     c.applyBrokerID,
		protocol.BrokerHeartbeat:             c.brokerHeartbeat,
		protocol.BrokerCloseChannelRequest:   c.brokerCloseChannel,
		protocol.CheckNotActiveBrokerRequest: c.checkNotActiveBroker,
		protocol.GetBrokerLiveInfoRequest:    c.getBrokerLiveInfo,
	}
	for code, h := range leader {
		s.RegisterProcessor(code, c.onLeader(h), pool)
	}
	s.RegisterProcessor(protocol.ControllerGetMetadataInfo, c.getMetadata, pool)
	s.RegisterProcessor(protocol.GetControllerConfig, c.getControllerConfig, pool)
	s.RegisterProcessor(protocol.UpdateControllerConfig, c.updateControllerConfig, pool) // config_update.go
}

// onLeader runs h when this node is the ready leader, else forwards the
// request to the leader.
func (c *Controller) onLeader(h handler) remoting.Processor {
	return func(ctx context.Context, conn *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
		if c.leaderReady.Load() {
			return h(ctx, conn, req)
		}
		addr := c.LeaderRPCAddr()
		if addr == "" || addr == c.cfg.RPCAddr() {
			return nil, protocol.Errorf(protocol.ControllerNotLeader, "controller %s is not the leader and no leader is known", c.cfg.JRaftServerID)
		}
		fwd := &protocol.Command{Code: req.Code, Language: protocol.LanguageGo, Version: req.Version,
			ExtFields: maps.Clone(req.ExtFields), Body: slices.Clone(req.Body)}
		for i := 0; i+1 < len(req.ExtList); i += 2 {
			fwd.SetExt(req.ExtList[i], req.ExtList[i+1])
		}
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		resp, err := c.client.InvokeSync(fctx, addr, fwd)
		if err != nil {
			return nil, protocol.Errorf(protocol.ControllerNotLeader, "forward to leader %s: %v", addr, err)
		}
		out := protocol.NewResponse(req, protocol.ResponseCode(resp.Code), resp.Remark)
		out.ExtFields = maps.Clone(resp.ExtFields)
		out.Body = slices.Clone(resp.Body)
		return out, nil
	}
}

func decode(req *protocol.Command, h any) error {
	if err := protocol.DecodeHeader(req.ExtFields, h, false); err != nil {
		return protocol.Errorf(protocol.ControllerInvalidRequest, "bad header: %v", err)
	}
	return nil
}

func ok(req *protocol.Command, header any, body []byte) *protocol.Command {
	resp := protocol.NewResponse(req, protocol.Success, "")
	if header != nil {
		resp.ExtFields = protocol.EncodeHeader(header, false)
	}
	resp.Body = body
	return resp
}

func resultErr(r opResult) error {
	if r.Code == protocol.Success {
		return nil
	}
	code := r.Code
	if code == 0 {
		code = protocol.ControllerJRaftInternalError
	}
	return protocol.Errorf(code, "%s", r.Remark)
}

// replicaHeader renders set's master view.
func replicaHeader(set *brokerSet) protocol.ReplicaHeader {
	h := protocol.ReplicaHeader{ClusterName: set.Cluster, BrokerName: set.Name}
	id, ep, sep := set.MasterID, set.MasterEpoch, set.SyncStateSetEpoch
	if id != 0 {
		h.MasterBrokerID = &id
		h.MasterAddress = set.masterAddr()
	}
	h.MasterEpoch, h.SyncStateSetEpoch = &ep, &sep
	return h
}

func syncStateBody(set *brokerSet) []byte {
	return protocol.SyncStateSet{SyncStateSet: set.SyncStateSet, SyncStateSetEpoch: set.SyncStateSetEpoch}.Encode()
}

func (c *Controller) getNextBrokerID(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.GetNextBrokerIDRequestHeader
	if err := decode(req, &h); err != nil {
		return nil, err
	}
	next := FirstBrokerID
	if set := c.fsm.set(h.BrokerName); set != nil {
		next = set.NextID
	}
	return ok(req, &protocol.GetNextBrokerIDResponseHeader{ClusterName: h.ClusterName, BrokerName: h.BrokerName, NextBrokerID: &next}, nil), nil
}

func (c *Controller) applyBrokerID(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.ApplyBrokerIDRequestHeader
	if err := decode(req, &h); err != nil {
		return nil, err
	}
	if h.BrokerName == "" || h.AppliedBrokerID < FirstBrokerID {
		return nil, protocol.Errorf(protocol.ControllerBrokerIDInvalid, "brokerName and an appliedBrokerId >= %d are required", FirstBrokerID)
	}
	c.opMu.Lock()
	defer c.opMu.Unlock()
	res, err := c.propose(&op{Kind: opApplyBrokerID, Cluster: h.ClusterName, BrokerName: h.BrokerName, BrokerID: h.AppliedBrokerID, CheckCode: h.RegisterCheckCode})
	if err != nil {
		return nil, protocol.Errorf(protocol.ControllerJRaftInternalError, "%v", err)
	}
	if err := resultErr(res); err != nil {
		return nil, err
	}
	return ok(req, &protocol.ApplyBrokerIDResponseHeader{ClusterName: h.ClusterName, BrokerName: h.BrokerName}, nil), nil
}

func (c *Controller) registerBroker(_ context.Context, conn *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.RegisterBrokerToControllerRequestHeader
	if err := decode(req, &h); err != nil {
		return nil, err
	}
	set := c.fsm.set(h.BrokerName)
	if set == nil || set.Brokers[h.BrokerID] == nil {
		return nil, protocol.Errorf(protocol.ControllerBrokerMetadataNotExist, "broker %s id %d has not applied for its id", h.BrokerName, h.BrokerID)
	}
	var timeoutMs int64
	if h.HeartbeatTimeoutMills != nil && *h.HeartbeatTimeoutMills > 0 {
		timeoutMs = *h.HeartbeatTimeoutMills
	}
	if r := set.Brokers[h.BrokerID]; r.Addr != h.BrokerAddress || r.TimeoutMs != timeoutMs {
		c.opMu.Lock()
		res, err := c.propose(&op{Kind: opRegisterBroker, BrokerName: h.BrokerName, BrokerID: h.BrokerID, Addr: h.BrokerAddress, TimeoutMs: timeoutMs})
		c.opMu.Unlock()
		if err != nil {
			return nil, protocol.Errorf(protocol.ControllerJRaftInternalError, "%v", err)
		}
		if err := resultErr(res); err != nil {
			return nil, err
		}
		set = res.Set
	}
	hdr := replicaHeader(set)
	return ok(req, &hdr, syncStateBody(set)), nil
}

func (c *Controller) getReplicaInfo(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.GetReplicaInfoRequestHeader
	if err := decode(req, &h); err != nil {
		return nil, err
	}
	set := c.fsm.set(h.BrokerName)
	if set == nil {
		return nil, protocol.Errorf(protocol.ControllerBrokerMetadataNotExist, "broker set %s does not exist", h.BrokerName)
	}
	hdr := replicaHeader(set)
	return ok(req, &hdr, syncStateBody(set)), nil
}

// brokerHeartbeat (BROKER_HEARTBEAT 904) records liveness, confirms this
// node still leads a majority (VerifyLeader), and answers with the set's
// master view in the ext fields, which a master uses to renew its lease.
func (c *Controller) brokerHeartbeat(_ context.Context, conn *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.BrokerHeartbeatRequestHeader
	if err := decode(req, &h); err != nil {
		return nil, err
	}
	if h.BrokerID == nil {
		return nil, protocol.Errorf(protocol.ControllerInvalidRequest, "brokerId is required in controller mode")
	}
	set := c.fsm.set(h.BrokerName)
	if set == nil || set.Brokers[*h.BrokerID] == nil {
		return nil, protocol.Errorf(protocol.ControllerBrokerNeedToBeRegistered, "broker %s id %d is not registered", h.BrokerName, *h.BrokerID)
	}
	info := liveInfo{cluster: h.ClusterName, addr: h.BrokerAddr, lastUpdate: c.now(), timeout: DefaultHeartbeatTimeout, epoch: -1, priority: 1<<31 - 1}
	if conn != nil {
		info.connID = conn.ID()
	}
	if h.HeartbeatTimeoutMills != nil && *h.HeartbeatTimeoutMills > 0 {
		info.timeout = time.Duration(*h.HeartbeatTimeoutMills) * time.Millisecond
	}
	if h.Epoch != nil {
		info.epoch = *h.Epoch
	}
	if h.MaxOffset != nil {
		info.maxOffset = *h.MaxOffset
	}
	if h.ConfirmOffset != nil {
		info.confirm = *h.ConfirmOffset
	}
	if h.ElectionPriority != nil {
		info.priority = *h.ElectionPriority
	}
	c.live.beat(liveKey{h.BrokerName, *h.BrokerID}, info)
	if set.MasterID == 0 {
		c.requestElect(h.BrokerName)
	}
	// The answer renews the master's lease: only a leader that still has a
	// majority may give it.
	if err := c.raft.VerifyLeader().Error(); err != nil {
		return nil, protocol.Errorf(protocol.ControllerNotLeader, "leadership not confirmed: %v", err)
	}
	set = c.fsm.set(h.BrokerName)
	if set == nil {
		return nil, protocol.Errorf(protocol.ControllerBrokerMetadataNotExist, "broker set %s does not exist", h.BrokerName)
	}
	hdr := replicaHeader(set)
	return ok(req, &hdr, syncStateBody(set)), nil
}

func (c *Controller) brokerCloseChannel(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.BrokerCloseChannelRequestHeader
	if err := decode(req, &h); err != nil {
		return nil, err
	}
	c.brokerGone(liveKey{h.BrokerName, h.BrokerID}, "close channel request")
	return ok(req, nil, nil), nil
}

func (c *Controller) checkNotActiveBroker(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	c.scanInactive()
	return ok(req, nil, nil), nil
}

// brokerLiveInfo is one GET_BROKER_LIVE_INFO_REQUEST entry.
type brokerLiveInfo struct {
	ClusterName           string `json:"clusterName"`
	BrokerName            string `json:"brokerName"`
	BrokerID              int64  `json:"brokerId"`
	BrokerAddr            string `json:"brokerAddr"`
	LastUpdateTimestamp   int64  `json:"lastUpdateTimestamp"`
	HeartbeatTimeoutMills int64  `json:"heartbeatTimeoutMillis"`
	Epoch                 int32  `json:"epoch"`
	MaxOffset             int64  `json:"maxOffset"`
	ConfirmOffset         int64  `json:"confirmOffset"`
	ElectionPriority      int32  `json:"electionPriority"`
}

func (c *Controller) getBrokerLiveInfo(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	name := req.Ext("brokerName")
	var out []brokerLiveInfo
	for _, setName := range c.fsm.snapshotState().names() {
		if name != "" && setName != name {
			continue
		}
		for id, v := range c.live.setMembers(setName) {
			out = append(out, brokerLiveInfo{ClusterName: v.cluster, BrokerName: setName, BrokerID: id, BrokerAddr: v.addr,
				LastUpdateTimestamp: v.lastUpdate.UnixMilli(), HeartbeatTimeoutMills: v.timeout.Milliseconds(),
				Epoch: v.epoch, MaxOffset: v.maxOffset, ConfirmOffset: v.confirm, ElectionPriority: v.priority})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].BrokerName != out[j].BrokerName {
			return out[i].BrokerName < out[j].BrokerName
		}
		return out[i].BrokerID < out[j].BrokerID
	})
	b, _ := json.Marshal(out)
	return ok(req, nil, b), nil
}

func (c *Controller) alterSyncStateSet(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.AlterSyncStateSetRequestHeader
	if err := decode(req, &h); err != nil {
		return nil, err
	}
	body, err := protocol.DecodeSyncStateSet(req.Body)
	if err != nil {
		return nil, protocol.Errorf(protocol.ControllerInvalidRequest, "%v", err)
	}
	c.opMu.Lock()
	defer c.opMu.Unlock()
	set := c.fsm.set(h.BrokerName)
	if set == nil {
		return nil, protocol.Errorf(protocol.ControllerBrokerMetadataNotExist, "broker set %s does not exist", h.BrokerName)
	}
	// Members added to the set must be alive (RocketMQ checks the same).
	for _, id := range body.SyncStateSet {
		if !set.inSync(id) && !c.live.alive(liveKey{h.BrokerName, id}) {
			return nil, protocol.Errorf(protocol.ControllerInvalidReplicas, "broker %d is not alive", id)
		}
	}
	res, err := c.propose(&op{Kind: opAlterSyncState, BrokerName: h.BrokerName, BrokerID: h.MasterBrokerID,
		ExpectEpoch: h.MasterEpoch, ExpectSSetEpoch: body.SyncStateSetEpoch, NewSyncStateSet: body.SyncStateSet})
	if err != nil {
		return nil, protocol.Errorf(protocol.ControllerJRaftInternalError, "%v", err)
	}
	if err := resultErr(res); err != nil {
		return nil, err
	}
	c.logger.Info("SyncStateSet changed", "brokerName", h.BrokerName, "set", res.Set.SyncStateSet, "epoch", res.Set.SyncStateSetEpoch)
	return ok(req, &protocol.AlterSyncStateSetResponseHeader{NewSyncStateSetEpoch: res.Set.SyncStateSetEpoch}, syncStateBody(res.Set)), nil
}

// electMaster (CONTROLLER_ELECT_MASTER 1002): a broker asking for an
// election of its set (designateElect=false), or admin electMaster.
func (c *Controller) electMaster(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.ElectMasterRequestHeader
	if err := decode(req, &h); err != nil {
		return nil, err
	}
	designated := int64(0)
	if h.DesignateElect {
		designated = h.BrokerID
	}
	set, changed, err := c.elect(h.BrokerName, designated)
	if err != nil {
		return nil, err
	}
	if set.MasterID == 0 {
		return nil, protocol.Errorf(protocol.ControllerMasterNotAvailable, "no replica of %s can become master", h.BrokerName)
	}
	if designated != 0 && set.MasterID != designated {
		return nil, protocol.Errorf(protocol.ControllerElectMasterFailed, "broker %d cannot become master of %s", designated, h.BrokerName)
	}
	if changed {
		c.notifyRoleChanged(set)
	}
	hdr := replicaHeader(set)
	hdr.ClusterName, hdr.BrokerName = "", ""
	group := &protocol.BrokerMemberGroup{Cluster: set.Cluster, BrokerName: set.Name, BrokerAddrs: map[int64]string{}}
	for id, r := range set.Brokers {
		if r.Addr != "" {
			group.BrokerAddrs[id] = r.Addr
		}
	}
	body, _ := json.Marshal(protocol.ElectMasterResponseBody{BrokerMemberGroup: group, SyncStateSet: set.SyncStateSet})
	return ok(req, &hdr, body), nil
}

// elect decides and applies an election for one set. It returns the set
// after it and whether the master changed.
func (c *Controller) elect(name string, designated int64) (*brokerSet, bool, error) {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	set := c.fsm.set(name)
	if set == nil {
		return nil, false, protocol.Errorf(protocol.ControllerBrokerMetadataNotExist, "broker set %s does not exist", name)
	}
	live := c.live.candidates(name)
	if set.MasterID != 0 && designated == 0 {
		// A master still in the table (heard or not) keeps its role.
		if c.live.alive(liveKey{name, set.MasterID}) {
			return set, false, nil
		}
	}
	next := electPolicy(set, live, c.dyn.unclean.Load(), designated)
	if next == set.MasterID { // electPolicy only returns live replicas (or 0)
		return set, false, nil
	}
	res, err := c.propose(&op{Kind: opElect, BrokerName: name, NewMaster: next, ExpectEpoch: set.MasterEpoch, ExpectSSetEpoch: set.SyncStateSetEpoch})
	if err != nil {
		return nil, false, protocol.Errorf(protocol.ControllerJRaftInternalError, "%v", err)
	}
	if err := resultErr(res); err != nil {
		return nil, false, err
	}
	c.logger.Info("master elected", "brokerName", name, "old", set.MasterID, "new", res.Set.MasterID,
		"epoch", res.Set.MasterEpoch, "syncStateSet", res.Set.SyncStateSet)
	return res.Set, res.Set.MasterID != set.MasterID, nil
}

// requestElect queues an election check for a set (electLoop runs it).
func (c *Controller) requestElect(name string) {
	c.electMu.Lock()
	c.electWant[name] = struct{}{}
	c.electMu.Unlock()
	select {
	case c.electWake <- struct{}{}:
	default:
	}
}

// electLoop runs queued election checks on the leader.
func (c *Controller) electLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.electWake:
		}
		c.electMu.Lock()
		names := slices.Sorted(maps.Keys(c.electWant))
		clear(c.electWant)
		c.electMu.Unlock()
		if !c.leaderReady.Load() {
			continue
		}
		for _, name := range names {
			for try := 0; try < int(c.dyn.retries.Load()); try++ {
				set, changed, err := c.elect(name, 0)
				if err != nil {
					c.logger.Warn("election failed", "brokerName", name, "try", try+1, "err", err)
					continue
				}
				if changed {
					c.notifyRoleChanged(set)
				}
				break
			}
		}
	}
}

// brokerGone removes a broker from the liveness table and, if it was its
// set's master, starts an election.
func (c *Controller) brokerGone(k liveKey, why string) {
	if !c.live.remove(k) {
		return
	}
	c.logger.Info("broker inactive", "brokerName", k.brokerName, "brokerId", k.id, "why", why)
	if set := c.fsm.set(k.brokerName); set != nil && set.MasterID == k.id {
		c.requestElect(k.brokerName)
	}
}

// scanInactive expires brokers whose heartbeat timed out
// (scanNotActiveBrokerInterval) and elects for their sets; sets without a
// master get an election check too.
func (c *Controller) scanInactive() {
	if !c.leaderReady.Load() {
		return
	}
	for _, k := range c.live.expire(c.now()) {
		c.logger.Info("broker heartbeat timed out", "brokerName", k.brokerName, "brokerId", k.id)
		if set := c.fsm.set(k.brokerName); set != nil && set.MasterID == k.id {
			c.requestElect(k.brokerName)
		}
	}
	st := c.fsm.snapshotState()
	for name, set := range st.Sets {
		if set.MasterID == 0 && len(c.live.candidates(name)) > 0 {
			c.requestElect(name)
		}
	}
}

// notifyRoleChanged sends NOTIFY_BROKER_ROLE_CHANGED to every live broker
// of set (notifyBrokerRoleChanged), asynchronously and best effort: brokers
// also learn the master from their heartbeat answers.
func (c *Controller) notifyRoleChanged(set *brokerSet) {
	if !c.dyn.notify.Load() {
		return
	}
	hdr := replicaHeader(set)
	ext := protocol.EncodeHeader(&hdr, false)
	body := syncStateBody(set)
	for id, r := range set.Brokers {
		addr := r.Addr
		if info, ok := c.live.get(liveKey{set.Name, id}); ok && info.addr != "" {
			addr = info.addr
		}
		if addr == "" {
			continue
		}
		req := protocol.NewRequest(protocol.NotifyBrokerRoleChanged, maps.Clone(ext), body)
		c.group.Go("notify", func(ctx context.Context) {
			ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			if _, err := c.client.InvokeSync(ctx, addr, req); err != nil {
				c.logger.Debug("notify broker role changed failed", "addr", addr, "err", err)
			}
		})
	}
}

func (c *Controller) getSyncStateData(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var names []string
	if len(req.Body) > 0 {
		if err := json.Unmarshal(req.Body, &names); err != nil {
			return nil, protocol.Errorf(protocol.ControllerInvalidRequest, "body: want a JSON array of broker names: %v", err)
		}
	}
	st := c.fsm.snapshotState()
	if len(names) == 0 {
		names = st.names()
	}
	out := protocol.BrokerReplicasInfo{ReplicasInfoTable: map[string]protocol.ReplicasInfo{}}
	for _, name := range names {
		set := st.Sets[name]
		if set == nil {
			continue
		}
		info := protocol.ReplicasInfo{MasterBrokerID: set.MasterID, MasterAddress: set.masterAddr(),
			MasterEpoch: set.MasterEpoch, SyncStateSetEpoch: set.SyncStateSetEpoch,
			InSyncReplicas: []protocol.ReplicaIdentity{}, NotInSyncReplicas: []protocol.ReplicaIdentity{}}
		for _, id := range slices.Sorted(maps.Keys(set.Brokers)) {
			ri := protocol.ReplicaIdentity{BrokerName: name, BrokerID: id, BrokerAddress: set.Brokers[id].Addr,
				Alive: c.live.alive(liveKey{name, id})}
			if set.inSync(id) {
				info.InSyncReplicas = append(info.InSyncReplicas, ri)
			} else {
				info.NotInSyncReplicas = append(info.NotInSyncReplicas, ri)
			}
		}
		out.ReplicasInfoTable[name] = info
	}
	b, _ := json.Marshal(out)
	return ok(req, nil, b), nil
}

func (c *Controller) cleanBrokerData(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.CleanControllerBrokerDataRequestHeader
	if err := decode(req, &h); err != nil {
		return nil, err
	}
	c.opMu.Lock()
	defer c.opMu.Unlock()
	set := c.fsm.set(h.BrokerName)
	if set == nil {
		return nil, protocol.Errorf(protocol.ControllerInvalidCleanBrokerMetadata, "broker set %s does not exist", h.BrokerName)
	}
	var ids []int64
	if s := strings.TrimSpace(h.BrokerControllerIDsToClean); s != "" {
		for _, part := range strings.Split(s, ";") {
			id, err := strconv.ParseInt(strings.TrimSpace(part), 10, 64)
			if err != nil {
				return nil, protocol.Errorf(protocol.ControllerInvalidCleanBrokerMetadata, "brokerControllerIdsToClean %q: %v", s, err)
			}
			ids = append(ids, id)
		}
	}
	targets := ids
	if targets == nil {
		targets = slices.Collect(maps.Keys(set.Brokers))
	}
	if !h.IsCleanLivingBroker {
		for _, id := range targets {
			if c.live.alive(liveKey{h.BrokerName, id}) {
				return nil, protocol.Errorf(protocol.ControllerInvalidCleanBrokerMetadata, "broker %d of %s is alive; set isCleanLivingBroker to clean it", id, h.BrokerName)
			}
		}
	}
	res, err := c.propose(&op{Kind: opCleanBroker, BrokerName: h.BrokerName, IDs: ids})
	if err != nil {
		return nil, protocol.Errorf(protocol.ControllerJRaftInternalError, "%v", err)
	}
	if err := resultErr(res); err != nil {
		return nil, err
	}
	for _, id := range targets {
		c.live.remove(liveKey{h.BrokerName, id})
	}
	return ok(req, nil, nil), nil
}

func (c *Controller) getMetadata(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	leaderAddr, leaderID := c.raft.LeaderWithID()
	h := protocol.GetMetaDataResponseHeader{
		Group:                   c.cfg.JRaftGroupID,
		ControllerLeaderID:      string(leaderID),
		ControllerLeaderAddress: c.cfg.rpcAddrOf(string(leaderAddr)),
		IsLeader:                c.leaderReady.Load(),
		Peers:                   strings.Join(c.cfg.JRaftControllerRPCAddr, ";"),
	}
	return ok(req, &h, nil), nil
}

func (c *Controller) getControllerConfig(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	return ok(req, nil, []byte(c.ConfigText())), nil
}

// configLines renders cfg as sorted key=value lines.
func configLines(cfg *Config) []string {
	m := config.ToMap(cfg)
	out := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, fmt.Sprintf("%s=%s", k, m[k]))
	}
	return out
}

// connListener turns a closed broker connection into an immediate
// inactivity (no waiting for the heartbeat timeout).
type connListener struct{ c *Controller }

func (l connListener) OnConnect(*remoting.Conn)                 {}
func (l connListener) OnClose(conn *remoting.Conn)              { l.closed(conn) }
func (l connListener) OnIdle(conn *remoting.Conn)               { l.closed(conn) }
func (l connListener) OnException(conn *remoting.Conn, _ error) { l.closed(conn) }

func (l connListener) closed(conn *remoting.Conn) {
	c := l.c
	for _, k := range c.live.removeConn(conn.ID()) {
		c.logger.Info("broker connection closed", "brokerName", k.brokerName, "brokerId", k.id)
		if set := c.fsm.set(k.brokerName); set != nil && set.MasterID == k.id {
			c.requestElect(k.brokerName)
		}
	}
}
