package timer

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
)

// ErrIllegal marks a timer message RocketMQ refuses with MESSAGE_ILLEGAL
// (WHEEL_TIMER_MSG_ILLEGAL): an unparsable timer property or a delay
// beyond timerMaxDelaySec.
var ErrIllegal = errors.New("timer: illegal timer message")

// IsTimerMessage reports whether m carries a timer property.
func IsTimerMessage(m *message.Message) bool {
	return m.Properties[message.PropertyTimerDeliverMS] != "" || m.Properties[message.PropertyTimerDelaySec] != "" ||
		m.Properties[message.PropertyTimerDelayMS] != ""
}

// Align returns the wheel slot of a delivery time: RocketMQ reduces a
// multiple of the precision by one precision and floors other values, and
// fires a slot once now >= slot + precision. So delivery is never early
// and at most one precision late.
func Align(deliverMs, precisionMs int64) int64 {
	if deliverMs%precisionMs == 0 {
		return deliverMs - precisionMs
	}
	return deliverMs - deliverMs%precisionMs
}

// DeliverTime computes a timer message's absolute delivery time from
// TIMER_DELIVER_MS (absolute), TIMER_DELAY_SEC or TIMER_DELAY_MS
// (relative to nowMs), in that order of precedence.
func DeliverTime(m *message.Message, nowMs int64) (int64, error) {
	p := m.Properties
	parse := func(key string) (int64, error) {
		v, err := strconv.ParseInt(p[key], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: %s=%q is not a number", ErrIllegal, key, p[key])
		}
		return v, nil
	}
	switch {
	case p[message.PropertyTimerDeliverMS] != "":
		return parse(message.PropertyTimerDeliverMS)
	case p[message.PropertyTimerDelaySec] != "":
		v, err := parse(message.PropertyTimerDelaySec)
		if err != nil || v > 1<<40 || v < -1<<40 {
			return 0, errors.Join(err, fmt.Errorf("%w: %s out of range", ErrIllegal, message.PropertyTimerDelaySec))
		}
		return nowMs + v*1000, nil
	case p[message.PropertyTimerDelayMS] != "":
		v, err := parse(message.PropertyTimerDelayMS)
		if err != nil || v > 1<<50 || v < -1<<50 {
			return 0, errors.Join(err, fmt.Errorf("%w: %s out of range", ErrIllegal, message.PropertyTimerDelayMS))
		}
		return nowMs + v, nil
	}
	return 0, fmt.Errorf("%w: no timer property", ErrIllegal)
}

// Rewrite applies the send-side rules of docs/broker.md §1.9 to a
// message about to be stored. It reports whether the message was parked in
// the timer topic. A message with a delay level keeps the level and loses
// its timer properties; a delivery time in the past leaves the message for
// its real topic; a delay beyond maxDelayMs is ErrIllegal. A parked
// message gets TIMER_OUT_MS (its aligned slot), REAL_TOPIC and REAL_QID, a
// relative TIMER_DELAY_SEC/TIMER_DELAY_MS is replaced by the absolute
// TIMER_DELIVER_MS, and the message moves to names.TopicTimerWheel queue 0.
func Rewrite(m *message.Ext, nowMs, precisionMs, maxDelayMs int64) (bool, error) {
	if !IsTimerMessage(&m.Message) {
		return false, nil
	}
	if lvl, err := strconv.Atoi(m.Properties[message.PropertyDelayTimeLevel]); err == nil && lvl > 0 {
		delete(m.Properties, message.PropertyTimerDeliverMS)
		delete(m.Properties, message.PropertyTimerDelaySec)
		delete(m.Properties, message.PropertyTimerDelayMS)
		return false, nil
	}
	deliver, err := DeliverTime(&m.Message, nowMs)
	if err != nil {
		return false, err
	}
	if deliver-nowMs > maxDelayMs {
		return false, fmt.Errorf("%w: delivery in %d ms exceeds timerMaxDelaySec=%d", ErrIllegal, deliver-nowMs, maxDelayMs/1000)
	}
	if deliver <= nowMs {
		if m.Properties[message.PropertyTimerDelUniqKey] != "" {
			return false, fmt.Errorf("%w: the timer message to cancel is already due", ErrIllegal)
		}
		return false, nil
	}
	// A relative delay becomes the absolute time, so that the delivered
	// message, if sent again, is not delayed a second time.
	m.Properties[message.PropertyTimerDeliverMS] = strconv.FormatInt(deliver, 10)
	delete(m.Properties, message.PropertyTimerDelaySec)
	delete(m.Properties, message.PropertyTimerDelayMS)
	m.Properties[message.PropertyTimerOutMS] = strconv.FormatInt(Align(deliver, precisionMs), 10)
	m.Properties[message.PropertyRealTopic] = m.Topic
	m.Properties[message.PropertyRealQueueID] = strconv.Itoa(int(m.QueueID))
	m.Topic = names.TopicTimerWheel
	m.QueueID = 0
	return true, nil
}
