package client

import "sync"

// taskQueue is the push consumer's consume-request queue: FIFO, never
// blocking the producer side (pull goroutines), drained by a fixed number
// of workers. It is unbounded by design, like RocketMQ's consume executor
// queue: what bounds it is flow control, because every queued task holds
// messages cached in a processQueue, which stops being pulled past
// pullThresholdForQueue / pullThresholdSizeForQueue.
type taskQueue struct {
	mu    sync.Mutex
	tasks []func() // guarded by mu; tasks[head:] are pending
	head  int      // guarded by mu
	// ready has capacity 1; a send means "there may be tasks". A worker
	// that takes a task re-signals when more remain, so N workers drain a
	// burst in parallel.
	ready chan struct{}
}

func newTaskQueue() *taskQueue { return &taskQueue{ready: make(chan struct{}, 1)} }

func (q *taskQueue) push(task func()) {
	q.mu.Lock()
	q.tasks = append(q.tasks, task)
	q.mu.Unlock()
	q.signal()
}

func (q *taskQueue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// pop returns the oldest task, or nil when empty.
func (q *taskQueue) pop() func() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.tasks) {
		return nil
	}
	t := q.tasks[q.head]
	q.tasks[q.head] = nil
	q.head++
	if q.head == len(q.tasks) {
		q.tasks, q.head = q.tasks[:0], 0
	} else if q.head > 1024 && q.head*2 > len(q.tasks) {
		q.tasks = append(q.tasks[:0], q.tasks[q.head:]...)
		q.head = 0
	}
	if q.head < len(q.tasks) {
		q.signal()
	}
	return t
}

// run executes tasks until quit closes. Tasks still queued then are
// abandoned: their messages stay uncommitted and are redelivered to the
// group, and Close does not wait for a backlog of listener calls.
func (q *taskQueue) run(quit <-chan struct{}) {
	for {
		select {
		case <-quit:
			return
		default:
		}
		if t := q.pop(); t != nil {
			t()
			continue
		}
		select {
		case <-quit:
			return
		case <-q.ready:
		}
	}
}
