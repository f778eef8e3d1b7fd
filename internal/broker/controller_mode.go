package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apogeemq/apogee/internal/config"
	"github.com/apogeemq/apogee/internal/ha"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/run"
	"github.com/apogeemq/apogee/internal/store"
)

// Controller mode (docs/broker.md §2.2; DESIGN.md "Controller
// mode"). A Broker's role is fixed for its lifetime: Start asks the
// controller for it (join), and when the controller later names another
// master, or this slave, the Broker fences itself if it was master and asks
// its owner to replace it (RestartRequested; Node does that in process).
// Restarting reopens the store, which is where a demoted master truncates
// its unreplicated tail and a promoted slave rebuilds its queue offsets.

// ctlState is the controller-mode state of one Broker (Broker.ctl).
type ctlState struct {
	client *remoting.Client // to the controllers and, for a slave, the master
	// ownClient: client was created here (else a Node shares it across
	// instances, so a restart does not close the connection the controller
	// watches for this broker's death).
	ownClient bool
	epochs    *epochFile
	group     *run.Group // heartbeat and SyncStateSet loops

	id     int64 // controller-assigned broker id (set by join)
	master bool  // this instance's role (set by join, then fixed)
	epoch  int32 // the master epoch this instance serves or follows

	leader atomic.Pointer[string] // last known controller leader address
	next   atomic.Uint32          // round robin over controllerAddr

	// leaseUntil (unix nanos): a master acknowledges writes only before it.
	leaseUntil atomic.Int64
	fenced     atomic.Bool
	setSize    atomic.Int32 // len(syncSet), for the write gate

	mu         sync.Mutex
	masterAddr string              // slave: the master it follows; guarded by mu
	syncSet    []int64             // master: the SyncStateSet (sorted); guarded by mu
	ssEpoch    int32               // guarded by mu
	caughtUp   map[int64]time.Time // master: last caught-up time per slave; guarded by mu
	members    []string            // master: the other members' addresses; guarded by mu
	membersAt  time.Time           // when members was fetched; guarded by mu

	restart chan struct{} // closed once a restart is wanted
	// handoff: the role ended and a successor instance re-registers this
	// address at once, so Close skips UNREGISTER_BROKER (which would leave
	// the broker name without a route for the restart's duration).
	handoff     atomic.Bool
	restartOnce sync.Once
	wake        chan struct{} // capacity 1: heartbeat now (NOTIFY_BROKER_ROLE_CHANGED)

	forwarded atomic.Int64 // sends relayed to the master (controller_forward.go)
}

// replicaView is the controller's view of the broker set.
type replicaView struct {
	masterID   int64
	masterAddr string
	epoch      int32
	ssEpoch    int32
	set        []int64
}

// RestartRequested is closed when this Broker's role ended (controller
// mode): its owner should Close it and start a new one with the same
// configuration (Node does). Never closed in classic mode.
func (b *Broker) RestartRequested() <-chan struct{} { return b.ctl.restart }

// Fenced reports whether this master stopped acknowledging writes for good
// because the controller elected another master.
func (b *Broker) Fenced() bool { return b.ctl.fenced.Load() }

// ControllerBrokerID is the controller-assigned id (0 before join or in
// classic mode).
func (b *Broker) ControllerBrokerID() int64 { return b.ctl.id }

// IsMaster reports the role this Broker serves.
func (b *Broker) IsMaster() bool { return !b.cfg.isSlave() }

func (b *Broker) requestRestart(why string, args ...any) {
	b.ctl.handoff.Store(true)
	b.ctl.restartOnce.Do(func() {
		b.logger.Warn("controller mode: role changed, restarting the broker", "why", fmt.Sprintf(why, args...))
		close(b.ctl.restart)
	})
}

// controllerPrepare runs before the store opens: in controller mode the
// store first opens as a SLAVE (it refuses puts) until join knows the role.
func (b *Broker) controllerPrepare() error {
	b.ctl.restart = make(chan struct{})
	b.ctl.wake = make(chan struct{}, 1)
	if !b.cfg.EnableControllerMode {
		return nil
	}
	b.cfg.Store.BrokerRole = store.RoleSlave
	if prev := b.Topics.onChange; prev != nil {
		b.Topics.onChange = func(tcs []protocol.TopicConfig) {
			prev(tcs)
			b.pushTopicsToSlaves(tcs)
		}
	}
	ep, err := loadEpochFile(b.cfg.epochFilePath())
	if err != nil {
		return err
	}
	b.ctl.epochs = ep
	b.ctl.caughtUp = make(map[int64]time.Time)
	if b.ctl.client == nil {
		b.ctl.client = remoting.NewClient(remoting.ClientConfig{Logger: b.logger.With("component", "broker-ctlclient"),
			TLS: b.tls.client, Sign: b.signInner}) // tls.go, auth.go
		if err := b.ctl.client.Start(); err != nil {
			return fmt.Errorf("broker: controller client: %w", err)
		}
		b.ctl.ownClient = true
	}
	b.ctl.group = run.NewGroup("broker-controller")
	return nil
}

