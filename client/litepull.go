package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"
)

// LitePullConsumer is a pull consumer with RocketMQ's convenience layer
// (DefaultLitePullConsumer): Subscribe lets the group rebalance queues
// among its members, Assign reads a fixed set of queues; background
// goroutines pull (with flow control) into a buffer that Poll drains. Seek
// moves a queue; offsets are committed automatically (WithAutoCommit,
// default every 5 s) or by Commit.
//
// It uses LITE_PULL_MESSAGE with the subscription in every request, so the
// broker filters with the selector given here.
type LitePullConsumer struct {
	c   *PushConsumer
	svc *liteService // c's consume service: the Poll buffer

	mu     sync.Mutex
	polled map[MessageQueue]int64 // manual commit: offset after the last polled message; guarded by mu
}

// NewLitePullConsumer returns a lite pull consumer of group.
func NewLitePullConsumer(group string, opts ...ConsumerOpt) (*LitePullConsumer, error) {
	c, err := NewPushConsumer(group, opts...)
	if err != nil {
		return nil, err
	}
	svc := &liteService{c: c, pollCh: make(chan polledBatch, 64)}
	c.newService = func(*PushConsumer) consumeService { return svc }
	if c.cfg.autoCommit {
		c.cfg.persistInterval = c.cfg.autoCommitInterval
	}
	c.logger = c.cfg.logger.With("component", "lite-pull-consumer", "group", group)
	return &LitePullConsumer{c: c, svc: svc, polled: map[MessageQueue]int64{}}, nil
}

// Subscribe adds a topic; the group's members share its queues. Before
// Start; not combinable with Assign.
func (l *LitePullConsumer) Subscribe(topic string, sel Selector) error {
	if l.c.assigned != nil {
		return errors.New("client: Subscribe after Assign")
	}
	return l.c.subscribe(topic, sel, nil)
}

// Assign makes the consumer read exactly mqs (no rebalance). Before
// Start; not combinable with Subscribe.
func (l *LitePullConsumer) Assign(mqs ...MessageQueue) error {
	l.c.mu.Lock()
	started, subscribed := l.c.started, len(l.c.subs) > 0 && l.c.assigned == nil
	l.c.mu.Unlock()
	if started {
		return errors.New("client: Assign after Start")
	}
	if subscribed {
		return errors.New("client: Assign after Subscribe")
	}
	if len(mqs) == 0 {
		return errors.New("client: Assign needs queues")
	}
	assigned := maps.Clone(l.c.assigned) // a second Assign adds queues
	if assigned == nil {
		assigned = map[string][]MessageQueue{}
	}
	for _, mq := range mqs {
		w := mq
		w.Topic = wrapNamespace(l.c.cfg.namespace, mq.Topic)
		assigned[w.Topic] = append(assigned[w.Topic], w)
		if err := l.c.subscribe(mq.Topic, TagSelector("*"), nil); err != nil {
			return err
		}
	}
	l.c.assigned = assigned
	return nil
}

// Start joins the group (Subscribe) or starts reading the assigned queues.
func (l *LitePullConsumer) Start() error { return l.c.Start() }

// Close stops pulling, commits (auto-commit mode) and leaves the group.
// Messages polled but not committed (manual mode) are redelivered later.
func (l *LitePullConsumer) Close() error { return l.c.Close() }

// Poll returns the next pulled messages (one queue's batch, in offset
// order), blocking until some arrive, ctx ends (ctx.Err()) or the consumer
// closes (ErrClosed).
func (l *LitePullConsumer) Poll(ctx context.Context) ([]*MessageExt, error) {
	if err := l.ready(); err != nil {
		return nil, err
	}
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-l.c.quit:
			return nil, ErrClosed
		case b := <-l.svc.pollCh:
			if b.qs.pq.dropped.Load() {
				continue // seeked or reassigned: stale
			}
			off := b.qs.pq.removeMessages(b.msgs)
			if off >= 0 {
				if l.c.cfg.autoCommit {
					l.c.store.update(b.qs.mq, off, true)
				} else {
					l.mu.Lock()
					if off > l.polled[b.qs.mq] {
						l.polled[b.qs.mq] = off
					}
					l.mu.Unlock()
				}
			}
			l.c.stats.consumed.Add(int64(len(b.msgs)))
			return b.msgs, nil
		}
	}
}

// Commit stores the offsets of everything polled so far and uploads them
// (or writes the local file in broadcasting mode).
func (l *LitePullConsumer) Commit(ctx context.Context) error {
	if err := l.ready(); err != nil {
		return err
	}
	l.mu.Lock()
	polled := maps.Clone(l.polled)
	clear(l.polled)
	l.mu.Unlock()
	for mq, off := range polled {
		l.c.store.update(mq, off, true)
	}
	var mqs []MessageQueue
	for _, qs := range l.c.queueList() {
		mqs = append(mqs, qs.mq)
	}
	for mq := range polled {
		mqs = append(mqs, mq)
	}
	return l.c.store.persist(ctx, mqs)
}

