package broker

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/lite"
	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/store"
)

// Lite topics (RocketMQ 5.5, docs/priority-and-lite.md).
//
// A parent topic typed message.type=LITE holds lite topics. A send to it
// names one in the __LITE_TOPIC property; the broker stores the message in
// the store topic lite.QueueName(parent, name) ("%LMQ%$parent$name"),
// queue 0, which RocketMQ calls a light message queue. Nothing else is
// written: no topics.json entry, no file of our own. The lite topic's
// consume queue is created by its first message (a sparse 4 KiB file) and
// is the only trace on disk; liteService.registry, the in-memory index of
// what exists and when it was written, is rebuilt from the store's queues
// at start. Lite topics are not registered with the name server; clients
// route by the parent. Topics.Get answers a synthesized one-queue config
// for an existing lite topic, so POP, ack and change invisible time work on
// it unchanged (the gRPC endpoint pops each subscribed lite topic in FIFO
// mode).
//
// Expiry: a parent's lite.topic.expiration attribute (minutes, -1 = never,
// the default; at most 43200) is the idle time after which a lite topic
// without sends is deleted (its consume queue, consumer offsets and POP
// state). The lite-expire goroutine looks every liteTtlCheckInterval; a
// broker younger than minLiteTTl deletes nothing (RocketMQ's restart
// protection).

// Lite attribute names.
const (
	attrLiteExpiration = "lite.topic.expiration" // topic attribute, minutes
	maxLiteExpiration  = 30 * 24 * 60            // minutes (30 days)
)

// liteQuotaRemark starts the remark of a send refused by the lite topic
// quota (RocketMQ's LMQ_CONSUME_QUEUE_NUM_EXCEEDED put status); the gRPC
// endpoint answers LITE_TOPIC_QUOTA_EXCEEDED for it.
const liteQuotaRemark = "[LMQ_CONSUME_QUEUE_NUM_EXCEEDED]"

// LiteConfig holds the lite-topic keys of broker.conf; Config embeds it.
type LiteConfig struct {
	// MaxLmqConsumeQueueNum is the broker's lite topic quota (RocketMQ's
	// key, default 20000): a send that would create one more is refused.
	MaxLmqConsumeQueueNum int `conf:"maxLmqConsumeQueueNum"`
	// LiteTtlCheckInterval is how often expired lite topics are looked for
	// (ms, default 120000).
	LiteTtlCheckInterval int64 `conf:"liteTtlCheckInterval"`
	// MinLiteTTl is the broker age before which nothing expires, and the
	// least idle time of any expiry (ms, default 900000: 15 minutes).
	MinLiteTTl int64 `conf:"minLiteTTl"`
	// MaxLiteSubscriptionCount bounds the lite subscriptions the gRPC
	// endpoint holds, over all clients (default 100,000; each client is
	// also bounded by its group's lite.sub.client.quota, default 2000).
	MaxLiteSubscriptionCount int `conf:"maxLiteSubscriptionCount"`
	// LiteExpirationUnitMs is the length of one unit of
	// lite.topic.expiration in ms (default 60000, a minute). Apogee's: tests
	// shorten it to see expiry in seconds.
	LiteExpirationUnitMs int64 `conf:"liteExpirationUnitMs"`
	// MaxClientEventCount is a lite client's event queue capacity when its
	// group has no lite.sub.client.max.event.cnt (default 100; lite_events.go).
	MaxClientEventCount int `conf:"maxClientEventCount"`
	// LiteEventCheckInterval is how often clients taken for blocked lose
	// their queued events to other clients (ms, default 10000).
	LiteEventCheckInterval int64 `conf:"liteEventCheckInterval"`
	// LiteEventFullDispatchDelayTime is the delay of a client's full
	// dispatch after its queue was full (ms, default 10000).
	LiteEventFullDispatchDelayTime int64 `conf:"liteEventFullDispatchDelayTime"`
	// LiteEventFullDispatchDelayTimeForWildcardGroup is that delay for a
	// wildcard group none of whose clients could take an event (ms, 10000).
	LiteEventFullDispatchDelayTimeForWildcardGroup int64 `conf:"liteEventFullDispatchDelayTimeForWildcardGroup"`
	// LiteSubscriptionCheckInterval is how often idle lite subscriptions
	// are looked for (ms, default 120000).
	LiteSubscriptionCheckInterval int64 `conf:"liteSubscriptionCheckInterval"`
	// LiteSubscriptionCheckTimeoutMills: a client whose subscriptions no
	// LITE_SUBSCRIPTION_CTL changed for this long loses them (ms, default
	// 180000; clients send their complete set every 30 s).
	LiteSubscriptionCheckTimeoutMills int64 `conf:"liteSubscriptionCheckTimeoutMills"`
}

