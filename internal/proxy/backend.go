package proxy

import (
	"context"
	"errors"
	"fmt"
	"github.com/apogeemq/apogee/internal/lite"
	"slices"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// routeTTL is how long a topic's route and type stay cached. Clients refresh
// their own routes every 30 s; a new topic or queue count shows up here
// within this time.
const routeTTL = 5 * time.Second

// attrMessageType is the topic attribute RocketMQ 5 types topics with
// (UPDATE_AND_CREATE_TOPIC attributes "+message.type=FIFO").
const attrMessageType = "message.type"

// brokerQueues is one master broker's share of a topic.
type brokerQueues struct {
	name  string // brokerName
	addr  string // remoting address of the master
	read  int32  // readQueueNums
	write int32  // writeQueueNums
	perm  int32  // topic permission on this broker (PermRead|PermWrite)
}

// topicRoute is what the proxy knows about a topic: its master brokers
// (sorted by name) and its message.type attribute ("" when absent).
type topicRoute struct {
	topic       string
	brokers     []brokerQueues
	messageType string
	fetched     time.Time
}

// broker returns the named broker's queues.
func (r *topicRoute) broker(name string) (brokerQueues, bool) {
	for _, b := range r.brokers {
		if b.name == name {
			return b, true
		}
	}
	return brokerQueues{}, false
}

// errTopicNotFound marks a topic no broker serves.
var errTopicNotFound = errors.New("proxy: topic not found")

// backend reaches the brokers over remoting. In local mode it serves one
// broker (the one the proxy runs inside) and reads topic configs from it; in
// cluster mode routes come from the name servers and topic types from the
// topic's first master broker.
type backend struct {
	rc *remoting.Client
	// Local mode: the broker this proxy fronts. Cluster mode: empty.
	localName, localAddr string
	namesrv              []string // cluster mode

	mu     sync.Mutex
	routes map[string]*topicRoute // by topic; guarded by mu
	// down holds brokers forgotten in the last routeTTL (forgetBroker) and
	// when; guarded by mu.
	down map[string]time.Time
}

// routeRetry is how long a route naming a broker that just failed stays
// cached: the name servers may not have dropped it yet.
const routeRetry = 500 * time.Millisecond

func newBackend(rc *remoting.Client, localName, localAddr string, namesrv []string) *backend {
	return &backend{rc: rc, localName: localName, localAddr: localAddr, namesrv: namesrv, routes: map[string]*topicRoute{}}
}

// route returns the topic's route, cached for routeTTL. errTopicNotFound
// when no broker has the topic.
func (b *backend) route(ctx context.Context, topic string) (*topicRoute, error) {
	b.mu.Lock()
	r := b.routes[topic]
	b.mu.Unlock()
	if r != nil && time.Since(r.fetched) < routeTTL {
		return r, nil
	}
	r, err := b.fetchRoute(ctx, topic)
	if err != nil {
		if errors.Is(err, errTopicNotFound) {
			b.mu.Lock()
			delete(b.routes, topic)
			b.mu.Unlock()
		}
		return nil, err
	}
	b.mu.Lock()
	for _, bq := range r.brokers {
		if at, ok := b.down[bq.addr]; ok && time.Since(at) < routeTTL {
			r.fetched = time.Now().Add(routeRetry - routeTTL) // look again soon
			break
		}
	}
	b.routes[topic] = r
	b.mu.Unlock()
	return r, nil
}

// forgetBroker drops every cached route naming the broker at addr, after
// its connection closed, a call to it failed, or it answered that it does
// not serve as master: the next call reads the route again, so a failover
// (a new master, or a slave acting as master) shows within a request
// instead of routeTTL. Cluster mode only.
func (b *backend) forgetBroker(addr string) {
	if b.localAddr != "" || addr == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if b.down == nil {
		b.down = map[string]time.Time{}
	}
	for a, at := range b.down {
		if now.Sub(at) >= routeTTL {
			delete(b.down, a)
		}
	}
	b.down[addr] = now
	for t, r := range b.routes {
		for _, bq := range r.brokers {
			if bq.addr == addr {
				delete(b.routes, t)
				break
			}
		}
	}
}

// brokerWatch forgets a broker's routes when the connection to it closes.
type brokerWatch struct{ b *backend }

func (w brokerWatch) OnConnect(*remoting.Conn)          {}
func (w brokerWatch) OnClose(c *remoting.Conn)          { w.b.forgetBroker(c.RemoteAddr()) }
func (w brokerWatch) OnIdle(*remoting.Conn)             {}
func (w brokerWatch) OnException(*remoting.Conn, error) {}

// brokerGone reports whether a broker call's outcome means the broker at
// addr no longer serves (transport error, or a slave / pre-online answer),
// and forgets its routes then.
func (b *backend) brokerGone(addr string, resp *protocol.Command, err error) {
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) ||
		resp != nil && (resp.Code == int32(protocol.SlaveNotAvailable) || resp.Code == int32(protocol.ServiceNotAvailable)) {
		b.forgetBroker(addr)
	}
}

