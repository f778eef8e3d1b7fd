package lite

import (
	"errors"
	"sync"
)

// ErrSubscriptionQuota is an add refused because the broker would hold more
// lite subscriptions than its quota (maxLiteSubscriptionCount).
var ErrSubscriptionQuota = errors.New("lite subscription quota exceeded")

// Eviction names a client that lost a lite topic's subscription: another
// client of an exclusive group took it, or the lite topic expired. The
// broker tells the client with NOTIFY_UNSUBSCRIBE_LITE.
type Eviction struct {
	Client, Group, Queue string // Queue is the lite topic's QueueName
}

// Subscriptions is a broker's lite subscriptions (RocketMQ's
// LiteSubscriptionRegistry): for each client id the LITE parent it binds,
// its group and the lite topics (by QueueName) it consumes, plus the
// reverse index queue -> clients that arrivals and expiry use.
//
// A wildcard client (its group has lite.sub.wildcard) consumes every lite
// topic of its parent without naming them; it counts as one subscription.
// Exclusive groups (lite.sub.model=Exclusive) let one client at a time hold
// a lite topic: an add by another client of the group evicts the holder
// and leaves a tombstone, so the holder's next complete set, which may
// still name the lite topic, does not take it back silently but is told
// again.
//
// Memory only: subscriptions are sessions of connected clients, re-sent
// by each client (COMPLETE_ADD) periodically. Safe for concurrent use; no
// method blocks or calls out under the lock.
type Subscriptions struct {
	mu       sync.Mutex
	clients  map[string]*clientSubs         // client id -> its subscriptions
	byQueue  map[string]map[string]struct{} // queue -> client ids
	wildcard map[string]map[string]struct{} // parent -> wildcard client ids
	tombs    map[string]map[string]struct{} // client id -> queues taken by another client (exclusive)
	active   int                            // subscriptions over all clients (a wildcard client counts 1)
	updated  map[string]int64               // client id -> ms of its last change (for idle cleanup)
}

// clientSubs is one client's subscriptions. Invariant: byQueue[q] holds
// the client for each q in queues. A set, as RocketMQ's LiteSubscription:
// adding or removing one costs O(1) however many the client holds.
type clientSubs struct {
	group, parent string
	wildcard      bool
	patterns      []string // a wildcard client's patterns (pattern.go); none: every lite topic
	queues        map[string]struct{}
}

// NewSubscriptions returns an empty registry.
func NewSubscriptions() *Subscriptions {
	return &Subscriptions{clients: map[string]*clientSubs{}, byQueue: map[string]map[string]struct{}{},
		wildcard: map[string]map[string]struct{}{}, tombs: map[string]map[string]struct{}{}, updated: map[string]int64{}}
}

// session returns the client's subscriptions, starting a new set when the
// client binds another group or parent (its old set is dropped).
func (s *Subscriptions) session(client, group, parent string) *clientSubs {
	c := s.clients[client]
	if c != nil && c.group == group && c.parent == parent {
		return c
	}
	if c != nil {
		s.dropLocked(client)
	}
	c = &clientSubs{group: group, parent: parent, queues: map[string]struct{}{}}
	s.clients[client] = c
	return c
}

func (s *Subscriptions) addLocked(client string, c *clientSubs, q string) bool {
	if _, ok := c.queues[q]; ok {
		return false
	}
	c.queues[q] = struct{}{}
	set := s.byQueue[q]
	if set == nil {
		set = map[string]struct{}{}
		s.byQueue[q] = set
	}
	set[client] = struct{}{}
	s.active++
	return true
}

func (s *Subscriptions) removeLocked(client string, c *clientSubs, q string) bool {
	if _, ok := c.queues[q]; !ok {
		return false
	}
	delete(c.queues, q)
	if set := s.byQueue[q]; set != nil {
		delete(set, client)
		if len(set) == 0 {
			delete(s.byQueue, q)
		}
	}
	s.active--
	return true
}

func (s *Subscriptions) dropLocked(client string) {
	c := s.clients[client]
	if c == nil {
		return
	}
	for q := range c.queues {
		s.removeLocked(client, c, q)
	}
	if c.wildcard {
		if set := s.wildcard[c.parent]; set != nil {
			delete(set, client)
			if len(set) == 0 {
				delete(s.wildcard, c.parent)
			}
		}
		s.active--
	}
	delete(s.clients, client)
	delete(s.updated, client)
}

