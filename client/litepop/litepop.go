// Package litepop consumes RocketMQ 5.5 lite topics over remoting, the way
// RocketMQ's proxy does for its gRPC LitePushConsumers: the consumer
// registers its lite subscriptions with a broker under its client id
// (LITE_SUBSCRIPTION_CTL) and one POP_LITE_MESSAGE returns messages of all
// of them, each lite topic in order (docs/priority-and-lite.md). Messages
// are acked with ACK_MESSAGE on their lite topic's queue.
//
// A Consumer talks to one broker (lite topics live on the broker their
// sends reached). The broker keeps the subscriptions as a session of the
// connection; call Sync periodically (RocketMQ's clients do every 30 s)
// so that a reconnected consumer gets them back. OnUnsubscribe reports
// the broker's NOTIFY_UNSUBSCRIBE_LITE: the lite topic expired, or another
// client of an exclusive group took it; the consumer drops it from its set.
package litepop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/lite"
	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// Config names the consumer.
type Config struct {
	BrokerAddr string // the broker's remoting address, host:port
	BrokerName string // for receipt handles ("broker-a"); any name the broker accepts
	ClientID   string // unique per consumer instance
	Group      string // consumer group
	Topic      string // the LITE parent topic
	Logger     *slog.Logger
}

// OffsetOption is where a new subscription starts (RocketMQ's
// OffsetOption); nil keeps the group's position.
type OffsetOption = protocol.LiteOffsetOption

// Offset options.
var (
	FromMin = &OffsetOption{Type: protocol.LiteOffsetPolicy, Value: protocol.LiteOffsetPolicyMin}
	FromMax = &OffsetOption{Type: protocol.LiteOffsetPolicy, Value: protocol.LiteOffsetPolicyMax}
)

// FromOffset starts at offset; FromTail rewinds n messages from the
// group's current position.
func FromOffset(offset int64) *OffsetOption {
	return &OffsetOption{Type: protocol.LiteOffsetOffset, Value: offset}
}

// FromTail rewinds n messages from the group's current position.
func FromTail(n int64) *OffsetOption { return &OffsetOption{Type: protocol.LiteOffsetTailN, Value: n} }

// Message is one popped message.
type Message struct {
	LiteTopic       string
	Body            []byte
	Properties      map[string]string
	MsgID           string
	QueueOffset     int64
	DeliveryAttempt int32 // 1 for a first delivery
	queue           string
	handle          protocol.ReceiptHandle
}

// Consumer is a remoting lite consumer. Safe for concurrent use.
type Consumer struct {
	cfg Config
	rc  *remoting.Client

	mu      sync.Mutex
	set     map[string]bool // subscribed lite topics; guarded by mu
	onUnsub func(liteTopic string)
}