// DefaultLiteConfig returns the defaults above.
func DefaultLiteConfig() LiteConfig {
	return LiteConfig{MaxLmqConsumeQueueNum: 20000, LiteTtlCheckInterval: 120000, MinLiteTTl: 900000,
		MaxLiteSubscriptionCount: 100000, LiteExpirationUnitMs: 60000,
		MaxClientEventCount: 100, LiteEventCheckInterval: 10000, LiteEventFullDispatchDelayTime: 10000,
		LiteEventFullDispatchDelayTimeForWildcardGroup: 10000, LiteSubscriptionCheckInterval: 120000,
		LiteSubscriptionCheckTimeoutMills: 180000}
}

// liteService owns the lite registry and the expiry loop.
type liteService struct {
	b        *Broker
	registry *lite.Registry
	started  time.Time
	wake     chan struct{} // asks the expiry loop to look now (tests); capacity 1
	// subs is the remoting clients' lite subscriptions (lite_pop.go:
	// LITE_SUBSCRIPTION_CTL, POP_LITE_MESSAGE).
	subs   *lite.Subscriptions
	disp   *liteEvents // lite_events.go: the clients' event queues
	connMu sync.Mutex
	conns  map[string]*remoting.Conn // client id -> its connection, for NOTIFY_UNSUBSCRIBE_LITE; guarded by connMu
}

func newLiteService(b *Broker) *liteService {
	l := &liteService{b: b, registry: lite.NewRegistry(), wake: make(chan struct{}, 1),
		subs: lite.NewSubscriptions(), conns: map[string]*remoting.Conn{}}
	l.disp = newLiteEvents(l)
	return l
}

// isLiteTopic reports whether the topic is typed message.type=LITE.
func isLiteTopic(tc *protocol.TopicConfig) bool {
	return strings.EqualFold(tc.Attributes[attrMessageType], "LITE")
}

// topicConfig is TopicConfigManager's answer for a lite topic's store
// topic: one read-write queue, typed LITE, while the lite topic exists.
func (l *liteService) topicConfig(topic string) (protocol.TopicConfig, bool) {
	if !lite.IsQueueName(topic) || !l.registry.Exists(topic) {
		return protocol.TopicConfig{}, false
	}
	return protocol.TopicConfig{TopicName: topic, ReadQueueNums: 1, WriteQueueNums: 1,
		Perm: protocol.PermRead | protocol.PermWrite, TopicFilterType: protocol.TopicFilterSingleTag,
		Attributes: map[string]string{attrMessageType: "LITE"}}, true
}

// startLite rebuilds the registry from the store's lite queues and starts
// the expiry loop (broker start, after the store). The lite topics count as
// written at start until lite-restore has read each queue's last store
// time (one consume-queue unit and one commit-log read per lite topic, off
// the start path).
func (b *Broker) startLite() {
	l := b.lite
	l.started = b.now()
	at := l.started.UnixMilli()
	// An empty queue is no lite topic. One pass over the store's queues:
	// sorting 10^6 names and looking each up again took most of a restart.
	queues := b.Store.NonEmptyQueues(lite.IsQueueName)
	if n := l.registry.RestoreAt(queues, at); n > 0 {
		b.logger.Info("lite topics restored", "count", n)
		b.goFunc("lite-restore", func() { l.refine(queues, at) })
	}
	b.goFunc("lite-expire", l.expireLoop)
	if b.pop != nil {
		b.Store.AddArrivalNotifier(l.disp.onArrival)
		b.goFunc("lite-events", l.disp.loop)
	}
}

// refine reads the real last write times of the restored lite topics, in
// batches, until done or the broker stops.
func (l *liteService) refine(queues []string, at int64) {
	b := l.b
	t0 := time.Now()
	const batch = 10000
	for from := 0; from < len(queues); from += batch {
		found := make(map[string]int64, batch)
		for _, q := range queues[from:min(from+batch, len(queues))] {
			select {
			case <-b.quit:
				return
			default:
			}
			if ts, err := b.Store.StoreTimeByQueueOffset(q, 0, b.Store.MaxOffsetInQueue(q, 0)-1); err == nil && ts > 0 {
				found[q] = ts
			}
		}
		l.registry.Refine(found, at)
	}
	b.logger.Info("lite topics' last write times read", "count", len(queues), "took", time.Since(t0).Round(time.Millisecond))
}