// CommittedOffset returns the group's committed offset of mq: the
// in-memory one when this consumer holds it, else the stored one (-1 if
// none).
func (l *LitePullConsumer) CommittedOffset(ctx context.Context, mq MessageQueue) (int64, error) {
	if err := l.ready(); err != nil {
		return -1, err
	}
	mq.Topic = wrapNamespace(l.c.cfg.namespace, mq.Topic)
	return l.c.store.read(ctx, mq, false)
}

// Seek makes the next Poll of mq start at offset. mq must be currently
// assigned to this consumer.
func (l *LitePullConsumer) Seek(mq MessageQueue, offset int64) error {
	if err := l.ready(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("client: seek to negative offset %d", offset)
	}
	c := l.c
	mq.Topic = wrapNamespace(c.cfg.namespace, mq.Topic)
	c.rebalanceMu.Lock()
	defer c.rebalanceMu.Unlock()
	c.queuesMu.Lock()
	qs := c.queues[mq]
	if qs != nil {
		qs.pq.dropped.Store(true)
		qs.cancel()
		delete(c.queues, mq)
	}
	c.queuesMu.Unlock()
	if qs == nil {
		return fmt.Errorf("client: seek: %v is not assigned to this consumer", mq)
	}
	<-qs.done
	l.mu.Lock()
	delete(l.polled, mq)
	l.mu.Unlock()
	c.store.update(mq, offset, false)
	c.addQueue(mq, offset)
	return nil
}

// SeekToBegin seeks mq to its smallest stored offset.
func (l *LitePullConsumer) SeekToBegin(ctx context.Context, mq MessageQueue) error {
	return l.seekBy(ctx, mq, func(ctx context.Context, w MessageQueue) (int64, error) { return l.c.api.minOffset(ctx, w) })
}

// SeekToEnd seeks mq to its end (only new messages are polled).
func (l *LitePullConsumer) SeekToEnd(ctx context.Context, mq MessageQueue) error {
	return l.seekBy(ctx, mq, func(ctx context.Context, w MessageQueue) (int64, error) { return l.c.api.maxOffset(ctx, w) })
}

// SeekToTime seeks mq to the first message stored at or after t.
func (l *LitePullConsumer) SeekToTime(ctx context.Context, mq MessageQueue, t time.Time) error {
	return l.seekBy(ctx, mq, func(ctx context.Context, w MessageQueue) (int64, error) { return l.c.api.searchOffset(ctx, w, t) })
}

func (l *LitePullConsumer) seekBy(ctx context.Context, mq MessageQueue, fn func(context.Context, MessageQueue) (int64, error)) error {
	if err := l.ready(); err != nil {
		return err
	}
	w := mq
	w.Topic = wrapNamespace(l.c.cfg.namespace, mq.Topic)
	off, err := fn(ctx, w)
	if err != nil {
		return err
	}
	return l.Seek(mq, off)
}

// Pause stops pulling the given queues (already pulled messages can still
// be polled) until Resume.
func (l *LitePullConsumer) Pause(mqs ...MessageQueue) {
	l.c.pausedMu.Lock()
	defer l.c.pausedMu.Unlock()
	if l.c.paused == nil {
		l.c.paused = map[MessageQueue]bool{}
	}
	for _, mq := range mqs {
		mq.Topic = wrapNamespace(l.c.cfg.namespace, mq.Topic)
		l.c.paused[mq] = true
	}
}

// Resume restarts pulling paused queues.
func (l *LitePullConsumer) Resume(mqs ...MessageQueue) {
	l.c.pausedMu.Lock()
	defer l.c.pausedMu.Unlock()
	for _, mq := range mqs {
		mq.Topic = wrapNamespace(l.c.cfg.namespace, mq.Topic)
		delete(l.c.paused, mq)
	}
}

// Assignment returns the queues this consumer currently reads.
func (l *LitePullConsumer) Assignment() []MessageQueue {
	var out []MessageQueue
	for _, qs := range l.c.queueList() {
		mq := qs.mq
		mq.Topic = unwrapNamespace(l.c.cfg.namespace, mq.Topic)
		out = append(out, mq)
	}
	return out
}

// Stats returns the consumer's counters.
func (l *LitePullConsumer) Stats() ConsumerStats { return l.c.Stats() }

func (l *LitePullConsumer) ready() error {
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	switch {
	case l.c.closed:
		return ErrClosed
	case !l.c.started:
		return ErrNotStarted
	}
	return nil
}
