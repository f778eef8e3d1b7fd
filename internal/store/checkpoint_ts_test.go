package store

import (
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/testutil"
)

// TestCheckpointPhysicTimestampAdvances: under either flush type the
// checkpoint's commit-log timestamp follows the flushed data (RocketMQ's
// flush services set it after every flush); it is what abnormal recovery
// starts from, so a checkpoint left at 0 rescans the whole commit log.
func TestCheckpointPhysicTimestampAdvances(t *testing.T) {
	for _, flush := range []string{AsyncFlush, SyncFlush} {
		t.Run(flush, func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			cfg.FlushDiskType = flush
			cfg.FlushCommitLogThoroughInterval = 50 * time.Millisecond
			cfg.FlushCommitLogLeastPages = 1 // flushes keep up: the thorough one finds nothing new
			s := openStore(t, cfg)
			start := time.Now().UnixMilli()
			for range 5 {
				writeN(t, s, 40)
				time.Sleep(20 * time.Millisecond)
			}
			testutil.Eventually(t, 10*time.Second, func() bool {
				return s.cp.physicMsgTimestamp.Load() >= start
			}, "physicMsgTimestamp stayed at %d", s.cp.physicMsgTimestamp.Load())
		})
	}
}
