package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apogeemq/apogee/internal/pop"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/run"
)

// Slave acting master (RocketMQ 5's enableSlaveActingMaster, classic
// master-slave groups; docs/broker.md §2.3). The name server
// (supportActingMaster) presents a group without a master with its
// lowest-id slave as id 0 and read-only queues; that slave then serves
// what only a master can serve. Here that is POP: pop, peek, ack, batch
// ack and change of invisible time, on the slave's copy of the master's
// POP state (pop_repl.go). RocketMQ writes POP checkpoints to the commit
// log's revive topic, so its acting slave must "escape" them to another
// master; the POP state here has its own log, so the acting slave keeps it
// locally and the commit log is never written on a slave.
//
// The lifecycle:
//
//   - every slave with the key polls GET_BROKER_MEMBER_GROUP every
//     syncBrokerMemberGroupPeriod (and sends BROKER_HEARTBEAT with
//     brokerNotActiveTimeoutMillis); it acts while the group has no id 0
//     and its own id is the lowest. Acting starts by writing the marker
//     file <storePathRootDir>/popActingMaster (fsync), then allows local
//     changes of the POP store, which is read-only otherwise; replication
//     from the master stops while the marker exists.
//   - a master with the key starts isolated ("pre-online"): it serves no
//     POP, revives nothing and does not register until it has asked its
//     group's slaves (from GET_BROKER_MEMBER_GROUP) for their POP state
//     with PopReplicateCode and takeover=true. A slave that acted stops
//     acting (its store read-only first, so the snapshot it answers holds
//     every change it made) and answers its state; the master replaces its
//     own with it. Acks made on the slave stay acked, its checkpoints stay
//     in flight with their receipt handles.
//   - once the slave sees id 0 registered again it removes the marker and
//     follows the master's POP state again (a snapshot of the new session).
//
// What is not done on an acting slave: reviving expired checkpoints (the
// retry copies would be commit-log writes; RocketMQ escapes them to another
// master, enableRemoteEscape, off by default). They stay in flight and the
// returning master revives them: redelivery is late, never lost. What the
// slave had not replicated when the master died is handled at least once
// (pop_repl.go), as in a controller-mode failover.

// ActingMasterConfig holds the slave-acting-master keys of broker.conf.
// Config embeds it.
type ActingMasterConfig struct {
	// EnableSlaveActingMaster turns the mode on (false, as RocketMQ).
	EnableSlaveActingMaster bool `conf:"enableSlaveActingMaster"`
	// SyncBrokerMemberGroupPeriod is how often a slave reads its group's
	// live members from the name server (1 s).
	SyncBrokerMemberGroupPeriod time.Duration `conf:"syncBrokerMemberGroupPeriod"`
	// BrokerNotActiveTimeoutMillis: the name server drops a broker whose
	// BROKER_HEARTBEAT stopped this long ago (10 s).
	BrokerNotActiveTimeoutMillis time.Duration `conf:"brokerNotActiveTimeoutMillis"`
	// SkipPreOnline: a returning master registers at once, without taking
	// back the POP state an acting slave changed (false).
	SkipPreOnline bool `conf:"skipPreOnline"`
}

// DefaultActingMasterConfig returns RocketMQ's defaults.
func DefaultActingMasterConfig() ActingMasterConfig {
	return ActingMasterConfig{
		SyncBrokerMemberGroupPeriod:  time.Second,
		BrokerNotActiveTimeoutMillis: 10 * time.Second,
	}
}

// takeoverQuiet is how long a slave whose POP state a returning master
// took does not act again while that master is not registered yet.
const takeoverQuiet = 30 * time.Second

// actingState is Broker.acting.
type actingState struct {
	// mu serialises transitions (the member-group loop, a takeover).
	mu sync.Mutex
	// on: this slave acts as its group's master (serves POP).
	on atomic.Bool
	// acted mirrors the marker file: the POP state holds changes the master
	// has not taken yet, so replication from the master must not replace it.
	acted atomic.Bool
	// quietUntil (unix ms): a master took the state; do not act before.
	quietUntil atomic.Int64
	// online: a master's pre-online is done (or not needed).
	online atomic.Bool
}

// actingEnabled: classic master-slave with the key on (controller mode
// elects a master instead).
func (b *Broker) actingEnabled() bool {
	return b.cfg.EnableSlaveActingMaster && !b.cfg.EnableControllerMode
}

// popServes says whether this broker serves POP now: a master once its
// pre-online is done, a slave while it acts as master.
func (b *Broker) popServes() bool {
	if b.cfg.isSlave() {
		return b.actingEnabled() && b.acting.on.Load()
	}
	return !b.actingEnabled() || b.cfg.SkipPreOnline || len(b.cfg.NamesrvAddr) == 0 || b.acting.online.Load()
}

