package broker

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/apogeemq/apogee/internal/pop"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// POP state on slaves (internal/pop/repl.go; docs/broker.md §1.14).
// RocketMQ keeps POP checkpoints and acks in the revive topic of the
// commit log, so they replicate with it and a slave that becomes master
// revives what its master left in flight. Here the POP state has its own
// log; a slave follows its master's stream of POP records over remoting
// (PopReplicateCode, every popReplicaInterval, at once again while there
// is more) and writes them to its own POP log. A slave promoted to master
// (controller mode restarts the broker in its new role) recovers that log:
// every message its master had in flight stays in flight, with the same
// receipt handles and invisible times, and is revived when they pass;
// acked messages stay acked. What the slave had not received when the
// master died (at most an interval's worth) is handled at least once: a
// lost checkpoint makes its messages poppable again from the replicated
// pop offset, a lost ack redelivers its message.

// PopReplicateCode is an Apogee request: a slave reads its master's POP
// state stream. Request ext fields: session, position, snapshotOffset
// (pop.ReplRequest; all 0 at first). Answer ext fields: session, from,
// next, snapshot ("true": the body is the part at snapshotOffset of a
// snapshot of snapshotSize bytes); body: the frames.
const PopReplicateCode protocol.RequestCode = 3101

const (
	popReplicaInterval = 100 * time.Millisecond
	popReplicaMaxBytes = 1 << 20
)

// popReplica is a slave's replication progress (for stats and tests); the
// position itself is the store's (pop.Store.ReplicaRequest).
type popReplica struct {
	applied  atomic.Int64 // answers applied
	upToDate atomic.Bool  // the last answer was empty: caught up then
}

// processPopReplicate serves PopReplicateCode on a master, and on a slave
// acting master the takeover by its returning master (acting_master.go).
func (b *Broker) processPopReplicate(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var rr pop.ReplRequest
	for _, f := range []struct {
		key string
		set func(string) error
	}{
		{"session", func(v string) (err error) { rr.Session, err = strconv.ParseUint(v, 10, 64); return }},
		{"position", func(v string) (err error) { rr.Pos, err = strconv.ParseInt(v, 10, 64); return }},
		{"snapshotOffset", func(v string) (err error) { rr.SnapshotOffset, err = strconv.ParseInt(v, 10, 64); return }},
	} {
		if v := req.Ext(f.key); v != "" {
			if err := f.set(v); err != nil {
				return nil, protocol.Errorf(protocol.InvalidParameter, "bad %s %q", f.key, v)
			}
		}
	}
	if req.Ext("takeover") == "true" && b.cfg.isSlave() && b.actingEnabled() {
		return b.serveTakeover(req, rr)
	}
	if b.cfg.isSlave() {
		return nil, protocol.Errorf(protocol.SlaveNotAvailable, "the broker[%s] is a slave: replicate POP state from the master", b.cfg.BrokerIP1)
	}
	return b.replAnswer(req, rr)
}

