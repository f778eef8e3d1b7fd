package proxy

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/lite"
	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	pb "github.com/apogeemq/apogee/internal/rmqpb"
)

// Lite topics on the gRPC endpoint (docs/priority-and-lite.md).
//
// A LitePushConsumer binds one LITE parent topic and subscribes lite topics
// at run time with SyncLiteSubscription. As RocketMQ's proxy does, the
// endpoint forwards each change to the parent's brokers
// (LITE_SUBSCRIPTION_CTL, under the client's id), which hold the
// subscriptions, and a ReceiveMessage is one POP_LITE_MESSAGE to the
// broker the client names: the broker pops every subscribed lite topic in
// FIFO mode and holds the request until one has a message or the polling
// time ends. The endpoint keeps its own copy of each client's set (a
// session: memory, dropped when the client goes, then COMPLETE_REMOVE is
// forwarded) to enforce the per-client quota. Acks, changes and
// dead-letter forwards name the lite topic (lite_topic fields) and go to
// its queue. A broker's NOTIFY_UNSUBSCRIBE_LITE (the lite topic expired, or
// another client of an exclusive group took it) drops the lite topic from
// the session and reaches the client as NotifyUnsubscribeLiteCommand on its
// Telemetry stream.

const (
	// defaultLiteClientQuota is a client's lite subscription quota when its
	// group has no lite.sub.client.quota attribute (RocketMQ's default).
	defaultLiteClientQuota = 2000
	attrLiteClientQuota    = "lite.sub.client.quota"
	// defaultMaxLiteSubscriptions bounds the endpoint's lite subscriptions
	// over all clients when Config.MaxLiteSubscriptionCount is 0: the
	// broker's maxLiteSubscriptionCount default (100,000), which each
	// broker enforces again on LITE_SUBSCRIPTION_CTL.
	defaultMaxLiteSubscriptions = 100_000
	// maxLiteTopicSize is the Subscription.max_lite_topic_size settings
	// answer (the reference proxy's maxLiteTopicSize).
	maxLiteTopicSize = 64
)

