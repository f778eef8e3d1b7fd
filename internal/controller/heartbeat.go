package controller

import (
	"sync"
	"time"
)

// DefaultHeartbeatTimeout is a broker's heartbeat timeout when it does not
// send one (controllerHeartBeatTimeoutMills, 10 s).
const DefaultHeartbeatTimeout = 10 * time.Second

type liveKey struct {
	brokerName string
	id         int64
}

// liveInfo is the leader's view of one broker (DefaultBrokerHeartbeatManager's
// BrokerLiveInfo).
type liveInfo struct {
	cluster    string
	addr       string
	connID     uint64 // remoting connection of the last heartbeat; 0 unknown
	lastUpdate time.Time
	timeout    time.Duration
	// heard: a heartbeat arrived in this leadership term, so epoch and
	// offset are known and the broker may be elected.
	heard     bool
	epoch     int32
	maxOffset int64
	confirm   int64
	priority  int32
}

// liveTable is the leader-only liveness table. It is not replicated: a new
// leader starts it over (reset), giving every broker of the replicated
// state a full timeout from the moment of the takeover. A broker that was
// dead before is therefore declared dead at the latest one timeout after a
// leader change, and a live master is never declared dead earlier than one
// timeout after its last heartbeat to any leader (the fencing argument in
// DESIGN.md relies on this).
type liveTable struct {
	mu sync.Mutex
	m  map[liveKey]*liveInfo // guarded by mu
}

func (t *liveTable) reset(st *state, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.m)
	for name, set := range st.Sets {
		for id, r := range set.Brokers {
			timeout := DefaultHeartbeatTimeout
			if r.TimeoutMs > 0 {
				timeout = time.Duration(r.TimeoutMs) * time.Millisecond
			}
			t.m[liveKey{name, id}] = &liveInfo{cluster: set.Cluster, addr: r.Addr, lastUpdate: now, timeout: timeout, epoch: -1}
		}
	}
}

// beat records a heartbeat.
func (t *liveTable) beat(k liveKey, info liveInfo) {
	t.mu.Lock()
	defer t.mu.Unlock()
	info.heard = true
	t.m[k] = &info
}

// remove drops k and reports whether it was present.
func (t *liveTable) remove(k liveKey) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.m[k]
	delete(t.m, k)
	return ok
}

// removeConn drops every broker whose last heartbeat came over connID.
func (t *liveTable) removeConn(connID uint64) []liveKey {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []liveKey
	for k, v := range t.m {
		if v.connID == connID && connID != 0 {
			out = append(out, k)
			delete(t.m, k)
		}
	}
	return out
}

// expire drops and returns the brokers whose heartbeat timed out.
func (t *liveTable) expire(now time.Time) []liveKey {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []liveKey
	for k, v := range t.m {
		if now.Sub(v.lastUpdate) > v.timeout {
			out = append(out, k)
			delete(t.m, k)
		}
	}
	return out
}

// alive reports whether k is in the table.
func (t *liveTable) alive(k liveKey) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.m[k]
	return ok
}

// get returns a copy of k's entry.
func (t *liveTable) get(k liveKey) (liveInfo, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.m[k]
	if !ok {
		return liveInfo{}, false
	}
	return *v, true
}

// candidates returns the heard, live brokers of one set.
func (t *liveTable) candidates(brokerName string) map[int64]candidate {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[int64]candidate)
	for k, v := range t.m {
		if k.brokerName == brokerName && v.heard {
			out[k.id] = candidate{ID: k.id, Epoch: v.epoch, MaxOffset: v.maxOffset, Priority: v.priority}
		}
	}
	return out
}

// setMembers returns the live entries of one set.
func (t *liveTable) setMembers(brokerName string) map[int64]liveInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[int64]liveInfo)
	for k, v := range t.m {
		if k.brokerName == brokerName {
			out[k.id] = *v
		}
	}
	return out
}