// New returns a consumer; Start connects it.
func New(cfg Config) (*Consumer, error) {
	if cfg.BrokerAddr == "" || cfg.ClientID == "" || cfg.Group == "" || cfg.Topic == "" {
		return nil, errors.New("litepop: broker address, client id, group and topic are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.BrokerName == "" {
		cfg.BrokerName = "broker"
	}
	c := &Consumer{cfg: cfg, set: map[string]bool{}}
	c.rc = remoting.NewClient(remoting.ClientConfig{Logger: cfg.Logger})
	c.rc.RegisterProcessor(protocol.NotifyUnsubscribeLite, c.processNotify)
	return c, nil
}

// OnUnsubscribe sets the function told when the broker drops one of the
// consumer's lite topics. Set it before Start.
func (c *Consumer) OnUnsubscribe(f func(liteTopic string)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onUnsub = f
}

// Start starts the remoting client.
func (c *Consumer) Start() error { return c.rc.Start() }

// Close removes the consumer's subscriptions (COMPLETE_REMOVE, best effort)
// and closes the connection.
func (c *Consumer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_ = c.ctl(ctx, protocol.LiteActionCompleteRemove, nil, nil)
	return c.rc.Close()
}

// LiteTopics returns the subscribed lite topics, sorted.
func (c *Consumer) LiteTopics() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.set))
	for n := range c.set {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Subscribe adds lite topics (PARTIAL_ADD), starting where opt says (nil:
// the group's position, or the queue's start for a group new to it).
func (c *Consumer) Subscribe(ctx context.Context, opt *OffsetOption, liteTopics ...string) error {
	for _, n := range liteTopics {
		if err := lite.ValidateName(n); err != nil {
			return fmt.Errorf("litepop: %w", err)
		}
	}
	if err := c.ctl(ctx, protocol.LiteActionPartialAdd, liteTopics, opt); err != nil {
		return err
	}
	c.mu.Lock()
	for _, n := range liteTopics {
		c.set[n] = true
	}
	c.mu.Unlock()
	return nil
}

// Unsubscribe removes lite topics (PARTIAL_REMOVE).
func (c *Consumer) Unsubscribe(ctx context.Context, liteTopics ...string) error {
	if err := c.ctl(ctx, protocol.LiteActionPartialRemove, liteTopics, nil); err != nil {
		return err
	}
	c.mu.Lock()
	for _, n := range liteTopics {
		delete(c.set, n)
	}
	c.mu.Unlock()
	return nil
}

// SubscribePatterns is the subscription of a consumer of a wildcard group
// (lite.sub.wildcard): it consumes the lite topics matching one of the
// patterns ("__"-separated segments, "*" one segment, "**" the rest), or
// every lite topic of the parent with none (COMPLETE_ADD).
func (c *Consumer) SubscribePatterns(ctx context.Context, patterns ...string) error {
	return c.ctl(ctx, protocol.LiteActionCompleteAdd, patterns, nil)
}

// Sync sends the whole set (COMPLETE_ADD).
func (c *Consumer) Sync(ctx context.Context) error {
	return c.ctl(ctx, protocol.LiteActionCompleteAdd, c.LiteTopics(), nil)
}

func (c *Consumer) ctl(ctx context.Context, action string, names []string, opt *OffsetOption) error {
	body, err := protocol.MarshalJSON(protocol.LiteSubscriptionCtlRequestBody{SubscriptionSet: []protocol.LiteSubscriptionDTO{{
		Action: action, ClientID: c.cfg.ClientID, Group: c.cfg.Group, Topic: c.cfg.Topic, LiteTopicSet: names,
		OffsetOption: opt, Version: time.Now().UnixMilli()}}})
	if err != nil {
		return err
	}
	_, err = c.invoke(ctx, protocol.NewRequest(protocol.LiteSubscriptionCtl, nil, body))
	return err
}

func (c *Consumer) invoke(ctx context.Context, req *protocol.Command) (*protocol.Command, error) {
	resp, err := c.rc.InvokeSync(ctx, c.cfg.BrokerAddr, req)
	if err != nil {
		return nil, fmt.Errorf("litepop: %s to %s: %w", protocol.RequestCode(req.Code), c.cfg.BrokerAddr, err)
	}
	if resp.Code != int32(protocol.Success) {
		return resp, &client.BrokerError{Addr: c.cfg.BrokerAddr, Topic: c.cfg.Topic, Code: resp.Code, Remark: resp.Remark}
	}
	return resp, nil
}

// Receive pops up to max messages (at most 32) of the subscribed lite
// topics, waiting up to poll for one to arrive; each stays invisible to
// the group for invisible unless acked. None arrived: nil, nil.
func (c *Consumer) Receive(ctx context.Context, max int, invisible, poll time.Duration) ([]*Message, error) {
	h := protocol.PopLiteMessageRequestHeader{ClientID: c.cfg.ClientID, ConsumerGroup: c.cfg.Group, Topic: c.cfg.Topic,
		MaxMsgNum: int32(max), InvisibleTime: invisible.Milliseconds(), PollTime: poll.Milliseconds(), BornTime: time.Now().UnixMilli()}
	resp, err := c.invoke(ctx, protocol.NewRequest(protocol.PopLiteMessage, protocol.EncodeHeader(&h, false), nil))
	if err != nil {
		var be *client.BrokerError
		if errors.As(err, &be) && protocol.ResponseCode(be.Code) == protocol.PollingTimeout {
			return nil, nil
		}
		return nil, err
	}
	var rh protocol.PopLiteMessageResponseHeader
	if err := protocol.DecodeHeader(resp.ExtFields, &rh, false); err != nil {
		return nil, fmt.Errorf("litepop: response header: %w", err)
	}
	exts, err := message.DecodeStoredAll(resp.Body, message.DecodeOptions{Decompress: true})
	if err != nil {
		return nil, fmt.Errorf("litepop: response body: %w", err)
	}
	out := make([]*Message, 0, len(exts))
	for _, m := range exts {
		_, name, ok := lite.SplitQueueName(m.Topic)
		if !ok {
			continue
		}
		out = append(out, &Message{LiteTopic: name, Body: m.Body, Properties: m.Properties, MsgID: m.MsgID(),
			QueueOffset: m.QueueOffset, DeliveryAttempt: m.ReconsumeTimes + 1, queue: m.Topic,
			handle: protocol.ReceiptHandle{CkQueueOffset: m.QueueOffset, PopTime: rh.PopTime, InvisibleTime: rh.InvisibleTime,
				ReviveQueueID: rh.ReviveQid, BrokerName: c.cfg.BrokerName, QueueID: m.QueueID, QueueOffset: m.QueueOffset}})
	}
	return out, nil
}

// Ack acknowledges a received message (ACK_MESSAGE on its lite topic's
// queue); its lite topic's next messages can then be popped.
func (c *Consumer) Ack(ctx context.Context, m *Message) error {
	h := protocol.AckMessageRequestHeader{ConsumerGroup: c.cfg.Group, Topic: m.queue, QueueID: m.handle.QueueID,
		ExtraInfo: m.handle.ExtraInfo(), Offset: m.QueueOffset}
	_, err := c.invoke(ctx, protocol.NewRequest(protocol.AckMessage, protocol.EncodeHeader(&h, false), nil))
	return err
}

// processNotify handles NOTIFY_UNSUBSCRIBE_LITE.
func (c *Consumer) processNotify(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var h protocol.NotifyUnsubscribeLiteRequestHeader
	if err := protocol.DecodeHeader(req.ExtFields, &h, false); err != nil {
		return nil, err
	}
	if h.ClientID != c.cfg.ClientID {
		return nil, nil
	}
	c.mu.Lock()
	delete(c.set, h.LiteTopic)
	f := c.onUnsub
	c.mu.Unlock()
	if f != nil {
		f(h.LiteTopic)
	}
	return nil, nil
}
