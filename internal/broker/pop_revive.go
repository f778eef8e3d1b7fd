package broker

import (
	"context"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/pop"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/store"
)

// The revive loop (RocketMQ's PopReviveService): a checkpoint whose
// invisible time passed has each unacked message written to the group's
// pop retry topic (%RETRY%group+topic with enableRetryTopicV2, else
// %RETRY%group_topic; a checkpoint of a retry topic stays in it), queue 0,
// reconsumeTimes + 1, properties kept (so the message id stays) plus
// 1ST_POP_TIME. A message that already used the group's retryMaxTimes
// (default 16, so at most 17 deliveries) goes to %DLQ%group instead, with
// DLQ_ORIGIN_TOPIC and DLQ_ORIGIN_MESSAGE_ID. Only when every write
// succeeded is the checkpoint recorded as revived; a crash in between
// writes the copies again after restart (at least once). The loop also
// fsyncs the POP log every second.

const reviveBatch = 256

// wakeRevive asks the loop to look at a checkpoint due at deadline (ms)
// before its next round.
func (p *popService) wakeRevive(deadline int64) {
	if deadline-p.b.now().UnixMilli() < p.b.cfg.ReviveInterval.Milliseconds() {
		select {
		case p.reviveWake <- struct{}{}:
		default:
		}
	}
}

func (p *popService) reviveLoop(ctx context.Context) {
	interval := max(p.b.cfg.ReviveInterval, 10*time.Millisecond)
	t := time.NewTimer(interval)
	defer t.Stop()
	lastSync := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-p.reviveWake:
		}
		// A slave's store refuses the retry puts (an acting slave leaves
		// expired checkpoints to its returning master: acting_master.go);
		// a master in pre-online may be about to take another state.
		if p.b.cfg.Store.BrokerRole != store.RoleSlave && p.b.popServes() {
			p.reviveDue(ctx, p.b.now().UnixMilli())
		}
		if time.Since(lastSync) >= time.Second {
			if err := p.state.Sync(); err != nil {
				p.b.logger.Error("pop: sync state", "err", err)
			}
			if p.b.cfg.Store.BrokerRole != store.RoleSlave { // a slave copies its master's offsets
				p.commitLowWatermarks()
			}
			lastSync = time.Now()
		}
		wait := interval
		if d := p.state.NextDeadline(); d >= 0 {
			wait = min(wait, time.Duration(d-p.b.now().UnixMilli())*time.Millisecond)
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(max(wait, 5*time.Millisecond))
	}
}

// commitLowWatermarks writes each popped queue's low watermark (its
// oldest unacked message) to the consumer offset table: consume stats show
// in-flight messages as lag, and a broker without this POP state (a slave
// promoted to master: the table is copied to slaves, internal/pop is not)
// starts the group there, so unacked messages are delivered again rather
// than lost (at least once: some acked ones too).
func (p *popService) commitLowWatermarks() {
	p.state.LowWatermarks(func(k pop.QueueKey, off int64) {
		if cur, ok := p.b.Offsets.Query(k.Group, k.Topic, k.QueueID); !ok || cur != off {
			p.b.Offsets.Commit(k.Group, k.Topic, k.QueueID, off)
		}
	})
}

// reviveDue re-delivers every checkpoint due at now.
func (p *popService) reviveDue(ctx context.Context, now int64) {
	for ctx.Err() == nil {
		due := p.state.TakeExpired(now, reviveBatch)
		for _, ex := range due {
			if p.revive(ex) {
				if err := p.state.Revived(ex); err != nil {
					p.b.logger.Error("pop: record revive", "group", ex.Key.Group, "topic", ex.Key.Topic, "err", err)
				}
			} else {
				p.state.Release(ex)
			}
		}
		if len(due) < reviveBatch {
			return
		}
	}
}

