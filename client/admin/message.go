package admin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
)

// QueryMessageByID finds a message by id. An offset message id (broker
// address + commit-log offset) is looked up directly on that broker
// (VIEW_MESSAGE_BY_ID); any other id is taken as a UNIQ_KEY and searched
// for in topic on every broker (QUERY_MESSAGE with _UNIQUE_KEY_QUERY),
// which needs topic.
func (a *Admin) QueryMessageByID(ctx context.Context, topic, id string) (*client.MessageExt, error) {
	if host, offset, err := message.ParseOffsetMsgID(id); err == nil {
		addr := host.String()
		ext := map[string]string{"offset": strconv.FormatInt(offset, 10)}
		if topic != "" {
			ext["topic"] = topic
		}
		resp, err := a.invoke(ctx, addr, protocol.NewRequest(protocol.ViewMessageByID, ext, nil))
		if err == nil && resp.Code == int32(protocol.Success) {
			msgs, err := client.DecodeMessages(resp.Body, "")
			if err != nil {
				return nil, fmt.Errorf("admin: message %s from %s: %w", id, addr, err)
			}
			if len(msgs) > 0 {
				return msgs[0], nil
			}
		}
		if topic == "" {
			if err != nil {
				return nil, err
			}
			return nil, &client.BrokerError{Addr: addr, Code: resp.Code, Remark: resp.Remark}
		}
		// Maybe a UNIQ_KEY that happens to parse: fall through.
	}
	if topic == "" {
		return nil, fmt.Errorf("admin: %q is not an offset message id; give the topic to search by UNIQ_KEY", id)
	}
	msgs, err := a.queryMessages(ctx, topic, id, 32, time.Time{}, time.Now().Add(time.Hour), true)
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		if m.MsgID == id || m.Properties[message.PropertyUniqClientMessageIDKeyidx] == id {
			return m, nil
		}
	}
	return nil, fmt.Errorf("admin: message %s in topic %s: %w", id, topic, ErrNotFound)
}

// QueryMessageByKey returns up to maxNum messages of topic whose KEYS
// contain key and that were stored between begin and end (QUERY_MESSAGE on
// every broker of the topic; the broker's index is filtered again here).
func (a *Admin) QueryMessageByKey(ctx context.Context, topic, key string, maxNum int, begin, end time.Time) ([]*client.MessageExt, error) {
	if maxNum <= 0 {
		maxNum = 64
	}
	if end.IsZero() {
		end = time.Now().Add(time.Hour)
	}
	msgs, err := a.queryMessages(ctx, topic, key, maxNum, begin, end, false)
	if err != nil {
		return nil, err
	}
	var out []*client.MessageExt
	for _, m := range msgs {
		if slices.Contains(m.Keys(), key) {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(x, y *client.MessageExt) int { return x.StoreTime.Compare(y.StoreTime) })
	if len(out) > maxNum {
		out = out[:maxNum]
	}
	return out, nil
}

func (a *Admin) queryMessages(ctx context.Context, topic, key string, maxNum int, begin, end time.Time, uniq bool) ([]*client.MessageExt, error) {
	masters, err := a.routeMasters(ctx, topic)
	if err != nil {
		return nil, err
	}
	var out []*client.MessageExt
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(masters)) {
		addr := masters[name]
		ext := map[string]string{
			"topic":          topic,
			"key":            key,
			"maxNum":         strconv.Itoa(maxNum),
			"beginTimestamp": strconv.FormatInt(max(0, begin.UnixMilli()), 10),
			"endTimestamp":   strconv.FormatInt(end.UnixMilli(), 10),
		}
		if uniq {
			ext["_UNIQUE_KEY_QUERY"] = "true"
		}
		resp, err := a.invoke(ctx, addr, protocol.NewRequest(protocol.QueryMessage, ext, nil))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		switch protocol.ResponseCode(resp.Code) {
		case protocol.Success:
		case protocol.QueryNotFound:
			continue
		default:
			errs = append(errs, &client.BrokerError{Addr: addr, BrokerName: name, Topic: topic, Code: resp.Code, Remark: resp.Remark})
			continue
		}
		msgs, err := client.DecodeMessages(resp.Body, name)
		if err != nil {
			return nil, fmt.Errorf("admin: query %s in %s from %s: %w", key, topic, addr, err)
		}
		out = append(out, msgs...)
	}
	if len(out) == 0 && len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// PullResult is what PullMessages read from one queue.
type PullResult struct {
	Messages        []*client.MessageExt
	NextBeginOffset int64
	MinOffset       int64
	MaxOffset       int64
}

// PullMessages reads up to maxNum messages of one queue from offset without
// any consumer group state (PULL_MESSAGE without suspend or commit), as
// mqadmin consumeMessage does. A queue with nothing at offset gives an
// empty result.
func (a *Admin) PullMessages(ctx context.Context, q client.MessageQueue, offset int64, maxNum int) (*PullResult, error) {
	masters, err := a.routeMasters(ctx, q.Topic)
	if err != nil {
		return nil, err
	}
	addr := masters[q.BrokerName]
	if addr == "" {
		return nil, fmt.Errorf("admin: broker %s of topic %s: %w", q.BrokerName, q.Topic, ErrNotFound)
	}
	h := protocol.PullMessageRequestHeader{
		ConsumerGroup:  names.GroupToolsConsumer,
		Topic:          q.Topic,
		QueueID:        int32(q.QueueID),
		QueueOffset:    offset,
		MaxMsgNums:     int32(maxNum),
		SysFlag:        protocol.PullFlagSubscription,
		Subscription:   "*",
		ExpressionType: protocol.ExpressionTag,
		BrokerName:     q.BrokerName,
	}
	resp, err := a.invoke(ctx, addr, protocol.NewRequest(protocol.PullMessage, protocol.EncodeHeader(&h, false), nil))
	if err != nil {
		return nil, err
	}
	var rh protocol.PullMessageResponseHeader
	_ = protocol.DecodeHeader(resp.ExtFields, &rh, false)
	res := &PullResult{NextBeginOffset: rh.NextBeginOffset, MinOffset: rh.MinOffset, MaxOffset: rh.MaxOffset}
	switch protocol.ResponseCode(resp.Code) {
	case protocol.Success:
		msgs, err := client.DecodeMessages(resp.Body, q.BrokerName)
		if err != nil {
			return nil, fmt.Errorf("admin: pull %v from %s: %w", q, addr, err)
		}
		res.Messages = msgs
	case protocol.PullNotFound, protocol.PullRetryImmediately, protocol.PullOffsetMoved:
	default:
		return nil, &client.BrokerError{Addr: addr, BrokerName: q.BrokerName, Topic: q.Topic, Code: resp.Code, Remark: resp.Remark}
	}
	return res, nil
}
