package client

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

type fakeOffsetBackend struct {
	mu      sync.Mutex
	stored  map[MessageQueue]int64
	queries int
	fail    error
}

func (f *fakeOffsetBackend) queryConsumerOffset(_ context.Context, _ string, mq MessageQueue) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries++
	if f.fail != nil {
		return -1, f.fail
	}
	if off, ok := f.stored[mq]; ok {
		return off, nil
	}
	return -1, nil
}

func (f *fakeOffsetBackend) updateConsumerOffset(_ context.Context, _ string, mq MessageQueue, off int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stored == nil {
		f.stored = map[MessageQueue]int64{}
	}
	f.stored[mq] = off
	return nil
}

func TestRemoteOffsetStore(t *testing.T) {
	ctx := context.Background()
	mq := MessageQueue{Topic: "T", BrokerName: "b", QueueID: 1}
	be := &fakeOffsetBackend{stored: map[MessageQueue]int64{mq: 7}}
	s := newRemoteOffsetStore("g", be)
	if off, err := s.read(ctx, mq, false); err != nil || off != 7 {
		t.Fatalf("read: %d %v", off, err)
	}
	if off, _ := s.read(ctx, mq, false); off != 7 || be.queries != 1 {
		t.Fatalf("memory read went to the broker: queries=%d", be.queries)
	}
	s.update(mq, 10, true)
	s.update(mq, 9, true) // late completion: ignored
	if off, _ := s.read(ctx, mq, false); off != 10 {
		t.Fatalf("increase-only update: %d", off)
	}
	if err := s.persist(ctx, []MessageQueue{mq}); err != nil || be.stored[mq] != 10 {
		t.Fatalf("persist: %v %d", err, be.stored[mq])
	}
	other := MessageQueue{Topic: "T", BrokerName: "b", QueueID: 2}
	if off, err := s.read(ctx, other, true); err != nil || off != -1 {
		t.Fatalf("missing offset: %d %v", off, err)
	}
	be.fail = errors.New("boom")
	if _, err := s.read(ctx, other, true); err == nil {
		t.Fatal("backend error not returned")
	}
}

func TestLocalOffsetStorePersistAndLoad(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mq1 := MessageQueue{Topic: "T", BrokerName: "b", QueueID: 0}
	mq2 := MessageQueue{Topic: "T", BrokerName: "b", QueueID: 3}
	s := newLocalOffsetStore(dir, "10.0.0.1@42", "g")
	s.update(mq1, 5, false)
	s.update(mq2, 9, false)
	if err := s.persist(ctx, nil); err != nil {
		t.Fatal(err)
	}
	s.update(mq1, 6, false)
	if err := s.persist(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.path + ".bak"); err != nil {
		t.Fatalf("no .bak copy: %v", err)
	}
	s2 := newLocalOffsetStore(dir, "10.0.0.1@42", "g")
	if err := s2.load(); err != nil {
		t.Fatal(err)
	}
	for mq, want := range map[MessageQueue]int64{mq1: 6, mq2: 9} {
		if got, _ := s2.read(ctx, mq, false); got != want {
			t.Errorf("%v: %d want %d", mq, got, want)
		}
	}
	// A torn main file falls back to the .bak copy.
	if err := os.WriteFile(s.path, []byte("{torn"), 0o644); err != nil {
		t.Fatal(err)
	}
	s3 := newLocalOffsetStore(dir, "10.0.0.1@42", "g")
	if err := s3.load(); err != nil {
		t.Fatal(err)
	}
	if got, _ := s3.read(ctx, mq1, false); got != 5 {
		t.Fatalf("bak fallback: %d want 5", got)
	}
	if got, _ := s3.read(ctx, MessageQueue{Topic: "X"}, true); got != -1 {
		t.Fatalf("unknown queue: %d", got)
	}
}

// FuzzLocalOffsetStoreLoad: any offsets.json content loads or fails
// cleanly, and what loads survives a persist/load round trip.
func FuzzLocalOffsetStoreLoad(f *testing.F) {
	f.Add([]byte(`{"offsetTable":[{"topic":"T","brokerName":"b","queueId":1,"offset":5}]}`))
	f.Add([]byte(`{"offsetTable":null}`))
	f.Add([]byte(`{torn`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		s := newLocalOffsetStore(dir, "c", "g")
		if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(s.path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := s.load(); err != nil {
			return
		}
		want := s.snapshot()
		if err := s.persist(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		s2 := newLocalOffsetStore(dir, "c", "g")
		if err := s2.load(); err != nil {
			t.Fatal(err)
		}
		if got := s2.snapshot(); !maps.Equal(got, want) {
			t.Fatalf("round trip: %v != %v", got, want)
		}
	})
}