// popRefusal is the error for a POP request popServes refuses.
func (b *Broker) popRefusal(what string) *protocol.Error {
	if b.cfg.isSlave() {
		return protocol.Errorf(protocol.SlaveNotAvailable, "the broker[%s] is a slave: %s on the master", b.cfg.BrokerIP1, what)
	}
	return protocol.Errorf(protocol.ServiceNotAvailable, "the broker[%s] is taking back its POP state from its slaves", b.cfg.BrokerIP1)
}

func (b *Broker) actingMarkerPath() string {
	return filepath.Join(b.cfg.Store.StorePathRootDir, "popActingMaster")
}

// initActingMaster runs in startPop, before the POP loops start: a slave's
// POP store is read-only unless it acts, and the marker of an earlier run
// is taken up.
func (b *Broker) initActingMaster(st *pop.Store) {
	if !b.actingEnabled() || !b.cfg.isSlave() {
		return
	}
	st.SetReadOnly(true)
	if _, err := os.Stat(b.actingMarkerPath()); err == nil {
		b.acting.acted.Store(true)
		b.logger.Info("pop: this slave acted as master before its restart; its POP state waits for the master to take it")
	}
}

// startActingMaster runs in Start before the first registration: a master
// takes back its slaves' POP state (pre-online), a slave starts the
// member-group loop.
func (b *Broker) startActingMaster() {
	if !b.actingEnabled() || len(b.cfg.NamesrvAddr) == 0 {
		return
	}
	if !b.cfg.isSlave() {
		if !b.cfg.SkipPreOnline {
			b.preOnline()
		}
		b.acting.online.Store(true)
		return
	}
	b.goFunc("acting-master", func() {
		period := max(b.cfg.SyncBrokerMemberGroupPeriod, 100*time.Millisecond)
		b.actingTick(b.baseCtx)
		run.Every(b.baseCtx, period, b.actingTick)
	})
}

// actingTick: one heartbeat and one member-group read on a slave.
func (b *Broker) actingTick(ctx context.Context) {
	b.sendBrokerHeartbeat(ctx)
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	g, err := b.brokerMemberGroup(cctx)
	cancel()
	if err != nil {
		b.logger.Debug("acting master: member group", "err", err)
		return // keep the current state
	}
	_, masterUp := g.BrokerAddrs[protocol.MasterID]
	lowest := int64(-1)
	if len(g.BrokerAddrs) > 0 {
		lowest = slices.Min(slices.Collect(maps.Keys(g.BrokerAddrs)))
	}
	act := !masterUp && lowest == b.cfg.BrokerID && time.Now().UnixMilli() >= b.acting.quietUntil.Load()
	b.setActing(act, masterUp)
}

// setActing moves a slave into or out of acting; masterUp (id 0 is
// registered) also ends the wait for a takeover.
func (b *Broker) setActing(act, masterUp bool) {
	a := &b.acting
	a.mu.Lock()
	defer a.mu.Unlock()
	if act && time.Now().UnixMilli() < a.quietUntil.Load() {
		act = false // a takeover ran since the caller looked (serveTakeover holds mu too)
	}
	switch {
	case act && !a.on.Load():
		if err := b.writeActingMarker(); err != nil {
			b.logger.Error("acting master: cannot write the marker; not acting", "err", err)
			return
		}
		a.acted.Store(true)
		b.pop.state.SetReadOnly(false)
		a.on.Store(true)
		b.logger.Warn("acting master: the master is gone; this slave serves POP for its group")
	case !act && a.on.Load():
		a.on.Store(false)
		b.pop.state.SetReadOnly(true)
		b.logger.Warn("acting master: stopped acting", "masterRegistered", masterUp)
	}
	if masterUp && !a.on.Load() && a.acted.Load() {
		// The master is registered: it took the state in its pre-online,
		// or it skipped it (its own state then wins, at least once).
		if err := os.Remove(b.actingMarkerPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
			b.logger.Error("acting master: remove the marker", "err", err)
			return
		}
		a.acted.Store(false)
		a.quietUntil.Store(0)
		b.logger.Info("acting master: the master is back; following its POP state again")
	}
}

