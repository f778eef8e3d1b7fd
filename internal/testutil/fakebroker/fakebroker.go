// Package fakebroker is the one fake RocketMQ broker of the SDK's tests: a
// loopback remoting server that plays a name server (routes) and a broker
// (heartbeats, sends, end-transaction, pulls from an in-memory queue
// table, offsets, consumer lists, send-back), records what clients send,
// and answers as the test tells it to.
//
// A test can take over one request code (Control: answer SYSTEM_BUSY, a
// wrong code, nothing) or delay its answers (Delay: inject latency), the
// idea of kfake's ControlKey. The same handlers serve requests that arrive
// over the socket and requests a test hands in directly (Handle), so
// consumer tests that replace the client's network seam and producer tests
// that dial a real socket share one broker behaviour.
//
// It never stores anything on disk and is not RocketMQ: compatibility
// tests run against the real broker (internal/broker) instead.
package fakebroker

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/testutil"
)

// Queue names one queue of the broker.
type Queue struct {
	Topic   string
	QueueID int
}

// Broker is one fake broker; see the package doc. Its methods are safe for
// concurrent use.
type Broker struct {
	name string
	srv  *remoting.Server
	addr string

	mu         sync.Mutex
	sends      []*protocol.Command // SEND_MESSAGE(_V2), SEND_BATCH_MESSAGE
	ends       []*protocol.Command // END_TRANSACTION
	heartbeats []*protocol.HeartbeatData
	client     *remoting.Conn       // the connection that heartbeated last
	routes     map[string][]*Broker // name-server table: topic -> brokers serving it
	control    map[protocol.RequestCode]func(*protocol.Command) *protocol.Command
	delays     map[protocol.RequestCode]time.Duration
	offset     int64 // next commit-log offset handed out for a send

	// Consumer side, all guarded by mu.
	msgs     map[Queue][][]byte // stored records by queue offset
	offsets  map[Queue]int64    // committed consumer offsets
	members  func() []string    // GET_CONSUMER_LIST_BY_GROUP; nil = the caller's id
	sentBack []int64            // commit-log offsets sent back
	suggest  int64              // suggestWhichBrokerId of pull answers

	pulls       atomic.Int64 // PULL_MESSAGE / LITE_PULL_MESSAGE requests
	commitPulls atomic.Int64 // pulls with the commit-offset bit
}

// New starts a fake broker named name on 127.0.0.1:0; the test's cleanup
// closes it.
func New(t testing.TB, name string) *Broker {
	t.Helper()
	b := &Broker{
		name:    name,
		routes:  map[string][]*Broker{},
		control: map[protocol.RequestCode]func(*protocol.Command) *protocol.Command{},
		delays:  map[protocol.RequestCode]time.Duration{},
		msgs:    map[Queue][][]byte{},
		offsets: map[Queue]int64{},
	}
	b.srv = remoting.NewServer(remoting.ServerConfig{ListenAddr: "127.0.0.1:0", Logger: testutil.Logger(t)})
	handle := func(ctx context.Context, conn *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
		if protocol.RequestCode(req.Code) == protocol.HeartBeat {
			b.mu.Lock()
			b.client = conn
			b.mu.Unlock()
		}
		return b.Handle(ctx, b.addr, req)
	}
	// One pool per family, as a broker has: a test that blocks sends
	// (Control) does not stall heartbeats, routes or pulls.
	pool := func(workers int) remoting.PoolConfig { return remoting.PoolConfig{Workers: workers, QueueSize: 1000} }
	b.srv.RegisterProcessorShared([]protocol.RequestCode{protocol.SendMessage, protocol.SendMessageV2, protocol.SendBatchMessage}, handle, pool(2))
	b.srv.RegisterProcessor(protocol.EndTransaction, handle, pool(2))
	b.srv.RegisterProcessor(protocol.HeartBeat, handle, pool(2))
	b.srv.RegisterProcessor(protocol.GetRouteInfoByTopic, handle, pool(2))
	b.srv.RegisterProcessorShared([]protocol.RequestCode{protocol.GetConsumerListByGroup, protocol.QueryConsumerOffset,
		protocol.UpdateConsumerOffset, protocol.GetMaxOffset, protocol.PullMessage, protocol.LitePullMessage,
		protocol.ConsumerSendMsgBack}, handle, pool(4))
	b.srv.SetDefaultProcessor(handle, pool(1))
	if err := b.srv.Start(); err != nil {
		t.Fatal(err)
	}
	b.addr = b.srv.Addr().String()
	t.Cleanup(func() { b.srv.Close() })
	return b
}

