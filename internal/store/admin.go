package store

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/apogeemq/apogee/internal/names"
)

// CommitLogOffsetInQueue returns the commit-log offset of the message at a
// queue offset (RocketMQ getCommitLogOffsetInQueue).
func (s *Store) CommitLogOffsetInQueue(topic string, queueID int32, offset int64) (int64, error) {
	cq := s.getQueue(topic, queueID)
	if cq == nil {
		return 0, fmt.Errorf("store: queue %s-%d: %w", topic, queueID, ErrNotFound)
	}
	u, ok := cq.unitAt(offset)
	if !ok || u.blank() {
		return 0, fmt.Errorf("store: queue %s-%d offset %d: %w", topic, queueID, offset, ErrNotFound)
	}
	return u.PhyOffset, nil
}

// AssignedOffsetInQueue is the next queue offset the append path will
// assign (RocketMQ getMaxOffsetInQueue with committed=false): it can be
// ahead of MaxOffsetInQueue while dispatch catches up.
func (s *Store) AssignedOffsetInQueue(topic string, queueID int32) int64 {
	s.putMu.Lock()
	defer s.putMu.Unlock()
	if p := s.topicQueueTable[tqKey{topic, queueID}]; p != nil {
		return *p
	}
	return 0
}

// CleanExpiredConsumeQueues removes the consume queues whose every unit
// points below the commit-log min offset (all their messages expired), for
// topics other than system topics (RocketMQ cleanExpiredConsumerQueue). It
// returns the number of queues removed.
func (s *Store) CleanExpiredConsumeQueues() int {
	minPhy := s.commitLog.minOffset()
	removed := 0
	for _, cq := range s.allQueues() {
		if names.IsSystemTopic(cq.topic) {
			continue
		}
		if cq.deleted.Load() || cq.maxPhysicOffset.Load() < 0 || cq.maxPhysicOffset.Load() > minPhy {
			continue
		}
		s.queuesMu.Lock()
		ok := s.removeQueueLocked(cq)
		s.queuesMu.Unlock()
		if !ok {
			continue
		}
		s.creator.createMu.Lock()
		cq.writeMu.Lock()
		cq.deleted.Store(true)
		cq.forgetBehind()
		cq.files.destroyAll()
		cq.writeMu.Unlock()
		os.Remove(filepath.Join(s.cfg.StorePathRootDir, consumeQueueDirName, cq.topic))
		s.creator.createMu.Unlock()
		s.putMu.Lock()
		delete(s.topicQueueTable, tqKey{cq.topic, cq.queueID})
		s.putMu.Unlock()
		removed++
	}
	return removed
}
