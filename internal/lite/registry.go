package lite

import (
	"errors"
	"sort"
	"sync"
)

// ErrQuota is Touch's refusal of a new lite topic past the broker's quota.
var ErrQuota = errors.New("lite topic quota exceeded")

// Registry is a broker's set of lite topics with their last write times:
// what exists (created by its first send, not yet expired) and what is due
// to expire. It is memory only; the broker rebuilds it at start from the
// store's queues (a lite topic exists on disk only as its consume queue).
//
// Each parent topic keeps its lite topics in a list ordered by last write,
// oldest first: Touch moves an entry to the back, Expire pops from the
// front while the front is older than the parent's TTL. Creation, a write
// and an expiry therefore cost O(1) each, whatever the number of lite
// topics. Safe for concurrent use (one mutex; no call blocks or does I/O
// under it).
type Registry struct {
	mu      sync.Mutex
	topics  map[string]*entry   // queue name (QueueName) -> entry
	parents map[string]*parentQ // parent topic -> its entries by last write
}

// entry is one lite topic. Invariant: it is linked in exactly its
// parent's list while it is in Registry.topics.
type entry struct {
	queue      string // QueueName(parent, name)
	nameAt     int    // byte offset of the lite topic name in queue
	lastWrite  int64  // ms epoch of the last send (or the last stored message, after a restart)
	prev, next *entry
	parent     *parentQ
}

// parentQ is a parent topic's entries, oldest last write first.
type parentQ struct {
	name       string
	head, tail *entry
	count      int
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{topics: map[string]*entry{}, parents: map[string]*parentQ{}}
}

// Touch records a send to lite topic name of parent at now (ms): it creates
// the lite topic when absent, refusing with ErrQuota when the registry
// already holds quota lite topics (quota <= 0: no limit), and moves it to
// the back of its parent's expiry order. It returns the lite topic's queue
// name (QueueName, the registry's own string: a send to an existing lite
// topic allocates nothing here); created reports a new lite topic.
func (r *Registry) Touch(parent, name string, now int64, quota int) (queue string, created bool, err error) {
	var buf [128]byte
	key := append(append(append(append(buf[:0], Prefix...), parent...), Separator), name...)
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.topics[string(key)]; ok {
		if now > e.lastWrite {
			e.lastWrite = now
		}
		e.parent.moveToBack(e)
		return e.queue, false, nil
	}
	if quota > 0 && len(r.topics) >= quota {
		return "", false, ErrQuota
	}
	q := string(key)
	r.insert(parent, q, now)
	return q, true, nil
}

// Restore adds the lite topics found on disk (broker start): store topic
// name -> time of its last stored message. Names that are not lite topics'
// are skipped; a known lite topic keeps the later time. Each parent's
// expiry order is rebuilt once, O(n log n) for n lite topics.
func (r *Registry) Restore(found map[string]int64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	touched := map[*parentQ]bool{}
	for queue, lastWrite := range found {
		parent, _, ok := SplitQueueName(queue)
		if !ok {
			continue
		}
		n++
		if e, ok := r.topics[queue]; ok {
			e.lastWrite = max(e.lastWrite, lastWrite)
			touched[e.parent] = true
			continue
		}
		r.insert(parent, queue, lastWrite)
		touched[r.parents[parent]] = true
	}
	for p := range touched {
		p.sortByLastWrite()
	}
	return n
}

// RestoreAt adds lite topics found on disk with last write at (broker
// start: their real times come later through Refine, read off the disk in
// the background). It returns how many were added.
func (r *Registry) RestoreAt(queues []string, at int64) int {
	found := make(map[string]int64, len(queues))
	for _, q := range queues {
		found[q] = at
	}
	return r.Restore(found)
}

// Refine sets the real last write times of lite topics RestoreAt added at
// at, unless a send touched them since, and restores each parent's expiry
// order.
func (r *Registry) Refine(found map[string]int64, at int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	touched := map[*parentQ]bool{}
	for queue, lastWrite := range found {
		if e, ok := r.topics[queue]; ok && e.lastWrite == at && lastWrite < at {
			e.lastWrite = lastWrite
			touched[e.parent] = true
		}
	}
	for p := range touched {
		p.sortByLastWrite()
	}
}