// closeControllerMode stops the loops and the client.
func (b *Broker) closeControllerMode() {
	if b.ctl.group != nil {
		b.ctl.group.Close()
	}
	if b.ctl.client != nil && b.ctl.ownClient {
		b.ctl.client.Close()
	}
}

// ctlInvoke sends req to the controller leader (found with
// GET_METADATA_INFO), so the leader sees this broker's own connection and
// its close. After a failure or CONTROLLER_NOT_LEADER it looks the leader
// up again; a follower would forward, which is the fallback when no leader
// is known.
func (b *Broker) ctlInvoke(ctx context.Context, req *protocol.Command) (*protocol.Command, error) {
	addrs := b.cfg.ControllerAddr
	var last error
	for try := 0; try <= len(addrs); try++ {
		addr := ""
		if p := b.ctl.leader.Load(); p != nil {
			addr = *p
		} else if addr = b.findLeader(ctx); addr != "" {
			b.ctl.leader.Store(&addr)
		} else {
			addr = addrs[int(b.ctl.next.Add(1))%len(addrs)]
		}
		c := *req
		c.ExtFields = maps.Clone(req.ExtFields)
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		resp, err := b.ctl.client.InvokeSync(cctx, addr, &c)
		cancel()
		if err == nil && resp.Code != int32(protocol.ControllerNotLeader) {
			return resp, nil
		}
		if err == nil {
			err = fmt.Errorf("controller %s: %s", addr, resp.Remark)
		}
		last = err
		b.ctl.leader.Store(nil)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("broker: no controller answered: %w", last)
}

// findLeader asks the controllers in turn who leads ("" if none knows).
func (b *Broker) findLeader(ctx context.Context) string {
	addrs := b.cfg.ControllerAddr
	for range addrs {
		addr := addrs[int(b.ctl.next.Add(1))%len(addrs)]
		if l := b.askLeader(ctx, addr); l != "" {
			return l
		}
	}
	return ""
}

// askLeader asks one controller for the leader's address.
func (b *Broker) askLeader(ctx context.Context, addr string) string {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := b.ctl.client.InvokeSync(cctx, addr, protocol.NewRequest(protocol.ControllerGetMetadataInfo, nil, nil))
	if err != nil || resp.Code != int32(protocol.Success) {
		return ""
	}
	return b.mapControllerAddr(resp.Ext("controllerLeaderAddress"), resp.Ext("peers"))
}

// mapControllerAddr maps the leader's advertised address onto the
// configured controllerAddr entry at the same position of the controller
// list (peers), so a broker that reaches the controllers through other
// addresses (NAT, proxies) keeps using its own. An address already
// configured, or a list of another length, is used as advertised.
func (b *Broker) mapControllerAddr(leader, peers string) string {
	if leader == "" || slices.Contains(b.cfg.ControllerAddr, leader) {
		return leader
	}
	list := strings.Split(peers, ";")
	if i := slices.Index(list, leader); i >= 0 && len(list) == len(b.cfg.ControllerAddr) {
		return b.cfg.ControllerAddr[i]
	}
	return leader
}

func ctlOK(resp *protocol.Command, what string) error {
	if resp.Code != int32(protocol.Success) {
		return &protocol.Error{Code: protocol.ResponseCode(resp.Code), Remark: what + ": " + resp.Remark}
	}
	return nil
}

func decodeView(resp *protocol.Command) replicaView {
	var h protocol.ReplicaHeader
	_ = protocol.DecodeHeader(resp.ExtFields, &h, false)
	v := replicaView{masterAddr: h.MasterAddress}
	if h.MasterBrokerID != nil {
		v.masterID = *h.MasterBrokerID
	}
	if h.MasterEpoch != nil {
		v.epoch = *h.MasterEpoch
	}
	if h.SyncStateSetEpoch != nil {
		v.ssEpoch = *h.SyncStateSetEpoch
	}
	if s, err := protocol.DecodeSyncStateSet(resp.Body); err == nil {
		v.set = slices.Sorted(slices.Values(s.SyncStateSet))
		v.ssEpoch = s.SyncStateSetEpoch
	}
	return v
}

// brokerIdentity is the controller-assigned identity kept in
// storePathBrokerIdentity (a properties file).
type brokerIdentity struct {
	Cluster   string `conf:"brokerClusterName"`
	Name      string `conf:"brokerName"`
	ID        int64  `conf:"brokerId"`
	CheckCode string `conf:"registerCheckCode"`
}

func (b *Broker) loadIdentity() (brokerIdentity, error) {
	var id brokerIdentity
	p, err := config.LoadFile(b.cfg.identityPath())
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return id, nil
		}
		return id, err
	}
	if _, err := config.Apply(p, &id); err != nil {
		return id, fmt.Errorf("broker: %s: %w", b.cfg.identityPath(), err)
	}
	if id.Name != b.cfg.BrokerName || id.Cluster != b.cfg.BrokerClusterName {
		return id, fmt.Errorf("broker: %s belongs to %s/%s, not %s/%s", b.cfg.identityPath(), id.Cluster, id.Name, b.cfg.BrokerClusterName, b.cfg.BrokerName)
	}
	return id, nil
}