// forget drops the cached route of topic (after a broker said it has no such
// topic).
func (b *backend) forget(topic string) {
	b.mu.Lock()
	delete(b.routes, topic)
	b.mu.Unlock()
}

func (b *backend) fetchRoute(ctx context.Context, topic string) (*topicRoute, error) {
	if b.localAddr != "" {
		tc, err := b.topicConfig(ctx, b.localAddr, topic)
		if err != nil {
			return nil, err
		}
		return &topicRoute{
			topic:       topic,
			brokers:     []brokerQueues{{name: b.localName, addr: b.localAddr, read: tc.ReadQueueNums, write: tc.WriteQueueNums, perm: tc.Perm}},
			messageType: tc.Attributes[attrMessageType],
			fetched:     time.Now(),
		}, nil
	}
	rd, err := b.namesrvRoute(ctx, topic)
	if err != nil {
		return nil, err
	}
	masters := map[string]string{}
	for _, bd := range rd.BrokerDatas {
		if a := bd.MasterAddr(); a != "" {
			masters[bd.BrokerName] = a
		}
	}
	r := &topicRoute{topic: topic, fetched: time.Now()}
	for _, qd := range rd.QueueDatas {
		addr, ok := masters[qd.BrokerName]
		if !ok {
			continue
		}
		r.brokers = append(r.brokers, brokerQueues{name: qd.BrokerName, addr: addr, read: qd.ReadQueueNums, write: qd.WriteQueueNums, perm: qd.Perm})
	}
	if len(r.brokers) == 0 {
		return nil, errTopicNotFound
	}
	slices.SortFunc(r.brokers, func(x, y brokerQueues) int {
		if x.name < y.name {
			return -1
		}
		if x.name > y.name {
			return 1
		}
		return 0
	})
	// The route carries no attributes: the topic type comes from a broker.
	if tc, err := b.topicConfig(ctx, r.brokers[0].addr, topic); err == nil {
		r.messageType = tc.Attributes[attrMessageType]
	} else if !errors.Is(err, errTopicNotFound) {
		return nil, err
	}
	return r, nil
}

// topicConfig asks the broker at addr for topic's config (GET_TOPIC_CONFIG).
func (b *backend) topicConfig(ctx context.Context, addr, topic string) (*protocol.TopicConfig, error) {
	resp, err := b.rc.InvokeSync(ctx, addr, protocol.NewRequest(protocol.GetTopicConfig, map[string]string{"topic": topic}, nil))
	if err != nil {
		return nil, fmt.Errorf("proxy: get topic config %s from %s: %w", topic, addr, err)
	}
	switch protocol.ResponseCode(resp.Code) {
	case protocol.Success:
	case protocol.TopicNotExist:
		return nil, errTopicNotFound
	default:
		return nil, fmt.Errorf("proxy: get topic config %s from %s: code %d %s", topic, addr, resp.Code, resp.Remark)
	}
	tc := protocol.NewTopicConfig(topic)
	if err := protocol.UnmarshalFastJSON(resp.Body, &tc); err != nil {
		return nil, fmt.Errorf("proxy: topic config %s from %s: %w", topic, addr, err)
	}
	if tc.Attributes == nil {
		tc.Attributes = map[string]string{}
	}
	return &tc, nil
}

// namesrvRoute asks the name servers in turn for topic's route.
func (b *backend) namesrvRoute(ctx context.Context, topic string) (*protocol.TopicRouteData, error) {
	var last error = errors.New("proxy: no name server configured")
	for _, ns := range b.namesrv {
		resp, err := b.rc.InvokeSync(ctx, ns, protocol.NewRequest(protocol.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
		if err != nil {
			last = fmt.Errorf("proxy: route of %s from name server %s: %w", topic, ns, err)
			continue
		}
		switch protocol.ResponseCode(resp.Code) {
		case protocol.Success:
			rd, err := protocol.DecodeTopicRouteData(resp.Body)
			if err != nil {
				return nil, fmt.Errorf("proxy: route of %s from %s: %w", topic, ns, err)
			}
			return rd, nil
		case protocol.TopicNotExist:
			return nil, errTopicNotFound
		default:
			last = fmt.Errorf("proxy: route of %s from %s: code %d %s", topic, ns, resp.Code, resp.Remark)
		}
	}
	return nil, last
}

// brokerAddr returns the remoting address of the named master broker, from
// any cached route or, in local mode, the local broker.
func (b *backend) brokerAddr(ctx context.Context, topic, name string) (string, error) {
	if parent, _, ok := lite.SplitQueueName(topic); ok {
		topic = parent // a lite topic's queue lives where its parent does (lite.go)
	}
	if b.localAddr != "" {
		if name == "" || name == b.localName {
			return b.localAddr, nil
		}
		return "", fmt.Errorf("proxy: unknown broker %q", name)
	}
	r, err := b.route(ctx, topic)
	if err != nil {
		return "", err
	}
	if bq, ok := r.broker(name); ok {
		return bq.addr, nil
	}
	return "", fmt.Errorf("proxy: broker %q does not serve topic %s", name, topic)
}
