package client

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// Broker-initiated offset requests of the legacy reset path (docs/protocol.md
// §3.6): RESET_CONSUMER_CLIENT_OFFSET (220, oneway) moves this consumer's
// offsets; GET_CONSUMER_STATUS_FROM_CLIENT (221) reports them. Brokers in
// server-side reset mode (the 5.x default) use PULL_OFFSET_MOVED instead,
// which the pull loop handles.

// offsetResetter is implemented by consumers that can move their offsets
// on a broker's request.
type offsetResetter interface {
	resetOffsets(ctx context.Context, topic string, offsets map[MessageQueue]int64)
	offsetsOf(topic string) map[MessageQueue]int64
}

// decodeQueueOffsetTable parses {"offsetTable":{{mq}:offset,...}} (fastjson
// object keys) or the same with string keys.
func decodeQueueOffsetTable(body []byte, field string) (map[MessageQueue]int64, error) {
	var w map[string]json.RawMessage
	if err := protocol.UnmarshalFastJSON(body, &w); err != nil {
		return nil, err
	}
	var table map[string]int64
	if raw, ok := w[field]; ok {
		if err := json.Unmarshal(raw, &table); err != nil {
			return nil, fmt.Errorf("client: %s: %w", field, err)
		}
	}
	out := make(map[MessageQueue]int64, len(table))
	for k, off := range table {
		var q protocol.MessageQueue
		if err := json.Unmarshal([]byte(k), &q); err != nil {
			return nil, fmt.Errorf("client: %s key %q: %w", field, k, err)
		}
		out[MessageQueue{Topic: q.Topic, BrokerName: q.BrokerName, QueueID: int(q.QueueID)}] = off
	}
	return out, nil
}

// onResetOffset handles RESET_CONSUMER_CLIENT_OFFSET (220).
func (e *instanceEnv) onResetOffset(ctx context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	e.mu.Lock()
	c, group := e.consumer, e.group
	e.mu.Unlock()
	r, ok := c.(offsetResetter)
	if !ok || req.Ext("group") != group {
		return nil, nil
	}
	offsets, err := decodeQueueOffsetTable(req.Body, "offsetTable")
	if err != nil {
		e.in.logger.Warn("bad reset-offset body", "group", group, "err", err)
		return nil, nil
	}
	r.resetOffsets(ctx, req.Ext("topic"), offsets)
	return nil, nil
}

// onConsumerStatus answers GET_CONSUMER_STATUS_FROM_CLIENT (221) with
// {"messageQueueTable":{{mq}:offset,...}} for the topic.
func (e *instanceEnv) onConsumerStatus(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	e.mu.Lock()
	c, group := e.consumer, e.group
	e.mu.Unlock()
	r, ok := c.(offsetResetter)
	if !ok || req.Ext("group") != group {
		return nil, protocol.Errorf(protocol.SystemError, "the consumer group %s not exist in this consumer", req.Ext("group"))
	}
	var fe []protocol.FastJSONEntry
	for mq, off := range r.offsetsOf(req.Ext("topic")) {
		fe = append(fe, protocol.FastJSONEntry{
			Key:   protocol.MessageQueue{Topic: mq.Topic, BrokerName: mq.BrokerName, QueueID: int32(mq.QueueID)},
			Value: off,
		})
	}
	body, err := protocol.AppendObjectKeyMap([]byte(`{"messageQueueTable":`), fe)
	if err != nil {
		return nil, err
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = append(body, '}')
	return resp, nil
}

// resetOffsets implements offsetResetter: every assigned queue of topic
// named in offsets is dropped (its cache and in-flight results are
// discarded), its offset set and persisted, and the rebalance recreates it
// from there.
func (c *PushConsumer) resetOffsets(ctx context.Context, topic string, offsets map[MessageQueue]int64) {
	c.rebalanceMu.Lock()
	var stopped []*queueState
	c.queuesMu.Lock()
	for mq, qs := range c.queues {
		if _, ok := offsets[mq]; ok && mq.Topic == topic {
			qs.pq.dropped.Store(true)
			qs.cancel()
			delete(c.queues, mq)
			stopped = append(stopped, qs)
		}
	}
	c.queuesMu.Unlock()
	var mqs []MessageQueue
	for _, qs := range stopped {
		<-qs.done
		c.store.update(qs.mq, offsets[qs.mq], false)
		mqs = append(mqs, qs.mq)
	}
	c.rebalanceMu.Unlock()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.store.persist(pctx, mqs); err != nil {
		c.logger.Warn("persist reset offsets", "topic", topic, "err", err)
	}
	// The rebalance recreates the queues; their start offset is read
	// from the store, which now holds the reset values.
	c.logger.Info("offsets reset by broker", "topic", topic, "queues", len(mqs))
	c.rebalanceNow()
}

// offsetsOf implements offsetResetter.
func (c *PushConsumer) offsetsOf(topic string) map[MessageQueue]int64 {
	out := map[MessageQueue]int64{}
	if c.store == nil {
		return out
	}
	for mq, off := range c.store.snapshot() {
		if mq.Topic == topic {
			out[mq] = off
		}
	}
	return out
}