func (b *Broker) saveIdentity(id brokerIdentity) error {
	path := b.cfg.identityPath()
	body := fmt.Sprintf("brokerClusterName=%s\nbrokerName=%s\nbrokerId=%d\nregisterCheckCode=%s\n", id.Cluster, id.Name, id.ID, id.CheckCode)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		return fmt.Errorf("broker: identity: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("broker: identity: %w", err)
	}
	return nil
}

// ctlRegister applies for an id when there is none (GET_NEXT_BROKER_ID,
// APPLY_BROKER_ID), registers the address (CONTROLLER_REGISTER_BROKER)
// and heartbeats once, so the controller may elect this broker.
func (b *Broker) ctlRegister(ctx context.Context) (replicaView, error) {
	if b.ctl.id == 0 {
		ident, err := b.loadIdentity()
		if err != nil {
			return replicaView{}, err
		}
		if ident.ID == 0 {
			h := protocol.GetNextBrokerIDRequestHeader{ClusterName: b.cfg.BrokerClusterName, BrokerName: b.cfg.BrokerName}
			resp, err := b.ctlInvoke(ctx, protocol.NewRequest(protocol.ControllerGetNextBrokerID, protocol.EncodeHeader(&h, false), nil))
			if err != nil {
				return replicaView{}, err
			}
			if err := ctlOK(resp, "get next broker id"); err != nil {
				return replicaView{}, err
			}
			next, _ := strconv.ParseInt(resp.Ext("nextBrokerId"), 10, 64)
			ident = brokerIdentity{Cluster: b.cfg.BrokerClusterName, Name: b.cfg.BrokerName, ID: next,
				CheckCode: b.addr + ";" + strconv.FormatInt(b.now().UnixMilli(), 10)}
		}
		ah := protocol.ApplyBrokerIDRequestHeader{ClusterName: ident.Cluster, BrokerName: ident.Name, AppliedBrokerID: ident.ID, RegisterCheckCode: ident.CheckCode}
		resp, err := b.ctlInvoke(ctx, protocol.NewRequest(protocol.ControllerApplyBrokerID, protocol.EncodeHeader(&ah, false), nil))
		if err != nil {
			return replicaView{}, err
		}
		if err := ctlOK(resp, "apply broker id"); err != nil {
			return replicaView{}, err
		}
		if err := b.saveIdentity(ident); err != nil {
			return replicaView{}, err
		}
		b.ctl.id = ident.ID
		b.logger.Info("controller mode: broker id", "brokerId", ident.ID)
	}
	timeout := b.cfg.ControllerHeartBeatTimeoutMills.Milliseconds()
	rh := protocol.RegisterBrokerToControllerRequestHeader{ClusterName: b.cfg.BrokerClusterName, BrokerName: b.cfg.BrokerName,
		BrokerID: b.ctl.id, BrokerAddress: b.addr, InvokeTime: b.now().UnixMilli(), HeartbeatTimeoutMills: &timeout}
	resp, err := b.ctlInvoke(ctx, protocol.NewRequest(protocol.ControllerRegisterBroker, protocol.EncodeHeader(&rh, false), nil))
	if err != nil {
		return replicaView{}, err
	}
	if err := ctlOK(resp, "register to controller"); err != nil {
		return replicaView{}, err
	}
	return b.ctlHeartbeat(ctx)
}

// ctlHeartbeat sends BROKER_HEARTBEAT with the local epoch and offsets and
// returns the master view of the answer.
func (b *Broker) ctlHeartbeat(ctx context.Context) (replicaView, error) {
	epoch := b.ctl.epochs.lastEpoch()
	maxOff := b.Store.MaxPhyOffset()
	confirm := b.Store.ConfirmOffset()
	timeout := b.cfg.ControllerHeartBeatTimeoutMills.Milliseconds()
	prio := b.cfg.BrokerElectionPriority
	id := b.ctl.id
	h := protocol.BrokerHeartbeatRequestHeader{ClusterName: b.cfg.BrokerClusterName, BrokerAddr: b.addr, BrokerName: b.cfg.BrokerName,
		BrokerID: &id, Epoch: &epoch, MaxOffset: &maxOff, ConfirmOffset: &confirm, HeartbeatTimeoutMills: &timeout, ElectionPriority: &prio}
	resp, err := b.ctlInvoke(ctx, protocol.NewRequest(protocol.BrokerHeartbeat, protocol.EncodeHeader(&h, false), nil))
	if err != nil {
		return replicaView{}, err
	}
	if err := ctlOK(resp, "heartbeat to controller"); err != nil {
		return replicaView{}, err
	}
	return decodeView(resp), nil
}