// liteSession is one client's lite subscriptions.
type liteSession struct {
	group, parent string
	topics        map[string]bool // subscribed lite topics
	order         []string        // topics in subscription order
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

// drop forgets a client's session (the client went away) and returns what
// it bound.
func (ls *liteSessions) drop(id string) (group, parent string, ok bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	s := ls.sessions[id]
	if s == nil {
		return "", "", false
	}
	ls.total -= len(s.topics)
	delete(ls.sessions, id)
	return s.group, s.parent, true
}

// forget removes one lite topic from the client's session (the broker
// said the client lost it).
func (ls *liteSessions) forget(id, name string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if s := ls.sessions[id]; s != nil {
		if _, ok := s.topics[name]; ok {
			s.remove(name)
			ls.total--
		}
	}
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

	names := req.GetLiteTopicSet()
	action := req.GetAction()
	ls := svc.lite
	// apply checks the quotas and, with commit, changes the session; it
	// runs once before the brokers are told (nothing changes on a refusal)
	// and once after.
	apply := func(commit bool) error {
		ls.mu.Lock()
		defer ls.mu.Unlock()
		s := ls.sessions[id]
		if s == nil || s.group != group || s.parent != topic {
			if !commit {
				s = &liteSession{group: group, parent: topic, topics: map[string]bool{}}
			} else {
				if s != nil {
					ls.total -= len(s.topics)
				}
				s = &liteSession{group: group, parent: topic, topics: map[string]bool{}}
				ls.sessions[id] = s
			}
		}
		switch action {
		case pb.LiteSubscriptionAction_PARTIAL_ADD, pb.LiteSubscriptionAction_COMPLETE_ADD:
			want := map[string]bool{}
			if action == pb.LiteSubscriptionAction_PARTIAL_ADD {
				for n := range s.topics {
					want[n] = true
				}
			}
			for _, n := range names {
				want[n] = true
			}
			if quota >= 0 && int64(len(want)) > quota {
				return errStatus(pb.Code_LITE_SUBSCRIPTION_QUOTA_EXCEEDED, "%d lite subscriptions exceed the client quota %d of group %s", len(want), quota, group)
			}
			if ls.total-len(s.topics)+len(want) > maxTotal {
				return errStatus(pb.Code_LITE_SUBSCRIPTION_QUOTA_EXCEEDED, "lite subscriptions exceed maxLiteSubscriptionCount %d", maxTotal)
			}
			if !commit {
				return nil
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
			if !commit {
				return nil
			}
			for _, n := range names {
				if _, ok := s.topics[n]; ok {
					s.remove(n)
					ls.total--
				}
			}
		case pb.LiteSubscriptionAction_COMPLETE_REMOVE:
			if !commit {
				return nil
			}
			ls.total -= len(s.topics)
			s.topics, s.order = map[string]bool{}, nil
		default:
			return errStatus(pb.Code_BAD_REQUEST, "unknown lite subscription action %d", action)
		}
		return nil
	}
	if err := apply(false); err != nil {
		return fail(err)
	}
	dto := protocol.LiteSubscriptionDTO{Action: action.String(), ClientID: id, Group: group, Topic: topic,
		LiteTopicSet: names, OffsetOption: liteOffsetOption(req.GetOffsetOption()), Version: req.GetVersion()}
	if err := svc.liteCtl(cctx, r, dto); err != nil {
		return fail(err)
	}
	if err := apply(true); err != nil {
		return fail(err)
	}
	return &pb.SyncLiteSubscriptionResponse{Status: okStatus()}, nil
}

// isLiteConsumer reports whether the client's settings say it is a lite
// push or simple consumer.
func (svc *service) isLiteConsumer(id string) bool {
	t := svc.srv.clients.settings(id).GetClientType()
	return t == pb.ClientType_LITE_PUSH_CONSUMER || t == pb.ClientType_LITE_SIMPLE_CONSUMER
}

// liteReceive is ReceiveMessage for a lite consumer: one POP_LITE_MESSAGE
// on the receive's broker, which pops the client's subscribed lite topics
// in FIFO mode and long-polls up to pr.poll.
func (svc *service) liteReceive(ctx context.Context, id string, pr *receive) ([]*pb.Message, *pb.Status) {
	h := protocol.PopLiteMessageRequestHeader{ClientID: id, ConsumerGroup: pr.group, Topic: pr.topic, MaxMsgNum: pr.batch,
		InvisibleTime: pr.invisible.Milliseconds(), PollTime: pr.poll.Milliseconds(), BornTime: time.Now().UnixMilli(),
		AttemptID: pr.attemptID}
	resp, err := svc.srv.rc.InvokeSync(ctx, pr.broker.addr, protocol.NewRequest(protocol.PopLiteMessage, protocol.EncodeHeader(&h, false), nil))
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return nil, statusf(pb.Code_MESSAGE_NOT_FOUND, "client is gone")
		}
		return nil, toStatus(err)
	}
	switch protocol.ResponseCode(resp.Code) {
	case protocol.Success:
	case protocol.PollingTimeout, protocol.NoMessage, protocol.PullNotFound:
		return nil, statusf(pb.Code_MESSAGE_NOT_FOUND, "no new message")
	case protocol.PollingFull:
		return nil, statusf(pb.Code_TOO_MANY_REQUESTS, "polling full")
	default:
		return nil, brokerStatus(protocol.ResponseCode(resp.Code), resp.Remark)
	}
	var rh protocol.PopLiteMessageResponseHeader
	if err := protocol.DecodeHeader(resp.ExtFields, &rh, false); err != nil {
		return nil, statusf(pb.Code_INTERNAL_SERVER_ERROR, "pop lite response header: %v", err)
	}
	exts, err := message.DecodeStoredAll(resp.Body, message.DecodeOptions{Decompress: true})
	if err != nil {
		return nil, statusf(pb.Code_INTERNAL_SERVER_ERROR, "pop lite response body: %v", err)
	}
	out := make([]*pb.Message, 0, len(exts))
	for _, m := range exts {
		parent, name, ok := lite.SplitQueueName(m.Topic)
		if !ok || parent != pr.topic {
			svc.srv.logger.Warn("grpc: lite pop returned a message of another topic", "topic", m.Topic, "parent", pr.topic)
			continue
		}
		// One pop reads many queues: each message's handle is its own
		// queue and offset with the pop's time (an orderly handle).
		handle := protocol.ReceiptHandle{CkQueueOffset: m.QueueOffset, PopTime: rh.PopTime, InvisibleTime: rh.InvisibleTime,
			ReviveQueueID: rh.ReviveQid, TopicType: protocol.PopTopicTypeOf(m.Topic), BrokerName: pr.broker.name,
			QueueID: m.QueueID, QueueOffset: m.QueueOffset, CommitLogOffset: m.CommitLogOffset}
		pm := deliveredMessage(m, handle.String())
		pm.Topic = &pb.Resource{Name: parent, ResourceNamespace: pm.GetTopic().GetResourceNamespace()}
		pm.SystemProperties.LiteTopic = &name
		pm.SystemProperties.MessageType = pb.MessageType_LITE
		out = append(out, pm)
	}
	return out, okStatus()
}

