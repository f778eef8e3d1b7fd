package client

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// instanceEnv adapts the shared client instance (instance.go) to the
// consumerEnv a consumer needs. A consumer owns its instance: the instance
// starts when the consumer registers and closes when the consumer releases
// it.
type instanceEnv struct {
	in       *instance
	mu       sync.Mutex
	group    string        // guarded by mu
	consumer consumerInner // guarded by mu; nil once unregistered
	active   atomic.Bool
}

// newConsumerEnv creates the instance of one consumer. The returned
// function closes it.
func newConsumerEnv(cfg *consumerConfig) (consumerEnv, func() error, error) {
	e := &instanceEnv{in: newInstance(cfg.clientConfig)}
	return e, e.in.close, nil
}

func (e *instanceEnv) clientID() string  { return e.in.clientID }
func (e *instanceEnv) namespace() string { return e.in.cfg.namespace }

func (e *instanceEnv) invokeSync(ctx context.Context, addr string, req *protocol.Command) (*protocol.Command, error) {
	if err := e.in.running(); err != nil {
		return nil, err
	}
	return e.in.remote.InvokeSync(ctx, addr, req)
}

func (e *instanceEnv) invokeAsync(ctx context.Context, addr string, req *protocol.Command, cb func(*protocol.Command, error)) error {
	if err := e.in.running(); err != nil {
		return err
	}
	return e.in.remote.InvokeAsync(ctx, addr, req, cb)
}

func (e *instanceEnv) invokeOneway(ctx context.Context, addr string, req *protocol.Command) error {
	if err := e.in.running(); err != nil {
		return err
	}
	return e.in.remote.InvokeOneway(ctx, addr, req)
}

func (e *instanceEnv) subscribeQueues(ctx context.Context, topic string) ([]MessageQueue, error) {
	r, err := e.in.route(ctx, topic)
	if err != nil {
		return nil, err
	}
	return r.subscribe, nil
}

func (e *instanceEnv) brokerAddr(brokerName string, onlyMaster bool) string {
	addr, _, found := e.in.findBrokerAddr(brokerName, protocol.MasterID, onlyMaster)
	if !found {
		return ""
	}
	return addr
}

func (e *instanceEnv) brokerAddrByID(brokerName string, id int64) string {
	addr, _, found := e.in.findBrokerAddr(brokerName, id, true)
	if !found {
		return ""
	}
	return addr
}

