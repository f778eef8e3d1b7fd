package controller

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/apogeemq/apogee/internal/protocol"
)

// FirstBrokerID is the first id the controller hands out (RocketMQ's
// FIRST_BROKER_CONTROLLER_ID). Ids are per broker set and never reused.
const FirstBrokerID int64 = 1

// replica is one broker of a broker set, as the replicated state knows it.
type replica struct {
	Addr      string `json:"addr"`
	CheckCode string `json:"checkCode"`
	// TimeoutMs is the broker's heartbeat timeout (0: the default), so a
	// new leader times it out as configured.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
}

// brokerSet is one broker group's replicated metadata (RocketMQ's
// BrokerReplicaInfo + SyncStateInfo). MasterID 0 means no master.
type brokerSet struct {
	Cluster           string             `json:"cluster"`
	Name              string             `json:"name"`
	Brokers           map[int64]*replica `json:"brokers"`
	NextID            int64              `json:"nextId"`
	MasterID          int64              `json:"masterId"`
	MasterEpoch       int32              `json:"masterEpoch"`
	SyncStateSet      []int64            `json:"syncStateSet"` // sorted, the master included
	SyncStateSetEpoch int32              `json:"syncStateSetEpoch"`
}

func (b *brokerSet) clone() *brokerSet {
	c := *b
	c.Brokers = make(map[int64]*replica, len(b.Brokers))
	for id, r := range b.Brokers {
		rc := *r
		c.Brokers[id] = &rc
	}
	c.SyncStateSet = slices.Clone(b.SyncStateSet)
	return &c
}

func (b *brokerSet) masterAddr() string {
	if r := b.Brokers[b.MasterID]; r != nil && b.MasterID != 0 {
		return r.Addr
	}
	return ""
}

func (b *brokerSet) inSync(id int64) bool {
	_, ok := slices.BinarySearch(b.SyncStateSet, id)
	return ok
}

// state is the replicated state machine's data: broker sets by name. It is
// only changed by apply (raft's FSM goroutine); readers copy under the
// FSM's lock.
type state struct {
	Sets map[string]*brokerSet `json:"sets"`
}

func newState() *state { return &state{Sets: make(map[string]*brokerSet)} }

// opKind names one replicated command.
type opKind string

const (
	opApplyBrokerID  opKind = "applyBrokerId"
	opRegisterBroker opKind = "registerBroker"
	opElect          opKind = "elect"
	opAlterSyncState opKind = "alterSyncStateSet"
	opCleanBroker    opKind = "cleanBrokerData"
)

// op is one raft log entry (JSON). Every op carries the preconditions it
// was decided under, so apply is deterministic and a stale decision (the
// leader changed in between) fails instead of overwriting newer state.
type op struct {
	Kind       opKind `json:"kind"`
	Cluster    string `json:"cluster,omitempty"`
	BrokerName string `json:"brokerName"`
	BrokerID   int64  `json:"brokerId,omitempty"`
	Addr       string `json:"addr,omitempty"`
	CheckCode  string `json:"checkCode,omitempty"`
	TimeoutMs  int64  `json:"timeoutMs,omitempty"`
	// elect: the new master (0 = none) and the epoch it was decided at.
	NewMaster       int64 `json:"newMaster,omitempty"`
	ExpectEpoch     int32 `json:"expectEpoch,omitempty"`
	ExpectSSetEpoch int32 `json:"expectSSetEpoch,omitempty"`
	// alterSyncStateSet: the proposed set.
	NewSyncStateSet []int64 `json:"newSyncStateSet,omitempty"`
	// cleanBrokerData: the ids to remove (nil = the whole set).
	IDs []int64 `json:"ids,omitempty"`
}

// opResult is apply's answer: a response code (Success or a controller
// code), a remark, and the set after the op.
type opResult struct {
	Code   protocol.ResponseCode
	Remark string
	Set    *brokerSet // a copy; nil when the set does not exist
}

