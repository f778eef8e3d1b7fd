package broker

// TimerConfig holds the timer-message keys of broker.conf
// (docs/broker.md §1.9); Config embeds it, so the keys apply like
// every other broker key.
type TimerConfig struct {
	// TimerWheelEnable turns timer messages on (default true); when off, a
	// send with a timer property is refused with SYSTEM_ERROR.
	TimerWheelEnable bool `conf:"timerWheelEnable"`
	// TimerMaxDelaySec is the longest delay accepted (default 3 days);
	// longer ones are refused with MESSAGE_ILLEGAL.
	TimerMaxDelaySec int64 `conf:"timerMaxDelaySec"`
	// TimerPrecisionMs is the wheel's slot width (default 1000).
	TimerPrecisionMs int64 `conf:"timerPrecisionMs"`
	// TimerFlushIntervalMs is the timer log sync and checkpoint period.
	TimerFlushIntervalMs int64 `conf:"timerFlushIntervalMs"`
	// MappedFileSizeTimerLog is the size of one timer log file.
	MappedFileSizeTimerLog int64 `conf:"mappedFileSizeTimerLog"`
}

// DefaultTimerConfig returns RocketMQ's defaults.
func DefaultTimerConfig() TimerConfig {
	return TimerConfig{
		TimerWheelEnable:       true,
		TimerMaxDelaySec:       259200,
		TimerPrecisionMs:       1000,
		TimerFlushIntervalMs:   1000,
		MappedFileSizeTimerLog: 100 << 20,
	}
}