// sendLite stores a single send to a LITE parent topic in its lite topic's
// queue: the name is the __LITE_TOPIC property (MESSAGE_ILLEGAL when absent
// or invalid); a new lite topic past maxLmqConsumeQueueNum is refused with
// SYSTEM_ERROR and liteQuotaRemark.
func (b *Broker) sendLite(conn sendConn, req *protocol.Command, h *protocol.SendMessageRequestHeader,
	sysFlag int32, start time.Time) (*protocol.Command, error) {
	name, _ := message.LookupProperty(h.Properties, message.PropertyLiteTopic)
	if err := lite.ValidateName(name); err != nil {
		b.stats.sendRejected.Add(1)
		return nil, protocol.Errorf(protocol.MessageIllegal, "%s", err)
	}
	queue, _, err := b.lite.registry.Touch(h.Topic, name, b.now().UnixMilli(), b.cfg.MaxLmqConsumeQueueNum)
	if err != nil {
		b.stats.sendRejected.Add(1)
		return nil, protocol.Errorf(protocol.SystemError, "%slite topic count exceeds maxLmqConsumeQueueNum %d",
			liteQuotaRemark, b.cfg.MaxLmqConsumeQueueNum)
	}
	ext := &message.Ext{
		Message:        message.Message{Topic: queue, Flag: h.Flag, Body: req.Body},
		SysFlag:        sysFlag,
		BornTimestamp:  h.BornTimestamp,
		BornHost:       bornHostOf(conn),
		StoreHost:      b.storeHost,
		ReconsumeTimes: h.ReconsumeTimes,
	}
	b.stats.sendRequests.Add(1)
	tm := b.meters.topic(h.Topic) // the parent: no metric series per lite topic
	start = b.meters.startAt(start)
	done := func(res store.PutResult) {
		b.meters.observeRPC(req.Code, b.writeSendResponse(conn, req, res, 0, "", tm, MessageLite, ""), start)
	}
	if uniq, ok := plainSendProperties(h.Properties); ok { // send_raw.go: stored as sent, no map
		extra := [8]string{
			message.PropertyCluster, b.cfg.BrokerClusterName,
			message.PropertyMsgRegion, b.cfg.RegionID,
			message.PropertyTraceSwitch, strconv.FormatBool(b.cfg.TraceOn),
		}
		pairs := extra[:6]
		if uniq == "" {
			pairs = append(pairs, message.PropertyUniqClientMessageIDKeyidx, b.uniq.Next())
		}
		b.Store.PutMessageRawProperties(ext, h.Properties, pairs, done)
		return nil, nil
	}
	props := message.DecodeProperties(h.Properties)
	delete(props, message.PropertyPopCK)
	if props[message.PropertyUniqClientMessageIDKeyidx] == "" {
		props[message.PropertyUniqClientMessageIDKeyidx] = b.uniq.Next()
	}
	props[message.PropertyCluster] = b.cfg.BrokerClusterName
	props[message.PropertyMsgRegion] = b.cfg.RegionID
	props[message.PropertyTraceSwitch] = strconv.FormatBool(b.cfg.TraceOn)
	ext.Properties = props
	b.Store.PutMessage(ext, done)
	return nil, nil
}

// liteTTL returns a parent's lite topic TTL in ms (<= 0: never expires).
func (l *liteService) liteTTL(parent string) int64 {
	tc, ok := l.b.Topics.Get(parent)
	if !ok {
		return 1 // the parent is gone: its lite topics go too
	}
	m, err := strconv.ParseInt(tc.Attributes[attrLiteExpiration], 10, 64)
	if err != nil || m <= 0 {
		return 0
	}
	return max(min(m, maxLiteExpiration)*l.b.cfg.LiteExpirationUnitMs, l.b.cfg.MinLiteTTl)
}

// expireLoop deletes expired lite topics every liteTtlCheckInterval.
func (l *liteService) expireLoop() {
	b := l.b
	interval := time.Duration(max(b.cfg.LiteTtlCheckInterval, 10)) * time.Millisecond
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-b.quit:
			return
		case <-t.C:
		case <-l.wake:
		}
		l.expireOnce()
		l.dropClosedClients()
	}
}

// expireOnce deletes the lite topics idle past their parent's TTL, at most
// 10,000 per round (the next round continues).
func (l *liteService) expireOnce() int {
	b := l.b
	now := b.now()
	if now.Sub(l.started) < time.Duration(b.cfg.MinLiteTTl)*time.Millisecond {
		return 0
	}
	gone := l.registry.Expire(now.UnixMilli(), l.liteTTL, 10000)
	for _, q := range gone {
		if err := b.Store.DeleteTopics([]string{q}); err != nil {
			b.logger.Warn("lite: delete expired queue", "queue", q, "err", err)
		}
		b.Offsets.RemoveTopic(q)
		for _, ev := range l.subs.Clean(q) {
			l.notifyUnsubscribe(ev)
		}
		if b.pop != nil {
			if _, err := b.pop.state.DropTopic(q); err != nil {
				b.logger.Warn("lite: drop pop state", "queue", q, "err", err)
			}
		}
	}
	if len(gone) > 0 {
		b.logger.Info("lite topics expired", "count", len(gone))
	}
	return len(gone)
}