// Name is the broker name it serves under.
func (b *Broker) Name() string { return b.name }

// Addr is its listening address (name server and broker alike).
func (b *Broker) Addr() string { return b.addr }

// Close stops the server: later dials are refused.
func (b *Broker) Close() { b.srv.Close() }

// Serve makes this broker, as a name server, route topic to brokers (4
// read and write queues each, perm 6); no brokers removes the route.
func (b *Broker) Serve(topic string, brokers ...*Broker) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.routes[topic] = brokers
}

// Control makes fn answer every request with code instead of the default
// handler; fn returning nil falls back to the default, and nil fn removes
// the control. The answer's opaque, flag and serialization are set from
// the request.
func (b *Broker) Control(code protocol.RequestCode, fn func(req *protocol.Command) *protocol.Command) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if fn == nil {
		delete(b.control, code)
		return
	}
	b.control[code] = fn
}

// Delay makes every answer to code wait d first (injected latency); 0
// removes it. A delay ends early when the request's context ends.
func (b *Broker) Delay(code protocol.RequestCode, d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if d <= 0 {
		delete(b.delays, code)
		return
	}
	b.delays[code] = d
}

// Handle answers one request as the broker would, with the request arriving
// from a client that dialled addr; a nil answer means "no response" (as for
// END_TRANSACTION). The socket server uses it, and so can tests that call
// the broker without a socket.
func (b *Broker) Handle(ctx context.Context, addr string, req *protocol.Command) (*protocol.Command, error) {
	code := protocol.RequestCode(req.Code)
	b.mu.Lock()
	fn, delay := b.control[code], b.delays[code]
	b.mu.Unlock()
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
	if fn != nil {
		if resp := fn(req); resp != nil {
			resp.Opaque, resp.Flag, resp.SerializeType = req.Opaque, protocol.FlagResponse, req.SerializeType
			if code == protocol.SendMessage || code == protocol.SendMessageV2 || code == protocol.SendBatchMessage {
				b.recordSend(req)
			}
			return resp, nil
		}
	}
	switch code {
	case protocol.GetRouteInfoByTopic:
		return b.route(req)
	case protocol.HeartBeat:
		return b.heartbeat(req)
	case protocol.SendMessage, protocol.SendMessageV2, protocol.SendBatchMessage:
		return b.send(req), nil
	case protocol.EndTransaction:
		b.mu.Lock()
		b.ends = append(b.ends, req)
		b.mu.Unlock()
		return nil, nil
	case protocol.GetConsumerListByGroup, protocol.QueryConsumerOffset, protocol.UpdateConsumerOffset,
		protocol.GetMaxOffset, protocol.PullMessage, protocol.LitePullMessage, protocol.ConsumerSendMsgBack:
		return b.consume(ctx, addr, req)
	}
	return protocol.NewResponse(req, protocol.RequestCodeNotSupported, fmt.Sprintf(" request type %d not supported", req.Code)), nil
}

func (b *Broker) route(req *protocol.Command) (*protocol.Command, error) {
	b.mu.Lock()
	brokers := b.routes[req.Ext("topic")]
	b.mu.Unlock()
	if len(brokers) == 0 {
		return protocol.NewResponse(req, protocol.TopicNotExist, "No topic route info in name server for the topic: "+req.Ext("topic")), nil
	}
	var rd protocol.TopicRouteData
	for _, x := range brokers {
		rd.QueueDatas = append(rd.QueueDatas, protocol.QueueData{BrokerName: x.name, ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6})
		rd.BrokerDatas = append(rd.BrokerDatas, protocol.BrokerData{Cluster: "c", BrokerName: x.name, BrokerAddrs: map[int64]string{0: x.addr}})
	}
	body, err := rd.Encode()
	if err != nil {
		return nil, err
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = body
	return resp, nil
}

func (b *Broker) heartbeat(req *protocol.Command) (*protocol.Command, error) {
	hb, err := protocol.DecodeHeartbeat(req.Body)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.heartbeats = append(b.heartbeats, hb)
	b.mu.Unlock()
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

// recordSend keeps a send (the last 10,000 at most) and returns the
// commit-log offset handed to it.
func (b *Broker) recordSend(req *protocol.Command) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.sends) >= 10000 {
		b.sends = append(b.sends[:0], b.sends[len(b.sends)-100:]...)
	}
	b.sends = append(b.sends, req)
	off := b.offset
	b.offset += 100
	return off
}

