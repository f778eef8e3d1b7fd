package timer

import (
	"errors"
	"testing"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
)

func TestAlign(t *testing.T) {
	tests := []struct{ deliver, precision, want int64 }{
		{5000, 1000, 4000}, // a multiple is reduced by one precision
		{5001, 1000, 5000},
		{5999, 1000, 5000},
		{1234, 100, 1200},
		{1200, 100, 1100},
	}
	for _, tc := range tests {
		if got := Align(tc.deliver, tc.precision); got != tc.want {
			t.Errorf("Align(%d, %d) = %d, want %d", tc.deliver, tc.precision, got, tc.want)
		}
		// Fired at slot+precision: never before the delivery time, at
		// most one precision after it.
		fire := Align(tc.deliver, tc.precision) + tc.precision
		if fire < tc.deliver || fire-tc.deliver >= tc.precision {
			t.Errorf("deliver %d fires at %d", tc.deliver, fire)
		}
	}
}

// TestRewrite follows docs/broker.md §1.9's send-side rules.
func TestRewrite(t *testing.T) {
	const now, precision, maxDelay = 1_000_000, 1000, 259_200_000
	tests := []struct {
		name      string
		props     map[string]string
		parked    bool
		illegal   bool
		timerOut  string
		keepTimer bool
	}{
		{name: "absolute", props: map[string]string{"TIMER_DELIVER_MS": "1005500"}, parked: true, timerOut: "1005000"},
		{name: "delay sec", props: map[string]string{"TIMER_DELAY_SEC": "10"}, parked: true, timerOut: "1009000"},
		{name: "delay ms", props: map[string]string{"TIMER_DELAY_MS": "2500"}, parked: true, timerOut: "1002000"},
		{name: "past", props: map[string]string{"TIMER_DELIVER_MS": "999000"}, keepTimer: true},
		{name: "now", props: map[string]string{"TIMER_DELIVER_MS": "1000000"}, keepTimer: true},
		{name: "unparsable", props: map[string]string{"TIMER_DELIVER_MS": "soon"}, illegal: true},
		{name: "too far", props: map[string]string{"TIMER_DELAY_SEC": "259201"}, illegal: true},
		{name: "at the limit", props: map[string]string{"TIMER_DELAY_SEC": "259200"}, parked: true, timerOut: "260199000"},
		{name: "delay level wins", props: map[string]string{"TIMER_DELAY_SEC": "10", "DELAY": "3"}},
		{name: "not a timer", props: map[string]string{"a": "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &message.Ext{QueueID: 3}
			m.Topic = "T"
			m.Properties = tc.props
			parked, err := Rewrite(m, now, precision, maxDelay)
			if tc.illegal {
				if !errors.Is(err, ErrIllegal) {
					t.Fatalf("err = %v, want ErrIllegal", err)
				}
				return
			}
			if err != nil || parked != tc.parked {
				t.Fatalf("parked = %v, err = %v; want %v", parked, err, tc.parked)
			}
			if !parked {
				if m.Topic != "T" || m.QueueID != 3 {
					t.Fatalf("unparked message moved to %s/%d", m.Topic, m.QueueID)
				}
				if IsTimerMessage(&m.Message) != tc.keepTimer {
					t.Fatalf("timer properties kept = %v, want %v", IsTimerMessage(&m.Message), tc.keepTimer)
				}
				return
			}
			p := m.Properties
			if m.Topic != names.TopicTimerWheel || m.QueueID != 0 || p["REAL_TOPIC"] != "T" || p["REAL_QID"] != "3" || p["TIMER_OUT_MS"] != tc.timerOut {
				t.Fatalf("parked as %s/%d props %v", m.Topic, m.QueueID, p)
			}
			if p["TIMER_DELIVER_MS"] == "" || p["TIMER_DELAY_SEC"] != "" || p["TIMER_DELAY_MS"] != "" {
				t.Fatalf("timer properties not made absolute: %v", p)
			}
		})
	}
}
