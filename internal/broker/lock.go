package broker

import (
	"context"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

type lockEntry struct {
	clientID   string
	lastUpdate time.Time
}

// queueLockKey ignores the broker name: locks are per broker anyway.
type queueLockKey struct {
	topic   string
	queueID int32
}

// RebalanceLockManager keeps the ordered-consumption queue locks: per group,
// queue -> holder client id. A lock not refreshed for maxLive
// (rebalanceLockMaxLiveTime, 60 s by default; docs/broker.md §1.12)
// is free.
type RebalanceLockManager struct {
	now     func() time.Time
	maxLive time.Duration

	mu    sync.Mutex
	table map[string]map[queueLockKey]*lockEntry // group -> queue -> holder; guarded by mu
}

func newRebalanceLockManager(now func() time.Time, maxLive time.Duration) *RebalanceLockManager {
	return &RebalanceLockManager{now: now, maxLive: maxLive, table: make(map[string]map[queueLockKey]*lockEntry)}
}

// TryLockBatch locks (or refreshes) every queue that is free, expired or
// already held by clientID, and returns those the client now holds.
func (m *RebalanceLockManager) TryLockBatch(group string, mqs []protocol.MessageQueue, clientID string) []protocol.MessageQueue {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	g, ok := m.table[group]
	if !ok {
		g = make(map[queueLockKey]*lockEntry)
		m.table[group] = g
	}
	out := make([]protocol.MessageQueue, 0, len(mqs))
	for _, mq := range mqs {
		k := queueLockKey{mq.Topic, mq.QueueID}
		e, held := g[k]
		if held && e.clientID != clientID && now.Sub(e.lastUpdate) <= m.maxLive {
			continue
		}
		g[k] = &lockEntry{clientID: clientID, lastUpdate: now}
		out = append(out, mq)
	}
	return out
}

// UnlockBatch releases the queues held by clientID.
func (m *RebalanceLockManager) UnlockBatch(group string, mqs []protocol.MessageQueue, clientID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.table[group]
	for _, mq := range mqs {
		k := queueLockKey{mq.Topic, mq.QueueID}
		if e, ok := g[k]; ok && e.clientID == clientID {
			delete(g, k)
		}
	}
	if len(g) == 0 {
		delete(m.table, group)
	}
}

// HasActiveLocks reports whether the group holds any unexpired lock: its
// retry messages then go straight to the DLQ (docs/broker.md §1.10).
func (m *RebalanceLockManager) HasActiveLocks(group string) bool {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.table[group] {
		if now.Sub(e.lastUpdate) <= m.maxLive {
			return true
		}
	}
	return false
}

// processLockBatch serves LOCK_BATCH_MQ (41; body LockBatchRequestBody):
// the response body lists the queues the requester now holds. The Go
// client decodes it with a standard JSON decoder.
func (b *Broker) processLockBatch(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var body protocol.LockBatchRequestBody
	if err := protocol.UnmarshalFastJSON(req.Body, &body); err != nil {
		return nil, protocol.Errorf(protocol.SystemError, "%v", err)
	}
	locked := b.Locks.TryLockBatch(body.ConsumerGroup, body.MQSet, body.ClientID)
	out, err := protocol.MarshalJSON(&protocol.LockBatchResponseBody{LockOKMQSet: locked})
	if err != nil {
		return nil, err
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = out
	return resp, nil
}

// processUnlockBatch serves UNLOCK_BATCH_MQ (42).
func (b *Broker) processUnlockBatch(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var body protocol.LockBatchRequestBody
	if err := protocol.UnmarshalFastJSON(req.Body, &body); err != nil {
		return nil, protocol.Errorf(protocol.SystemError, "%v", err)
	}
	b.Locks.UnlockBatch(body.ConsumerGroup, body.MQSet, body.ClientID)
	return protocol.NewResponse(req, protocol.Success, ""), nil
}
