package client

import (
	"testing"
)

func msgsAt(offsets ...int64) []*MessageExt {
	out := make([]*MessageExt, len(offsets))
	for i, o := range offsets {
		out[i] = &MessageExt{QueueOffset: o, Message: Message{Body: make([]byte, 10)}}
	}
	return out
}

// TestProcessQueueConcurrentCommitOffset checks the consumed offset rule of
// docs/broker.md §4.6: smallest offset still cached, or max+1.
func TestProcessQueueConcurrentCommitOffset(t *testing.T) {
	pq := newProcessQueue()
	ms := msgsAt(10, 11, 12, 13)
	if !pq.putMessages(ms) {
		t.Fatal("first put should report an empty queue")
	}
	if pq.count.Load() != 4 || pq.size.Load() != 40 {
		t.Fatalf("count %d size %d", pq.count.Load(), pq.size.Load())
	}
	if got := pq.span(); got != 3 {
		t.Fatalf("span %d", got)
	}
	if got := pq.removeMessages(ms[1:3]); got != 10 {
		t.Fatalf("offset after removing 11,12 = %d, want 10", got)
	}
	if got := pq.removeMessages(ms[:1]); got != 13 {
		t.Fatalf("offset after removing 10 = %d, want 13", got)
	}
	if got := pq.removeMessages(ms[3:]); got != 14 {
		t.Fatalf("offset after removing all = %d, want 14", got)
	}
	if !pq.empty() || pq.size.Load() != 0 {
		t.Fatalf("not empty: count %d size %d", pq.count.Load(), pq.size.Load())
	}
	// Removing twice does not count twice.
	if got := pq.removeMessages(ms); got != 14 || pq.count.Load() != 0 {
		t.Fatalf("double remove: offset %d count %d", got, pq.count.Load())
	}
	// Duplicates and older offsets are ignored.
	pq.putMessages(msgsAt(12, 14, 14))
	if pq.count.Load() != 1 {
		t.Fatalf("count after duplicate put %d", pq.count.Load())
	}
}

func TestProcessQueueCompaction(t *testing.T) {
	pq := newProcessQueue()
	for i := int64(0); i < 1000; i += 10 {
		batch := msgsAt(i, i+1, i+2, i+3, i+4, i+5, i+6, i+7, i+8, i+9)
		pq.putMessages(batch)
		if got := pq.removeMessages(batch); got != i+10 {
			t.Fatalf("offset %d want %d", got, i+10)
		}
	}
	if len(pq.offsets) > 128 {
		t.Fatalf("offsets slice not compacted: %d", len(pq.offsets))
	}
}

func TestProcessQueueOrderly(t *testing.T) {
	pq := newProcessQueue()
	pq.putMessages(msgsAt(5, 6, 7, 8))
	got := pq.takeMessages(2)
	if len(got) != 2 || got[0].QueueOffset != 5 || got[1].QueueOffset != 6 {
		t.Fatalf("take: %v", got)
	}
	pq.makeMessagesConsumeAgain()
	got = pq.takeMessages(3)
	if len(got) != 3 || got[0].QueueOffset != 5 || got[2].QueueOffset != 7 {
		t.Fatalf("take again: %v", got)
	}
	if off := pq.commit(); off != 8 {
		t.Fatalf("commit offset %d want 8", off)
	}
	if pq.count.Load() != 1 {
		t.Fatalf("count %d", pq.count.Load())
	}
	if off := pq.commit(); off != -1 {
		t.Fatalf("empty commit %d", off)
	}
	got = pq.takeMessages(10)
	if len(got) != 1 || got[0].QueueOffset != 8 {
		t.Fatalf("last take %v", got)
	}
	if pq.commit() != 9 || !pq.empty() {
		t.Fatal("final commit")
	}
}

// BenchmarkProcessQueue: one pull batch (32 messages) cached, then
// consumed one by one in concurrent mode, as the hot path does.
func BenchmarkProcessQueue(b *testing.B) {
	pq := newProcessQueue()
	batch := make([]*MessageExt, 32)
	next := int64(0)
	b.ReportAllocs()
	for b.Loop() {
		for i := range batch {
			batch[i] = &MessageExt{QueueOffset: next, Message: Message{Body: make([]byte, 0)}}
			next++
		}
		pq.putMessages(batch)
		for i := range batch {
			pq.removeMessages(batch[i : i+1])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/msg")
}
