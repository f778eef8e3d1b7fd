package broker

import (
	"context"
	"encoding/binary"
	"strconv"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// timerCheckpointSize is Java's TimerCheckpoint.encode length: seven
// big-endian longs (lastReadTimeMs, lastTimerLogFlushPos,
// lastTimerQueueOffset, masterTimerQueueOffset, then the data version's
// stateVersion, timestamp and counter). Part of the wire format.
const timerCheckpointSize = 7 * 8

// timerMetricsScanLimit bounds how many timer-topic units one
// GET_TIMER_METRICS request reads to count pending timers per topic.
const timerMetricsScanLimit = 1 << 16

// processGetTimerCheckPoint serves GET_TIMER_CHECK_POINT (60): the timer's
// progress in TimerCheckpoint's binary layout. SYSTEM_ERROR when the timer
// wheel does not run on this broker. lastReadTimeMs is the next slot to
// fire; lastTimerQueueOffset and masterTimerQueueOffset the next timer-topic
// unit to enqueue; lastTimerLogFlushPos the timer log position synced and
// checkpointed.
func (b *Broker) processGetTimerCheckPoint(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	st, ok := b.TimerStats()
	if !ok {
		return nil, protocol.Errorf(protocol.SystemError, "The checkpoint is null")
	}
	body := make([]byte, timerCheckpointSize)
	for i, v := range []int64{st.ReadMs, st.LogFlushPos, st.QueueOffset, st.QueueOffset,
		0, b.bootTime.UnixMilli(), st.Enqueued + st.Delivered} {
		binary.BigEndian.PutUint64(body[8*i:], uint64(v))
	}
	return bodyResponse(req, body), nil
}

// timerMetric is one entry of TimerMetricsSerializeWrapper.timingCount.
type timerMetric struct {
	Count     int64 `json:"count"`
	TimeStamp int64 `json:"timeStamp"`
}

// processGetTimerMetrics serves GET_TIMER_METRICS (61):
// {"dataVersion":{..},"timingCount":{topic:{"count":n,"timeStamp":ms}}},
// the timers still waiting per real topic. SYSTEM_ERROR when the timer
// wheel does not run. Counts come from reading the most recent
// timerMetricsScanLimit enqueued units of rmq_sys_wheel_timer and keeping
// those whose slot (TIMER_OUT_MS) has not fired yet.
func (b *Broker) processGetTimerMetrics(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	st, ok := b.TimerStats()
	if !ok {
		return nil, protocol.Errorf(protocol.SystemError, "timer wheel is not enabled on this broker")
	}
	now := b.now().UnixMilli()
	counts := map[string]timerMetric{}
	from := max(b.Store.MinOffsetInQueue(names.TopicTimerWheel, 0), st.QueueOffset-timerMetricsScanLimit, 0)
	for off := from; off < st.QueueOffset; {
		res := b.Store.GetMessage("rmq_sys_timer_metrics", names.TopicTimerWheel, 0, off, 256, 0, nil)
		if res == nil || len(res.Messages) == 0 || res.NextBeginOffset <= off {
			break
		}
		for _, raw := range res.Messages {
			v, _, err := message.ViewStored(raw)
			if err != nil || v.QueueOffset() >= st.QueueOffset {
				continue
			}
			out, _ := v.Property(message.PropertyTimerOutMS)
			due, err := strconv.ParseInt(string(out), 10, 64)
			if err != nil || due < st.ReadMs {
				continue
			}
			topic, _ := v.Property(message.PropertyRealTopic)
			m := counts[string(topic)]
			m.Count++
			m.TimeStamp = now
			counts[string(topic)] = m
		}
		off = res.NextBeginOffset
	}
	body, err := protocol.MarshalJSON(struct {
		DataVersion protocol.DataVersion   `json:"dataVersion"`
		TimingCount map[string]timerMetric `json:"timingCount"`
	}{protocol.DataVersion{Timestamp: now, Counter: st.Enqueued + st.Delivered}, counts})
	if err != nil {
		return nil, err
	}
	return bodyResponse(req, body), nil
}