// ctlElect asks for an election of this broker's set (CONTROLLER_ELECT_MASTER).
func (b *Broker) ctlElect(ctx context.Context) {
	h := protocol.ElectMasterRequestHeader{ClusterName: b.cfg.BrokerClusterName, BrokerName: b.cfg.BrokerName, BrokerID: b.ctl.id, InvokeTime: b.now().UnixMilli()}
	if _, err := b.ctlInvoke(ctx, protocol.NewRequest(protocol.ControllerElectMaster, protocol.EncodeHeader(&h, false), nil)); err != nil {
		b.logger.Debug("controller mode: elect request failed", "err", err)
	}
}

// controllerJoin runs right after the store opened (as a SLAVE): it learns
// the role from the controller and prepares the store for it. A master
// reopens the store as master and starts a new epoch at its end; a slave
// compares epochs with its master and, if its log diverged, reopens the
// store truncated at the last common epoch boundary.
func (b *Broker) controllerJoin() error {
	if !b.cfg.EnableControllerMode {
		return nil
	}
	ctx, cancel := context.WithTimeout(b.baseCtx, 2*time.Minute)
	defer cancel()
	var lastErr error
	for {
		if ctx.Err() != nil {
			return fmt.Errorf("broker: controller mode: no role within 2 minutes: %w", errors.Join(lastErr, ctx.Err()))
		}
		view, err := b.ctlRegister(ctx)
		if err == nil && view.masterID == 0 {
			b.ctlElect(ctx)
			view, err = b.ctlHeartbeat(ctx)
		}
		if err == nil && view.masterID == b.ctl.id {
			return b.becomeMaster(view)
		}
		if err == nil && view.masterID != 0 && view.masterAddr != "" {
			err = b.becomeSlave(ctx, view)
			if err == nil {
				return nil
			}
		}
		if err != nil && !errors.Is(err, lastErr) {
			b.logger.Info("controller mode: waiting for a role", "err", err)
		}
		lastErr = err
		select {
		case <-ctx.Done():
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// reopenStore closes the store and opens it again with role (and a
// truncation point, when >= 0).
func (b *Broker) reopenStore(role string, truncate int64) error {
	if err := b.Store.Close(); err != nil {
		return fmt.Errorf("broker: reopen store: %w", err)
	}
	cfg := b.cfg.Store
	cfg.BrokerRole = role
	if truncate >= 0 {
		cfg.TruncateOnStart, cfg.TruncateOffset = true, truncate
	}
	st, err := store.New(cfg, b.logger)
	if err != nil {
		return fmt.Errorf("broker: store: %w", err)
	}
	if err := st.Start(); err != nil {
		return fmt.Errorf("broker: store: %w", err)
	}
	b.Store = st
	b.cfg.Store.BrokerRole = role
	return nil
}

func (b *Broker) becomeMaster(view replicaView) error {
	if err := b.reopenStore(store.RoleSyncMaster, -1); err != nil {
		return err
	}
	b.cfg.BrokerID = protocol.MasterID
	b.ctl.master, b.ctl.epoch = true, view.epoch
	if err := b.ctl.epochs.appendEpoch(view.epoch, b.Store.MaxPhyOffset()); err != nil {
		return err
	}
	b.ctl.mu.Lock()
	b.ctl.syncSet, b.ctl.ssEpoch = view.set, view.ssEpoch
	b.ctl.mu.Unlock()
	b.ctl.setSize.Store(int32(len(view.set)))
	b.logger.Info("controller mode: MASTER", "brokerId", b.ctl.id, "epoch", view.epoch,
		"syncStateSet", view.set, "startOffset", b.Store.MaxPhyOffset())
	return nil
}

// masterInfo is what a slave needs from its master before following it.
type masterInfo struct {
	haAddr string
	epochs protocol.EpochEntryCache
}

func (b *Broker) fetchMasterInfo(ctx context.Context, addr string) (masterInfo, error) {
	var mi masterInfo
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp, err := b.ctl.client.InvokeSync(cctx, addr, protocol.NewRequest(protocol.GetBrokerEpochCache, nil, nil))
	if err != nil {
		return mi, fmt.Errorf("broker: epoch cache of master %s: %w", addr, err)
	}
	if err := ctlOK(resp, "epoch cache of "+addr); err != nil {
		return mi, err
	}
	if err := json.Unmarshal(resp.Body, &mi.epochs); err != nil {
		return mi, fmt.Errorf("broker: epoch cache of master %s: %w", addr, err)
	}
	resp, err = b.ctl.client.InvokeSync(cctx, addr, protocol.NewRequest(protocol.ExchangeBrokerHAInfo, nil, nil))
	if err != nil {
		return mi, fmt.Errorf("broker: HA info of master %s: %w", addr, err)
	}
	if err := ctlOK(resp, "HA info of "+addr); err != nil {
		return mi, err
	}
	mi.haAddr = resp.Ext("masterHaAddress")
	if mi.haAddr == "" {
		return mi, fmt.Errorf("broker: %s is not serving as master yet", addr)
	}
	return mi, nil
}

func (b *Broker) becomeSlave(ctx context.Context, view replicaView) error {
	mi, err := b.fetchMasterInfo(ctx, view.masterAddr)
	if err != nil {
		return err
	}
	cut := consistentPoint(b.ctl.epochs.list(), mi.epochs.EpochList, mi.epochs.MaxOffset)
	if cut >= 0 && cut < b.Store.MaxPhyOffset() {
		b.logger.Warn("controller mode: log diverged from the master's; truncating to the last common epoch boundary",
			"localEnd", b.Store.MaxPhyOffset(), "truncateTo", cut, "master", view.masterAddr, "masterEpoch", view.epoch)
		if err := b.reopenStore(store.RoleSlave, cut); err != nil {
			return err
		}
	}
	if err := b.ctl.epochs.replace(mi.epochs.EpochList); err != nil {
		return err
	}
	b.cfg.BrokerID = b.ctl.id
	b.cfg.HaMasterAddress = mi.haAddr
	b.ctl.master, b.ctl.epoch = false, view.epoch
	b.ctl.mu.Lock()
	b.ctl.masterAddr = view.masterAddr
	b.ctl.mu.Unlock()
	b.ha.mu.Lock()
	b.ha.masterAddr = view.masterAddr
	b.ha.mu.Unlock()
	b.logger.Info("controller mode: SLAVE", "brokerId", b.ctl.id, "master", view.masterAddr, "masterHa", mi.haAddr,
		"epoch", view.epoch, "offset", b.Store.MaxPhyOffset())
	return nil
}

// startControllerMode runs once the HA side started: a master installs
// the write gate (lease, minInSyncReplicas) and the fenced replicator and
// renews its lease before it serves; both roles start the heartbeat loop,
// a master also the SyncStateSet loop.
func (b *Broker) startControllerMode() error {
	if !b.cfg.EnableControllerMode {
		return nil
	}
	if b.ctl.master {
		srv := b.ha.server
		b.ctl.mu.Lock()
		srv.Transfer().SetSyncStateSet(slaveKeys(b.ctl.syncSet, b.ctl.id))
		b.ctl.mu.Unlock()
		if b.cfg.AllAckInSyncStateSet {
			// Consumers read only what the whole SyncStateSet holds
			// (RocketMQ's confirm offset): dispatch stops at the lowest
			// ack of the set. Everything this master had when it took
			// over is confirmed; later data as the members acknowledge it.
			b.Store.SetConfirmOffset(b.Store.MaxPhyOffset())
			srv.Transfer().SetConfirmListener(b.Store.SetConfirmOffset)
		}
		b.Store.SetWriteGate(b.writeGate)
		b.Store.SetReplicator(fencedReplicator{inner: srv.Replicator(), b: b})
		ctx, cancel := context.WithTimeout(b.baseCtx, 5*time.Second)
		b.ctlBeat(ctx)
		cancel()
		b.ctl.group.Every("sync-state-set", b.cfg.CheckSyncStateSetPeriod, func(ctx context.Context) { b.checkSyncStateSet(ctx) })
	}
	b.ctl.group.Go("controller-heartbeat", b.ctlHeartbeatLoop)
	return nil
}

func slaveKeys(set []int64, self int64) []uint64 {
	var out []uint64
	for _, id := range set {
		if id != self {
			out = append(out, uint64(id))
		}
	}
	return out
}

// leaseValid: a master may acknowledge writes.
func (b *Broker) leaseValid() bool {
	return !b.ctl.fenced.Load() && b.now().UnixNano() < b.ctl.leaseUntil.Load()
}

// writeGate refuses puts on a master without a lease (fencing) or with a
// SyncStateSet below minInSyncReplicas.
func (b *Broker) writeGate() (store.PutStatus, string) {
	if !b.leaseValid() {
		return store.ServiceNotAvailable, "broker is fenced: no valid controller lease (another master may have been elected)"
	}
	if int(b.ctl.setSize.Load()) < b.cfg.MinInSyncReplicas {
		return store.InSyncReplicasNotEnough, "in-sync replicas not enough"
	}
	return store.PutOK, ""
}

// fencedReplicator re-checks the lease when the replicas acknowledged: a
// put that was written before a hang is not acknowledged after the lease
// ran out (the new master may lack it).
type fencedReplicator struct {
	inner store.Replicator
	b     *Broker
}

func (r fencedReplicator) AwaitReplicated(nextOffset int64, done func(store.PutStatus)) {
	r.inner.AwaitReplicated(nextOffset, func(st store.PutStatus) {
		if st == store.PutOK && !r.b.leaseValid() {
			st = store.ServiceNotAvailable
		}
		done(st)
	})
}

func (b *Broker) ctlHeartbeatLoop(ctx context.Context) {
	t := time.NewTicker(b.cfg.BrokerHeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-b.ctl.wake:
		}
		b.ctlBeat(ctx)
	}
}

// ctlBeat heartbeats and acts on the answer: a master renews its lease
// (from the time the heartbeat was sent) or, if another master or epoch
// is named, fences itself and asks for a restart; a slave follows a new
// master or, when named master itself, asks for a restart.
func (b *Broker) ctlBeat(ctx context.Context) {
	sent := b.now()
	view, err := b.ctlHeartbeat(ctx)
	if err != nil {
		b.logger.Debug("controller heartbeat failed", "err", err)
		return
	}
	if b.ctl.master {
		if view.masterID == b.ctl.id && view.epoch == b.ctl.epoch {
			until := sent.Add(b.cfg.leaseDuration()).UnixNano()
			for {
				cur := b.ctl.leaseUntil.Load()
				if until <= cur || b.ctl.leaseUntil.CompareAndSwap(cur, until) {
					break
				}
			}
			return
		}
		b.ctl.fenced.Store(true)
		b.requestRestart("the controller names broker %d master at epoch %d (this broker %d served epoch %d)",
			view.masterID, view.epoch, b.ctl.id, b.ctl.epoch)
		return
	}
	switch {
	case view.masterID == b.ctl.id:
		b.requestRestart("elected master at epoch %d", view.epoch)
	case view.masterID == 0:
		b.ctlElect(ctx)
	case view.epoch != b.ctl.epoch || view.masterAddr != b.followedMaster():
		b.follow(ctx, view)
	}
}

func (b *Broker) followedMaster() string {
	b.ctl.mu.Lock()
	defer b.ctl.mu.Unlock()
	return b.ctl.masterAddr
}

// follow switches a running slave to a new master when its log is a
// prefix of the new master's; otherwise it asks for a restart (the store
// must be truncated first).
func (b *Broker) follow(ctx context.Context, view replicaView) {
	if view.masterAddr == "" {
		return
	}
	mi, err := b.fetchMasterInfo(ctx, view.masterAddr)
	if err != nil {
		b.logger.Info("controller mode: new master not ready yet", "master", view.masterAddr, "err", err)
		return
	}
	cut := consistentPoint(b.ctl.epochs.list(), mi.epochs.EpochList, mi.epochs.MaxOffset)
	if cut >= 0 && cut < b.Store.MaxPhyOffset() {
		b.requestRestart("log diverged from new master %s at %d (local end %d)", view.masterAddr, cut, b.Store.MaxPhyOffset())
		return
	}
	if err := b.ctl.epochs.replace(mi.epochs.EpochList); err != nil {
		b.logger.Error("controller mode: epoch file", "err", err)
		return
	}
	b.ctl.mu.Lock()
	b.ctl.masterAddr = view.masterAddr
	b.ctl.epoch = view.epoch
	b.ctl.mu.Unlock()
	b.ha.mu.Lock()
	b.ha.masterAddr = view.masterAddr
	b.ha.mu.Unlock()
	if b.ha.client != nil {
		b.ha.client.SetMasterAddress(mi.haAddr)
	}
	select {
	case b.ha.masterWake <- struct{}{}:
	default:
	}
	b.logger.Info("controller mode: following new master", "master", view.masterAddr, "masterHa", mi.haAddr, "epoch", view.epoch)
	b.requestRegister()
}

// checkSyncStateSet is the master's SyncStateSet maintenance: a slave that
// has not caught up for haMaxTimeSlaveNotCatchup leaves the set, a slave
// that caught up within the last check period joins it. A change is
// applied locally only once the controller accepted it.
func (b *Broker) checkSyncStateSet(ctx context.Context) {
	if b.ha.server == nil || !b.leaseValid() {
		return
	}
	now := b.now()
	prog := b.ha.server.Progress()
	b.ctl.mu.Lock()
	for id, p := range prog {
		if !p.LastCaughtUp.IsZero() && p.LastCaughtUp.After(b.ctl.caughtUp[id]) {
			b.ctl.caughtUp[id] = p.LastCaughtUp
		}
	}
	cur := slices.Clone(b.ctl.syncSet)
	ssEpoch := b.ctl.ssEpoch
	next := []int64{b.ctl.id}
	for _, id := range cur {
		if id == b.ctl.id {
			continue
		}
		last, ok := b.ctl.caughtUp[id]
		if !ok {
			// Not seen on this master yet: count from now.
			b.ctl.caughtUp[id] = now
			last = now
		}
		if now.Sub(last) <= b.cfg.HaMaxTimeSlaveNotCatchup {
			next = append(next, id)
		}
	}
	for id, p := range prog {
		if !slices.Contains(cur, id) && !p.LastCaughtUp.IsZero() && now.Sub(p.LastCaughtUp) <= b.cfg.CheckSyncStateSetPeriod {
			next = append(next, id)
		}
	}
	b.ctl.mu.Unlock()
	slices.Sort(next)
	next = slices.Compact(next)
	if slices.Equal(next, cur) {
		return
	}
	h := protocol.AlterSyncStateSetRequestHeader{BrokerName: b.cfg.BrokerName, MasterBrokerID: b.ctl.id, MasterEpoch: b.ctl.epoch, InvokeTime: now.UnixMilli()}
	body := protocol.SyncStateSet{SyncStateSet: next, SyncStateSetEpoch: ssEpoch}.Encode()
	resp, err := b.ctlInvoke(ctx, protocol.NewRequest(protocol.ControllerAlterSyncStateSet, protocol.EncodeHeader(&h, false), body))
	if err == nil {
		err = ctlOK(resp, "alter SyncStateSet")
	}
	if err != nil {
		b.logger.Warn("controller mode: SyncStateSet change refused", "from", cur, "to", next, "err", err)
		return
	}
	newEpoch := ssEpoch + 1
	if s, err := protocol.DecodeSyncStateSet(resp.Body); err == nil {
		next, newEpoch = s.SyncStateSet, s.SyncStateSetEpoch
	}
	b.ctl.mu.Lock()
	b.ctl.syncSet, b.ctl.ssEpoch = next, newEpoch
	b.ctl.mu.Unlock()
	b.ctl.setSize.Store(int32(len(next)))
	b.ha.server.Transfer().SetSyncStateSet(slaveKeys(next, b.ctl.id))
	b.logger.Info("controller mode: SyncStateSet changed", "from", cur, "to", next, "epoch", newEpoch)
}

// registerControllerProcessors serves the broker side of controller mode
// and the HA status: NOTIFY_BROKER_ROLE_CHANGED (1008),
// GET_BROKER_EPOCH_CACHE (1007), EXCHANGE_BROKER_HA_INFO (906),
// GET_BROKER_HA_STATUS (907).
func (b *Broker) registerControllerProcessors(s *remoting.Server) {
	pool := remoting.PoolConfig{Workers: 2, QueueSize: 1000}
	s.RegisterProcessor(protocol.NotifyBrokerRoleChanged, b.processNotifyRoleChanged, pool)
	s.RegisterProcessor(protocol.GetBrokerEpochCache, b.processGetEpochCache, pool)
	s.RegisterProcessor(protocol.ExchangeBrokerHAInfo, b.processExchangeHAInfo, pool)
	s.RegisterProcessor(protocol.GetBrokerHAStatus, b.processHAStatus, pool)
}

func (b *Broker) processNotifyRoleChanged(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	if !b.cfg.EnableControllerMode {
		return nil, protocol.Errorf(protocol.RequestCodeNotSupported, "broker is not in controller mode")
	}
	select {
	case b.ctl.wake <- struct{}{}:
	default:
	}
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

func (b *Broker) processGetEpochCache(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	if !b.cfg.EnableControllerMode || b.ctl.epochs == nil {
		return nil, protocol.Errorf(protocol.RequestCodeNotSupported, "broker is not in controller mode")
	}
	maxOff := b.Store.MaxPhyOffset()
	c := protocol.EpochEntryCache{ClusterName: b.cfg.BrokerClusterName, BrokerName: b.cfg.BrokerName, BrokerID: b.ctl.id,
		EpochList: withEnds(b.ctl.epochs.list(), maxOff), MaxOffset: maxOff}
	if c.EpochList == nil {
		c.EpochList = []protocol.EpochEntry{}
	}
	body, _ := json.Marshal(c)
	return bodyResponse(req, body), nil
}

func (b *Broker) processExchangeHAInfo(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.ExtFields = map[string]string{"masterFlushOffset": strconv.FormatInt(b.Store.FlushedOffset(), 10)}
	if b.ha.server != nil {
		resp.ExtFields["masterHaAddress"] = b.haServerAddr()
		resp.ExtFields["masterAddress"] = b.addr
	}
	return resp, nil
}

func (b *Broker) processHAStatus(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	maxOff := b.Store.MaxPhyOffset()
	info := protocol.HARuntimeInfo{Master: b.ha.server != nil, MasterCommitLogMaxOffset: maxOff, HAConnectionInfo: []protocol.HAConnectionRuntimeInfo{}}
	if srv := b.ha.server; srv != nil {
		st := srv.Stats()
		for _, sl := range st.Slaves {
			info.HAConnectionInfo = append(info.HAConnectionInfo, protocol.HAConnectionRuntimeInfo{Addr: sl.Addr,
				SlaveAckOffset: sl.AckOffset, Diff: maxOff - max(sl.AckOffset, 0), InSync: sl.InSync})
			if sl.InSync {
				info.InSyncSlaveNums++
			}
		}
	}
	if c := b.ha.client; c != nil {
		st := c.Stats()
		info.HAClientRuntimeInfo = &protocol.HAClientRuntimeInfo{MasterAddr: st.MasterAddr, MaxOffset: maxOff,
			IsActivated: st.Connected}
	}
	body, _ := json.Marshal(info)
	return bodyResponse(req, body), nil
}

// haClientConfig adds the controller-mode handshake to a slave's HA client.
func (b *Broker) haClientConfig(cfg ha.ClientConfig) ha.ClientConfig {
	if b.cfg.EnableControllerMode {
		cfg.BrokerID = b.ctl.id
	}
	return cfg
}

// stampRegistration prepares a name-server registration in controller
// mode. The data version's stateVersion carries the master epoch this
// instance serves or follows, as RocketMQ's ReplicasManager sets it: the
// name server refuses an id-0 registration from an address whose state
// version is older than the registered master's, so an old master that
// wakes up (SIGCONT, a healed partition) cannot take the route back from
// the new one before it learns its demotion. A fenced master does not
// register at all. It reports whether to register.
func (b *Broker) stampRegistration(w *protocol.TopicConfigSerializeWrapper) bool {
	if !b.cfg.EnableControllerMode {
		return true
	}
	if b.ctl.master && b.ctl.fenced.Load() {
		b.logger.Debug("controller mode: fenced master skips its name-server registration")
		return false
	}
	b.ctl.mu.Lock()
	w.DataVersion.StateVersion = int64(b.ctl.epoch) // follow changes it under mu
	b.ctl.mu.Unlock()
	return true
}

// describeControllerMode is the role line of the start-up log.
func (b *Broker) describeControllerMode() string {
	if !b.cfg.EnableControllerMode {
		return ""
	}
	role := "SLAVE"
	if b.ctl.master {
		role = "MASTER"
	}
	return strings.Join([]string{role, "epoch", strconv.Itoa(int(b.ctl.epoch))}, " ")
}

// pushTopicsToSlaves copies topics just created or changed on a
// controller-mode master to its slaves before the change is acknowledged
// (UPDATE_AND_CREATE_TOPIC to each slave, bounded by 2 s), so a topic
// created just before the master dies is served by the new master. The
// periodic slave sync still reconciles the whole table.
func (b *Broker) pushTopicsToSlaves(tcs []protocol.TopicConfig) {
	if !b.cfg.EnableControllerMode || !b.ctl.master || len(tcs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(b.baseCtx, 2*time.Second)
	defer cancel()
	addrs := b.slaveAddrs(ctx)
	var wg sync.WaitGroup
	for _, addr := range addrs {
		for _, tc := range tcs {
			h := protocol.CreateTopicRequestHeader{Topic: tc.TopicName, DefaultTopic: "TBW102", ReadQueueNums: tc.ReadQueueNums,
				WriteQueueNums: tc.WriteQueueNums, Perm: tc.Perm, TopicFilterType: string(tc.TopicFilterType),
				TopicSysFlag: tc.TopicSysFlag, Order: tc.Order}
			req := protocol.NewRequest(protocol.UpdateAndCreateTopic, protocol.EncodeHeader(&h, false), nil)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := b.ctl.client.InvokeSync(ctx, addr, req); err != nil {
					b.logger.Debug("controller mode: push topic to slave failed", "slave", addr, "topic", h.Topic, "err", err)
				}
			}()
		}
	}
	wg.Wait()
}

// slaveAddrs returns the other members' addresses from the controller
// (CONTROLLER_GET_SYNC_STATE_DATA), cached for a second.
func (b *Broker) slaveAddrs(ctx context.Context) []string {
	b.ctl.mu.Lock()
	if time.Since(b.ctl.membersAt) < time.Second {
		out := slices.Clone(b.ctl.members)
		b.ctl.mu.Unlock()
		return out
	}
	b.ctl.mu.Unlock()
	body, _ := json.Marshal([]string{b.cfg.BrokerName})
	resp, err := b.ctlInvoke(ctx, protocol.NewRequest(protocol.ControllerGetSyncStateData, nil, body))
	if err != nil || resp.Code != int32(protocol.Success) {
		return nil
	}
	var info protocol.BrokerReplicasInfo
	if json.Unmarshal(resp.Body, &info) != nil {
		return nil
	}
	ri := info.ReplicasInfoTable[b.cfg.BrokerName]
	var out []string
	for _, r := range append(ri.InSyncReplicas, ri.NotInSyncReplicas...) {
		if r.BrokerID != b.ctl.id && r.Alive && r.BrokerAddress != "" {
			out = append(out, r.BrokerAddress)
		}
	}
	b.ctl.mu.Lock()
	b.ctl.members, b.ctl.membersAt = out, time.Now()
	b.ctl.mu.Unlock()
	return out
}
