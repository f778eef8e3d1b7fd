package timer

import (
	"errors"
	"fmt"
	"time"
)

// Config configures a Timer; the broker fills it from its timer* keys.
type Config struct {
	// Dir holds the timer log files (<storePathRootDir>/timerlog).
	Dir string
	// CheckpointPath is the checkpoint file (<root>/config/timercheck).
	CheckpointPath string
	// PrecisionMs is timerPrecisionMs (default 1000).
	PrecisionMs int64
	// MaxDelay is timerMaxDelaySec (default 3 days): longer delays are
	// refused by Rewrite.
	MaxDelay time.Duration
	// LogFileSize is mappedFileSizeTimerLog (default 100 MiB).
	LogFileSize int64
	// FlushInterval is timerFlushIntervalMs (default 1 s): log sync and
	// checkpoint period.
	FlushInterval time.Duration
	// Now is the clock (tests inject one); nil means time.Now.
	Now func() time.Time
}

// DefaultConfig returns RocketMQ's defaults (paths left empty).
func DefaultConfig() Config {
	return Config{
		PrecisionMs:   1000,
		MaxDelay:      259200 * time.Second,
		LogFileSize:   100 << 20,
		FlushInterval: time.Second,
	}
}

// Validate rejects values the timer cannot run with.
func (c *Config) Validate() error {
	var errs []error
	if c.Dir == "" || c.CheckpointPath == "" {
		errs = append(errs, errors.New("timer: Dir and CheckpointPath are required"))
	}
	if c.PrecisionMs < 1 || c.PrecisionMs > 60_000 {
		errs = append(errs, fmt.Errorf("timer: timerPrecisionMs=%d: must be 1..60000", c.PrecisionMs))
	}
	if c.MaxDelay <= 0 || c.MaxDelay > 24*24*time.Hour {
		errs = append(errs, fmt.Errorf("timer: timerMaxDelaySec=%d: must be 1..%d (delays are int32 ms in the log)",
			int64(c.MaxDelay/time.Second), 24*24*3600))
	}
	if c.LogFileSize < 64*recordSize {
		errs = append(errs, fmt.Errorf("timer: mappedFileSizeTimerLog=%d: must be at least %d", c.LogFileSize, 64*recordSize))
	}
	if c.FlushInterval <= 0 {
		errs = append(errs, fmt.Errorf("timer: timerFlushIntervalMs=%d: must be > 0", c.FlushInterval.Milliseconds()))
	}
	return errors.Join(errs...)
}

func (c *Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}
