package client

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apogeemq/apogee/internal/protocol"
)

// MessageQueue is one queue of a topic on one broker group.
type MessageQueue struct {
	Topic      string
	BrokerName string
	QueueID    int
}

// String is the form RocketMQ prints and hashes (consistent-hash
// allocation): "MessageQueue [topic=T, brokerName=B, queueId=N]".
func (q MessageQueue) String() string {
	return fmt.Sprintf("MessageQueue [topic=%s, brokerName=%s, queueId=%d]", q.Topic, q.BrokerName, q.QueueID)
}

// compareMessageQueue orders queues by topic, broker name, queue id (the
// order rebalance sorts them in).
func compareMessageQueue(a, b MessageQueue) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	if c := strings.Compare(a.BrokerName, b.BrokerName); c != 0 {
		return c
	}
	return a.QueueID - b.QueueID
}

// topicRoute is an immutable snapshot of one topic's route: the wire route
// plus the queue lists derived from it. Replaced, never modified, when the
// route changes; readers may keep a pointer without locking.
type topicRoute struct {
	topic string // wire name (namespace applied)
	data  *protocol.TopicRouteData
	// publish: writable queues of brokers with a live master, in route order
	// (docs/broker.md §4.1). Producers select from it.
	publish []MessageQueue
	// subscribe: readable queues, sorted. Consumers allocate from it.
	subscribe []MessageQueue
	// orderTopic is true when the route came with an orderTopicConf.
	orderTopic bool
	// fromDefault is true when the topic is unknown and the route is
	// TBW102's with its queue counts capped (auto-create).
	fromDefault bool
}

// newTopicRoute derives the queue lists of a route for topic (docs/broker.md §4.1).
func newTopicRoute(topic string, data *protocol.TopicRouteData) *topicRoute {
	r := &topicRoute{topic: topic, data: data}
	masters := make(map[string]bool, len(data.BrokerDatas))
	for _, b := range data.BrokerDatas {
		if b.BrokerAddrs[protocol.MasterID] != "" {
			masters[b.BrokerName] = true
		}
	}
	if data.OrderTopicConf != "" {
		r.orderTopic = true
		for _, part := range strings.Split(data.OrderTopicConf, ";") {
			name, count, ok := strings.Cut(part, ":")
			if !ok {
				continue
			}
			n, err := strconv.Atoi(strings.TrimSpace(count))
			if err != nil {
				continue
			}
			for i := 0; i < n; i++ {
				r.publish = append(r.publish, MessageQueue{Topic: topic, BrokerName: name, QueueID: i})
			}
		}
	} else {
		qds := slices.Clone(data.QueueDatas)
		slices.SortFunc(qds, func(a, b protocol.QueueData) int { return strings.Compare(a.BrokerName, b.BrokerName) })
		for _, qd := range qds {
			if !protocol.PermWritable(qd.Perm) || !masters[qd.BrokerName] {
				continue
			}
			for i := 0; i < int(qd.WriteQueueNums); i++ {
				r.publish = append(r.publish, MessageQueue{Topic: topic, BrokerName: qd.BrokerName, QueueID: i})
			}
		}
	}
	for _, qd := range data.QueueDatas {
		if !protocol.PermReadable(qd.Perm) {
			continue
		}
		for i := 0; i < int(qd.ReadQueueNums); i++ {
			r.subscribe = append(r.subscribe, MessageQueue{Topic: topic, BrokerName: qd.BrokerName, QueueID: i})
		}
	}
	slices.SortFunc(r.subscribe, compareMessageQueue)
	return r
}

// capQueues returns a copy of a TBW102 route to stand for topic, with every
// broker's queue counts capped at n (auto-creation, docs/broker.md §4.1).
func capQueues(topic string, def *protocol.TopicRouteData, n int32) *protocol.TopicRouteData {
	c := *def
	c.QueueDatas = slices.Clone(def.QueueDatas)
	for i := range c.QueueDatas {
		q := &c.QueueDatas[i]
		q.ReadQueueNums = min(q.ReadQueueNums, n)
		q.WriteQueueNums = min(q.WriteQueueNums, n)
	}
	return &c
}

// routeEqual reports whether two routes are the same for clients: queue
// data and broker addresses (order-insensitive).
func routeEqual(a, b *protocol.TopicRouteData) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.OrderTopicConf != b.OrderTopicConf || len(a.QueueDatas) != len(b.QueueDatas) || len(a.BrokerDatas) != len(b.BrokerDatas) {
		return false
	}
	qa, qb := slices.Clone(a.QueueDatas), slices.Clone(b.QueueDatas)
	byName := func(x, y protocol.QueueData) int { return strings.Compare(x.BrokerName, y.BrokerName) }
	slices.SortFunc(qa, byName)
	slices.SortFunc(qb, byName)
	if !slices.Equal(qa, qb) {
		return false
	}
	ba, bb := slices.Clone(a.BrokerDatas), slices.Clone(b.BrokerDatas)
	bByName := func(x, y protocol.BrokerData) int { return strings.Compare(x.BrokerName, y.BrokerName) }
	slices.SortFunc(ba, bByName)
	slices.SortFunc(bb, bByName)
	for i := range ba {
		if ba[i].BrokerName != bb[i].BrokerName || len(ba[i].BrokerAddrs) != len(bb[i].BrokerAddrs) {
			return false
		}
		for id, addr := range ba[i].BrokerAddrs {
			if bb[i].BrokerAddrs[id] != addr {
				return false
			}
		}
	}
	return true
}
