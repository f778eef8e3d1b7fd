package store

import (
	"sync/atomic"
	"time"
)

// prefaulter keeps the pages just ahead of the commit-log write position
// faulted in writable (MADV_POPULATE_WRITE), so the writer does not take
// page faults while it holds the append lock. Unlike RocketMQ's whole-file
// warm-up it only runs prefaultAhead bytes ahead, so the zero pages it
// dirties are overwritten by real data long before writeback: no extra I/O.
type prefaulter struct {
	file  atomic.Pointer[mappedFile]
	upTo  atomic.Int64 // file position faulted so far in file
	ahead int64
}

// maybeWake is called by the writer after an append (putMu held): it wakes
// the prefault goroutine when the writer is within half the window of the
// faulted end, or moved to another file.
func (s *Store) maybeWakePrefault(f *mappedFile) {
	p := &s.prefault
	if p.ahead <= 0 {
		return
	}
	if p.file.Load() != f || f.wrote.Load()+p.ahead/2 > p.upTo.Load() {
		wake(s.wakePrefault)
	}
}

// runPrefault is the prefault goroutine.
func (s *Store) runPrefault() {
	p := &s.prefault
	t := time.NewTimer(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-s.wakePrefault:
		case <-t.C:
		}
		t.Reset(10 * time.Millisecond)
		f := s.commitLog.last()
		if f == nil || f.pooled {
			continue
		}
		if p.file.Load() != f {
			p.file.Store(f)
			p.upTo.Store(f.wrote.Load() &^ (pageSize - 1))
		}
		target := min(f.wrote.Load()+p.ahead, f.size)
		from := p.upTo.Load()
		if target <= from {
			continue
		}
		if f.populate(from, target) {
			p.upTo.Store(target)
		}
	}
}
