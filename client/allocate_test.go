package client

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

func queues(topic, broker string, n int) []MessageQueue {
	out := make([]MessageQueue, n)
	for i := range out {
		out[i] = MessageQueue{Topic: topic, BrokerName: broker, QueueID: i}
	}
	return out
}

func ids(mqs []MessageQueue) []int {
	out := make([]int, len(mqs))
	for i, mq := range mqs {
		out[i] = mq.QueueID
	}
	return out
}

// TestAllocateAveragely checks the AVG ranges of docs/broker.md §4.5.
func TestAllocateAveragely(t *testing.T) {
	cases := []struct {
		name    string
		queues  int
		clients int
		want    [][]int
	}{
		{"8 queues 3 clients", 8, 3, [][]int{{0, 1, 2}, {3, 4, 5}, {6, 7}}},
		{"4 queues 4 clients", 4, 4, [][]int{{0}, {1}, {2}, {3}}},
		{"2 queues 3 clients", 2, 3, [][]int{{0}, {1}, {}}},
		{"9 queues 2 clients", 9, 2, [][]int{{0, 1, 2, 3, 4}, {5, 6, 7, 8}}},
		{"0 queues", 0, 2, [][]int{{}, {}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mqs := queues("T", "b", tc.queues)
			cids := make([]string, tc.clients)
			for i := range cids {
				cids[i] = fmt.Sprintf("c%d", i)
			}
			for i, cid := range cids {
				got := ids(AllocateAveragely().Allocate("g", cid, mqs, cids))
				if !slices.Equal(got, tc.want[i]) {
					t.Errorf("client %d: got %v, want %v", i, got, tc.want[i])
				}
			}
			if got := AllocateAveragely().Allocate("g", "stranger", mqs, cids); len(got) != 0 {
				t.Errorf("unknown client got %v", got)
			}
		})
	}
}

func TestAllocateByCircle(t *testing.T) {
	mqs := queues("T", "b", 8)
	cids := []string{"a", "b", "c"}
	want := [][]int{{0, 3, 6}, {1, 4, 7}, {2, 5}}
	for i, cid := range cids {
		if got := ids(AllocateAveragelyByCircle().Allocate("g", cid, mqs, cids)); !slices.Equal(got, want[i]) {
			t.Errorf("%s: got %v, want %v", cid, got, want[i])
		}
	}
}

// TestAllocateStrategiesPartition checks that every strategy but CONFIG
// hands each queue to exactly one member.
func TestAllocateStrategiesPartition(t *testing.T) {
	mqs := append(queues("T", "broker-a", 8), queues("T", "broker-b", 8)...)
	slices.SortFunc(mqs, compareMessageQueue)
	for _, s := range []AllocateStrategy{AllocateAveragely(), AllocateAveragelyByCircle(), AllocateConsistentHash(0)} {
		for clients := 1; clients <= 20; clients++ {
			cids := make([]string, clients)
			for i := range cids {
				cids[i] = fmt.Sprintf("10.0.0.%d@%d", i, 100+i)
			}
			slices.Sort(cids)
			owner := map[MessageQueue]string{}
			for _, cid := range cids {
				for _, mq := range s.Allocate("g", cid, mqs, cids) {
					if prev, dup := owner[mq]; dup {
						t.Fatalf("%s/%d: %v given to %s and %s", s.Name(), clients, mq, prev, cid)
					}
					owner[mq] = cid
				}
			}
			if len(owner) != len(mqs) {
				t.Fatalf("%s/%d: %d of %d queues allocated", s.Name(), clients, len(owner), len(mqs))
			}
		}
	}
}

// TestAllocateConsistentHashStable checks that adding a member moves only
// queues to the new member.
func TestAllocateConsistentHashStable(t *testing.T) {
	mqs := queues("T", "b", 32)
	s := AllocateConsistentHash(10)
	before := map[MessageQueue]string{}
	cids := []string{"a", "b", "c"}
	for _, cid := range cids {
		for _, mq := range s.Allocate("g", cid, mqs, cids) {
			before[mq] = cid
		}
	}
	cids = []string{"a", "b", "c", "d"}
	for _, cid := range cids[:3] {
		for _, mq := range s.Allocate("g", cid, mqs, cids) {
			if before[mq] != cid {
				t.Errorf("%v moved from %s to %s", mq, before[mq], cid)
			}
		}
	}
	if got := ringHash("a-0"); got != ringHash("a-0") || got == ringHash("a-1") {
		t.Fatal("ring hash not deterministic or degenerate")
	}
}

