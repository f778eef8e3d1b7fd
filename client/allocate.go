package client

import (
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// AllocateStrategy decides which of a topic's queues a consumer of a
// clustering group consumes (docs/broker.md §4.5). Every member of a
// group runs the same strategy over the same sorted inputs, so the members
// agree on a partition without talking to each other.
//
// Allocate receives mqAll sorted by (topic, brokerName, queueId) and cidAll
// sorted; it must not modify them and returns the queues of currentCID
// (nothing when currentCID is not in cidAll). It is called from the
// consumer's rebalance goroutine only.
type AllocateStrategy interface {
	Name() string
	Allocate(group, currentCID string, mqAll []MessageQueue, cidAll []string) []MessageQueue
}

// AllocateAveragely is RocketMQ's default strategy (AVG): each client gets a
// contiguous range of queues; the first len(mqAll)%len(cidAll) clients get
// one more. 8 queues over 3 clients give 3, 3 and 2.
func AllocateAveragely() AllocateStrategy { return allocateAvg{} }

// AllocateAveragelyByCircle (AVG_BY_CIRCLE) deals the queues out like cards:
// client i gets every queue whose index modulo the client count is i.
func AllocateAveragelyByCircle() AllocateStrategy { return allocateCircle{} }

// AllocateConsistentHash (CONSISTENT_HASH) places virtualNodes nodes per
// client on an MD5 ring; a queue goes to the first node clockwise of its
// hash, so a membership change moves few queues. virtualNodes <= 0 means 10.
func AllocateConsistentHash(virtualNodes int) AllocateStrategy {
	if virtualNodes <= 0 {
		virtualNodes = 10
	}
	return allocateHash{virtualNodes: virtualNodes}
}

// AllocateByConfig (CONFIG) always returns the given queues, whatever the
// group's membership.
func AllocateByConfig(queues ...MessageQueue) AllocateStrategy {
	return allocateConfig{queues: slices.Clone(queues)}
}

type allocateAvg struct{}

func (allocateAvg) Name() string { return "AVG" }

func (allocateAvg) Allocate(_, currentCID string, mqAll []MessageQueue, cidAll []string) []MessageQueue {
	index := slices.Index(cidAll, currentCID)
	if index < 0 || len(mqAll) == 0 {
		return nil
	}
	n, c := len(mqAll), len(cidAll)
	mod := n % c
	var average int
	switch {
	case n <= c:
		average = 1
	case mod > 0 && index < mod:
		average = n/c + 1
	default:
		average = n / c
	}
	start := index*average + mod
	if mod > 0 && index < mod {
		start = index * average
	}
	size := min(average, n-start)
	if size <= 0 {
		return nil
	}
	return slices.Clone(mqAll[start : start+size])
}

type allocateCircle struct{}

func (allocateCircle) Name() string { return "AVG_BY_CIRCLE" }

func (allocateCircle) Allocate(_, currentCID string, mqAll []MessageQueue, cidAll []string) []MessageQueue {
	index := slices.Index(cidAll, currentCID)
	if index < 0 {
		return nil
	}
	var out []MessageQueue
	for i := index; i < len(mqAll); i += len(cidAll) {
		out = append(out, mqAll[i])
	}
	return out
}

type allocateHash struct{ virtualNodes int }

func (allocateHash) Name() string { return "CONSISTENT_HASH" }

// ringHash is the first four bytes of the key's MD5 as an unsigned
// big-endian number, as RocketMQ's default hash function computes it.
func ringHash(key string) uint32 {
	sum := md5.Sum([]byte(key))
	return binary.BigEndian.Uint32(sum[:4])
}

type ringNode struct {
	hash uint32
	cid  string
}

func (a allocateHash) Allocate(_, currentCID string, mqAll []MessageQueue, cidAll []string) []MessageQueue {
	if !slices.Contains(cidAll, currentCID) {
		return nil
	}
	ring := make([]ringNode, 0, len(cidAll)*a.virtualNodes)
	for _, cid := range cidAll {
		for i := range a.virtualNodes {
			ring = append(ring, ringNode{hash: ringHash(cid + "-" + strconv.Itoa(i)), cid: cid})
		}
	}
	slices.SortFunc(ring, func(x, y ringNode) int {
		if x.hash != y.hash {
			if x.hash < y.hash {
				return -1
			}
			return 1
		}
		return 0
	})
	var out []MessageQueue
	for _, mq := range mqAll {
		h := ringHash(mq.String())
		i := sort.Search(len(ring), func(i int) bool { return ring[i].hash >= h })
		if i == len(ring) {
			i = 0 // the ring wraps
		}
		if ring[i].cid == currentCID {
			out = append(out, mq)
		}
	}
	return out
}

// AllocateByMachineRoom (MACHINE_ROOM) serves brokers named "idc@name":
// only queues of brokers in the consumer's rooms are shared, averagely,
// the remainder going one each to the first members.
func AllocateByMachineRoom(rooms ...string) AllocateStrategy {
	set := make(map[string]bool, len(rooms))
	for _, r := range rooms {
		set[r] = true
	}
	return allocateRoom{rooms: set}
}

type allocateRoom struct{ rooms map[string]bool }

func (allocateRoom) Name() string { return "MACHINE_ROOM" }

func (a allocateRoom) Allocate(_, currentCID string, mqAll []MessageQueue, cidAll []string) []MessageQueue {
	index := slices.Index(cidAll, currentCID)
	if index < 0 {
		return nil
	}
	var premium []MessageQueue
	for _, mq := range mqAll {
		room, _, ok := strings.Cut(mq.BrokerName, "@")
		if ok && a.rooms[room] {
			premium = append(premium, mq)
		}
	}
	c := len(cidAll)
	mod, rem := len(premium)/c, len(premium)%c
	out := slices.Clone(premium[index*mod : index*mod+mod])
	if rem > index {
		out = append(out, premium[index+mod*c])
	}
	return out
}

type allocateConfig struct{ queues []MessageQueue }

func (allocateConfig) Name() string { return "CONFIG" }

func (a allocateConfig) Allocate(_, _ string, _ []MessageQueue, _ []string) []MessageQueue {
	return slices.Clone(a.queues)
}

// MachineRoomResolver tells AllocateMachineRoomNearby where brokers and
// consumers are deployed (RocketMQ's AllocateMachineRoomNearby
// .MachineRoomResolver). Both must name a room for every input.
type MachineRoomResolver interface {
	BrokerDeployIn(mq MessageQueue) string
	ConsumerDeployIn(clientID string) string
}

// AllocateMachineRoomNearby (MACHINE_ROOM_NEARBY-<inner>) keeps traffic in
// its machine room: the queues of brokers in the current consumer's room
// are shared by inner among that room's consumers; the queues of a room
// without any live consumer are shared by inner among all consumers. A
// queue or consumer the resolver leaves without a room makes the
// allocation fail (RocketMQ throws): the rebalance then keeps the topic's
// queues as they are.
func AllocateMachineRoomNearby(inner AllocateStrategy, resolver MachineRoomResolver) AllocateStrategy {
	return allocateNearby{inner: inner, resolver: resolver}
}

// checkedAllocator is a strategy whose inputs can be refused; the
// rebalance (rebalance.go) calls allocateChecked instead of Allocate.
type checkedAllocator interface {
	allocateChecked(group, currentCID string, mqAll []MessageQueue, cidAll []string) ([]MessageQueue, error)
}

type allocateNearby struct {
	inner    AllocateStrategy
	resolver MachineRoomResolver
}

func (a allocateNearby) Name() string { return "MACHINE_ROOM_NEARBY-" + a.inner.Name() }

// Allocate implements AllocateStrategy; an unresolved room gives nothing.
func (a allocateNearby) Allocate(group, currentCID string, mqAll []MessageQueue, cidAll []string) []MessageQueue {
	out, _ := a.allocateChecked(group, currentCID, mqAll, cidAll)
	return out
}

func (a allocateNearby) allocateChecked(group, currentCID string, mqAll []MessageQueue, cidAll []string) ([]MessageQueue, error) {
	if !slices.Contains(cidAll, currentCID) || len(mqAll) == 0 {
		return nil, nil
	}
	// Inputs arrive sorted, so each room's lists stay sorted.
	roomQueues := map[string][]MessageQueue{}
	for _, mq := range mqAll {
		room := a.resolver.BrokerDeployIn(mq)
		if room == "" {
			return nil, fmt.Errorf("client: machine room is empty for queue %s", mq)
		}
		roomQueues[room] = append(roomQueues[room], mq)
	}
	roomConsumers := map[string][]string{}
	for _, cid := range cidAll {
		room := a.resolver.ConsumerDeployIn(cid)
		if room == "" {
			return nil, fmt.Errorf("client: machine room is empty for consumer %s", cid)
		}
		roomConsumers[room] = append(roomConsumers[room], cid)
	}
	mine := a.resolver.ConsumerDeployIn(currentCID)
	var out []MessageQueue
	if qs := roomQueues[mine]; len(qs) > 0 {
		out = append(out, a.inner.Allocate(group, currentCID, qs, roomConsumers[mine])...)
	}
	rooms := slices.Sorted(maps.Keys(roomQueues)) // RocketMQ walks a TreeMap
	for _, room := range rooms {
		if room == mine {
			continue
		}
		if _, alive := roomConsumers[room]; !alive {
			out = append(out, a.inner.Allocate(group, currentCID, roomQueues[room], cidAll)...)
		}
	}
	return out, nil
}