// revive writes the checkpoint's unacked messages to the retry topic or
// the DLQ and reports whether every write succeeded (messages acked in the
// meantime, or already deleted from the store, are skipped).
func (p *popService) revive(ex pop.Expired) bool {
	b := p.b
	group, topic := ex.Key.Group, ex.Key.Topic
	origTopic := topic
	retryTopic := topic
	if protocol.PopTopicTypeOf(topic).IsRetry() {
		origTopic = protocol.PopNormalTopic(topic, group)
	} else {
		retryTopic = protocol.PopRetryTopic(topic, group, b.cfg.EnableRetryTopicV2)
	}
	maxTimes := int32(16)
	if gc, ok := b.Groups.Get(group); ok {
		maxTimes = gc.RetryMaxTimes
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := true
	for _, off := range ex.Offsets {
		if !p.state.InFlight(ex.Key, ex.StartOffset, ex.PopTime, off) {
			continue // acked while the loop was on its way
		}
		gr := b.Store.GetMessage(group, topic, ex.Key.QueueID, off, 1, 0, nil)
		if gr.Status != store.Found || len(gr.Messages) == 0 {
			continue // deleted by retention: nothing left to deliver
		}
		m, _, err := message.DecodeStored(gr.Messages[0], message.DecodeOptions{})
		if err != nil || m.QueueOffset != off {
			b.logger.Warn("pop: revive: unreadable message", "topic", topic, "queueId", ex.Key.QueueID, "offset", off, "err", err)
			continue
		}
		out, dlq, perr := p.reviveMessage(m, group, origTopic, retryTopic, maxTimes, ex.PopTime)
		if perr != nil {
			b.logger.Error("pop: revive topic", "err", perr)
			ok = false
			continue
		}
		wg.Add(1)
		b.Store.PutMessage(out, func(res store.PutResult) {
			defer wg.Done()
			if !res.Status.Stored() {
				mu.Lock()
				ok = false
				mu.Unlock()
				b.logger.Warn("pop: revive put failed", "topic", out.Topic, "status", res.Status.String())
				return
			}
			if dlq {
				p.dlq.Add(1)
			} else {
				p.revived.Add(1)
			}
		})
	}
	wg.Wait()
	return ok
}

// reviveMessage builds the retry (or DLQ) copy of m.
func (p *popService) reviveMessage(m *message.Ext, group, origTopic, retryTopic string, maxTimes int32, popTime int64) (*message.Ext, bool, error) {
	b := p.b
	props := maps.Clone(m.Properties)
	if props == nil {
		props = map[string]string{}
	}
	delete(props, message.PropertyPopCK)
	if m.ReconsumeTimes == 0 || props[message.PropertyFirstPopTime] == "" {
		props[message.PropertyFirstPopTime] = strconv.FormatInt(popTime, 10)
	}
	target, dlq := retryTopic, m.ReconsumeTimes >= maxTimes
	if dlq {
		target = names.DLQTopic(group)
		if _, err := b.Topics.CreateIfAbsent(target, 1, protocol.PermRead|protocol.PermWrite, 0); err != nil {
			return nil, false, err
		}
		id := m.UniqKey()
		if id == "" {
			id = message.OffsetMsgID(m.StoreHost, m.CommitLogOffset)
		}
		props[message.PropertyDLQOriginTopic] = origTopic
		props[message.PropertyDLQOriginMessageID] = id
		b.logger.Info("pop message moved to the dead-letter queue", "group", group, "topic", origTopic,
			"reconsumeTimes", m.ReconsumeTimes, "maxReconsumeTimes", maxTimes)
	}
	queueID := int32(0)
	if !dlq {
		q, queues := p.retryQueueFor(origTopic, m.QueueID) // priority.go: useSeparateRetryQueue
		if err := p.ensureRetryQueues(target, queues); err != nil {
			return nil, false, err
		}
		queueID = q
	}
	return &message.Ext{
		Message:        message.Message{Topic: target, Flag: m.Flag, Body: m.Body, Properties: props},
		QueueID:        queueID,
		SysFlag:        m.SysFlag,
		BornTimestamp:  m.BornTimestamp,
		BornHost:       m.BornHost,
		StoreHost:      b.storeHost,
		ReconsumeTimes: m.ReconsumeTimes + 1,
	}, dlq, nil
}