func fail(code protocol.ResponseCode, format string, args ...any) opResult {
	return opResult{Code: code, Remark: fmt.Sprintf(format, args...)}
}

// apply executes one op on s. It must be deterministic: every node applies
// the same log to the same state.
func (s *state) apply(o *op) opResult {
	set := s.Sets[o.BrokerName]
	switch o.Kind {
	case opApplyBrokerID:
		if set == nil {
			if o.BrokerID != FirstBrokerID {
				return fail(protocol.ControllerBrokerIDInvalid, "broker id %d of %s is not the next id %d", o.BrokerID, o.BrokerName, FirstBrokerID)
			}
			set = &brokerSet{Cluster: o.Cluster, Name: o.BrokerName, Brokers: map[int64]*replica{}, NextID: FirstBrokerID}
			s.Sets[o.BrokerName] = set
		}
		if r, ok := set.Brokers[o.BrokerID]; ok {
			if r.CheckCode != o.CheckCode {
				return fail(protocol.ControllerBrokerIDInvalid, "broker id %d of %s is taken", o.BrokerID, o.BrokerName)
			}
			return opResult{Code: protocol.Success, Set: set.clone()}
		}
		if o.BrokerID != set.NextID {
			return fail(protocol.ControllerBrokerIDInvalid, "broker id %d of %s is not the next id %d", o.BrokerID, o.BrokerName, set.NextID)
		}
		set.Brokers[o.BrokerID] = &replica{CheckCode: o.CheckCode}
		set.NextID++
	case opRegisterBroker:
		if set == nil || set.Brokers[o.BrokerID] == nil {
			return fail(protocol.ControllerBrokerMetadataNotExist, "broker %s id %d has not applied for its id", o.BrokerName, o.BrokerID)
		}
		set.Brokers[o.BrokerID].Addr = o.Addr
		set.Brokers[o.BrokerID].TimeoutMs = o.TimeoutMs
	case opElect:
		if set == nil {
			return fail(protocol.ControllerBrokerMetadataNotExist, "broker set %s does not exist", o.BrokerName)
		}
		if set.MasterEpoch != o.ExpectEpoch || set.SyncStateSetEpoch != o.ExpectSSetEpoch {
			return fail(protocol.ControllerFencedMasterEpoch, "election for %s decided at epoch %d, now %d", o.BrokerName, o.ExpectEpoch, set.MasterEpoch)
		}
		if o.NewMaster == 0 {
			set.MasterID = 0 // no candidate: keep the set so its members can return
			break
		}
		if set.Brokers[o.NewMaster] == nil {
			return fail(protocol.ControllerInvalidMaster, "broker %d is not a member of %s", o.NewMaster, o.BrokerName)
		}
		set.MasterID = o.NewMaster
		set.MasterEpoch++
		set.SyncStateSet = []int64{o.NewMaster}
		set.SyncStateSetEpoch++
	case opAlterSyncState:
		if set == nil {
			return fail(protocol.ControllerBrokerMetadataNotExist, "broker set %s does not exist", o.BrokerName)
		}
		if set.MasterID != o.BrokerID || set.MasterID == 0 {
			return fail(protocol.ControllerInvalidMaster, "broker %d is not the master of %s", o.BrokerID, o.BrokerName)
		}
		if set.MasterEpoch != o.ExpectEpoch {
			return fail(protocol.ControllerFencedMasterEpoch, "master epoch %d, current %d", o.ExpectEpoch, set.MasterEpoch)
		}
		if set.SyncStateSetEpoch != o.ExpectSSetEpoch {
			return fail(protocol.ControllerFencedSyncStateSetEpoch, "SyncStateSet epoch %d, current %d", o.ExpectSSetEpoch, set.SyncStateSetEpoch)
		}
		ids := slices.Sorted(slices.Values(o.NewSyncStateSet))
		ids = slices.Compact(ids)
		if !slices.Contains(ids, set.MasterID) {
			return fail(protocol.ControllerInvalidReplicas, "the SyncStateSet must contain the master %d", set.MasterID)
		}
		for _, id := range ids {
			if set.Brokers[id] == nil {
				return fail(protocol.ControllerInvalidReplicas, "broker %d is not a member of %s", id, o.BrokerName)
			}
		}
		set.SyncStateSet = ids
		set.SyncStateSetEpoch++
	case opCleanBroker:
		if set == nil {
			return fail(protocol.ControllerInvalidCleanBrokerMetadata, "broker set %s does not exist", o.BrokerName)
		}
		if o.IDs == nil {
			delete(s.Sets, o.BrokerName)
			return opResult{Code: protocol.Success}
		}
		for _, id := range o.IDs {
			delete(set.Brokers, id)
			set.SyncStateSet = slices.DeleteFunc(set.SyncStateSet, func(x int64) bool { return x == id })
			if set.MasterID == id {
				set.MasterID = 0
			}
		}
		if len(set.Brokers) == 0 {
			delete(s.Sets, o.BrokerName)
			return opResult{Code: protocol.Success}
		}
	default:
		return fail(protocol.ControllerInvalidRequest, "unknown op %q", o.Kind)
	}
	return opResult{Code: protocol.Success, Set: set.clone()}
}