// replAnswer reads the POP state stream at rr (pop.Store.ReadReplication).
func (b *Broker) replAnswer(req *protocol.Command, rr pop.ReplRequest) (*protocol.Command, error) {
	c, err := b.pop.state.ReadReplication(rr, popReplicaMaxBytes)
	if err != nil {
		return nil, protocol.Errorf(protocol.SystemError, "%v", err)
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.ExtFields = map[string]string{
		"session":  strconv.FormatUint(c.Session, 10),
		"from":     strconv.FormatInt(c.From, 10),
		"next":     strconv.FormatInt(c.Next, 10),
		"snapshot": strconv.FormatBool(c.Snapshot),
	}
	if c.Snapshot {
		resp.ExtFields["snapshotOffset"] = strconv.FormatInt(c.SnapshotOffset, 10)
		resp.ExtFields["snapshotSize"] = strconv.FormatInt(c.SnapshotSize, 10)
	}
	resp.Body = c.Data
	return resp, nil
}

// replRequest is the PopReplicateCode request for position next.
func replRequest(next pop.ReplRequest) *protocol.Command {
	req := protocol.NewRequest(PopReplicateCode, nil, nil)
	req.ExtFields = map[string]string{
		"session":        strconv.FormatUint(next.Session, 10),
		"position":       strconv.FormatInt(next.Pos, 10),
		"snapshotOffset": strconv.FormatInt(next.SnapshotOffset, 10),
	}
	return req
}

// parseReplChunk reads a PopReplicateCode answer.
func parseReplChunk(resp *protocol.Command) (pop.ReplChunk, error) {
	var c pop.ReplChunk
	var err error
	c.Snapshot, c.Data = resp.Ext("snapshot") == "true", resp.Body
	c.Session, err = strconv.ParseUint(resp.Ext("session"), 10, 64)
	for _, f := range []struct {
		key string
		dst *int64
	}{{"from", &c.From}, {"next", &c.Next}, {"snapshotOffset", &c.SnapshotOffset}, {"snapshotSize", &c.SnapshotSize}} {
		if err == nil && (c.Snapshot || f.key == "from" || f.key == "next") {
			*f.dst, err = strconv.ParseInt(resp.Ext(f.key), 10, 64)
		}
	}
	if err != nil {
		return c, fmt.Errorf("broker: pop replication answer: %w", err)
	}
	return c, nil
}

// replicaLoop runs on a slave: it follows the master's POP state.
func (p *popService) replicaLoop(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		more := false
		// While this slave acts as master, or holds changes its master has
		// not taken back yet, the master's stream must not replace them
		// (acting_master.go).
		if addr := p.b.MasterAddr(); addr != "" && !p.b.acting.on.Load() && !p.b.acting.acted.Load() {
			var err error
			more, err = p.replicateOnce(ctx, addr)
			if err != nil {
				p.b.logger.Warn("pop: replicate from master", "addr", addr, "err", err)
			}
		}
		if more {
			t.Reset(0)
		} else {
			t.Reset(popReplicaInterval)
		}
	}
}

// replicateOnce asks the master once and applies the answer; more is true
// when the answer was not empty (there may be more). A chunk that does not
// apply resets the session: the next answer is a snapshot.
func (p *popService) replicateOnce(ctx context.Context, addr string) (more bool, err error) {
	r := &p.replica
	req := replRequest(p.state.ReplicaRequest())
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := p.b.nsClient.InvokeSync(cctx, addr, req)
	if err != nil {
		return false, err
	}
	if resp.Code != int32(protocol.Success) {
		return false, protocol.Errorf(protocol.ResponseCode(resp.Code), "%s", resp.Remark)
	}
	c, err := parseReplChunk(resp)
	if err != nil {
		return false, err
	}
	if err := p.state.ApplyReplicated(c); err != nil {
		r.upToDate.Store(false)
		return false, err
	}
	if c.Snapshot && c.SnapshotOffset+int64(len(c.Data)) == c.SnapshotSize {
		p.b.logger.Info("pop: state replaced by the master's snapshot", "master", addr, "bytes", c.SnapshotSize,
			"inFlight", p.state.Stats().InFlight)
	}
	r.applied.Add(1)
	empty := !c.Snapshot && len(c.Data) == 0
	r.upToDate.Store(empty)
	return !empty, nil
}

// popRuntimeInfo adds the POP figures to GET_BROKER_RUNTIME_INFO:
// popInFlightMessages (popped, neither acked nor revived; on a slave, its
// copy of the master's) and, on a slave, popReplicaCaughtUp (its last
// request to the master returned nothing new), popReplicaSession and,
// with enableSlaveActingMaster, popActingMaster (it serves POP now).
func (b *Broker) popRuntimeInfo(table map[string]string) {
	p := b.pop
	if p == nil {
		return
	}
	table["popInFlightMessages"] = strconv.FormatInt(p.state.Stats().InFlight, 10)
	if b.cfg.isSlave() {
		if b.actingEnabled() { // acting_master.go
			table["popActingMaster"] = strconv.FormatBool(b.acting.on.Load())
		}
		table["popReplicaCaughtUp"] = strconv.FormatBool(p.replica.upToDate.Load())
		table["popReplicaSession"] = strconv.FormatUint(p.state.ReplicaRequest().Session, 10)
	}
}