// send answers SUCCESS with the header fields a real broker sends.
func (b *Broker) send(req *protocol.Command) *protocol.Command {
	off := b.recordSend(req)
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.SetExt("msgId", message.OffsetMsgID(netip.MustParseAddrPort(b.addr), off))
	qid := req.Ext("e")
	if qid == "" {
		qid = req.Ext("queueId")
	}
	resp.SetExt("queueId", qid)
	resp.SetExt("queueOffset", strconv.FormatInt(off/100, 10))
	resp.SetExt("MSG_REGION", "DefaultRegion")
	resp.SetExt("TRACE_ON", "true")
	return resp
}

// SendCount is the number of sends received.
func (b *Broker) SendCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.sends)
}

// Sends returns the sends received, oldest first.
func (b *Broker) Sends() []*protocol.Command {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*protocol.Command(nil), b.sends...)
}

// LastSend returns the latest send; it fails the caller's expectations by
// panicking when there is none.
func (b *Broker) LastSend() *protocol.Command {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sends[len(b.sends)-1]
}

// Ends returns the END_TRANSACTION requests received.
func (b *Broker) Ends() []*protocol.Command {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*protocol.Command(nil), b.ends...)
}

// Heartbeats returns the heartbeats received, oldest first.
func (b *Broker) Heartbeats() []*protocol.HeartbeatData {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*protocol.HeartbeatData(nil), b.heartbeats...)
}

// Put appends n messages to topic's queues 0..queues-1 round robin, with
// bodies and UNIQ_KEYs prefix-i and commit-log offsets i*100, and makes
// sure every one of those queues exists (empty or not).
func (b *Broker) Put(topic string, queues, n int, prefix string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	host := netip.MustParseAddrPort("127.0.0.1:10911")
	for q := range queues {
		if _, ok := b.msgs[Queue{topic, q}]; !ok {
			b.msgs[Queue{topic, q}] = nil
		}
	}
	for i := range n {
		q := Queue{topic, i % queues}
		e := &message.Ext{
			Message: message.Message{Topic: topic, Body: []byte(fmt.Sprintf("%s-%d", prefix, i))},
			QueueID: int32(q.QueueID), QueueOffset: int64(len(b.msgs[q])), CommitLogOffset: int64(i) * 100,
			BornHost: host, StoreHost: host, BornTimestamp: 1, StoreTimestamp: 2,
		}
		e.Properties = map[string]string{message.PropertyUniqClientMessageIDKeyidx: fmt.Sprintf("%s-%d", prefix, i)}
		rec, err := message.AppendStored(nil, e)
		if err != nil {
			panic(err)
		}
		b.msgs[q] = append(b.msgs[q], rec)
	}
}

// Queues returns topic's queue ids in order.
func (b *Broker) Queues(topic string) []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []int
	for q := range b.msgs {
		if q.Topic == topic {
			out = append(out, q.QueueID)
		}
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// Offset returns the committed consumer offset of q.
func (b *Broker) Offset(q Queue) (int64, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	off, ok := b.offsets[q]
	return off, ok
}

// SetMembers makes GET_CONSUMER_LIST_BY_GROUP answer fn's ids.
func (b *Broker) SetMembers(fn func() []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.members = fn
}

// SetSuggest sets suggestWhichBrokerId of every pull answer.
func (b *Broker) SetSuggest(id int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.suggest = id
}

// SentBack returns the commit-log offsets of the messages sent back.
func (b *Broker) SentBack() []int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int64(nil), b.sentBack...)
}

// Pulls is the number of pulls received; CommitPulls those that carried the
// commit-offset bit.
func (b *Broker) Pulls() int64       { return b.pulls.Load() }
func (b *Broker) CommitPulls() int64 { return b.commitPulls.Load() }

