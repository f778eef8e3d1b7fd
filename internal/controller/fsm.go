package controller

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/hashicorp/raft"
)

// fsm is the raft state machine: the broker sets. raft calls Apply,
// Snapshot and Restore on its FSM goroutine; readers take mu for a copy.
type fsm struct {
	mu sync.RWMutex
	st *state // guarded by mu
}

func newFSM() *fsm { return &fsm{st: newState()} }

// Apply implements raft.FSM; it returns an opResult.
func (f *fsm) Apply(l *raft.Log) any {
	var o op
	if err := json.Unmarshal(l.Data, &o); err != nil {
		return fail(0, "controller: undecodable log entry %d: %v", l.Index, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st.apply(&o)
}

// Snapshot implements raft.FSM: the whole state as JSON.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	b, err := f.st.marshal()
	if err != nil {
		return nil, fmt.Errorf("controller: snapshot: %w", err)
	}
	return snapshot(b), nil
}

// Restore implements raft.FSM.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return fmt.Errorf("controller: restore: %w", err)
	}
	st, err := unmarshalState(b)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.st = st
	f.mu.Unlock()
	return nil
}

// set returns a copy of one broker set (nil if absent).
func (f *fsm) set(name string) *brokerSet {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if s := f.st.Sets[name]; s != nil {
		return s.clone()
	}
	return nil
}

// snapshotState returns a copy of the whole state.
func (f *fsm) snapshotState() *state {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.st.clone()
}

type snapshot []byte

func (s snapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		sink.Cancel()
		return fmt.Errorf("controller: persist snapshot: %w", err)
	}
	return sink.Close()
}

func (s snapshot) Release() {}
