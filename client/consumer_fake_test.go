package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
)

// fakeBrokerEnv is a consumerEnv backed by an in-memory broker with one
// broker name, so consumer logic (rebalance, flow control, offsets) runs
// without sockets. Pulls that find nothing wait up to 20 ms (a short
// long-poll) so idle loops do not spin.
type fakeBrokerEnv struct {
	id      string
	members func() []string // consumer ids of the group; nil = just this one

	mu       sync.Mutex
	queues   map[string][][]byte // topic -> queue -> stored records by offset... flattened below
	msgs     map[MessageQueue][][]byte
	offsets  map[MessageQueue]int64
	consumer consumerInner
	sentBack []int64 // commit-log offsets sent back
	// slave: a slave (id 1) exists and every answer suggests it;
	// slavePulls counts pulls it received, slaveCommits those with the
	// commit-offset bit.
	slave                   bool
	slavePulls, slaveCommit atomic.Int64
	pulls                   atomic.Int64
	commitPulls             atomic.Int64 // pulls with the commit-offset bit
	maxCached               atomic.Int64
	released                atomic.Bool
}

const fakeBrokerName = "broker-a"

func newFakeBrokerEnv(id string) *fakeBrokerEnv {
	return &fakeBrokerEnv{id: id, msgs: map[MessageQueue][][]byte{}, offsets: map[MessageQueue]int64{}}
}

// put appends n messages with bodies prefix-i to queue q of topic.
func (f *fakeBrokerEnv) put(topic string, queues, n int, prefix string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	host := netip.MustParseAddrPort("127.0.0.1:10911")
	for q := range queues {
		mq := MessageQueue{Topic: topic, BrokerName: fakeBrokerName, QueueID: q}
		if _, ok := f.msgs[mq]; !ok {
			f.msgs[mq] = nil
		}
	}
	for i := range n {
		mq := MessageQueue{Topic: topic, BrokerName: fakeBrokerName, QueueID: i % queues}
		off := int64(len(f.msgs[mq]))
		e := &message.Ext{
			Message: message.Message{Topic: topic, Body: []byte(fmt.Sprintf("%s-%d", prefix, i))},
			QueueID: int32(mq.QueueID), QueueOffset: off, CommitLogOffset: int64(i) * 100,
			BornHost: host, StoreHost: host, BornTimestamp: 1, StoreTimestamp: 2,
		}
		e.Properties = map[string]string{message.PropertyUniqClientMessageIDKeyidx: fmt.Sprintf("%s-%d", prefix, i)}
		rec, err := message.AppendStored(nil, e)
		if err != nil {
			panic(err)
		}
		f.msgs[mq] = append(f.msgs[mq], rec)
	}
}

func (f *fakeBrokerEnv) clientID() string  { return f.id }
func (f *fakeBrokerEnv) namespace() string { return "" }

func (f *fakeBrokerEnv) subscribeQueues(_ context.Context, topic string) ([]MessageQueue, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []MessageQueue
	for mq := range f.msgs {
		if mq.Topic == topic {
			out = append(out, mq)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w %s", ErrNoRoute, topic)
	}
	sortQueues(out)
	return out, nil
}

func sortQueues(mqs []MessageQueue) {
	for i := 1; i < len(mqs); i++ {
		for j := i; j > 0 && compareMessageQueue(mqs[j], mqs[j-1]) < 0; j-- {
			mqs[j], mqs[j-1] = mqs[j-1], mqs[j]
		}
	}
}

func (f *fakeBrokerEnv) brokerAddr(string, bool) string                                { return "fake:1" }
func (f *fakeBrokerEnv) topicBrokerAddrs(context.Context, string) []string             { return []string{"fake:1"} }
func (f *fakeBrokerEnv) requestHeartbeat()                                             {}
func (f *fakeBrokerEnv) heartbeatNow(context.Context)                                  {}
func (f *fakeBrokerEnv) invokeOneway(context.Context, string, *protocol.Command) error { return nil }

func (f *fakeBrokerEnv) registerConsumer(_ string, c consumerInner) error {
	f.mu.Lock()
	f.consumer = c
	f.mu.Unlock()
	return nil
}

func (f *fakeBrokerEnv) unregisterConsumer(string) {
	f.mu.Lock()
	f.consumer = nil
	f.mu.Unlock()
}

func (f *fakeBrokerEnv) invokeSync(ctx context.Context, addr string, req *protocol.Command) (*protocol.Command, error) {
	resp := protocol.NewResponse(req, protocol.Success, "")
	mq := MessageQueue{Topic: req.Ext("topic"), BrokerName: fakeBrokerName}
	if q, err := req.ExtInt32("queueId"); err == nil {
		mq.QueueID = int(q)
	}
	switch protocol.RequestCode(req.Code) {
	case protocol.GetConsumerListByGroup:
		ids := []string{f.id}
		if f.members != nil {
			ids = f.members()
		}
		resp.Body, _ = json.Marshal(protocol.ConsumerListBody{ConsumerIDList: ids})
	case protocol.QueryConsumerOffset:
		f.mu.Lock()
		off, ok := f.offsets[mq]
		f.mu.Unlock()
		if !ok {
			resp.Code = int32(protocol.QueryNotFound)
			return resp, nil
		}
		resp.SetExt("offset", strconv.FormatInt(off, 10))
	case protocol.UpdateConsumerOffset:
		off, _ := req.ExtInt64("commitOffset")
		f.mu.Lock()
		f.offsets[mq] = off
		f.mu.Unlock()
	case protocol.GetMaxOffset:
		f.mu.Lock()
		n := len(f.msgs[mq])
		f.mu.Unlock()
		resp.SetExt("offset", strconv.Itoa(n))
	case protocol.PullMessage, protocol.LitePullMessage:
		f.pulls.Add(1)
		if flag, _ := req.ExtInt32("sysFlag"); flag&protocol.PullFlagCommitOffset != 0 {
			f.commitPulls.Add(1)
		}
		if addr == "slave:1" {
			f.slavePulls.Add(1)
			if flag, _ := req.ExtInt32("sysFlag"); flag&protocol.PullFlagCommitOffset != 0 {
				f.slaveCommit.Add(1)
			}
		}
		off, _ := req.ExtInt64("queueOffset")
		maxN, _ := req.ExtInt32("maxMsgNums")
		f.mu.Lock()
		recs := f.msgs[mq]
		f.mu.Unlock()
		if off >= int64(len(recs)) {
			t := time.NewTimer(20 * time.Millisecond)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			}
			resp.Code = int32(protocol.PullNotFound)
			resp.ExtFields = protocol.EncodeHeader(&protocol.PullMessageResponseHeader{NextBeginOffset: off, MaxOffset: int64(len(recs)), SuggestWhichBrokerID: f.suggest()}, false)
			return resp, nil
		}
		end := min(int64(len(recs)), off+int64(maxN))
		for _, r := range recs[off:end] {
			resp.Body = append(resp.Body, r...)
		}
		resp.ExtFields = protocol.EncodeHeader(&protocol.PullMessageResponseHeader{NextBeginOffset: end, MaxOffset: int64(len(recs)), SuggestWhichBrokerID: f.suggest()}, false)
	case protocol.ConsumerSendMsgBack:
		off, _ := req.ExtInt64("offset")
		f.mu.Lock()
		f.sentBack = append(f.sentBack, off)
		f.mu.Unlock()
	default:
		resp.Code = int32(protocol.RequestCodeNotSupported)
	}
	return resp, nil
}

func (f *fakeBrokerEnv) suggest() int64 {
	if f.slave {
		return 1
	}
	return 0
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
