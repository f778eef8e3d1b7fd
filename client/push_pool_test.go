package client

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/testutil"
)

// TestTaskQueue: every pushed task runs exactly once across the workers,
// in FIFO order for a single worker; after quit no task starts.
func TestTaskQueue(t *testing.T) {
	q := newTaskQueue()
	quit := make(chan struct{})
	var wg sync.WaitGroup
	var ran atomic.Int64
	seen := make([]atomic.Int32, 5000)
	for range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); q.run(quit) }()
	}
	for i := range seen {
		q.push(func() { seen[i].Add(1); ran.Add(1) })
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return ran.Load() == int64(len(seen)) }, "ran %d", ran.Load())
	for i := range seen {
		if n := seen[i].Load(); n != 1 {
			t.Fatalf("task %d ran %d times", i, n)
		}
	}
	close(quit)
	wg.Wait()
	q.push(func() { t.Error("task ran after quit") })
	q.run(quit) // returns at once

	// One worker: FIFO.
	q2 := newTaskQueue()
	var order []int
	for i := range 100 {
		q2.push(func() { order = append(order, i) })
	}
	quit2 := make(chan struct{})
	q2.push(func() { close(quit2) })
	q2.run(quit2)
	for i, v := range order {
		if v != i {
			t.Fatalf("order %v", order)
		}
	}
	if len(order) != 100 {
		t.Fatalf("ran %d of 100", len(order))
	}
}