func TestAllocateByConfig(t *testing.T) {
	fixed := []MessageQueue{{Topic: "T", BrokerName: "b", QueueID: 3}}
	got := AllocateByConfig(fixed...).Allocate("g", "x", queues("T", "b", 8), []string{"y"})
	if !slices.Equal(got, fixed) {
		t.Fatalf("got %v", got)
	}
}

func TestMessageQueueString(t *testing.T) {
	mq := MessageQueue{Topic: "T", BrokerName: "broker-a", QueueID: 2}
	if got, want := mq.String(), "MessageQueue [topic=T, brokerName=broker-a, queueId=2]"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestAllocateByMachineRoom(t *testing.T) {
	mqs := append(queues("T", "hz@broker-a", 4), queues("T", "sh@broker-b", 4)...)
	slices.SortFunc(mqs, compareMessageQueue)
	s := AllocateByMachineRoom("hz")
	cids := []string{"a", "b", "c"}
	var all []MessageQueue
	for _, cid := range cids {
		got := s.Allocate("g", cid, mqs, cids)
		for _, mq := range got {
			if mq.BrokerName != "hz@broker-a" {
				t.Fatalf("%s got %v outside its room", cid, mq)
			}
		}
		all = append(all, got...)
	}
	if len(all) != 4 {
		t.Fatalf("allocated %d of the room's 4 queues", len(all))
	}
	if got := s.Allocate("g", "a", mqs, cids); len(got) != 2 {
		t.Fatalf("first member got %v, want 1 + remainder", got)
	}
}

// roomResolver reads the room before '@' in broker names and client ids
// (none without an '@' in a client id).
type roomResolver struct{}

func (roomResolver) BrokerDeployIn(mq MessageQueue) string {
	room, _, _ := strings.Cut(mq.BrokerName, "@")
	return room
}

func (roomResolver) ConsumerDeployIn(cid string) string {
	room, _, ok := strings.Cut(cid, "@")
	if !ok {
		return ""
	}
	return room
}

// TestAllocateMachineRoomNearby follows RocketMQ's MACHINE_ROOM_NEARBY: a
// room's queues go to that room's consumers; a room without consumers is
// shared by everyone; together the members cover every queue exactly once;
// an unresolved room fails the allocation.
func TestAllocateMachineRoomNearby(t *testing.T) {
	mqs := append(append(queues("T", "hz@broker-a", 4), queues("T", "sh@broker-b", 3)...), queues("T", "bj@broker-c", 2)...)
	slices.SortFunc(mqs, compareMessageQueue)
	s := AllocateMachineRoomNearby(AllocateAveragely(), roomResolver{})
	if s.Name() != "MACHINE_ROOM_NEARBY-AVG" {
		t.Fatalf("name %s", s.Name())
	}
	cids := []string{"hz@c1", "hz@c2", "sh@c3"} // nobody in bj
	tests := []struct {
		cid  string
		want map[string]int // broker -> queue count
	}{
		{"hz@c1", map[string]int{"hz@broker-a": 2, "bj@broker-c": 1}},
		{"hz@c2", map[string]int{"hz@broker-a": 2, "bj@broker-c": 1}},
		{"sh@c3", map[string]int{"sh@broker-b": 3}},
	}
	seen := map[MessageQueue]int{}
	for _, tc := range tests {
		t.Run(tc.cid, func(t *testing.T) {
			got := map[string]int{}
			for _, mq := range s.Allocate("g", tc.cid, mqs, cids) {
				got[mq.BrokerName]++
				seen[mq]++
			}
			if !maps.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	if len(seen) != len(mqs) {
		t.Fatalf("%d of %d queues allocated", len(seen), len(mqs))
	}
	for mq, n := range seen {
		if n != 1 {
			t.Fatalf("%v allocated %d times", mq, n)
		}
	}
	if _, err := s.(checkedAllocator).allocateChecked("g", "hz@c1", mqs, append(slices.Clone(cids), "noroom")); err == nil {
		t.Fatal("a consumer without a room was accepted")
	}
}