func (s *state) marshal() ([]byte, error) { return json.Marshal(s) }

func unmarshalState(b []byte) (*state, error) {
	s := newState()
	if err := json.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("controller: snapshot: %w", err)
	}
	if s.Sets == nil {
		s.Sets = make(map[string]*brokerSet)
	}
	for name, set := range s.Sets {
		if set == nil {
			delete(s.Sets, name)
			continue
		}
		if set.Brokers == nil {
			set.Brokers = make(map[int64]*replica)
		}
		for id, r := range set.Brokers {
			if r == nil {
				delete(set.Brokers, id)
			}
		}
	}
	return s, nil
}

func (s *state) clone() *state {
	c := newState()
	for k, v := range s.Sets {
		c.Sets[k] = v.clone()
	}
	return c
}

func (s *state) names() []string { return slices.Sorted(maps.Keys(s.Sets)) }

// candidate is what the leader knows about a live replica for an election.
type candidate struct {
	ID        int64
	Epoch     int32
	MaxOffset int64
	Priority  int32 // brokerElectionPriority: lower is preferred
}

// electPolicy picks a new master for set from the live replicas (RocketMQ's
// DefaultElectPolicy): the old master if it is still alive and in the set;
// else among live SyncStateSet members (any live member when unclean
// election is allowed and none is in sync), the highest epoch, then the
// highest commit-log offset, then the lowest priority value, then the
// lowest id. designated > 0 (admin electMaster) must itself qualify.
// It returns 0 when nobody qualifies.
func electPolicy(set *brokerSet, live map[int64]candidate, unclean bool, designated int64) int64 {
	// A set that never had a master has an empty SyncStateSet: any live
	// member may become its first master.
	fresh := len(set.SyncStateSet) == 0
	eligible := func(id int64) bool {
		_, alive := live[id]
		return alive && set.Brokers[id] != nil && (fresh || set.inSync(id))
	}
	if designated > 0 {
		if eligible(designated) {
			return designated
		}
		if _, alive := live[designated]; unclean && alive && set.Brokers[designated] != nil {
			return designated
		}
		return 0
	}
	if set.MasterID != 0 && eligible(set.MasterID) {
		return set.MasterID
	}
	var pool []candidate
	for id, c := range live {
		if eligible(id) {
			pool = append(pool, c)
		}
	}
	if len(pool) == 0 && unclean {
		for id, c := range live {
			if set.Brokers[id] != nil {
				pool = append(pool, c)
			}
		}
	}
	if len(pool) == 0 {
		return 0
	}
	slices.SortFunc(pool, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(b.Epoch, a.Epoch), cmp.Compare(b.MaxOffset, a.MaxOffset),
			cmp.Compare(a.Priority, b.Priority), cmp.Compare(a.ID, b.ID))
	})
	return pool[0].ID
}
