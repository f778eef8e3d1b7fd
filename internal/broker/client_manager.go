package broker

import (
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// ClientChannel is one client connection known through HEART_BEAT, or
// one client of the in-process gRPC endpoint (client_local.go).
type ClientChannel struct {
	// Conn is the client's remoting connection; nil for a gRPC client,
	// which nothing can be sent to over remoting.
	Conn *remoting.Conn
	// Addr is a gRPC client's address (Conn nil); RemoteAddr reports it.
	Addr string
	// key stands for Conn.ID() when Conn is nil: localKey(ClientID), in a
	// range connection ids never reach.
	key uint64
	// via is the connection a cluster-mode endpoint registers this gRPC
	// client on (proxied heartbeats, client_local.go); 0 otherwise.
	via      uint64
	ClientID string
	Language protocol.LanguageCode
	Version  int32
	// LastUpdate is the time of the last heartbeat; guarded by the
	// ClientManager's mu.
	LastUpdate time.Time
}

// ConsumerGroupInfo is a snapshot of one consumer group's registration.
type ConsumerGroupInfo struct {
	Group            string
	ConsumeType      string
	MessageModel     string
	ConsumeFromWhere string
	Channels         []ClientChannel
	// Subscriptions by topic; CodeSet recomputed with Java's String.hashCode.
	Subscriptions map[string]*protocol.SubscriptionData
}

// id is the channel's key in its groups: the connection's id, or a gRPC
// client's key.
func (c *ClientChannel) id() uint64 {
	if c.Conn != nil {
		return c.Conn.ID()
	}
	return c.key
}

// RemoteAddr is the client's "ip:port".
func (c *ClientChannel) RemoteAddr() string {
	if c.Conn != nil {
		return c.Conn.RemoteAddr()
	}
	return c.Addr
}

type consumerGroup struct {
	consumeType, messageModel, consumeFromWhere string
	channels                                    map[uint64]*ClientChannel // by ClientChannel.id()
	subscriptions                               map[string]*protocol.SubscriptionData
}

// ClientManager tracks producer and consumer groups from heartbeats
// (RocketMQ's ProducerManager + ConsumerManager, docs/broker.md §1.6).
// Membership changes of a consumer group are reported through onChange,
// which the broker turns into NOTIFY_CONSUMER_IDS_CHANGED.
type ClientManager struct {
	// onChange is called outside the lock with the group and its remaining
	// connections.
	onChange func(group string, conns []*remoting.Conn)

	mu        sync.RWMutex
	consumers map[string]*consumerGroup            // guarded by mu
	producers map[string]map[uint64]*ClientChannel // guarded by mu
}

func newClientManager(onChange func(group string, conns []*remoting.Conn)) *ClientManager {
	return &ClientManager{
		onChange:  onChange,
		consumers: make(map[string]*consumerGroup),
		producers: make(map[string]map[uint64]*ClientChannel),
	}
}

// RegisterConsumer records a consumer heartbeat. It returns whether the
// group's membership changed (a new channel), after notifying.
func (m *ClientManager) RegisterConsumer(data *protocol.ConsumerData, ch ClientChannel, keepSubscriptions bool) bool {
	subs := make(map[string]*protocol.SubscriptionData, len(data.SubscriptionDataSet))
	for i := range data.SubscriptionDataSet {
		s := normalizeSubscription(data.SubscriptionDataSet[i])
		subs[s.Topic] = &s
	}
	m.mu.Lock()
	if ch.Conn != nil && connClosed(ch.Conn) {
		m.mu.Unlock()
		return false
	}
	g, ok := m.consumers[data.GroupName]
	if !ok {
		g = &consumerGroup{channels: make(map[uint64]*ClientChannel), subscriptions: subs}
		m.consumers[data.GroupName] = g
	}
	g.consumeType, g.messageModel, g.consumeFromWhere = data.ConsumeType, data.MessageModel, data.ConsumeFromWhere
	id := ch.id()
	old, had := g.channels[id]
	changed := !had
	if had && old.ClientID != ch.ClientID {
		changed = true
	}
	c := ch
	g.channels[id] = &c
	if !keepSubscriptions {
		g.subscriptions = subs
	}
	var conns []*remoting.Conn
	if changed {
		conns = groupConnsLocked(g)
	}
	m.mu.Unlock()
	if changed && m.onChange != nil {
		m.onChange(data.GroupName, conns)
	}
	return changed
}

// normalizeSubscription fills TAG defaults and recomputes CodeSet from
// TagsSet with Java's String.hashCode (docs/protocol.md §9.4 #23, #25).
func normalizeSubscription(s protocol.SubscriptionData) protocol.SubscriptionData {
	if s.ExpressionType == "" {
		s.ExpressionType = protocol.ExpressionTag
	}
	if !s.IsTag() {
		return s
	}
	sub := strings.TrimSpace(s.SubString)
	if sub == "" || sub == protocol.SubAll {
		s.SubString = protocol.SubAll
		s.TagsSet, s.CodeSet = nil, nil
		return s
	}
	if len(s.TagsSet) == 0 {
		s.TagsSet = ParseTags(sub)
	}
	s.CodeSet = make(protocol.CodeSet, 0, len(s.TagsSet))
	for _, t := range s.TagsSet {
		s.CodeSet = append(s.CodeSet, int32(message.TagsHashCode(t)))
	}
	return s
}

// ParseTags splits a tag expression "a || b" into its tags.
func ParseTags(expr string) []string {
	var out []string
	for _, p := range strings.Split(expr, "||") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// connClosed reports whether c has begun closing. A heartbeat can be
// processed after its connection's close was handled (it was read before
// the EOF and waited in the heartbeat pool); registering it then would keep
// a dead client in its group until the channel-expiry scan, 120 s later,
// and the group's other members would leave its queues unconsumed that
// long. The remoting layer closes Closed() before it tells listeners, and
// both registration and ConnClosed hold mu, so checking under mu leaves no
// window: a registration either sees the close or is undone by ConnClosed.
func connClosed(c *remoting.Conn) bool {
	select {
	case <-c.Closed():
		return true
	default:
		return false
	}
}

// UnregisterConsumer removes one connection from a group.
func (m *ClientManager) UnregisterConsumer(group string, connID uint64) {
	m.mu.Lock()
	g, ok := m.consumers[group]
	if !ok {
		m.mu.Unlock()
		return
	}
	_, had := g.channels[connID]
	delete(g.channels, connID)
	conns := groupConnsLocked(g)
	if len(g.channels) == 0 {
		delete(m.consumers, group)
	}
	m.mu.Unlock()
	if had && m.onChange != nil {
		m.onChange(group, conns)
	}
}

// RegisterProducer records a producer heartbeat.
func (m *ClientManager) RegisterProducer(group string, ch ClientChannel) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ch.Conn != nil && connClosed(ch.Conn) {
		return
	}
	p, ok := m.producers[group]
	if !ok {
		p = make(map[uint64]*ClientChannel)
		m.producers[group] = p
	}
	c := ch
	p[ch.id()] = &c
}

// UnregisterProducer removes one connection from a producer group.
func (m *ClientManager) UnregisterProducer(group string, connID uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.producers[group]; ok {
		delete(p, connID)
		if len(p) == 0 {
			delete(m.producers, group)
		}
	}
}

// ConnClosed removes a connection from every group.
func (m *ClientManager) ConnClosed(connID uint64) {
	m.removeConns(func(c *ClientChannel) bool {
		return c.Conn != nil && c.Conn.ID() == connID || c.Conn == nil && c.via == connID
	})
}

// ScanExpired drops channels without a heartbeat for longer than timeout and
// closes their connections; it returns how many it dropped.
func (m *ClientManager) ScanExpired(now time.Time, timeout time.Duration) int {
	var expired []*remoting.Conn
	n := m.removeConns(func(c *ClientChannel) bool {
		if now.Sub(c.LastUpdate) > timeout {
			if c.Conn != nil {
				expired = append(expired, c.Conn)
			}
			return true
		}
		return false
	})
	for _, c := range expired {
		c.Close()
	}
	return n
}

func (m *ClientManager) removeConns(match func(*ClientChannel) bool) int {
	type change struct {
		group string
		conns []*remoting.Conn
	}
	var changes []change
	removed := 0
	m.mu.Lock()
	for name, g := range m.consumers {
		hit := false
		for id, c := range g.channels {
			if match(c) {
				delete(g.channels, id)
				hit = true
				removed++
			}
		}
		if hit {
			changes = append(changes, change{name, groupConnsLocked(g)})
			if len(g.channels) == 0 {
				delete(m.consumers, name)
			}
		}
	}
	for name, p := range m.producers {
		for id, c := range p {
			if match(c) {
				delete(p, id)
				removed++
			}
		}
		if len(p) == 0 {
			delete(m.producers, name)
		}
	}
	m.mu.Unlock()
	if m.onChange != nil {
		for _, c := range changes {
			m.onChange(c.group, c.conns)
		}
	}
	return removed
}

func groupConnsLocked(g *consumerGroup) []*remoting.Conn {
	out := make([]*remoting.Conn, 0, len(g.channels))
	for _, c := range g.channels {
		if c.Conn != nil {
			out = append(out, c.Conn)
		}
	}
	return out
}

// ConsumerIDs returns the sorted client ids of a group's live remoting
// consumers, the members rebalancing divides queues among. gRPC clients
// (no connection) are left out: they pop, and queues assigned to them
// would go unconsumed by the group's pull consumers.
func (m *ClientManager) ConsumerIDs(group string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g, ok := m.consumers[group]
	if !ok {
		return nil
	}
	ids := make([]string, 0, len(g.channels))
	seen := make(map[string]bool, len(g.channels))
	for _, c := range g.channels {
		if c.Conn != nil && !seen[c.ClientID] {
			seen[c.ClientID] = true
			ids = append(ids, c.ClientID)
		}
	}
	sort.Strings(ids)
	return ids
}

// Subscription returns the group's registered subscription of topic.
func (m *ClientManager) Subscription(group, topic string) (*protocol.SubscriptionData, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g, ok := m.consumers[group]
	if !ok {
		return nil, false
	}
	s, ok := g.subscriptions[topic]
	return s, ok
}

// ConsumerGroup returns a snapshot of a group's registration.
func (m *ClientManager) ConsumerGroup(group string) (ConsumerGroupInfo, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g, ok := m.consumers[group]
	if !ok {
		return ConsumerGroupInfo{}, false
	}
	info := ConsumerGroupInfo{
		Group: group, ConsumeType: g.consumeType, MessageModel: g.messageModel,
		ConsumeFromWhere: g.consumeFromWhere, Subscriptions: maps.Clone(g.subscriptions),
	}
	for _, c := range g.channels {
		info.Channels = append(info.Channels, *c)
	}
	return info, true
}

// ConsumerGroups lists the groups with live consumers.
func (m *ClientManager) ConsumerGroups() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Sorted(maps.Keys(m.consumers))
}

// ProducerChannels returns the live channels of a producer group.
func (m *ClientManager) ProducerChannels(group string) []ClientChannel {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []ClientChannel
	for _, c := range m.producers[group] {
		out = append(out, *c)
	}
	return out
}

// ProducerChannelByClientID finds a live producer connection of a client
// (any group), the target of request/reply pushes.
func (m *ClientManager) ProducerChannelByClientID(clientID string) (ClientChannel, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, p := range m.producers {
		for _, c := range p {
			if c.ClientID == clientID && c.Conn != nil {
				return *c, true
			}
		}
	}
	return ClientChannel{}, false
}

// ProducerGroups lists the groups with live producers.
func (m *ClientManager) ProducerGroups() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Sorted(maps.Keys(m.producers))
}