// consume serves the consumer-side requests from the in-memory queues. A
// pull that finds nothing waits up to 20 ms (a short long-poll), so idle
// pull loops do not spin.
func (b *Broker) consume(ctx context.Context, _ string, req *protocol.Command) (*protocol.Command, error) {
	resp := protocol.NewResponse(req, protocol.Success, "")
	q := Queue{Topic: req.Ext("topic")}
	if id, err := req.ExtInt32("queueId"); err == nil {
		q.QueueID = int(id)
	}
	switch protocol.RequestCode(req.Code) {
	case protocol.GetConsumerListByGroup:
		b.mu.Lock()
		members := b.members
		b.mu.Unlock()
		var ids []string
		if members != nil {
			ids = members()
		}
		resp.Body, _ = json.Marshal(protocol.ConsumerListBody{ConsumerIDList: ids})
	case protocol.QueryConsumerOffset:
		off, ok := b.Offset(q)
		if !ok {
			resp.Code = int32(protocol.QueryNotFound)
			return resp, nil
		}
		resp.SetExt("offset", strconv.FormatInt(off, 10))
	case protocol.UpdateConsumerOffset:
		off, _ := req.ExtInt64("commitOffset")
		b.mu.Lock()
		b.offsets[q] = off
		b.mu.Unlock()
	case protocol.GetMaxOffset:
		b.mu.Lock()
		n := len(b.msgs[q])
		b.mu.Unlock()
		resp.SetExt("offset", strconv.Itoa(n))
	case protocol.PullMessage, protocol.LitePullMessage:
		b.pulls.Add(1)
		if flag, _ := req.ExtInt32("sysFlag"); flag&protocol.PullFlagCommitOffset != 0 {
			b.commitPulls.Add(1)
		}
		off, _ := req.ExtInt64("queueOffset")
		maxN, _ := req.ExtInt32("maxMsgNums")
		b.mu.Lock()
		recs, suggest := b.msgs[q], b.suggest
		b.mu.Unlock()
		if off >= int64(len(recs)) {
			t := time.NewTimer(20 * time.Millisecond)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			}
			resp.Code = int32(protocol.PullNotFound)
			resp.ExtFields = protocol.EncodeHeader(&protocol.PullMessageResponseHeader{NextBeginOffset: off, MaxOffset: int64(len(recs)), SuggestWhichBrokerID: suggest}, false)
			return resp, nil
		}
		end := min(int64(len(recs)), off+int64(maxN))
		for _, r := range recs[off:end] {
			resp.Body = append(resp.Body, r...)
		}
		resp.ExtFields = protocol.EncodeHeader(&protocol.PullMessageResponseHeader{NextBeginOffset: end, MaxOffset: int64(len(recs)), SuggestWhichBrokerID: suggest}, false)
	case protocol.ConsumerSendMsgBack:
		off, _ := req.ExtInt64("offset")
		b.mu.Lock()
		b.sentBack = append(b.sentBack, off)
		b.mu.Unlock()
	}
	return resp, nil
}

// OnSend is Control for the three send codes (SEND_MESSAGE, SEND_MESSAGE_V2,
// SEND_BATCH_MESSAGE); the sends are recorded either way.
func (b *Broker) OnSend(fn func(req *protocol.Command) *protocol.Command) {
	for _, c := range []protocol.RequestCode{protocol.SendMessage, protocol.SendMessageV2, protocol.SendBatchMessage} {
		b.Control(c, fn)
	}
}

// SendToClient sends req oneway, broker to client, on the connection that
// heartbeated last (CHECK_TRANSACTION_STATE, NOTIFY_CONSUMER_IDS_CHANGED).
func (b *Broker) SendToClient(ctx context.Context, req *protocol.Command) error {
	b.mu.Lock()
	conn := b.client
	b.mu.Unlock()
	if conn == nil {
		return fmt.Errorf("fakebroker %s: no client heartbeated yet", b.name)
	}
	return b.srv.InvokeOneway(ctx, conn, req)
}

// ResetSends forgets the sends received so far.
func (b *Broker) ResetSends() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sends = nil
}

// Record returns the stored record at offset of q, nil when there is none.
func (b *Broker) Record(q Queue, offset int) []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	recs := b.msgs[q]
	if offset < 0 || offset >= len(recs) {
		return nil
	}
	return recs[offset]
}
