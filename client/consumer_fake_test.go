package client

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil/fakebroker"
)

// fakeBrokerEnv is a consumerEnv that hands the consumer's broker requests
// straight to the shared fake broker (internal/testutil/fakebroker, the
// one producer tests dial) without a socket, so consumer logic (rebalance,
// flow control, offsets) runs against the same broker behaviour,
// deterministically. It has one broker name; with slave set, a slave (id 1)
// exists and every pull answer suggests it.
type fakeBrokerEnv struct {
	id     string
	broker *fakebroker.Broker
	// members lists the group's consumer ids; nil = just this one. Set it
	// before the consumer starts.
	members func() []string

	slave                   bool
	slavePulls, slaveCommit atomic.Int64 // pulls the slave received, those with the commit-offset bit
	released                atomic.Bool
	pullsInFlight, maxPulls atomic.Int64 // pulls being answered now, the most at once
}

const fakeBrokerName = "broker-a"

func newFakeBrokerEnv(t testing.TB, id string) *fakeBrokerEnv {
	f := &fakeBrokerEnv{id: id, broker: fakebroker.New(t, fakeBrokerName)}
	f.broker.SetMembers(func() []string {
		if f.members != nil {
			return f.members()
		}
		return []string{f.id}
	})
	return f
}

// setSlave makes every pull answer suggest the slave (id 1).
func (f *fakeBrokerEnv) setSlave() {
	f.slave = true
	f.broker.SetSuggest(1)
}

// put appends n messages with bodies prefix-i to topic's queues.
func (f *fakeBrokerEnv) put(topic string, queues, n int, prefix string) {
	f.broker.Put(topic, queues, n, prefix)
}

// offset is mq's committed offset on the broker (0 when none).
func (f *fakeBrokerEnv) offset(mq MessageQueue) int64 {
	off, _ := f.broker.Offset(fakebroker.Queue{Topic: mq.Topic, QueueID: mq.QueueID})
	return off
}

// record is the stored record at offset of mq.
func (f *fakeBrokerEnv) record(mq MessageQueue, offset int) []byte {
	return f.broker.Record(fakebroker.Queue{Topic: mq.Topic, QueueID: mq.QueueID}, offset)
}

func (f *fakeBrokerEnv) clientID() string  { return f.id }
func (f *fakeBrokerEnv) namespace() string { return "" }

func (f *fakeBrokerEnv) subscribeQueues(_ context.Context, topic string) ([]MessageQueue, error) {
	var out []MessageQueue
	for _, q := range f.broker.Queues(topic) {
		out = append(out, MessageQueue{Topic: topic, BrokerName: fakeBrokerName, QueueID: q})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w %s", ErrNoRoute, topic)
	}
	return out, nil
}

func (f *fakeBrokerEnv) brokerAddr(string, bool) string                                { return "fake:1" }
func (f *fakeBrokerEnv) topicBrokerAddrs(context.Context, string) []string             { return []string{"fake:1"} }
func (f *fakeBrokerEnv) requestHeartbeat()                                             {}
func (f *fakeBrokerEnv) heartbeatNow(context.Context)                                  {}
func (f *fakeBrokerEnv) invokeOneway(context.Context, string, *protocol.Command) error { return nil }
func (f *fakeBrokerEnv) registerConsumer(string, consumerInner) error                  { return nil }
func (f *fakeBrokerEnv) unregisterConsumer(string)                                     {}

func (f *fakeBrokerEnv) invokeSync(ctx context.Context, addr string, req *protocol.Command) (*protocol.Command, error) {
	code := protocol.RequestCode(req.Code)
	if addr == "slave:1" && (code == protocol.PullMessage || code == protocol.LitePullMessage) {
		f.slavePulls.Add(1)
		if flag, _ := req.ExtInt32("sysFlag"); flag&protocol.PullFlagCommitOffset != 0 {
			f.slaveCommit.Add(1)
		}
	}
	if code == protocol.PullMessage || code == protocol.LitePullMessage {
		n := f.pullsInFlight.Add(1)
		defer f.pullsInFlight.Add(-1)
		for m := f.maxPulls.Load(); n > m && !f.maxPulls.CompareAndSwap(m, n); m = f.maxPulls.Load() {
		}
	}
	resp, err := f.broker.Handle(ctx, addr, req)
	if err == nil && resp == nil {
		resp = protocol.NewResponse(req, protocol.Success, "")
	}
	return resp, err
}

// invokeAsync answers on a goroutine of its own, as remoting answers on a
// callback goroutine.
func (f *fakeBrokerEnv) invokeAsync(ctx context.Context, addr string, req *protocol.Command, cb func(*protocol.Command, error)) error {
	go func() { cb(f.invokeSync(ctx, addr, req)) }()
	return nil
}

func (f *fakeBrokerEnv) brokerAddrByID(_ string, id int64) string {
	if id == 1 && f.slave {
		return "slave:1"
	}
	return ""
}

// newFakePushConsumer builds a push consumer wired to env.
func newFakePushConsumer(env *fakeBrokerEnv, opts ...ConsumerOpt) (*PushConsumer, error) {
	all := append([]ConsumerOpt{WithNameServers("fake:9876")}, opts...)
	c, err := NewPushConsumer("g", all...)
	if err != nil {
		return nil, err
	}
	c.newEnv = func(*consumerConfig) (consumerEnv, func() error, error) {
		return env, func() error { env.released.Store(true); return nil }, nil
	}
	return c, nil
}
