package client

import (
	"strconv"
	"time"

	"github.com/apogeemq/apogee/internal/message"
)

// WithDeliverTime asks the broker to deliver the message at t (a timer
// message, RocketMQ 5.x: property TIMER_DELIVER_MS) and returns m. Brokers
// deliver within their timerPrecisionMs (1 s by default), never early, and
// refuse times more than timerMaxDelaySec (3 days) ahead with
// MESSAGE_ILLEGAL. A time in the past delivers at once. A delay level
// (WithDelayLevel) takes precedence.
func (m *Message) WithDeliverTime(t time.Time) *Message {
	return m.SetProperty(message.PropertyTimerDeliverMS, strconv.FormatInt(t.UnixMilli(), 10))
}

// WithDelay is WithDeliverTime relative to the send (TIMER_DELAY_MS).
func (m *Message) WithDelay(d time.Duration) *Message {
	return m.SetProperty(message.PropertyTimerDelayMS, strconv.FormatInt(d.Milliseconds(), 10))
}
