package broker

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/run"
	"github.com/apogeemq/apogee/internal/store"
)

// scheduleGroup is the group name the schedule service reads with.
const scheduleGroup = "SCHEDULE_CONSUMER"

// scheduleService is RocketMQ's ScheduleMessageService
// (docs/broker.md §1.8): it delivers delay-level messages parked by
// the store in SCHEDULE_TOPIC_XXXX (queue = level-1) back to their real
// topic once storeTimestamp + delay(level) has passed, and keeps each
// level's progress in delayOffset.json (level -> next schedule-queue
// offset). One goroutine serves every level; it polls every 100 ms, which
// is also RocketMQ's retry period.
type scheduleService struct {
	b      *Broker
	levels []time.Duration // level i (1-based) at index i-1
}

func newScheduleService(b *Broker) *scheduleService {
	levels, _ := parseStoreDelayLevels(&b.cfg)
	return &scheduleService{b: b, levels: levels}
}

func (s *scheduleService) run() {
	run.Every(s.b.baseCtx, 100*time.Millisecond, func(context.Context) {
		if s.b.cfg.Store.BrokerRole == store.RoleSlave {
			return
		}
		for level := 1; level <= len(s.levels); level++ {
			s.deliverLevel(int32(level))
		}
	})
}

// deliverLevel delivers the due messages of one level, stopping at the
// first one not yet due or on a put failure (retried next round).
func (s *scheduleService) deliverLevel(level int32) {
	b := s.b
	queueID := level - 1
	offset := b.DelayOffsets.Get(level)
	if offset >= b.Store.MaxOffsetInQueue(names.TopicSchedule, queueID) {
		return
	}
	delay := s.levels[level-1]
	for range 64 { // bounded work per round and level
		res := b.Store.GetMessage(scheduleGroup, names.TopicSchedule, queueID, offset, 32, 0, nil)
		switch res.Status {
		case store.Found:
		case store.OffsetTooSmall, store.OffsetOverflowBadly, store.NoMatchedMessage:
			if res.NextBeginOffset != offset {
				b.DelayOffsets.Set(level, res.NextBeginOffset)
				offset = res.NextBeginOffset
				continue
			}
			return
		default:
			return
		}
		for _, raw := range res.Messages {
			m, _, err := message.DecodeStored(raw, message.DecodeOptions{})
			if err != nil {
				b.logger.Warn("schedule: undecodable message skipped", "level", level, "offset", offset, "err", err)
				offset++
				b.DelayOffsets.Set(level, offset)
				continue
			}
			now := b.now().UnixMilli()
			deliverAt := m.StoreTimestamp + delay.Milliseconds()
			if deliverAt > now+delay.Milliseconds() { // clock moved back
				deliverAt = now
			}
			if deliverAt > now {
				return
			}
			if !s.deliver(m) {
				return
			}
			offset = m.QueueOffset + 1
			b.DelayOffsets.Set(level, offset)
		}
		if res.NextBeginOffset > offset {
			offset = res.NextBeginOffset
			b.DelayOffsets.Set(level, offset)
		}
	}
}

// deliver stores the real message and waits for the result (the schedule
// goroutine owns no client request, so waiting here parks nothing else).
func (s *scheduleService) deliver(m *message.Ext) bool {
	b := s.b
	props := maps.Clone(m.Properties)
	realTopic := props[message.PropertyRealTopic]
	if realTopic == "" || realTopic == names.TopicTransHalf {
		b.logger.Warn("schedule: message without a real topic discarded", "offset", m.QueueOffset)
		return true
	}
	qid, err := strconv.Atoi(props[message.PropertyRealQueueID])
	if err != nil {
		qid = 0
	}
	for k := range props {
		if k == message.PropertyDelayTimeLevel || strings.HasPrefix(k, "TIMER_") {
			delete(props, k)
		}
	}
	props[message.PropertyWaitStoreMsgOK] = "false"
	out := &message.Ext{
		Message:        message.Message{Topic: realTopic, Flag: m.Flag, Body: m.Body, Properties: props},
		QueueID:        int32(qid),
		SysFlag:        m.SysFlag,
		BornTimestamp:  m.BornTimestamp,
		BornHost:       m.BornHost,
		StoreHost:      b.storeHost,
		ReconsumeTimes: m.ReconsumeTimes,
	}
	done := make(chan store.PutResult, 1)
	b.Store.PutMessage(out, func(r store.PutResult) { done <- r })
	select {
	case r := <-done:
		if !r.Status.Stored() {
			b.logger.Warn("schedule: delivery failed, retrying", "topic", realTopic, "status", r.Status.String())
			return false
		}
		return true
	case <-b.quit:
		return false
	}
}