// Add subscribes the client (group, parent) to more lite topics
// (PARTIAL_ADD). It is refused whole with ErrSubscriptionQuota when the
// new subscriptions would pass max (max <= 0: no limit). With exclusive,
// every other client of the group holding one of the queues loses it (the
// evictions are returned, to be told) and gets a tombstone for it. added
// lists the queues that were new for the client.
func (s *Subscriptions) Add(client, group, parent string, queues []string, exclusive bool, max int, now int64) (added []string, evicted []Eviction, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	held := 0 // what a new session would drop
	var cur map[string]struct{}
	if c := s.clients[client]; c != nil {
		if c.group == group && c.parent == parent {
			cur = c.queues
		} else {
			held = len(c.queues)
		}
	}
	fresh := 0
	for _, q := range queues {
		if _, ok := cur[q]; !ok {
			fresh++
		}
	}
	if max > 0 && s.active-held+fresh > max {
		return nil, nil, ErrSubscriptionQuota
	}
	c := s.session(client, group, parent)
	s.updated[client] = now
	for _, q := range queues {
		if exclusive {
			for other := range s.byQueue[q] {
				oc := s.clients[other]
				if other == client || oc == nil || oc.group != group {
					continue
				}
				s.removeLocked(other, oc, q)
				s.tombLocked(other, q, true)
				evicted = append(evicted, Eviction{Client: other, Group: group, Queue: q})
			}
			s.tombLocked(client, q, false)
		}
		if s.addLocked(client, c, q) {
			added = append(added, q)
		}
	}
	return added, evicted, nil
}

func (s *Subscriptions) tombLocked(client, q string, set bool) {
	t := s.tombs[client]
	if set {
		if t == nil {
			t = map[string]struct{}{}
			s.tombs[client] = t
		}
		t[q] = struct{}{}
		return
	}
	if t != nil {
		delete(t, q)
		if len(t) == 0 {
			delete(s.tombs, client)
		}
	}
}

// Remove unsubscribes the client from lite topics (PARTIAL_REMOVE) and
// returns the queues it had.
func (s *Subscriptions) Remove(client string, queues []string, now int64) (removed []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clients[client]
	if c == nil {
		return nil
	}
	s.updated[client] = now
	for _, q := range queues {
		if s.removeLocked(client, c, q) {
			removed = append(removed, q)
		}
	}
	return removed
}

// Replace makes queues the client's whole set (COMPLETE_ADD); a wildcard
// client instead consumes the lite topics of parent that match one of
// patterns (every one without patterns) and queues is ignored. Queues the client lost to another client of an exclusive group
// (tombstoned) are not taken back: they are returned to be told again
// (the earlier notification was likely lost). Replace does not check the
// quota, as RocketMQ's broker does not for the periodic complete set.
func (s *Subscriptions) Replace(client, group, parent string, queues []string, wildcard bool, patterns []string, now int64) (added []string, renotify []Eviction) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.session(client, group, parent)
	c.patterns = nil
	if wildcard {
		c.patterns = append([]string(nil), patterns...)
	}
	s.updated[client] = now
	want := make(map[string]struct{}, len(queues))
	if !wildcard {
		tomb := s.tombs[client]
		for _, q := range queues {
			if _, gone := tomb[q]; gone {
				renotify = append(renotify, Eviction{Client: client, Group: group, Queue: q})
				continue
			}
			want[q] = struct{}{}
		}
		named := make(map[string]struct{}, len(queues))
		for _, q := range queues {
			named[q] = struct{}{}
		}
		for q := range tomb { // tombstones of queues the set no longer names are stale
			if _, ok := named[q]; !ok {
				s.tombLocked(client, q, false)
			}
		}
	}
	for q := range c.queues {
		if _, ok := want[q]; !ok {
			s.removeLocked(client, c, q)
		}
	}
	for _, q := range queues {
		if _, ok := want[q]; ok && s.addLocked(client, c, q) {
			added = append(added, q)
		}
	}
	if wildcard != c.wildcard {
		c.wildcard = wildcard
		set := s.wildcard[parent]
		if wildcard {
			if set == nil {
				set = map[string]struct{}{}
				s.wildcard[parent] = set
			}
			set[client] = struct{}{}
			s.active++
		} else if set != nil {
			delete(set, client)
			if len(set) == 0 {
				delete(s.wildcard, parent)
			}
			s.active--
		}
	}
	return added, renotify
}

