package broker

import (
	"github.com/apogeemq/apogee/internal/filter"
	"github.com/apogeemq/apogee/internal/protocol"
)

// sqlFilter is the SQL92 filter of a pull (docs/broker.md §1.13):
// every consume-queue unit passes the tag stage, and the store evaluates
// the compiled expression against each candidate's properties. NULL,
// false and evaluation errors are no match.
type sqlFilter struct {
	expr *filter.Expression
}

// MatchTagsCode implements store.MessageFilter: SQL92 cannot decide on the
// tag code alone.
func (f *sqlFilter) MatchTagsCode(int64) bool { return true }

// MatchProperties implements store.MessageFilter.
func (f *sqlFilter) MatchProperties(props map[string]string) bool { return f.expr.Match(props) }

// newSQLFilter builds the filter of a non-TAG subscription, answering as
// RocketMQ does: SYSTEM_ERROR when enablePropertyFilter is off (the
// default), SUBSCRIPTION_PARSE_FAILED for an unknown expression type or an
// expression that does not compile (the remark names the position).
// Expressions are compiled per pull: a compile costs microseconds, and
// keeping none avoids a cache keyed by client input.
func (b *Broker) newSQLFilter(sub *protocol.SubscriptionData) (*sqlFilter, *protocol.Error) {
	if !b.dyn.propertyFilter.Load() {
		return nil, protocol.Errorf(protocol.SystemError,
			"The broker does not support consumer to filter message by %s", sub.ExpressionType)
	}
	if sub.ExpressionType != protocol.ExpressionSQL92 {
		return nil, protocol.Errorf(protocol.SubscriptionParseFailed,
			"the consumer's subscription expression type %s is not supported", sub.ExpressionType)
	}
	expr, err := filter.Compile(sub.SubString)
	if err != nil {
		return nil, protocol.Errorf(protocol.SubscriptionParseFailed,
			"parse the consumer's subscription failed: [%s] %v", sub.SubString, err)
	}
	return &sqlFilter{expr: expr}, nil
}
