package broker

import (
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
)

// TestRebalanceLockExpiry: a queue lock held by one client is refused to
// another until it has gone maxLive without a refresh (docs/broker.md
// §1.12); a refresh by the holder restarts the clock.
func TestRebalanceLockExpiry(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	m := newRebalanceLockManager(func() time.Time { return now }, 5*time.Second)
	mq := []protocol.MessageQueue{{Topic: "T", BrokerName: "b", QueueID: 1}}
	steps := []struct {
		advance time.Duration
		client  string
		want    int // queues granted
	}{
		{0, "c1", 1},
		{time.Second, "c2", 0},             // held by c1
		{3 * time.Second, "c1", 1},         // refresh at t=4s
		{4 * time.Second, "c2", 0},         // 4 s since refresh: still held
		{1500 * time.Millisecond, "c2", 1}, // 5.5 s since refresh: expired
		{0, "c1", 0},                       // now c2's
	}
	for i, s := range steps {
		now = now.Add(s.advance)
		if got := len(m.TryLockBatch("g", mq, s.client)); got != s.want {
			t.Fatalf("step %d (%s): granted %d queues, want %d", i, s.client, got, s.want)
		}
	}
}
