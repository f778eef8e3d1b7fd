package client

import (
	"context"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/testutil"
)

// fakeBroker is a broker (and, for the first one, the name server) on a
// loopback remoting server: it records what producers send and answers as
// a test tells it to (kfake's ControlKey idea). It never stores anything.
type fakeBroker struct {
	t    testing.TB
	name string
	srv  *remoting.Server
	addr string

	mu         sync.Mutex
	sends      []*protocol.Command // SEND_MESSAGE(_V2), SEND_BATCH_MESSAGE
	ends       []*protocol.Command // END_TRANSACTION
	heartbeats []*protocol.HeartbeatData
	conns      map[*remoting.Conn]bool // connections that heartbeated
	// onSend, if set, answers a send instead of the default SUCCESS.
	onSend func(req *protocol.Command) *protocol.Command
	// routes is the name-server table: topic -> brokers serving it.
	routes map[string][]*fakeBroker
	offset int64
}

func newFakeBroker(t *testing.T, name string) *fakeBroker { return newFakeBrokerTB(t, name) }

func newFakeBrokerTB(t testing.TB, name string) *fakeBroker {
	t.Helper()
	b := &fakeBroker{t: t, name: name, conns: map[*remoting.Conn]bool{}, routes: map[string][]*fakeBroker{}}
	b.srv = remoting.NewServer(remoting.ServerConfig{ListenAddr: "127.0.0.1:0", Logger: testutil.Logger(t)})
	pool := remoting.PoolConfig{Workers: 2, QueueSize: 1000}
	b.srv.RegisterProcessorShared([]protocol.RequestCode{protocol.SendMessage, protocol.SendMessageV2, protocol.SendBatchMessage}, b.processSend, pool)
	b.srv.RegisterProcessor(protocol.EndTransaction, b.processEnd, pool)
	b.srv.RegisterProcessor(protocol.HeartBeat, b.processHeartbeat, pool)
	b.srv.RegisterProcessor(protocol.GetRouteInfoByTopic, b.processRoute, pool)
	if err := b.srv.Start(); err != nil {
		t.Fatal(err)
	}
	b.addr = b.srv.Addr().String()
	t.Cleanup(func() { b.srv.Close() })
	return b
}

// serve makes this name server route topic to brokers (4 queues each).
func (b *fakeBroker) serve(topic string, brokers ...*fakeBroker) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.routes[topic] = brokers
}

func (b *fakeBroker) processRoute(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
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

func (b *fakeBroker) processHeartbeat(_ context.Context, conn *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	hb, err := protocol.DecodeHeartbeat(req.Body)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.heartbeats = append(b.heartbeats, hb)
	b.conns[conn] = true
	b.mu.Unlock()
	return protocol.NewResponse(req, protocol.Success, ""), nil
}

func (b *fakeBroker) processSend(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	b.mu.Lock()
	if len(b.sends) >= 10000 {
		b.sends = append(b.sends[:0], b.sends[len(b.sends)-100:]...)
	}
	b.sends = append(b.sends, req)
	on := b.onSend
	off := b.offset
	b.offset += 100
	b.mu.Unlock()
	if on != nil {
		if resp := on(req); resp != nil {
			resp.Opaque, resp.Flag, resp.SerializeType = req.Opaque, protocol.FlagResponse, req.SerializeType
			return resp, nil
		}
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	host := netip.MustParseAddrPort(b.addr)
	resp.SetExt("msgId", message.OffsetMsgID(host, off))
	qid := req.Ext("e")
	if qid == "" {
		qid = req.Ext("queueId")
	}
	resp.SetExt("queueId", qid)
	resp.SetExt("queueOffset", strconv.FormatInt(off/100, 10))
	resp.SetExt("MSG_REGION", "DefaultRegion")
	resp.SetExt("TRACE_ON", "true")
	return resp, nil
}

func (b *fakeBroker) processEnd(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	b.mu.Lock()
	b.ends = append(b.ends, req)
	b.mu.Unlock()
	return nil, nil
}

func (b *fakeBroker) sendCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.sends)
}

func (b *fakeBroker) lastSend() *protocol.Command {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sends[len(b.sends)-1]
}

func (b *fakeBroker) endList() []*protocol.Command {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*protocol.Command(nil), b.ends...)
}

// sendHeader decodes a send request's header (either spelling).
func sendHeader(t *testing.T, req *protocol.Command) protocol.SendMessageRequestHeader {
	t.Helper()
	var h protocol.SendMessageRequestHeader
	v2 := req.Code != int32(protocol.SendMessage)
	if err := protocol.DecodeHeader(req.ExtFields, &h, v2); err != nil {
		t.Fatal(err)
	}
	return h
}

func startProducer(t *testing.T, ns string, opts ...ProducerOpt) *Producer {
	t.Helper()
	all := append([]ProducerOpt{WithNameServers(ns), WithLogger(testutil.Logger(t)), WithSendTimeout(3 * time.Second)}, opts...)
	p, err := NewProducer("pg", all...)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}
