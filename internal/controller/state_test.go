package controller

import (
	"testing"

	"github.com/apogeemq/apogee/internal/protocol"
)

func testSet(master int64, inSync ...int64) *brokerSet {
	s := &brokerSet{Name: "b", Brokers: map[int64]*replica{}, NextID: 5, MasterID: master, SyncStateSet: inSync}
	for id := int64(1); id <= 4; id++ {
		s.Brokers[id] = &replica{Addr: "a"}
	}
	return s
}

func TestElectPolicy(t *testing.T) {
	c := func(id int64, epoch int32, off int64, prio int32) candidate {
		return candidate{ID: id, Epoch: epoch, MaxOffset: off, Priority: prio}
	}
	live := func(cs ...candidate) map[int64]candidate {
		m := map[int64]candidate{}
		for _, x := range cs {
			m[x.ID] = x
		}
		return m
	}
	tests := []struct {
		name       string
		set        *brokerSet
		live       map[int64]candidate
		unclean    bool
		designated int64
		want       int64
	}{
		{"live master keeps its role", testSet(1, 1, 2), live(c(1, 1, 10, 9), c(2, 1, 99, 1)), false, 0, 1},
		{"highest epoch first", testSet(1, 1, 2, 3), live(c(2, 1, 99, 1), c(3, 2, 10, 9)), false, 0, 3},
		{"then highest offset", testSet(1, 1, 2, 3), live(c(2, 2, 50, 1), c(3, 2, 60, 9)), false, 0, 3},
		{"then lowest priority value", testSet(1, 1, 2, 3), live(c(2, 2, 60, 5), c(3, 2, 60, 1)), false, 0, 3},
		{"then lowest id", testSet(1, 1, 2, 3), live(c(3, 2, 60, 1), c(2, 2, 60, 1)), false, 0, 2},
		{"outside the SyncStateSet never (clean)", testSet(1, 1, 2), live(c(3, 9, 999, 1)), false, 0, 0},
		{"outside the SyncStateSet when unclean", testSet(1, 1, 2), live(c(3, 9, 999, 1)), true, 0, 3},
		{"a fresh set elects any live member", testSet(0), live(c(4, 0, 0, 1)), false, 0, 4},
		{"designated in the set", testSet(1, 1, 2), live(c(1, 1, 10, 1), c(2, 1, 10, 1)), false, 2, 2},
		{"designated not alive", testSet(1, 1, 2), live(c(1, 1, 10, 1)), false, 2, 0},
		{"designated outside the set (clean)", testSet(1, 1, 2), live(c(1, 1, 10, 1), c(3, 1, 10, 1)), false, 3, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := electPolicy(tc.set, tc.live, tc.unclean, tc.designated); got != tc.want {
				t.Fatalf("electPolicy = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestStateApplyPreconditions(t *testing.T) {
	s := newState()
	mustCode := func(o op, want protocol.ResponseCode) opResult {
		t.Helper()
		r := s.apply(&o)
		if r.Code != want {
			t.Fatalf("%s: code %v (%s), want %v", o.Kind, r.Code, r.Remark, want)
		}
		return r
	}
	mustCode(op{Kind: opApplyBrokerID, BrokerName: "b", BrokerID: 2, CheckCode: "x"}, protocol.ControllerBrokerIDInvalid)
	mustCode(op{Kind: opApplyBrokerID, BrokerName: "b", BrokerID: 1, CheckCode: "x"}, protocol.Success)
	mustCode(op{Kind: opApplyBrokerID, BrokerName: "b", BrokerID: 1, CheckCode: "y"}, protocol.ControllerBrokerIDInvalid)
	mustCode(op{Kind: opApplyBrokerID, BrokerName: "b", BrokerID: 1, CheckCode: "x"}, protocol.Success) // re-apply, same code
	mustCode(op{Kind: opApplyBrokerID, BrokerName: "b", BrokerID: 2, CheckCode: "z"}, protocol.Success)
	mustCode(op{Kind: opRegisterBroker, BrokerName: "b", BrokerID: 3, Addr: "a"}, protocol.ControllerBrokerMetadataNotExist)
	r := mustCode(op{Kind: opElect, BrokerName: "b", NewMaster: 1}, protocol.Success)
	if r.Set.MasterEpoch != 1 || r.Set.SyncStateSetEpoch != 1 {
		t.Fatalf("after first election %+v", r.Set)
	}
	// A decision taken at an older epoch is refused.
	mustCode(op{Kind: opElect, BrokerName: "b", NewMaster: 2, ExpectEpoch: 0, ExpectSSetEpoch: 1}, protocol.ControllerFencedMasterEpoch)
	mustCode(op{Kind: opAlterSyncState, BrokerName: "b", BrokerID: 2, ExpectEpoch: 1, ExpectSSetEpoch: 1, NewSyncStateSet: []int64{1, 2}}, protocol.ControllerInvalidMaster)
	mustCode(op{Kind: opAlterSyncState, BrokerName: "b", BrokerID: 1, ExpectEpoch: 1, ExpectSSetEpoch: 1, NewSyncStateSet: []int64{2}}, protocol.ControllerInvalidReplicas)
	mustCode(op{Kind: opAlterSyncState, BrokerName: "b", BrokerID: 1, ExpectEpoch: 1, ExpectSSetEpoch: 1, NewSyncStateSet: []int64{1, 9}}, protocol.ControllerInvalidReplicas)
	mustCode(op{Kind: opAlterSyncState, BrokerName: "b", BrokerID: 1, ExpectEpoch: 1, ExpectSSetEpoch: 1, NewSyncStateSet: []int64{2, 1}}, protocol.Success)
	// Snapshot and restore round trip.
	b, err := s.marshal()
	if err != nil {
		t.Fatal(err)
	}
	s2, err := unmarshalState(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := s2.Sets["b"]; got.MasterID != 1 || len(got.SyncStateSet) != 2 || got.NextID != 3 || got.Brokers[2].CheckCode != "z" {
		t.Fatalf("restored %+v", got)
	}
}
