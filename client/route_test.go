package client

import (
	"testing"

	"github.com/apogeemq/apogee/internal/protocol"
)

// TestPublishQueues: docs/broker.md §4.1: brokers sorted by name,
// only writable queues of brokers with a master; subscribe lists readable
// queues.
func TestPublishQueues(t *testing.T) {
	data := &protocol.TopicRouteData{
		QueueDatas: []protocol.QueueData{
			{BrokerName: "b", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6},
			{BrokerName: "a", ReadQueueNums: 3, WriteQueueNums: 1, Perm: 6},
			{BrokerName: "c", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 4}, // read-only
			{BrokerName: "d", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}, // no master
		},
		BrokerDatas: []protocol.BrokerData{
			{BrokerName: "a", BrokerAddrs: map[int64]string{0: "h:1"}},
			{BrokerName: "b", BrokerAddrs: map[int64]string{0: "h:2"}},
			{BrokerName: "c", BrokerAddrs: map[int64]string{0: "h:3"}},
			{BrokerName: "d", BrokerAddrs: map[int64]string{1: "h:4"}},
		},
	}
	r := newTopicRoute("T", data)
	want := []MessageQueue{{"T", "a", 0}, {"T", "b", 0}, {"T", "b", 1}}
	if len(r.publish) != len(want) {
		t.Fatalf("publish = %v, want %v", r.publish, want)
	}
	for i := range want {
		if r.publish[i] != want[i] {
			t.Fatalf("publish = %v, want %v", r.publish, want)
		}
	}
	if len(r.subscribe) != 3+2+1+1 || r.subscribe[0] != (MessageQueue{"T", "a", 0}) {
		t.Fatalf("subscribe = %v", r.subscribe)
	}
	// orderTopicConf overrides.
	data.OrderTopicConf = "b:1;a:2"
	r = newTopicRoute("T", data)
	if len(r.publish) != 3 || r.publish[0] != (MessageQueue{"T", "b", 0}) || r.publish[2] != (MessageQueue{"T", "a", 1}) {
		t.Fatalf("ordered publish = %v", r.publish)
	}
	// TBW102 capped at 4 queues.
	capped := capQueues("T", &protocol.TopicRouteData{QueueDatas: []protocol.QueueData{{BrokerName: "a", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 7}},
		BrokerDatas: []protocol.BrokerData{{BrokerName: "a", BrokerAddrs: map[int64]string{0: "h:1"}}}}, 4)
	if got := len(newTopicRoute("T", capped).publish); got != 4 {
		t.Fatalf("capped publish has %d queues", got)
	}
	if !routeEqual(data, data) || routeEqual(data, capped) {
		t.Fatal("routeEqual")
	}
}

func TestVIPAddr(t *testing.T) {
	for in, want := range map[string]string{"10.0.0.1:10911": "10.0.0.1:10909", "[::1]:10911": "[::1]:10909", "bad": "bad", "h:1": "h:1"} {
		if got := vipAddr(in); got != want {
			t.Errorf("vipAddr(%q) = %q, want %q", in, got, want)
		}
	}
}
