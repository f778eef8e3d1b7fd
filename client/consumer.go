package client

// The consumers' design (ownership, goroutines, lock order, invariants,
// file map) is in DESIGN.md.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
)

// Selector filters the messages of a subscription: by tag (the default,
// evaluated by the broker with tag hash codes and again by the client) or
// by an SQL92 expression over message properties (evaluated by the broker
// only, which needs enablePropertyFilter=true).
type Selector struct {
	// SQL92 selects the SQL92 expression type; false means TAG.
	SQL92 bool
	// Expression: "*" or "" for everything, "a || b" for tags, or an SQL92
	// expression such as "a > 5 AND b = 'x'".
	Expression string
}

// TagSelector matches messages whose tag is one of the "||"-separated tags
// of expr; "*" or "" matches everything.
func TagSelector(expr string) Selector { return Selector{Expression: expr} }

// SQL92Selector matches messages whose properties satisfy expr.
func SQL92Selector(expr string) Selector { return Selector{SQL92: true, Expression: expr} }

// subscription is one topic's parsed selector (docs/protocol.md §7.5).
type subscription struct {
	topic   string // wire name
	expr    string
	sql92   bool
	tags    []string
	codes   []int32
	version int64 // ns timestamp, as the Go client sends it
}

func newSubscription(topic string, sel Selector) (*subscription, error) {
	s := &subscription{topic: topic, expr: strings.TrimSpace(sel.Expression), sql92: sel.SQL92, version: time.Now().UnixNano()}
	if s.sql92 {
		if s.expr == "" {
			return nil, fmt.Errorf("client: empty SQL92 expression for topic %s", topic)
		}
		return s, nil
	}
	if s.expr == "" || s.expr == protocol.SubAll {
		s.expr = protocol.SubAll
		return s, nil
	}
	for part := range strings.SplitSeq(s.expr, "||") {
		if tag := strings.TrimSpace(part); tag != "" {
			s.tags = append(s.tags, tag)
			s.codes = append(s.codes, int32(message.TagsHashCode(tag)))
		}
	}
	if len(s.tags) == 0 {
		s.expr = protocol.SubAll
	}
	return s, nil
}

func (s *subscription) expressionType() string {
	if s.sql92 {
		return protocol.ExpressionSQL92
	}
	return protocol.ExpressionTag
}

// match is the client-side tag check that drops hash collisions; SQL92
// subscriptions are filtered by the broker alone.
func (s *subscription) match(m *message.Ext) bool {
	if s.sql92 || len(s.tags) == 0 {
		return true
	}
	tag := m.Tags()
	for _, t := range s.tags {
		if t == tag {
			return true
		}
	}
	return false
}

func (s *subscription) data() protocol.SubscriptionData {
	return protocol.SubscriptionData{
		Topic:          s.topic,
		SubString:      s.expr,
		TagsSet:        append([]string{}, s.tags...),
		CodeSet:        append(protocol.CodeSet{}, s.codes...),
		SubVersion:     s.version,
		ExpressionType: s.expressionType(),
	}
}

// offsetReader is what computing a start offset needs.
type offsetReader interface {
	maxOffset(ctx context.Context, mq MessageQueue) (int64, error)
	searchOffset(ctx context.Context, mq MessageQueue, t time.Time) (int64, error)
}

// startOffset computes where a newly assigned queue is consumed from
// (docs/broker.md §4.7): the stored offset when there is one,
// otherwise per ConsumeFromWhere; retry topics start at 0 (last offset) or
// their end (timestamp).
func startOffset(ctx context.Context, store offsetStore, api offsetReader, mq MessageQueue, from ConsumeFromWhere, ts time.Time) (int64, error) {
	off, err := store.read(ctx, mq, true)
	if err != nil {
		return -1, err
	}
	if off >= 0 {
		return off, nil
	}
	retry := strings.HasPrefix(mq.Topic, names.RetryGroupTopicPrefix)
	switch from {
	case ConsumeFromFirstOffset:
		return 0, nil
	case ConsumeFromTimestamp:
		if retry {
			return api.maxOffset(ctx, mq)
		}
		return api.searchOffset(ctx, mq, ts)
	default:
		if retry {
			return 0, nil
		}
		return api.maxOffset(ctx, mq)
	}
}

// toMessageExt converts a pulled record for users: namespace stripped, the
// original topic of retry messages restored (RETRY_TOPIC), broker name set.
func toMessageExt(e *message.Ext, mq MessageQueue, group, ns string) *MessageExt {
	m := newMessageExt(e, mq.BrokerName, ns)
	restoreRetryTopic(m, e, group, ns)
	return m
}

// restoreRetryTopic gives a message pulled from the group's retry topic
// its original topic back.
func restoreRetryTopic(m *MessageExt, e *message.Ext, group, ns string) {
	if len(e.Topic) == len(names.RetryGroupTopicPrefix)+len(group) && strings.HasPrefix(e.Topic, names.RetryGroupTopicPrefix) && e.Topic[len(names.RetryGroupTopicPrefix):] == group {
		if real := m.Properties[message.PropertyRetryTopic]; real != "" {
			m.Topic = unwrapNamespace(ns, real)
		}
	}
}
