package broker

import (
	"errors"
	"path/filepath"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/store"
	"github.com/apogeemq/apogee/internal/timer"
)

// startTimer opens the timer-message store (internal/timer) on a master
// with timerWheelEnable. Called from start once the store runs.
func (b *Broker) startTimer() error {
	if !b.cfg.TimerWheelEnable || b.cfg.Store.BrokerRole == store.RoleSlave {
		return nil
	}
	cfg := timer.DefaultConfig()
	cfg.Dir = filepath.Join(b.cfg.Store.StorePathRootDir, "timerlog")
	cfg.CheckpointPath = filepath.Join(b.configDir(), "timercheck")
	cfg.PrecisionMs = b.cfg.TimerPrecisionMs
	cfg.MaxDelay = time.Duration(b.cfg.TimerMaxDelaySec) * time.Second
	cfg.LogFileSize = b.cfg.MappedFileSizeTimerLog
	cfg.FlushInterval = time.Duration(b.cfg.TimerFlushIntervalMs) * time.Millisecond
	cfg.Now = b.now
	t, err := timer.New(cfg, b.Store, b.logger)
	if err != nil {
		return err
	}
	if err := t.Start(); err != nil {
		return err
	}
	b.timerStore = t
	return nil
}

// closeTimer stops the timer store before the store closes (its
// deliveries are puts).
func (b *Broker) closeTimer() error {
	if b.timerStore == nil {
		return nil
	}
	return b.timerStore.Close()
}

// TimerStats reports the timer store's counters; ok is false when the
// timer wheel is not running on this broker.
func (b *Broker) TimerStats() (timer.Stats, bool) {
	if b.timerStore == nil {
		return timer.Stats{}, false
	}
	return b.timerStore.Stats(), true
}

// interceptTimer applies the timer rules of docs/protocol.md §3.3.1 step 7 to a
// single message about to be stored: TIMER_DELIVER_MS / TIMER_DELAY_SEC /
// TIMER_DELAY_MS park it in rmq_sys_wheel_timer (a DELAY level wins;
// prepared transaction messages are left alone here: END_TRANSACTION's
// commit path calls interceptTimer on the restored message, so the delay
// counts from the commit). Refusals: wheel disabled -> SYSTEM_ERROR; unparsable or
// beyond timerMaxDelaySec -> MESSAGE_ILLEGAL.
func (b *Broker) interceptTimer(m *message.Ext) error {
	if !timer.IsTimerMessage(&m.Message) || m.Topic == names.TopicTransHalf {
		return nil
	}
	if !b.cfg.TimerWheelEnable || b.timerStore == nil {
		if m.DelayTimeLevel() > 0 {
			return nil
		}
		return protocol.Errorf(protocol.SystemError, "accurate timer message is not enabled, timerWheelEnable is false")
	}
	_, err := timer.Rewrite(m, b.now().UnixMilli(), b.cfg.TimerPrecisionMs, b.cfg.TimerMaxDelaySec*1000)
	if errors.Is(err, timer.ErrIllegal) {
		b.stats.sendRejected.Add(1)
		return protocol.Errorf(protocol.MessageIllegal, "%v", err)
	}
	return err
}
