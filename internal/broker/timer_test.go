package broker

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/config"
	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestTimerMessage follows docs/broker.md §1.9: a send with
// TIMER_DELAY_MS is parked in rmq_sys_wheel_timer and reaches its real
// topic and queue only after the delay, with TIMER_OUT_MS set.
func TestTimerMessage(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.TimerPrecisionMs = 100
	cfg.TimerFlushIntervalMs = 100
	cfg.MappedFileSizeTimerLog = 64 << 10
	b := startBroker(t, cfg)
	c := newClient(t)
	sent := time.Now()
	resp := invoke(t, c, b.Addr(), sendReq("TimerTopic", 2, []byte("later"), map[string]string{"TIMER_DELAY_MS": "1500", "TAGS": "t"}))
	mustCode(t, resp, protocol.Success)
	if resp.Ext("queueId") != "2" {
		t.Fatalf("queueId = %s, want the real queue 2", resp.Ext("queueId"))
	}
	waitDispatched(t, b, names.TopicTimerWheel, 0, 1)
	if n := b.Store.MaxOffsetInQueue("TimerTopic", 2); n > 0 {
		t.Fatalf("timer message visible at once (%d)", n)
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return b.Store.MaxOffsetInQueue("TimerTopic", 2) == 1 }, "timer delivery")
	if d := time.Since(sent); d < 1500*time.Millisecond {
		t.Fatalf("delivered after %v, before the 1500 ms delay", d)
	}
	resp = invoke(t, c, b.Addr(), pullReq("g", "TimerTopic", 2, 0, protocol.PullFlagSubscription, 0, "*"))
	mustCode(t, resp, protocol.Success)
	m, _, err := message.DecodeStored(resp.Body, message.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Body) != "later" || m.Properties["TIMER_OUT_MS"] == "" || m.Properties["REAL_TOPIC"] != "" || m.Tags() != "t" {
		t.Fatalf("delivered %q props %v", m.Body, m.Properties)
	}
	if s, ok := b.TimerStats(); !ok || s.Delivered != 1 {
		t.Fatalf("timer stats %+v %v", s, ok)
	}
}

// TestTimerRefusals: a delay beyond timerMaxDelaySec or an unparsable
// timer property is MESSAGE_ILLEGAL; with the wheel disabled a timer
// message is SYSTEM_ERROR (docs/protocol.md §3.3.1 step 7).
func TestTimerRefusals(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	b := startBroker(t, cfg)
	c := newClient(t)
	far := strconv.FormatInt(time.Now().Add(73*time.Hour).UnixMilli(), 10)
	mustCode(t, invoke(t, c, b.Addr(), sendReq("TimerTopic", 0, []byte("x"), map[string]string{"TIMER_DELIVER_MS": far})), protocol.MessageIllegal)
	mustCode(t, invoke(t, c, b.Addr(), sendReq("TimerTopic", 0, []byte("x"), map[string]string{"TIMER_DELAY_SEC": "ten"})), protocol.MessageIllegal)
	// A delivery time in the past is stored directly.
	past := strconv.FormatInt(time.Now().Add(-time.Minute).UnixMilli(), 10)
	mustCode(t, invoke(t, c, b.Addr(), sendReq("TimerTopic", 0, []byte("x"), map[string]string{"TIMER_DELIVER_MS": past})), protocol.Success)
	waitDispatched(t, b, "TimerTopic", 0, 1)

	cfg2 := testConfig(t, t.TempDir())
	cfg2.TimerWheelEnable = false
	b2 := startBroker(t, cfg2)
	mustCode(t, invoke(t, c, b2.Addr(), sendReq("TimerTopic", 0, []byte("x"), map[string]string{"TIMER_DELAY_SEC": "5"})), protocol.SystemError)
}

// TestTimerConfigKeys: the timer keys of broker.conf reach the broker
// config (config_timer.go is embedded) and show in ToMap; a bad precision
// fails Start naming the key.
func TestTimerConfigKeys(t *testing.T) {
	props, err := config.Parse(strings.NewReader("timerWheelEnable=false\ntimerMaxDelaySec=60\ntimerPrecisionMs=500\n" +
		"timerFlushIntervalMs=200\nmappedFileSizeTimerLog=1048576\nenablePropertyFilter=true\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	if d := DefaultTimerConfig(); !cfg.TimerWheelEnable || cfg.TimerPrecisionMs != 1000 || cfg.TimerMaxDelaySec != 259200 || d != cfg.TimerConfig {
		t.Fatalf("defaults %+v", cfg.TimerConfig)
	}
	unknown, err := cfg.ApplyProperties(props)
	if err != nil || len(unknown) != 0 {
		t.Fatalf("apply: %v unknown %v", err, unknown)
	}
	want := TimerConfig{TimerWheelEnable: false, TimerMaxDelaySec: 60, TimerPrecisionMs: 500, TimerFlushIntervalMs: 200, MappedFileSizeTimerLog: 1 << 20}
	if cfg.TimerConfig != want || !cfg.EnablePropertyFilter {
		t.Fatalf("timer config %+v, want %+v", cfg.TimerConfig, want)
	}
	if m := cfg.ToMap(); m["timerPrecisionMs"] != "500" || m["timerWheelEnable"] != "false" {
		t.Fatalf("ToMap: %v %v", m["timerPrecisionMs"], m["timerWheelEnable"])
	}

	bad := testConfig(t, t.TempDir())
	bad.TimerPrecisionMs = 0
	b, err := New(bad, testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(); err == nil || !strings.Contains(err.Error(), "timerPrecisionMs") {
		t.Fatalf("Start with timerPrecisionMs=0: %v", err)
	}
	b.Close()
}