// topicBrokerAddrs returns one address per broker of the topic (the
// master when present), shuffled: RocketMQ asks a random broker for the
// group's members.
func (e *instanceEnv) topicBrokerAddrs(ctx context.Context, topic string) []string {
	r, err := e.in.route(ctx, topic)
	if err != nil {
		return nil
	}
	var out []string
	for _, bd := range r.data.BrokerDatas {
		if a := bd.BrokerAddrs[protocol.MasterID]; a != "" {
			out = append(out, a)
			continue
		}
		for _, id := range slices.Sorted(maps.Keys(bd.BrokerAddrs)) {
			out = append(out, bd.BrokerAddrs[id])
			break
		}
	}
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// registerConsumer puts the consumer into heartbeats, routes the broker's
// notifications to it and starts the instance.
func (e *instanceEnv) registerConsumer(group string, c consumerInner) error {
	e.mu.Lock()
	e.group, e.consumer = group, c
	e.mu.Unlock()
	e.in.addHeartbeatSource(func(hb *protocol.HeartbeatData) {
		e.mu.Lock()
		cur := e.consumer
		e.mu.Unlock()
		if cur != nil {
			hb.ConsumerDataSet = append(hb.ConsumerDataSet, cur.consumerData())
		}
	})
	e.in.handle(protocol.NotifyConsumerIDsChanged, e.onNotify)
	e.in.handle(protocol.GetConsumerRunningInfo, e.onRunningInfo)
	e.in.handle(protocol.ResetConsumerClientOffset, e.onResetOffset)
	e.in.handle(protocol.GetConsumerStatusFromClient, e.onConsumerStatus)
	e.in.handle(protocol.ConsumeMessageDirectly, func(ctx context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
		return e.onConsumeDirectly(ctx, nil, req)
	})
	e.active.Store(true)
	return e.in.start()
}

// unregisterConsumer removes the consumer from heartbeats and tells every
// master (UNREGISTER_CLIENT) so the group rebalances at once.
func (e *instanceEnv) unregisterConsumer(group string) {
	e.mu.Lock()
	e.consumer = nil
	e.mu.Unlock()
	e.active.Store(false)
	if e.in.running() == nil {
		e.in.unregisterClient(protocol.UnregisterClientRequestHeader{ClientID: e.in.clientID, ConsumerGroup: group})
	}
}

func (e *instanceEnv) heartbeatNow(ctx context.Context) {
	// A silent broker must not eat the caller's whole budget.
	ctx, cancel := context.WithTimeout(ctx, nameServerTimeout)
	defer cancel()
	if err := e.in.sendHeartbeat(ctx); err != nil && !errors.Is(err, context.Canceled) {
		e.in.logger.Debug("heartbeat", "err", err)
	}
}

func (e *instanceEnv) requestHeartbeat() { e.in.triggerHeartbeat() }

// onNotify handles NOTIFY_CONSUMER_IDS_CHANGED (40, oneway).
func (e *instanceEnv) onNotify(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	e.mu.Lock()
	c, group := e.consumer, e.group
	e.mu.Unlock()
	if c != nil && req.Ext("consumerGroup") == group {
		c.rebalanceNow()
	}
	return nil, nil
}

// processQueueInfo is one queue's entry of ConsumerRunningInfo.mqTable
// (docs/protocol.md §5.3.12), with Java's property names ("droped" sic).
type processQueueInfo struct {
	CommitOffset         int64 `json:"commitOffset"`
	CachedMsgMinOffset   int64 `json:"cachedMsgMinOffset"`
	CachedMsgMaxOffset   int64 `json:"cachedMsgMaxOffset"`
	CachedMsgCount       int64 `json:"cachedMsgCount"`
	CachedMsgSizeInMiB   int64 `json:"cachedMsgSizeInMiB"`
	Locked               bool  `json:"locked"`
	LastLockTimestamp    int64 `json:"lastLockTimestamp"`
	Droped               bool  `json:"droped"`
	LastPullTimestamp    int64 `json:"lastPullTimestamp"`
	LastConsumeTimestamp int64 `json:"lastConsumeTimestamp"`
}

// queueInfoSource is implemented by consumers that report their process
// queues in GET_CONSUMER_RUNNING_INFO.
type queueInfoSource interface {
	queueInfos() []protocol.QueueValue[processQueueInfo]
}

// onRunningInfo answers GET_CONSUMER_RUNNING_INFO (307): properties,
// subscriptions and the process queues, with mqTable in fastjson's
// object-key form as Java tools read it.
func (e *instanceEnv) onRunningInfo(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	e.mu.Lock()
	c, group := e.consumer, e.group
	e.mu.Unlock()
	if c == nil || req.Ext("consumerGroup") != group || req.Ext("clientId") != e.in.clientID {
		return nil, protocol.Errorf(protocol.SystemError, "the consumer group %s not exist in this consumer", req.Ext("consumerGroup"))
	}
	data := c.consumerData()
	head, err := protocol.MarshalJSON(struct {
		Properties      map[string]string           `json:"properties"`
		SubscriptionSet []protocol.SubscriptionData `json:"subscriptionSet"`
		StatusTable     map[string]any              `json:"statusTable"`
	}{
		Properties: map[string]string{
			"PROP_NAMESERVER_ADDR": joinAddrs(e.in.cfg.nameServers),
			"PROP_CONSUME_TYPE":    data.ConsumeType,
			"PROP_CLIENT_VERSION":  "V5_3_0",
		},
		SubscriptionSet: data.SubscriptionDataSet,
		StatusTable:     map[string]any{},
	})
	if err != nil {
		return nil, err
	}
	var infos []protocol.QueueValue[processQueueInfo]
	if src, ok := c.(queueInfoSource); ok {
		infos = src.queueInfos()
	}
	fe := make([]protocol.FastJSONEntry, len(infos))
	for i, qi := range infos {
		fe[i] = protocol.FastJSONEntry{Key: qi.Queue, Value: qi.Value}
	}
	body := append(head[:len(head)-1], `,"mqTable":`...)
	if body, err = protocol.AppendObjectKeyMap(body, fe); err != nil {
		return nil, err
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = append(body, '}')
	return resp, nil
}

func joinAddrs(a []string) string {
	out := ""
	for i, s := range a {
		if i > 0 {
			out += ";"
		}
		out += s
	}
	return out
}