func (b *Broker) writeActingMarker() error {
	path := b.actingMarkerPath()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(strconv.FormatInt(time.Now().UnixMilli(), 10) + "\n")
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// sendBrokerHeartbeat sends BROKER_HEARTBEAT (904) oneway to every name
// server, so a broker that stops answering leaves the route after
// brokerNotActiveTimeoutMillis rather than the registration expiry.
func (b *Broker) sendBrokerHeartbeat(ctx context.Context) {
	id, timeout := b.cfg.BrokerID, b.cfg.BrokerNotActiveTimeoutMillis.Milliseconds()
	h := protocol.BrokerHeartbeatRequestHeader{ClusterName: b.cfg.BrokerClusterName, BrokerAddr: b.addr,
		BrokerName: b.cfg.BrokerName, BrokerID: &id, HeartbeatTimeoutMills: &timeout}
	ext := protocol.EncodeHeader(&h, false)
	for _, addr := range b.cfg.NamesrvAddr {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		if err := b.nsClient.InvokeOneway(cctx, addr, protocol.NewRequest(protocol.BrokerHeartbeat, cloneExt(ext), nil)); err != nil {
			b.logger.Debug("broker heartbeat", "namesrv", addr, "err", err)
		}
		cancel()
	}
}

// brokerMemberGroup reads the group's registered members from the first
// name server that answers (GET_BROKER_MEMBER_GROUP, 901).
func (b *Broker) brokerMemberGroup(ctx context.Context) (protocol.BrokerMemberGroup, error) {
	ext := protocol.EncodeHeader(&protocol.GetBrokerMemberGroupRequestHeader{ClusterName: b.cfg.BrokerClusterName,
		BrokerName: b.cfg.BrokerName}, false)
	var errs []error
	for _, addr := range b.cfg.NamesrvAddr {
		resp, err := b.nsClient.InvokeSync(ctx, addr, protocol.NewRequest(protocol.GetBrokerMemberGroup, cloneExt(ext), nil))
		if err == nil && resp.Code != int32(protocol.Success) {
			err = protocol.Errorf(protocol.ResponseCode(resp.Code), "%s", resp.Remark)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		body, err := protocol.DecodeGetBrokerMemberGroupResponseBody(resp.Body)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		return body.BrokerMemberGroup, nil
	}
	return protocol.BrokerMemberGroup{}, fmt.Errorf("broker: member group: %w", errors.Join(errs...))
}

// preOnline is a returning master's isolation step: take the POP state of
// the slave that acted while it was away. Bounded (30 s in all); a slave
// that does not answer is skipped (the master's own state then stands).
func (b *Broker) preOnline() {
	ctx, cancel := context.WithTimeout(b.baseCtx, 30*time.Second)
	defer cancel()
	g, err := b.brokerMemberGroup(ctx)
	if err != nil {
		b.logger.Warn("pre-online: no member group; going online with this broker's POP state", "err", err)
		return
	}
	ids := slices.Sorted(maps.Keys(g.BrokerAddrs))
	for _, id := range ids {
		if id == protocol.MasterID || id == b.cfg.BrokerID {
			continue
		}
		addr := g.BrokerAddrs[id]
		took, err := b.takeOverPopState(ctx, addr)
		if err != nil {
			b.logger.Warn("pre-online: take the POP state of a slave", "slave", addr, "err", err)
			continue
		}
		if took {
			b.logger.Info("pre-online: took the POP state of the slave that acted as master", "slave", addr,
				"inFlight", b.pop.state.Stats().InFlight)
			return
		}
	}
}

// takeOverPopState asks the slave at addr for its POP state with
// takeover=true until a whole snapshot is applied; took is false when the
// slave did not act.
func (b *Broker) takeOverPopState(ctx context.Context, addr string) (took bool, err error) {
	st := b.pop.state
	for ctx.Err() == nil {
		next := st.ReplicaRequest()
		req := replRequest(next)
		req.ExtFields["takeover"] = "true"
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := b.nsClient.InvokeSync(cctx, addr, req)
		cancel()
		if err != nil {
			return false, err
		}
		if resp.Code != int32(protocol.Success) {
			return false, protocol.Errorf(protocol.ResponseCode(resp.Code), "%s", resp.Remark)
		}
		if resp.Ext("acted") != "true" {
			return false, nil
		}
		c, err := parseReplChunk(resp)
		if err != nil {
			return false, err
		}
		if !c.Snapshot {
			return false, fmt.Errorf("broker: takeover answer is not a snapshot")
		}
		if err := st.ApplyReplicated(c); err != nil {
			return false, err
		}
		if c.SnapshotOffset+int64(len(c.Data)) == c.SnapshotSize {
			return true, nil
		}
	}
	return false, ctx.Err()
}

// serveTakeover answers a returning master's takeover request on a slave:
// it stops acting (the store read-only first, so the snapshot holds every
// change) and stays quiet for takeoverQuiet; acted=false when it has no
// change of its own to hand over.
func (b *Broker) serveTakeover(req *protocol.Command, rr pop.ReplRequest) (*protocol.Command, error) {
	a := &b.acting
	a.mu.Lock()
	if a.on.Load() || a.acted.Load() {
		a.quietUntil.Store(time.Now().Add(takeoverQuiet).UnixMilli())
	}
	if a.on.Load() {
		a.on.Store(false)
		b.pop.state.SetReadOnly(true)
		b.logger.Warn("acting master: the master is back and takes the POP state")
	}
	acted := a.acted.Load()
	a.mu.Unlock()
	if !acted {
		resp := protocol.NewResponse(req, protocol.Success, "")
		resp.ExtFields = map[string]string{"acted": "false"}
		return resp, nil
	}
	resp, err := b.replAnswer(req, rr)
	if err != nil {
		return nil, err
	}
	resp.ExtFields["acted"] = "true"
	return resp, nil
}
