package broker

import (
	"container/heap"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/lite"
	"github.com/apogeemq/apogee/internal/pop"
)

// Lite event dispatch (RocketMQ 5.5's LiteEventDispatcher;
// docs/priority-and-lite.md).
//
// A POP_LITE_MESSAGE pops only the lite topics named by its client's
// queued events (lite.Events), so its cost follows arrivals, not the
// client's subscriptions. An event goes to one client of each subscribed
// group (a random one, a client just taken for blocked last) when:
//
//   - a message arrives on a lite topic (the store's arrival notifier);
//   - a lite topic may have unblocked: an orderly ack or invisible-time
//     change on it, or the end of a popped batch's invisible time (the
//     unblock timers below);
//   - a client subscribes a lite topic that has a backlog for its group.
//
// A client's queue holds at most its capacity: the group attribute
// lite.sub.client.max.event.cnt, else broker.conf maxClientEventCount
// (default 100). An event that does not fit schedules a full dispatch of
// the client liteEventFullDispatchDelayTime ms later: one pass over its
// subscriptions queueing each lite topic with a backlog, once its queue is
// below the low water mark. Every liteEventCheckInterval ms the clients
// taken for blocked (lite.Events.MaybeBlocked) lose their queue, whose
// events go to the other clients of their group, and are chosen last for
// 10 s. A wildcard group's clients get a full dispatch over the parent's
// lite topics when they subscribe and when no client could take an event.
//
// The lite-events goroutine owns the timers (unblock, full dispatch, the
// blocked-client check); dispatch itself runs on the caller's goroutine
// (the store's dispatch goroutine for arrivals) and only takes in-memory
// locks.

// Lite event keys of broker.conf and the group attribute.
const (
	attrLiteMaxEventCount = "lite.sub.client.max.event.cnt" // group attribute, >= 10
	liteBlacklistMs       = 10 * 1000                       // a blocked client is chosen last this long
	liteWildcardClient    = "$"                             // full-dispatch key prefix of a wildcard group: "$group$"
)

// liteEvents is the broker's lite event dispatcher.
type liteEvents struct {
	l      *liteService
	events *lite.Events
	wake   chan struct{} // capacity 1: the loop looks at its timers now

	mu      sync.Mutex
	full    map[string]liteFullReq   // client id (or "$group$") -> its scheduled full dispatch; guarded by mu
	black   map[string]int64         // client id -> ms until which it is chosen last; guarded by mu
	pending map[liteUnblockKey]int64 // latest unblock time per (group, queue); guarded by mu
	timers  liteUnblockHeap          // guarded by mu
	checkAt int64                    // ms of the next blocked-client check; guarded by mu
	idleAt  int64                    // ms of the next idle-subscription check; guarded by mu
}

type liteFullReq struct {
	client, group string
	at            int64
}

type liteUnblockKey struct{ group, queue string }

type liteUnblock struct {
	at  int64
	key liteUnblockKey
}

type liteUnblockHeap []liteUnblock