// liteCtl forwards one subscription change to every readable broker of the
// parent (LITE_SUBSCRIPTION_CTL). The first refusal is returned.
func (svc *service) liteCtl(ctx context.Context, r *topicRoute, dto protocol.LiteSubscriptionDTO) error {
	body, err := protocol.MarshalJSON(protocol.LiteSubscriptionCtlRequestBody{SubscriptionSet: []protocol.LiteSubscriptionDTO{dto}})
	if err != nil {
		return err
	}
	for _, b := range r.brokers {
		if !protocol.PermReadable(b.perm) {
			continue
		}
		resp, err := svc.srv.rc.InvokeSync(ctx, b.addr, protocol.NewRequest(protocol.LiteSubscriptionCtl, nil, body))
		if err != nil {
			return err
		}
		switch protocol.ResponseCode(resp.Code) {
		case protocol.Success:
		case protocol.LiteSubscriptionQuotaExceeded:
			return errStatus(pb.Code_LITE_SUBSCRIPTION_QUOTA_EXCEEDED, "%s", resp.Remark)
		case protocol.IllegalOperation:
			return errStatus(pb.Code_FORBIDDEN, "%s", resp.Remark)
		default:
			st := brokerStatus(protocol.ResponseCode(resp.Code), resp.Remark)
			return errStatus(st.Code, "%s", st.Message)
		}
	}
	return nil
}

// liteOffsetOption converts the request's offset option (nil: none).
func liteOffsetOption(o *pb.OffsetOption) *protocol.LiteOffsetOption {
	switch v := o.GetOffsetType().(type) {
	case *pb.OffsetOption_Policy_:
		return &protocol.LiteOffsetOption{Type: protocol.LiteOffsetPolicy, Value: int64(v.Policy)}
	case *pb.OffsetOption_Offset:
		return &protocol.LiteOffsetOption{Type: protocol.LiteOffsetOffset, Value: v.Offset}
	case *pb.OffsetOption_TailN:
		return &protocol.LiteOffsetOption{Type: protocol.LiteOffsetTailN, Value: v.TailN}
	case *pb.OffsetOption_Timestamp:
		return &protocol.LiteOffsetOption{Type: protocol.LiteOffsetTimestamp, Value: v.Timestamp}
	}
	return nil
}

// processNotifyUnsubscribeLite serves a broker's NOTIFY_UNSUBSCRIBE_LITE
// (200073, oneway): the client lost the lite topic; it leaves the session
// and the client is told.
func (svc *service) processNotifyUnsubscribeLite(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.NotifyUnsubscribeLiteRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	svc.lite.forget(h.ClientID, h.LiteTopic)
	svc.notifyUnsubscribeLite(h.ClientID, h.LiteTopic)
	return nil, nil
}

// liteGone forwards COMPLETE_REMOVE for a client that went away, in the
// background (bounded by brokerCallTimeout).
func (svc *service) liteGone(id, group, parent string) {
	svc.srv.group.Go("lite-gone", func(ctx context.Context) {
		cctx, cancel := context.WithTimeout(ctx, brokerCallTimeout)
		defer cancel()
		r, err := svc.srv.backend.route(cctx, parent)
		if err != nil {
			return
		}
		dto := protocol.LiteSubscriptionDTO{Action: protocol.LiteActionCompleteRemove, ClientID: id, Group: group, Topic: parent}
		if err := svc.liteCtl(cctx, r, dto); err != nil {
			svc.srv.logger.Debug("grpc: lite complete remove", "clientId", id, "err", err)
		}
	})
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