func (r *Registry) insert(parent, queue string, lastWrite int64) {
	p := r.parents[parent]
	if p == nil {
		p = &parentQ{name: parent}
		r.parents[parent] = p
	}
	e := &entry{queue: queue, nameAt: len(Prefix) + len(parent) + 1, lastWrite: lastWrite, parent: p}
	r.topics[queue] = e
	p.pushBack(e)
}

// Exists reports whether the lite topic with store topic queue exists.
func (r *Registry) Exists(queue string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.topics[queue]
	return ok
}

// LastWrite returns a lite topic's last write time (ms) and whether it exists.
func (r *Registry) LastWrite(queue string) (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.topics[queue]; ok {
		return e.lastWrite, true
	}
	return 0, false
}

// Len is the number of lite topics.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.topics)
}

// Count is the number of lite topics of parent.
func (r *Registry) Count(parent string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.parents[parent]; p != nil {
		return p.count
	}
	return 0
}

// Parents returns the parent topics with at least one lite topic, sorted,
// with their counts.
func (r *Registry) Parents() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.parents))
	for name, p := range r.parents {
		out[name] = p.count
	}
	return out
}

// Topic is a lite topic as List reports it.
type Topic struct {
	Name      string // the lite topic name
	LastWrite int64  // ms epoch
}

// List returns up to limit (<= 0: all) lite topics of parent, sorted by name.
func (r *Registry) List(parent string, limit int) []Topic {
	r.mu.Lock()
	p := r.parents[parent]
	var out []Topic
	if p != nil {
		out = make([]Topic, 0, p.count)
		for e := p.head; e != nil; e = e.next {
			out = append(out, Topic{Name: e.queue[e.nameAt:], LastWrite: e.lastWrite})
		}
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// Delete removes a lite topic; it reports whether it existed.
func (r *Registry) Delete(queue string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.deleteLocked(queue)
}

func (r *Registry) deleteLocked(queue string) bool {
	e, ok := r.topics[queue]
	if !ok {
		return false
	}
	delete(r.topics, queue)
	p := e.parent
	p.unlink(e)
	if p.count == 0 {
		delete(r.parents, p.name)
	}
	return true
}

// Expire removes and returns (as store topic names) the lite topics whose
// last write is at or before now minus their parent's TTL: ttl(parent) in
// ms, <= 0 for a parent whose lite topics never expire. At most max
// (<= 0: no limit) are removed per call, oldest first per parent.
func (r *Registry) Expire(now int64, ttl func(parent string) int64, max int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for name, p := range r.parents {
		d := ttl(name)
		if d <= 0 {
			continue
		}
		for p.head != nil && now-p.head.lastWrite >= d {
			if max > 0 && len(out) >= max {
				return out
			}
			q := p.head.queue
			out = append(out, q)
			r.deleteLocked(q) // may drop p from parents: the loop ends then (p.head == nil)
		}
	}
	return out
}

func (p *parentQ) pushBack(e *entry) {
	e.prev, e.next = p.tail, nil
	if p.tail != nil {
		p.tail.next = e
	} else {
		p.head = e
	}
	p.tail = e
	p.count++
}

func (p *parentQ) unlink(e *entry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		p.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		p.tail = e.prev
	}
	e.prev, e.next = nil, nil
	p.count--
}

func (p *parentQ) moveToBack(e *entry) {
	if p.tail == e {
		return
	}
	p.unlink(e)
	p.pushBack(e)
}

// sortByLastWrite relinks the list oldest last write first.
func (p *parentQ) sortByLastWrite() {
	all := make([]*entry, 0, p.count)
	for e := p.head; e != nil; e = e.next {
		all = append(all, e)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].lastWrite < all[j].lastWrite })
	p.head, p.tail, p.count = nil, nil, 0
	for _, e := range all {
		p.pushBack(e)
	}
}