// Drop forgets the client (COMPLETE_REMOVE, or its connection closed).
func (s *Subscriptions) Drop(client string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropLocked(client)
	delete(s.tombs, client)
}

// Clean removes every subscription of an expired lite topic and returns
// the clients to tell.
func (s *Subscriptions) Clean(queue string) []Eviction {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Eviction
	for client := range s.byQueue[queue] {
		if c := s.clients[client]; c != nil {
			s.removeLocked(client, c, queue)
			out = append(out, Eviction{Client: client, Group: c.group, Queue: queue})
		}
	}
	for client, t := range s.tombs {
		if _, ok := t[queue]; ok {
			s.tombLocked(client, queue, false)
		}
	}
	return out
}

// Wants reports whether an arrival on queue concerns the client: it
// subscribes the queue, or is a wildcard client of its parent.
func (s *Subscriptions) Wants(client, queue string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clients[client]
	if c == nil {
		return false
	}
	if _, ok := c.queues[queue]; ok {
		return true
	}
	return c.wildcard && c.matches(queue)
}

// matches reports whether a wildcard client consumes queue: a lite topic
// of its parent matching one of its patterns (any, without patterns).
func (c *clientSubs) matches(queue string) bool {
	p, name, ok := SplitQueueName(queue)
	return ok && p == c.parent && (len(c.patterns) == 0 || MatchAnyPattern(c.patterns, name))
}

// Patterns returns a wildcard client's patterns (nil: every lite topic).
func (s *Subscriptions) Patterns(client string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.clients[client]; c != nil {
		return append([]string(nil), c.patterns...)
	}
	return nil
}

// Subscribers returns the client ids subscribed to queue (wildcard
// clients of its parent included).
func (s *Subscriptions) Subscribers(queue string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for c := range s.byQueue[queue] {
		out = append(out, c)
	}
	if p, _, ok := SplitQueueName(queue); ok {
		for id := range s.wildcard[p] {
			if c := s.clients[id]; c != nil && c.matches(queue) {
				out = append(out, id)
			}
		}
	}
	return out
}

// Count is the number of subscriptions over all clients.
func (s *Subscriptions) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active
}

// ClientCount is the number of clients holding subscriptions.
func (s *Subscriptions) ClientCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.clients)
}

// DropIdle forgets the clients whose subscriptions have not changed since
// before (ms) and returns them: clients re-send their complete set
// periodically, so one that stopped is gone (RocketMQ's
// cleanupExpiredSubscriptions).
func (s *Subscriptions) DropIdle(before int64) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for c, at := range s.updated {
		if at < before {
			out = append(out, c)
		}
	}
	for _, c := range out {
		s.dropLocked(c)
		delete(s.tombs, c)
	}
	return out
}

// Subscriber is one client subscribed to a lite topic, with its group.
type Subscriber struct {
	Client, Group string
}

// SubscribersOf returns the clients consuming queue (wildcard clients of
// its parent whose patterns match included) with their groups; with group
// set, only that group's.
func (s *Subscriptions) SubscribersOf(queue, group string) []Subscriber {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Subscriber
	for id := range s.byQueue[queue] {
		if c := s.clients[id]; c != nil && (group == "" || c.group == group) {
			out = append(out, Subscriber{Client: id, Group: c.group})
		}
	}
	if p, _, ok := SplitQueueName(queue); ok {
		for id := range s.wildcard[p] {
			if c := s.clients[id]; c != nil && (group == "" || c.group == group) && c.matches(queue) {
				out = append(out, Subscriber{Client: id, Group: c.group})
			}
		}
	}
	return out
}

// ClientsOf returns the clients of group holding subscriptions.
func (s *Subscriptions) ClientsOf(group string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for id, c := range s.clients {
		if c.group == group {
			out = append(out, id)
		}
	}
	return out
}

// Client returns a client's group, parent, whether it is a wildcard
// client, how many lite topics it subscribes and up to max of them, in no
// particular order (max <= 0: all); ok is false for an unknown client.
func (s *Subscriptions) Client(client string, max int) (group, parent string, wildcard bool, count int, queues []string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clients[client]
	if c == nil {
		return "", "", false, 0, nil, false
	}
	n := len(c.queues)
	if max > 0 && n > max {
		n = max
	}
	queues = make([]string, 0, n)
	for q := range c.queues {
		if len(queues) == n {
			break
		}
		queues = append(queues, q)
	}
	return c.group, c.parent, c.wildcard, len(c.queues), queues, true
}
