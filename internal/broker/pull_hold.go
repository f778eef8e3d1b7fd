package broker

import (
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// pullRequest is a PULL_MESSAGE parked until a message arrives or its hold
// time ends (docs/broker.md §1.7).
type pullRequest struct {
	conn     *remoting.Conn
	req      *protocol.Command
	topic    string
	queueID  int32
	offset   int64 // the requested queue offset
	filter   *tagFilter
	deadline time.Time
}

type queueKey struct {
	topic   string
	queueID int32
}

// arrival summarises the messages dispatched to one queue since the hold
// loop last looked: the highest new max offset and the tag codes seen (up
// to maxArrivalCodes; beyond that any filter is assumed to match).
type arrival struct {
	maxOffset int64
	codes     []int64
	overflow  bool
}

const maxArrivalCodes = 64

// pullHoldService is RocketMQ's PullRequestHoldService. Held requests are
// keyed by (topic, queueId). Three things wake a held request, which one of
// holdWorkers goroutines then re-executes and answers:
//
//   - an arrival on its queue beyond its offset whose tag code matches its
//     filter (only with longPollingEnable);
//   - the periodic check (every 5 s, or shortPollingTimeMills without long
//     polling) finding the queue grew past its offset;
//   - its hold time ending (the answer is then usually PULL_NOT_FOUND).
//
// The store's arrival listener runs on the dispatch goroutine: it only
// records the arrival under mu and wakes the loop, never re-executing pulls
// itself.
type pullHoldService struct {
	b    *Broker
	wake chan struct{} // capacity 1, non-blocking send
	// ready feeds re-executions to holdWorkers goroutines so one slow
	// pull does not delay the others' wake-ups.
	ready chan *pullRequest

	mu       sync.Mutex
	held     map[queueKey][]*pullRequest // guarded by mu
	arrivals map[queueKey]*arrival       // guarded by mu; only keys with held requests
}

func newPullHoldService(b *Broker) *pullHoldService {
	return &pullHoldService{
		b:        b,
		wake:     make(chan struct{}, 1),
		ready:    make(chan *pullRequest, 1024),
		held:     make(map[queueKey][]*pullRequest),
		arrivals: make(map[queueKey]*arrival),
	}
}

func (s *pullHoldService) suspend(r *pullRequest) {
	k := queueKey{r.topic, r.queueID}
	s.mu.Lock()
	s.held[k] = append(s.held[k], r)
	s.mu.Unlock()
	s.b.stats.pullHeld.Add(1)
	s.signal()
}

func (s *pullHoldService) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// onArrival is the store's arrival listener.
func (s *pullHoldService) onArrival(topic string, queueID int32, queueOffset int64, tagsCode int64, _ int64) {
	k := queueKey{topic, queueID}
	s.mu.Lock()
	if len(s.held[k]) == 0 {
		s.mu.Unlock()
		return
	}
	a := s.arrivals[k]
	if a == nil {
		a = &arrival{}
		s.arrivals[k] = a
	}
	a.maxOffset = max(a.maxOffset, queueOffset+1)
	if len(a.codes) < maxArrivalCodes {
		a.codes = append(a.codes, tagsCode)
	} else {
		a.overflow = true
	}
	s.mu.Unlock()
	s.signal()
}

func (s *pullHoldService) checkInterval() time.Duration {
	if s.b.cfg.LongPollingEnable {
		return 5 * time.Second
	}
	return time.Duration(s.b.dyn.shortPolling.Load())
}

// run is the service goroutine.
func (s *pullHoldService) run() {
	timer := time.NewTimer(s.checkInterval())
	defer timer.Stop()
	lastScan := s.b.now()
	for {
		select {
		case <-s.b.quit:
			s.dropAll()
			return
		case <-s.wake:
		case <-timer.C:
		}
		now := s.b.now()
		s.handleArrivals()
		full := now.Sub(lastScan) >= s.checkInterval()
		if full {
			lastScan = now
		}
		next := s.scan(now, full)
		d := s.checkInterval() - now.Sub(lastScan)
		if !next.IsZero() {
			d = min(d, next.Sub(now))
		}
		timer.Reset(max(d, time.Millisecond))
	}
}

// handleArrivals re-executes held requests whose queue received a matching
// message beyond their offset.
func (s *pullHoldService) handleArrivals() {
	s.mu.Lock()
	if len(s.arrivals) == 0 {
		s.mu.Unlock()
		return
	}
	arrivals := s.arrivals
	s.arrivals = make(map[queueKey]*arrival)
	var ready []*pullRequest
	for k, a := range arrivals {
		reqs := s.held[k]
		kept := reqs[:0]
		for _, r := range reqs {
			if a.maxOffset > r.offset && a.matches(r.filter) {
				ready = append(ready, r)
			} else {
				kept = append(kept, r)
			}
		}
		s.setHeldLocked(k, kept)
	}
	s.mu.Unlock()
	s.execute(ready)
}

func (a *arrival) matches(f *tagFilter) bool {
	if a.overflow || f == nil || f.all {
		return true
	}
	for _, c := range a.codes {
		if f.MatchTagsCode(c) {
			return true
		}
	}
	return false
}

// scan answers expired requests and, on a full scan, requests whose queue
// grew. It returns the earliest remaining deadline (zero if none).
func (s *pullHoldService) scan(now time.Time, full bool) time.Time {
	var maxOffsets map[queueKey]int64
	if full {
		s.mu.Lock()
		keys := make([]queueKey, 0, len(s.held))
		for k := range s.held {
			keys = append(keys, k)
		}
		s.mu.Unlock()
		maxOffsets = make(map[queueKey]int64, len(keys))
		for _, k := range keys {
			maxOffsets[k] = s.b.Store.MaxOffsetInQueue(k.topic, k.queueID)
		}
	}
	var ready []*pullRequest
	var next time.Time
	s.mu.Lock()
	for k, reqs := range s.held {
		kept := reqs[:0]
		for _, r := range reqs {
			mo, known := maxOffsets[k]
			switch {
			case !now.Before(r.deadline), known && mo > r.offset:
				ready = append(ready, r)
			case isClosed(r.conn):
				s.b.stats.pullHeld.Add(-1)
			default:
				kept = append(kept, r)
				if next.IsZero() || r.deadline.Before(next) {
					next = r.deadline
				}
			}
		}
		s.setHeldLocked(k, kept)
	}
	s.mu.Unlock()
	s.execute(ready)
	return next
}

func isClosed(c *remoting.Conn) bool {
	select {
	case <-c.Closed():
		return true
	default:
		return false
	}
}

// setHeldLocked stores the remaining requests of a queue. REQUIRES: s.mu held.
func (s *pullHoldService) setHeldLocked(k queueKey, kept []*pullRequest) {
	if len(kept) == 0 {
		delete(s.held, k)
		delete(s.arrivals, k)
		return
	}
	s.held[k] = kept
}

// holdWorkers re-execute woken pulls.
const holdWorkers = 4

// startWorkers launches the re-execution workers.
func (s *pullHoldService) startWorkers() {
	for range holdWorkers {
		s.b.goFunc("pull-hold-worker", s.work)
	}
}

func (s *pullHoldService) work() {
	for {
		select {
		case <-s.b.quit:
			return
		case r := <-s.ready:
			s.reexecute(r)
		}
	}
}

// execute hands woken pulls to the workers (blocking only while all are
// busy and the queue is full).
func (s *pullHoldService) execute(reqs []*pullRequest) {
	for _, r := range reqs {
		s.b.stats.pullHeld.Add(-1)
		select {
		case s.ready <- r:
		case <-s.b.quit:
			return
		}
	}
}

// reexecute re-runs a pull without suspension and writes its response.
func (s *pullHoldService) reexecute(r *pullRequest) {
	if isClosed(r.conn) {
		return
	}
	resp, err := s.b.pull(r.conn, r.req, false)
	if err != nil {
		resp = errorResponse(r.req, err)
	}
	if resp == nil {
		return
	}
	if err := r.conn.WriteResponse(resp); err != nil {
		s.b.logger.Debug("write held pull response", "addr", r.conn.RemoteAddr(), "err", err)
	}
}

// dropAll forgets every held request at shutdown; their connections close
// with the server.
func (s *pullHoldService) dropAll() {
	s.mu.Lock()
	n := 0
	for _, reqs := range s.held {
		n += len(reqs)
	}
	s.held = make(map[queueKey][]*pullRequest)
	s.arrivals = make(map[queueKey]*arrival)
	s.mu.Unlock()
	s.b.stats.pullHeld.Add(int64(-n))
}

// heldCount reports the number of parked requests.
func (s *pullHoldService) heldCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, reqs := range s.held {
		n += len(reqs)
	}
	return n
}

// errorResponse renders a processor error as RocketMQ does: a
// *protocol.Error keeps its code and remark, anything else is SYSTEM_ERROR.
func errorResponse(req *protocol.Command, err error) *protocol.Command {
	if pe, ok := err.(*protocol.Error); ok {
		return protocol.NewResponse(req, pe.Code, pe.Remark)
	}
	return protocol.NewResponse(req, protocol.SystemError, err.Error())
}
