package proxy

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/lite"
	"github.com/apogeemq/apogee/internal/protocol"
	pb "github.com/apogeemq/apogee/internal/rmqpb"
)

// Lite topics on the gRPC endpoint (docs/priority-and-lite.md).
//
// A LitePushConsumer binds one LITE parent topic and subscribes lite topics
// at run time with SyncLiteSubscription; the subscriptions are a session
// of the client (memory only, dropped when the client goes). Its
// ReceiveMessage pops each subscribed lite topic's queue on the broker in
// FIFO mode, starting where the previous receive stopped, until the batch is
// full; with nothing found it polls again, backing off to
// liteMaxPollInterval, until the long-polling time ends. Acks, changes and
// dead-letter forwards name the lite topic (lite_topic fields) and go to its
// queue. A pop answering TOPIC_NOT_EXIST for a lite topic that existed means
// the broker expired it: the subscription is dropped and the client is told
// with NotifyUnsubscribeLiteCommand over its Telemetry stream.

const (
	// defaultLiteClientQuota is a client's lite subscription quota when its
	// group has no lite.sub.client.quota attribute (RocketMQ's default).
	defaultLiteClientQuota = 2000
	attrLiteClientQuota    = "lite.sub.client.quota"
	// defaultMaxLiteSubscriptions bounds the endpoint's lite subscriptions
	// over all clients when Config.MaxLiteSubscriptionCount is 0.
	defaultMaxLiteSubscriptions = 1000000
	// maxLiteTopicSize is the Subscription.max_lite_topic_size settings
	// answer (the reference proxy's maxLiteTopicSize).
	maxLiteTopicSize    = 64
	liteMinPollInterval = 20 * time.Millisecond
	liteMaxPollInterval = 500 * time.Millisecond
)

// liteSession is one client's lite subscriptions.
type liteSession struct {
	group, parent string
	topics        map[string]bool // lite topic -> seen (its queue existed at a pop)
	order         []string        // topics in subscription order, for round robin
	next          int             // where the next receive starts in order
}

func (s *liteSession) add(name string) {
	if _, ok := s.topics[name]; !ok {
		s.topics[name] = false
		s.order = append(s.order, name)
	}
}

