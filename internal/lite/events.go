package lite

import "sync"

// Event queue timings (RocketMQ's LiteEventDispatcher constants).
const (
	// ClientInactiveMs: a client with queued events that has not popped for
	// this long is taken for blocked; its events go to other clients.
	ClientInactiveMs = 10 * 1000
	// ClientLongPollingMs: a client that has not popped for this long (one
	// long poll of 30 s plus 5 s) is taken for gone, events or not.
	ClientLongPollingMs = 35 * 1000
	// ActiveConsumingMs: a client that popped this recently is consuming.
	ActiveConsumingMs = 5000
	// LowWaterMark: a full dispatch waits until the client's queue is less
	// full than this share of its capacity.
	LowWaterMark = 0.2
	// hardEventCap bounds any client's queue whatever its capacity says.
	hardEventCap = 100000
)

// Events is the broker's per-client queues of lite arrival events
// (RocketMQ's LiteEventDispatcher.ClientEventSet). An event is a lite
// topic's QueueName: "this lite topic may have a message for you". A lite
// pop takes the client's events in order and pops only those lite topics,
// so its cost follows the arrivals, not the client's subscriptions.
//
// Invariants: a client's queue holds a name at most once (in mirrors
// queue[head:]); its length never passes the capacity given to Offer (nor
// hardEventCap). Events are hints: a popped event whose lite topic has
// nothing to deliver is dropped. Memory only. Safe for concurrent use; no
// method blocks or calls out under the lock.
type Events struct {
	mu      sync.Mutex
	clients map[string]*eventSet
}

type eventSet struct {
	group       string
	queue       []string // queue[head:] is the pending events, oldest first
	head        int
	in          map[string]struct{}
	lastAccess  int64 // ms of the client's last pop (or the set's creation)
	lastConsume int64 // ms of the client's last pop that took an event
}

// NewEvents returns an empty set of queues.
func NewEvents() *Events {
	return &Events{clients: map[string]*eventSet{}}
}

func (s *eventSet) size() int { return len(s.queue) - s.head }

// Offer queues an event for the client (of group) unless the client's
// queue already has capacity events (capacity <= 0: hardEventCap). It
// reports false only when the queue is full; an event already queued is
// accepted without a second copy.
func (e *Events) Offer(client, group, queue string, capacity int, now int64) bool {
	if capacity <= 0 || capacity > hardEventCap {
		capacity = hardEventCap
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.clients[client]
	if s == nil {
		s = &eventSet{group: group, in: map[string]struct{}{}, lastAccess: now, lastConsume: now}
		e.clients[client] = s
	}
	if s.size() >= capacity {
		return false
	}
	if _, ok := s.in[queue]; ok {
		return true
	}
	if s.head > 0 && s.head >= len(s.queue)/2 { // reuse the consumed front
		n := copy(s.queue, s.queue[s.head:])
		clear(s.queue[n:])
		s.queue, s.head = s.queue[:n], 0
	}
	s.queue = append(s.queue, queue)
	s.in[queue] = struct{}{}
	return true
}

// Poll takes the client's oldest event; it records the access either way
// (a pop of the client).
func (e *Events) Poll(client string, now int64) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.clients[client]
	if s == nil {
		return "", false
	}
	s.lastAccess = now
	if s.size() == 0 {
		return "", false
	}
	q := s.queue[s.head]
	s.queue[s.head] = ""
	s.head++
	if s.head == len(s.queue) {
		s.queue, s.head = s.queue[:0], 0
	}
	delete(s.in, q)
	s.lastConsume = now
	return q, true
}

// Touch records a pop of the client that found no queue yet (its first).
func (e *Events) Touch(client, group string, now int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.clients[client]
	if s == nil {
		s = &eventSet{group: group, in: map[string]struct{}{}, lastConsume: now}
		e.clients[client] = s
	}
	s.lastAccess = now
}

// Has reports whether the client has a queued event.
func (e *Events) Has(client string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.clients[client]
	return s != nil && s.size() > 0
}

// Len is the number of events queued for the client.
func (e *Events) Len(client string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s := e.clients[client]; s != nil {
		return s.size()
	}
	return 0
}

// Clients is the number of clients with a queue.
func (e *Events) Clients() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.clients)
}

// Access returns the client's last pop and last pop that took an event
// (ms); ok is false for a client without a queue.
func (e *Events) Access(client string) (lastAccess, lastConsume int64, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s := e.clients[client]; s != nil {
		return s.lastAccess, s.lastConsume, true
	}
	return 0, 0, false
}

// Remove drops the client's queue and returns its group and pending
// events (oldest first), to be given to other clients.
func (e *Events) Remove(client string) (group string, pending []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.clients[client]
	if s == nil {
		return "", nil
	}
	delete(e.clients, client)
	return s.group, append([]string(nil), s.queue[s.head:]...)
}

// MaybeBlocked returns the clients taken for blocked or gone at now: no
// pop for ClientLongPollingMs, or events queued and no pop for
// ClientInactiveMs (RocketMQ's maybeBlock).
func (e *Events) MaybeBlocked(now int64) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for id, s := range e.clients {
		if s.blocked(now) {
			out = append(out, id)
		}
	}
	return out
}

func (s *eventSet) blocked(now int64) bool {
	idle := now - s.lastAccess
	return idle > ClientLongPollingMs || s.size() > 0 && idle > ClientInactiveMs
}

// Readiness is what a full dispatch of the client looks at: whether it
// may be blocked, is consuming actively, and its queue is below the low
// water mark of capacity.
func (e *Events) Readiness(client string, capacity int, now int64) (blocked, active, low bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.clients[client]
	if s == nil {
		return false, false, true
	}
	low = capacity <= 0 || float64(s.size())/float64(capacity) < LowWaterMark
	return s.blocked(now), now-s.lastAccess < ActiveConsumingMs, low
}