func (h liteUnblockHeap) Len() int           { return len(h) }
func (h liteUnblockHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h liteUnblockHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *liteUnblockHeap) Push(x any)        { *h = append(*h, x.(liteUnblock)) }
func (h *liteUnblockHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func newLiteEvents(l *liteService) *liteEvents {
	return &liteEvents{l: l, events: lite.NewEvents(), wake: make(chan struct{}, 1),
		full: map[string]liteFullReq{}, black: map[string]int64{}, pending: map[liteUnblockKey]int64{}}
}

func (d *liteEvents) signal() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// onArrival is the store's arrival notifier: a message on a lite topic's
// queue is an event for its subscribers.
func (d *liteEvents) onArrival(topic string, queueID int32, _ int64, _ int64, _ int64) {
	if queueID == 0 && lite.IsQueueName(topic) {
		d.dispatch("", topic, "")
	}
}

// capacity is a group's event queue capacity and whether it is a wildcard
// group.
func (d *liteEvents) capacity(group string) (int, bool) {
	b := d.l.b
	n := b.cfg.MaxClientEventCount
	gc, ok := b.Groups.Get(group)
	if !ok {
		return n, false
	}
	if v, err := strconv.Atoi(gc.Attributes[attrLiteMaxEventCount]); err == nil && v > 0 {
		n = max(v, 10) // RocketMQ's attribute range starts at 10
	}
	_, wildcard := gc.Attributes[attrLiteWildcard]
	return n, wildcard
}

// dispatch gives an event for queue to one client of each subscribed group
// (only group's, when set), avoiding exclude unless it is the only choice.
func (d *liteEvents) dispatch(group, queue, exclude string) {
	subs := d.l.subs.SubscribersOf(queue, group)
	switch {
	case len(subs) == 0:
	case len(subs) == 1 || sameGroup(subs):
		d.selectAndDispatch(queue, subs, exclude)
	default:
		byGroup := map[string][]lite.Subscriber{}
		for _, s := range subs {
			byGroup[s.Group] = append(byGroup[s.Group], s)
		}
		for _, list := range byGroup {
			d.selectAndDispatch(queue, list, exclude)
		}
	}
}

func sameGroup(subs []lite.Subscriber) bool {
	for _, s := range subs[1:] {
		if s.Group != subs[0].Group {
			return false
		}
	}
	return true
}

// selectAndDispatch offers the event to one of clients (all of one group),
// starting at a random one; exclude and blacklisted clients are tried last.
// It reports whether a client took it.
func (d *liteEvents) selectAndDispatch(queue string, clients []lite.Subscriber, exclude string) bool {
	group := clients[0].Group
	capacity, wildcard := d.capacity(group)
	now := d.l.b.now().UnixMilli()
	start := 0
	if len(clients) > 1 {
		start = rand.IntN(len(clients))
	}
	var fallback []string
	chosen := ""
	for i := range clients {
		c := clients[(start+i)%len(clients)].Client
		if c == exclude {
			fallback = append(fallback, c)
			continue
		}
		if d.blacklisted(c, now) {
			if !wildcard { // a wildcard group may be large: do not go round twice
				fallback = append(fallback, c)
			}
			continue
		}
		if d.offer(queue, c, group, capacity, !wildcard, now) {
			chosen = c
			break
		}
	}
	if chosen == "" {
		for _, c := range fallback {
			if d.offer(queue, c, group, capacity, !wildcard, now) {
				chosen = c
				break
			}
		}
	}
	if chosen != "" {
		if p := d.l.b.pop; p != nil {
			p.hold.notify(queue)
		}
		return true
	}
	if wildcard {
		d.scheduleFull(liteWildcardClient+group+liteWildcardClient, group, d.l.b.cfg.LiteEventFullDispatchDelayTimeForWildcardGroup)
	}
	return false
}

// offer queues the event for the client; a full queue schedules a full
// dispatch of the client when scheduleIfFull.
func (d *liteEvents) offer(queue, client, group string, capacity int, scheduleIfFull bool, now int64) bool {
	if d.events.Offer(client, group, queue, capacity, now) {
		return true
	}
	if scheduleIfFull {
		delay := d.l.b.cfg.LiteEventFullDispatchDelayTime
		if d.blacklisted(client, now) {
			delay += rand.Int64N(15000)
		}
		d.scheduleFull(client, group, delay)
	}
	return false
}

func (d *liteEvents) blacklisted(client string, now int64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	until, ok := d.black[client]
	if ok && until <= now {
		delete(d.black, client)
		return false
	}
	return ok
}

// scheduleFull schedules a full dispatch of the client (or "$group$")
// delay ms from now, unless one is scheduled already.
func (d *liteEvents) scheduleFull(key, group string, delay int64) {
	d.mu.Lock()
	if _, ok := d.full[key]; ok {
		d.mu.Unlock()
		return
	}
	d.full[key] = liteFullReq{client: key, group: group, at: d.l.b.now().UnixMilli() + max(delay, 50)}
	d.mu.Unlock()
	d.signal()
}

// hasBacklog reports whether the group has messages to consume in a lite
// topic's queue: it exists, holds messages, and the group's committed
// offset (none: it starts at the first message) is below its end.
func (d *liteEvents) hasBacklog(group, queue string) bool {
	b := d.l.b
	if !d.l.registry.Exists(queue) {
		return false
	}
	maxO := b.Store.MaxOffsetInQueue(queue, 0)
	if maxO <= 0 {
		return false
	}
	off, had := b.Offsets.Query(group, queue, 0)
	return !had || off < maxO
}

// onSubscribe is told the queues a client newly subscribed (RocketMQ's
// onRegister): those with a backlog are events. A new wildcard client gets
// a full dispatch of its group at once (RocketMQ schedules it 5 s later;
// doing it in the request makes the first pop see the backlog).
func (d *liteEvents) onSubscribe(group string, queues []string, wildcard bool) {
	if wildcard {
		d.fullDispatchWildcard(group)
		return
	}
	for _, q := range queues {
		if d.hasBacklog(group, q) {
			d.dispatch(group, q, "")
		}
	}
}

// onDrop is told that a client's subscriptions ended: its queued events go
// to the other clients of its group.
func (d *liteEvents) onDrop(client string) {
	group, pending := d.events.Remove(client)
	for _, q := range pending {
		d.dispatch(group, q, client)
	}
}

// onUnblockable is told that a lite topic's FIFO block for group may end
// (an orderly ack or invisible-time change): an event if it is not blocked
// any more and has a backlog for the group.
func (d *liteEvents) onUnblockable(group, queue string) {
	p := d.l.b.pop
	if p == nil {
		return
	}
	if v := p.state.OrderView(pop.QueueKey{Group: group, Topic: queue}, d.l.b.now().UnixMilli()); !v.Blocked && d.hasBacklog(group, queue) {
		d.dispatch(group, queue, "")
	}
}

// unblockAt arranges an event for (group, queue) at ms at, when a popped
// batch's invisible time ends. One timer per key is kept pending at a time:
// a later time replaces the pending one when it fires; an earlier one is
// added.
func (d *liteEvents) unblockAt(group, queue string, at int64) {
	k := liteUnblockKey{group, queue}
	d.mu.Lock()
	cur, ok := d.pending[k]
	d.pending[k] = at
	if !ok || at < cur {
		heap.Push(&d.timers, liteUnblock{at: at, key: k})
	}
	first := d.timers[0].at == at
	d.mu.Unlock()
	if first {
		d.signal()
	}
}

// loop runs the timers until the broker stops.
func (d *liteEvents) loop() {
	b := d.l.b
	t := time.NewTimer(time.Second)
	defer t.Stop()
	for {
		select {
		case <-b.quit:
			return
		case <-t.C:
		case <-d.wake:
		}
		next := d.tick(b.now().UnixMilli())
		t.Reset(time.Duration(min(max(next, 5), 1000)) * time.Millisecond)
	}
}

// tick fires the due unblock timers and full dispatches and, every
// liteEventCheckInterval, the blocked-client check; it returns the ms until
// the next due timer.
func (d *liteEvents) tick(now int64) int64 {
	var unblock []liteUnblockKey
	var full []liteFullReq
	check := false
	d.mu.Lock()
	for len(d.timers) > 0 && d.timers[0].at <= now {
		it := heap.Pop(&d.timers).(liteUnblock)
		want, ok := d.pending[it.key]
		switch {
		case !ok:
		case want > it.at:
			heap.Push(&d.timers, liteUnblock{at: want, key: it.key})
		default:
			delete(d.pending, it.key)
			unblock = append(unblock, it.key)
		}
	}
	for k, r := range d.full {
		if r.at <= now {
			full = append(full, r)
			delete(d.full, k)
		}
	}
	if now >= d.checkAt {
		check = true
		d.checkAt = now + max(d.l.b.cfg.LiteEventCheckInterval, 10)
	}
	idle := false
	if d.idleAt == 0 {
		d.idleAt = now + max(d.l.b.cfg.LiteSubscriptionCheckInterval, 10)
	} else if now >= d.idleAt {
		idle = true
		d.idleAt = now + max(d.l.b.cfg.LiteSubscriptionCheckInterval, 10)
	}
	next := min(d.checkAt, d.idleAt) - now
	if len(d.timers) > 0 {
		next = min(next, d.timers[0].at-now)
	}
	for _, r := range d.full {
		next = min(next, r.at-now)
	}
	d.mu.Unlock()
	for _, k := range unblock {
		d.onUnblockable(k.group, k.queue)
	}
	if check {
		d.checkBlocked(now)
	}
	if idle {
		d.dropIdleSubscriptions(now)
	}
	for _, r := range full {
		if len(r.client) > 1 && r.client[0] == '$' && r.client[len(r.client)-1] == '$' {
			d.fullDispatchWildcard(r.group)
		} else {
			d.fullDispatchClient(r.client, r.group)
		}
	}
	return next
}

// dropIdleSubscriptions forgets the clients whose subscriptions no
// LITE_SUBSCRIPTION_CTL changed for liteSubscriptionCheckTimeoutMills
// (RocketMQ's LiteSubscriptionRegistry cleanup): a client that stopped
// sending its periodic complete set is gone. It is not told. It returns
// the clients dropped.
func (d *liteEvents) dropIdleSubscriptions(now int64) []string {
	l := d.l
	idle := l.subs.DropIdle(now - l.b.cfg.LiteSubscriptionCheckTimeoutMills)
	for _, c := range idle {
		l.setConn(c, nil)
		d.onDrop(c)
	}
	if len(idle) > 0 {
		l.b.logger.Info("lite: idle subscriptions removed", "clients", len(idle),
			"timeoutMs", l.b.cfg.LiteSubscriptionCheckTimeoutMills)
	}
	return idle
}

// checkBlocked takes the queues of the clients taken for blocked and gives
// their events to the other clients of their groups.
func (d *liteEvents) checkBlocked(now int64) {
	for _, c := range d.events.MaybeBlocked(now) {
		d.mu.Lock()
		d.black[c] = now + liteBlacklistMs
		d.mu.Unlock()
		group, pending := d.events.Remove(c)
		if len(pending) > 0 {
			d.l.b.logger.Warn("lite: client inactive, its events go to others", "client", c, "events", len(pending))
		}
		for _, q := range pending {
			d.dispatch(group, q, c) // may still go back to c
		}
	}
}

// fullDispatchClient queues every subscribed lite topic of the client with
// a backlog (RocketMQ's doFullDispatchForClient), unless its queue is not
// ready: then it is tried again later. It returns how many were queued.
func (d *liteEvents) fullDispatchClient(client, group string) int {
	b := d.l.b
	g, _, wildcard, _, queues, ok := d.l.subs.Client(client, 0)
	if !ok || g != group || len(queues) == 0 {
		return 0
	}
	if wildcard {
		return d.fullDispatchWildcard(group)
	}
	capacity, _ := d.capacity(group)
	now := b.now().UnixMilli()
	blocked, active, low := d.events.Readiness(client, capacity, now)
	delay := b.cfg.LiteEventFullDispatchDelayTime
	switch {
	case blocked:
		d.scheduleFull(client, group, delay+rand.Int64N(15000))
		return 0
	case !low:
		if !active {
			delay += rand.Int64N(10000)
		}
		d.scheduleFull(client, group, delay)
		return 0
	}
	n := 0
	for _, q := range queues {
		if !d.hasBacklog(group, q) {
			continue
		}
		if !d.events.Offer(client, group, q, capacity, now) {
			if !active {
				delay += rand.Int64N(15000)
			}
			d.scheduleFull(client, group, delay)
			break
		}
		n++
	}
	if n > 0 && b.pop != nil {
		b.pop.hold.notify(queues[0])
	}
	return n
}

// fullDispatchWildcard dispatches every lite topic of the wildcard group's
// parent with a backlog to its clients (RocketMQ's
// doFullDispatchForWildcardGroup: one pass over the parent's lite topics).
func (d *liteEvents) fullDispatchWildcard(group string) int {
	parent := ""
	for _, c := range d.l.subs.ClientsOf(group) {
		if _, p, wildcard, _, _, ok := d.l.subs.Client(c, 0); ok && wildcard {
			parent = p
			break
		}
	}
	if parent == "" {
		return 0
	}
	n := 0
	for _, t := range d.l.registry.List(parent, 0) {
		q := lite.QueueName(parent, t.Name)
		if !d.hasBacklog(group, q) {
			continue
		}
		subs := d.l.subs.SubscribersOf(q, group)
		if len(subs) == 0 {
			continue
		}
		if !d.selectAndDispatch(q, subs, "") {
			break
		}
		n++
	}
	return n
}

// fullDispatchGroup runs a full dispatch of every client of the group
// (TRIGGER_LITE_DISPATCH without a client).
func (d *liteEvents) fullDispatchGroup(group string) int {
	if _, wildcard := d.capacity(group); wildcard {
		return d.fullDispatchWildcard(group)
	}
	n := 0
	for _, c := range d.l.subs.ClientsOf(group) {
		n += d.fullDispatchClient(c, group)
	}
	return n
}