func (s *liteSession) remove(name string) {
	if _, ok := s.topics[name]; !ok {
		return
	}
	delete(s.topics, name)
	for i, n := range s.order {
		if n == name {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
}

// liteSessions holds every client's session. Safe for concurrent use.
type liteSessions struct {
	mu       sync.Mutex
	sessions map[string]*liteSession // client id -> session; guarded by mu
	total    int                     // subscriptions over all sessions; guarded by mu
}

func newLiteSessions() *liteSessions { return &liteSessions{sessions: map[string]*liteSession{}} }

// drop forgets a client's session (the client went away).
func (ls *liteSessions) drop(id string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if s := ls.sessions[id]; s != nil {
		ls.total -= len(s.topics)
		delete(ls.sessions, id)
	}
}

// snapshot returns the client's group, parent and topics from its round
// robin position on, and advances the position.
func (ls *liteSessions) snapshot(id string) (group, parent string, topics []string, ok bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	s := ls.sessions[id]
	if s == nil || len(s.order) == 0 {
		return "", "", nil, s != nil
	}
	n := len(s.order)
	start := s.next % n
	s.next = start + 1
	topics = make([]string, 0, n)
	topics = append(topics, s.order[start:]...)
	topics = append(topics, s.order[:start]...)
	return s.group, s.parent, topics, true
}

// observe records what a pop of a subscribed lite topic said: exists marks
// it seen; !exists for a seen topic removes it and returns true (the broker
// expired it; the client must be told).
func (ls *liteSessions) observe(id, name string, exists bool) (expired bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	s := ls.sessions[id]
	if s == nil {
		return false
	}
	seen, ok := s.topics[name]
	switch {
	case !ok:
		return false
	case exists:
		s.topics[name] = true
		return false
	case seen:
		s.remove(name)
		ls.total--
		return true
	}
	return false
}

// SyncLiteSubscription changes the client's lite subscriptions (v2.1.0):
// PARTIAL_ADD / PARTIAL_REMOVE a set, COMPLETE_ADD replaces the whole set,
// COMPLETE_REMOVE clears it. The topic must be a LITE parent; each name a
// valid lite topic (ILLEGAL_LITE_TOPIC); an add past the group's
// lite.sub.client.quota or the endpoint's maxLiteSubscriptionCount is
// refused whole with LITE_SUBSCRIPTION_QUOTA_EXCEEDED.
func (svc *service) SyncLiteSubscription(ctx context.Context, req *pb.SyncLiteSubscriptionRequest) (*pb.SyncLiteSubscriptionResponse, error) {
	fail := func(err error) (*pb.SyncLiteSubscriptionResponse, error) {
		return &pb.SyncLiteSubscriptionResponse{Status: toStatus(err)}, nil
	}
	id, err := svc.begin(ctx)
	if err != nil {
		return fail(err)
	}
	topic, err := checkTopic(req.GetTopic())
	if err != nil {
		return fail(err)
	}
	group, err := checkGroup(req.GetGroup())
	if err != nil {
		return fail(err)
	}
	for _, n := range req.GetLiteTopicSet() {
		if err := lite.ValidateName(n); err != nil {
			return fail(errStatus(pb.Code_ILLEGAL_LITE_TOPIC, "%s", err))
		}
	}
	cctx, cancel := withTimeout(ctx, brokerCallTimeout)
	defer cancel()
	r, err := svc.srv.backend.route(cctx, topic)
	if err != nil {
		return fail(err)
	}
	if !strings.EqualFold(r.messageType, "LITE") {
		return fail(errStatus(pb.Code_ILLEGAL_TOPIC, "topic %s is not a LITE topic (message.type=%s)", topic, r.messageType))
	}
	quota := int64(defaultLiteClientQuota)
	if q, err := strconv.ParseInt(svc.groupConfig(cctx, group, nil).Attributes[attrLiteClientQuota], 10, 64); err == nil {
		quota = q
	}
	maxTotal := svc.srv.cfg.MaxLiteSubscriptionCount
	if maxTotal <= 0 {
		maxTotal = defaultMaxLiteSubscriptions
	}

	ls := svc.lite
	ls.mu.Lock()
	defer ls.mu.Unlock()
	s := ls.sessions[id]
	if s == nil || s.group != group || s.parent != topic {
		if s != nil {
			ls.total -= len(s.topics)
		}
		s = &liteSession{group: group, parent: topic, topics: map[string]bool{}}
		ls.sessions[id] = s
	}
	names := req.GetLiteTopicSet()
	switch req.GetAction() {
	case pb.LiteSubscriptionAction_PARTIAL_ADD, pb.LiteSubscriptionAction_COMPLETE_ADD:
		want := map[string]bool{}
		if req.GetAction() == pb.LiteSubscriptionAction_PARTIAL_ADD {
			for n := range s.topics {
				want[n] = true
			}
		}
		for _, n := range names {
			want[n] = true
		}
		if quota >= 0 && int64(len(want)) > quota {
			return fail(errStatus(pb.Code_LITE_SUBSCRIPTION_QUOTA_EXCEEDED, "%d lite subscriptions exceed the client quota %d of group %s", len(want), quota, group))
		}
		if ls.total-len(s.topics)+len(want) > maxTotal {
			return fail(errStatus(pb.Code_LITE_SUBSCRIPTION_QUOTA_EXCEEDED, "lite subscriptions exceed maxLiteSubscriptionCount %d", maxTotal))
		}
		ls.total -= len(s.topics)
		for n := range s.topics {
			if !want[n] {
				s.remove(n)
			}
		}
		for _, n := range names {
			s.add(n)
		}
		ls.total += len(s.topics)
	case pb.LiteSubscriptionAction_PARTIAL_REMOVE:
		for _, n := range names {
			if _, ok := s.topics[n]; ok {
				s.remove(n)
				ls.total--
			}
		}
	case pb.LiteSubscriptionAction_COMPLETE_REMOVE:
		ls.total -= len(s.topics)
		s.topics, s.order = map[string]bool{}, nil
	default:
		return fail(errStatus(pb.Code_BAD_REQUEST, "unknown lite subscription action %d", req.GetAction()))
	}
	return &pb.SyncLiteSubscriptionResponse{Status: okStatus()}, nil
}

// isLiteConsumer reports whether the client's settings say it is a lite
// push or simple consumer.
func (svc *service) isLiteConsumer(id string) bool {
	t := svc.srv.clients.settings(id).GetClientType()
	return t == pb.ClientType_LITE_PUSH_CONSUMER || t == pb.ClientType_LITE_SIMPLE_CONSUMER
}

// liteReceive is ReceiveMessage for a lite consumer: pops of its subscribed
// lite topics' queues (FIFO), polling until pr.poll ends when none has a
// message.
func (svc *service) liteReceive(ctx context.Context, id string, pr *receive) ([]*pb.Message, *pb.Status) {
	deadline := time.Now().Add(pr.poll)
	wait := liteMinPollInterval
	for {
		msgs, st := svc.liteRound(ctx, id, pr)
		if st.Code != pb.Code_OK || len(msgs) > 0 {
			return msgs, st
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, statusf(pb.Code_MESSAGE_NOT_FOUND, "no new message")
		}
		t := time.NewTimer(min(wait, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, statusf(pb.Code_MESSAGE_NOT_FOUND, "client is gone")
		case <-t.C:
		}
		wait = min(wait*2, liteMaxPollInterval)
	}
}

// liteRound pops each subscribed lite topic once (no polling) until the
// batch is full.
func (svc *service) liteRound(ctx context.Context, id string, pr *receive) ([]*pb.Message, *pb.Status) {
	group, parent, topics, ok := svc.lite.snapshot(id)
	if !ok || group != pr.group || parent != pr.topic {
		return nil, okStatus() // nothing subscribed (yet): poll
	}
	var out []*pb.Message
	for _, name := range topics {
		if int32(len(out)) >= pr.batch {
			break
		}
		one := *pr
		one.topic = lite.QueueName(parent, name)
		one.fifo = true
		one.poll = 0
		one.batch = pr.batch - int32(len(out))
		msgs, st := svc.pop(ctx, &one)
		switch st.Code {
		case pb.Code_OK, pb.Code_MESSAGE_NOT_FOUND:
			svc.lite.observe(id, name, true)
		case pb.Code_TOPIC_NOT_FOUND:
			if svc.lite.observe(id, name, false) {
				svc.notifyUnsubscribeLite(id, name)
			}
			continue
		default:
			if len(out) > 0 {
				return out, okStatus()
			}
			return nil, st
		}
		for _, m := range msgs {
			m.Topic = &pb.Resource{Name: parent, ResourceNamespace: m.GetTopic().GetResourceNamespace()}
			n := name
			m.SystemProperties.LiteTopic = &n
			m.SystemProperties.MessageType = pb.MessageType_LITE
		}
		out = append(out, msgs...)
	}
	return out, okStatus()
}

// notifyUnsubscribeLite tells the client its lite topic is gone.
func (svc *service) notifyUnsubscribeLite(id, name string) {
	cmd := &pb.TelemetryCommand{Command: &pb.TelemetryCommand_NotifyUnsubscribeLiteCommand{
		NotifyUnsubscribeLiteCommand: &pb.NotifyUnsubscribeLiteCommand{LiteTopic: name}}}
	for _, ts := range svc.srv.clients.streamsOf(id) {
		if err := ts.send(cmd); err == nil {
			svc.srv.logger.Debug("grpc: lite topic expired; client told", "clientId", id, "liteTopic", name)
			return
		}
	}
}

// streamsOf returns the client's open Telemetry streams.
func (r *registry) streamsOf(id string) []*telemetryStream {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.clients[id]
	if c == nil {
		return nil
	}
	out := make([]*telemetryStream, 0, len(c.streams))
	for ts := range c.streams {
		out = append(out, ts)
	}
	return out
}

// liteQueueTopic is the broker topic an ack, change or forward names: the
// lite topic's queue when the request names a lite topic.
func liteQueueTopic(topic, liteTopic string) string {
	if liteTopic == "" || lite.ValidateName(liteTopic) != nil {
		return topic
	}
	return lite.QueueName(topic, liteTopic)
}

// liteSettings completes a lite consumer's settings reply: FIFO (each lite
// topic is consumed in order), its lite subscription quota (the group's
// lite.sub.client.quota) and max_lite_topic_size.
func liteSettings(st *pb.Settings, sub *pb.Subscription, attrs map[string]string) {
	t := st.GetClientType()
	if t != pb.ClientType_LITE_PUSH_CONSUMER && t != pb.ClientType_LITE_SIMPLE_CONSUMER {
		return
	}
	fifo := true
	sub.Fifo = &fifo
	quota := int32(defaultLiteClientQuota)
	if q, err := strconv.ParseInt(attrs[attrLiteClientQuota], 10, 32); err == nil {
		quota = int32(q)
	}
	size := int32(maxLiteTopicSize)
	sub.LiteSubscriptionQuota, sub.MaxLiteTopicSize = &quota, &size
}

// liteSendStatus maps the broker's lite topic quota refusal to
// LITE_TOPIC_QUOTA_EXCEEDED.
func liteSendStatus(resp *protocol.Command, st *pb.Status) *pb.Status {
	if protocol.ResponseCode(resp.Code) == protocol.SystemError && strings.HasPrefix(resp.Remark, "[LMQ_CONSUME_QUEUE_NUM_EXCEEDED]") {
		return statusf(pb.Code_LITE_TOPIC_QUOTA_EXCEEDED, "%s", resp.Remark)
	}
	return st
}
