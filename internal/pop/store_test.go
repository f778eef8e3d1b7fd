package pop

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

func open(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var kA = QueueKey{Group: "G", Topic: "T", QueueID: 1}

func TestCheckpointAckRevive(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	if _, ok := s.PopOffset(kA); ok {
		t.Fatal("fresh queue has a pop offset")
	}
	must(t, s.AddCheckpoint(Checkpoint{Key: kA, StartOffset: 0, PopTime: 1000, InvisibleTime: 500, Offsets: []int64{0, 1, 2}, NextOffset: 3}))
	must(t, s.AddCheckpoint(Checkpoint{Key: kA, StartOffset: 3, PopTime: 1100, InvisibleTime: 500, Offsets: []int64{3, 5}, NextOffset: 9}))
	if off, _ := s.PopOffset(kA); off != 9 {
		t.Fatalf("pop offset %d", off)
	}
	for _, tc := range []struct {
		start, popTime, offset int64
		want                   AckResult
	}{
		{0, 1000, 1, Acked},
		{0, 1000, 1, AlreadyAcked},
		{0, 999, 1, NotFound}, // wrong pop time: a forged or stale handle
		{0, 1000, 7, NotFound},
		{3, 1100, 5, Acked},
	} {
		got, err := s.Ack(kA, tc.start, tc.popTime, tc.offset)
		if err != nil || got != tc.want {
			t.Fatalf("Ack(%d,%d,%d) = %v %v, want %v", tc.start, tc.popTime, tc.offset, got, err, tc.want)
		}
	}
	if st := s.Stats(); st.InFlight != 3 || st.Checkpoints != 2 {
		t.Fatalf("stats %+v", st)
	}
	// Nothing has expired at 1499.
	if ex := s.TakeExpired(1499, 10); len(ex) != 0 {
		t.Fatalf("early expiry %v", ex)
	}
	// Reopen: the state survives (acks included), handles still name it.
	s.Close()
	s = open(t, dir)
	if off, _ := s.PopOffset(kA); off != 9 {
		t.Fatalf("pop offset after reopen %d", off)
	}
	if st := s.Stats(); st.InFlight != 3 {
		t.Fatalf("in flight after reopen %+v", st)
	}
	ex := s.TakeExpired(1600, 10)
	if len(ex) != 2 || !slices.Equal(ex[0].Offsets, []int64{0, 2}) || !slices.Equal(ex[1].Offsets, []int64{3}) {
		t.Fatalf("expired %+v", ex)
	}
	if len(s.TakeExpired(1600, 10)) != 0 {
		t.Fatal("taken twice")
	}
	must(t, s.Revived(ex[0]))
	// ex[1] not revived before the "crash": it comes back after reopen.
	s.Close()
	s = open(t, dir)
	ex = s.TakeExpired(1600, 10)
	if len(ex) != 1 || ex[0].StartOffset != 3 {
		t.Fatalf("after reopen expired %+v", ex)
	}
	s.Release(ex[0])
	if len(s.TakeExpired(1600, 10)) != 1 {
		t.Fatal("released checkpoint not offered again")
	}
}

func TestChangeInvisible(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	must(t, s.AddCheckpoint(Checkpoint{Key: kA, StartOffset: 10, PopTime: 1000, InvisibleTime: 500, Offsets: []int64{10, 11}, NextOffset: 12}))
	if r, pt, err := s.ChangeInvisible(kA, 10, 1000, 11, 1200, 5000); err != nil || r != Acked || pt != 1200 {
		t.Fatalf("change %v %v", r, err)
	}
	// The old handle no longer acks; the new one does after a restart.
	if r, _ := s.Ack(kA, 10, 1000, 11); r != AlreadyAcked {
		t.Fatalf("old handle ack %v", r)
	}
	s.Close()
	s = open(t, dir)
	ex := s.TakeExpired(1600, 10)
	if len(ex) != 1 || !slices.Equal(ex[0].Offsets, []int64{10}) {
		t.Fatalf("expired %+v", ex)
	}
	if !s.InFlight(kA, 11, 1200, 11) {
		t.Fatal("changed message not in flight under its new handle")
	}
	if r, _ := s.Ack(kA, 11, 1200, 11); r != Acked {
		t.Fatalf("new handle ack %v", r)
	}
	if s.NextDeadline() != -1 {
		t.Fatalf("deadline left %d", s.NextDeadline())
	}
}

func TestOrderQueue(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	if v := s.OrderView(kA, 0); v.Commit != -1 || v.Blocked {
		t.Fatalf("fresh view %+v", v)
	}
	d, err := s.OrderPop(OrderBatch{Key: kA, PopTime: 1000, InvisibleTime: 500, AttemptID: "a1", Offsets: []int64{0, 1, 2}, NextOffset: 3})
	if err != nil || !slices.Equal(d, []int32{1, 1, 1}) {
		t.Fatalf("pop %v %v", d, err)
	}
	if v := s.OrderView(kA, 1200); !v.Blocked || v.Commit != 0 || v.AttemptID != "a1" {
		t.Fatalf("view %+v", v)
	}
	// Acking 1 before 0 does not move the commit offset.
	if r, c, _ := s.OrderAck(kA, 1000, 1); r != Acked || c != 0 {
		t.Fatalf("ack 1: %v %d", r, c)
	}
	if r, c, _ := s.OrderAck(kA, 1000, 0); r != Acked || c != 2 {
		t.Fatalf("ack 0: %v %d", r, c)
	}
	if r, _, _ := s.OrderAck(kA, 999, 2); r != NotFound {
		t.Fatalf("stale batch ack %v", r)
	}
	// Nack 2 (visible at 1100): the queue unblocks then.
	if r, _ := s.OrderChange(kA, 1000, 2, 1100); r != Acked {
		t.Fatal("change")
	}
	s.Close()
	s = open(t, dir)
	v := s.OrderView(kA, 1100)
	if v.Blocked || v.Commit != 2 || !slices.Equal(v.Pending, []int64{2}) {
		t.Fatalf("view after reopen %+v", v)
	}
	d, err = s.OrderPop(OrderBatch{Key: kA, PopTime: 2000, InvisibleTime: 500, Offsets: []int64{2, 3}, NextOffset: 4})
	if err != nil || !slices.Equal(d, []int32{2, 1}) {
		t.Fatalf("re-pop deliveries %v %v", d, err)
	}
	s.OrderAck(kA, 2000, 2)
	if _, c, _ := s.OrderAck(kA, 2000, 3); c != 4 {
		t.Fatalf("commit %d", c)
	}
	// A retry with the same attempt id is not a new delivery.
	d, _ = s.OrderPop(OrderBatch{Key: kA, PopTime: 3000, InvisibleTime: 500, AttemptID: "r", Offsets: []int64{4}, NextOffset: 5})
	if d2, _ := s.OrderPop(OrderBatch{Key: kA, PopTime: 3001, InvisibleTime: 500, AttemptID: "r", Offsets: []int64{4}, NextOffset: 5}); d[0] != 1 || d2[0] != 1 {
		t.Fatalf("same-attempt deliveries %v %v", d, d2)
	}
	s.OrderAck(kA, 3001, 4)
	must(t, s.Compact())
	s.Close()
	s = open(t, dir)
	if v := s.OrderView(kA, 0); v.Commit != 5 || v.Blocked || len(v.Pending) != 0 {
		t.Fatalf("after compaction %+v", v)
	}
}

// TestCompactionKeepsState: after many pops and acks and a compaction, a
// reopened store holds exactly the live state.
func TestCompactionKeepsState(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, CompactBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	keys := []QueueKey{kA, {Group: "G2", Topic: "T", QueueID: 0}}
	for i := int64(0); i < 400; i++ {
		k := keys[i%2]
		off := i * 2
		must(t, s.AddCheckpoint(Checkpoint{Key: k, StartOffset: off, PopTime: 1000 + i, InvisibleTime: 1000, Offsets: []int64{off, off + 1}, NextOffset: off + 2}))
		if i%3 != 0 {
			if r, err := s.Ack(k, off, 1000+i, off); r != Acked || err != nil {
				t.Fatal(r, err)
			}
		}
	}
	want := s.Stats()
	if seqs, _ := listLogs(dir); len(seqs) != 1 || seqs[0] == 1 {
		t.Fatalf("logs %v: no compaction happened", seqs)
	}
	s.Close()
	s = open(t, dir)
	got := s.Stats()
	if got.InFlight != want.InFlight || got.Checkpoints != want.Checkpoints || got.Queues != want.Queues {
		t.Fatalf("after reopen %+v, want %+v", got, want)
	}
	if off, _ := s.PopOffset(keys[1]); off != 800 {
		t.Fatalf("pop offset %d", off)
	}
}

// TestTornTail: a log cut at any byte reopens, and keeps a prefix of the
// operations; a flipped bit mid-file stops replay there.
func TestTornTail(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	for i := int64(0); i < 20; i++ {
		must(t, s.AddCheckpoint(Checkpoint{Key: kA, StartOffset: i, PopTime: i, InvisibleTime: 1, Offsets: []int64{i}, NextOffset: i + 1}))
	}
	s.Close()
	seqs, _ := listLogs(dir)
	path := logName(dir, seqs[0])
	full, _ := os.ReadFile(path)
	snap := snapshotLen(full)
	prev := int64(-1)
	for cut := snap; cut <= int64(len(full)); cut += 7 {
		sub := filepath.Join(t.TempDir(), "p")
		os.MkdirAll(sub, 0o755)
		os.WriteFile(logName(sub, seqs[0]), full[:cut], 0o644)
		r, err := Open(Options{Dir: sub})
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		off, _ := r.PopOffset(kA)
		if off < prev {
			t.Fatalf("cut %d: pop offset went back %d < %d", cut, off, prev)
		}
		prev = off
		if st := r.Stats(); st.InFlight != max(off, 0) {
			t.Fatalf("cut %d: in flight %d, pop offset %d", cut, st.InFlight, off)
		}
		r.Close()
	}
	// Bit flip in the 5th record after the snapshot.
	bad := slices.Clone(full)
	bad[snap+4*int64(len(full)-int(snap))/20+10] ^= 0x40
	sub := t.TempDir()
	os.WriteFile(logName(sub, seqs[0]), bad, 0o644)
	r, err := Open(Options{Dir: sub})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if rep := r.Recovery(); rep.TruncatedAt < 0 || rep.Dropped == 0 {
		t.Fatalf("bit flip not reported: %+v", rep)
	}
	if off, _ := r.PopOffset(kA); off < 3 || off > 5 {
		t.Fatalf("pop offset after bit flip %d", off)
	}
	// Appends continue after the truncation point.
	must(t, r.AddCheckpoint(Checkpoint{Key: kA, PopTime: 99, InvisibleTime: 1, Offsets: []int64{50}, NextOffset: 51}))
}

// TestIncompleteSnapshotIgnored: a compaction cut short (new file without
// its end record) leaves the previous log in charge.
func TestIncompleteSnapshotIgnored(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	must(t, s.AddCheckpoint(Checkpoint{Key: kA, StartOffset: 0, PopTime: 5, InvisibleTime: 1, Offsets: []int64{0}, NextOffset: 1}))
	s.Close()
	e := enc{}
	e.byte(recSnapshotBegin)
	e.u(2)
	os.WriteFile(logName(dir, 2), appendFrame(nil, e.b), 0o644)
	s = open(t, dir)
	if off, ok := s.PopOffset(kA); !ok || off != 1 {
		t.Fatalf("pop offset %d %v", off, ok)
	}
	if seqs, _ := listLogs(dir); !slices.Equal(seqs, []uint64{1}) {
		t.Fatalf("logs %v", seqs)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// FuzzReplay: any bytes after a valid snapshot replay without a panic, and
// the store opens.
func FuzzReplay(f *testing.F) {
	dir := f.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		f.Fatal(err)
	}
	s.AddCheckpoint(Checkpoint{Key: kA, StartOffset: 0, PopTime: 1, InvisibleTime: 1, Offsets: []int64{0, 3}, NextOffset: 4})
	s.Ack(kA, 0, 1, 3)
	s.AddCheckpoint(Checkpoint{Key: kA, StartOffset: 4, PopTime: 1, InvisibleTime: 1, Offsets: []int64{4, 5, 6}, NextOffset: 7})
	s.AckBatch(kA, 4, 1, []int64{4, 6})
	s.AddCheckpoint(Checkpoint{Key: QueueKey{"G2", "T", 0}, StartOffset: 0, PopTime: 1, InvisibleTime: 1, Offsets: []int64{0}, NextOffset: 1})
	s.DropGroup("G2")
	s.OrderPop(OrderBatch{Key: kA, PopTime: 2, InvisibleTime: 1, Offsets: []int64{4}, NextOffset: 5})
	s.Close()
	seqs, _ := listLogs(dir)
	full, _ := os.ReadFile(logName(dir, seqs[0]))
	snap := snapshotLen(full)
	f.Add(full[snap:])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, tail []byte) {
		sub := t.TempDir()
		os.WriteFile(logName(sub, 1), append(slices.Clone(full[:snap]), tail...), 0o644)
		r, err := Open(Options{Dir: sub})
		if err != nil {
			t.Fatal(err)
		}
		r.TakeExpired(1<<62, 100)
		r.Close()
	})
}

// TestCheckpointStartBeforeMessages: a pop that skipped filtered messages
// starts before its first message; handles name that start.
func TestCheckpointStartBeforeMessages(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	must(t, s.AddCheckpoint(Checkpoint{Key: kA, StartOffset: 20, PopTime: 7, InvisibleTime: 10, Offsets: []int64{22, 25}, NextOffset: 30}))
	if r, _ := s.Ack(kA, 22, 7, 22); r != NotFound {
		t.Fatal("acked by the first message's offset instead of the pop start")
	}
	if r, _ := s.Ack(kA, 20, 7, 25); r != Acked {
		t.Fatal("ack by pop start failed")
	}
	s.Close()
	s = open(t, dir)
	ex := s.TakeExpired(17, 5)
	if len(ex) != 1 || ex[0].StartOffset != 20 || !slices.Equal(ex[0].Offsets, []int64{22}) {
		t.Fatalf("expired %+v", ex)
	}
	if err := s.AddCheckpoint(Checkpoint{Key: kA, StartOffset: 40, PopTime: 8, Offsets: []int64{39}}); err == nil {
		t.Fatal("offset before start accepted")
	}
}

// TestConcurrentAcksShareWrites: acks from many goroutines all land (and
// survive a reopen) while sharing writes.
func TestConcurrentAcksShareWrites(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	const n = 64
	for i := int64(0); i < n; i++ {
		must(t, s.AddCheckpoint(Checkpoint{Key: kA, StartOffset: i * 32, PopTime: 1, InvisibleTime: 1000,
			Offsets: seq32(i * 32), NextOffset: i*32 + 32}))
	}
	done := make(chan error, n)
	for i := int64(0); i < n; i++ {
		go func() {
			for j := int64(0); j < 32; j++ {
				if r, err := s.Ack(kA, i*32, 1, i*32+j); err != nil || r != Acked {
					done <- fmt.Errorf("ack %d/%d: %v %v", i, j, r, err)
					return
				}
			}
			done <- nil
		}()
	}
	for range n {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s = open(t, dir)
	if st := s.Stats(); st.InFlight != 0 || st.Checkpoints != 0 {
		t.Fatalf("after reopen %+v", st)
	}
}

func seq32(start int64) []int64 {
	out := make([]int64, 32)
	for i := range out {
		out[i] = start + int64(i)
	}
	return out
}

func TestLowWatermarks(t *testing.T) {
	s := open(t, t.TempDir())
	must(t, s.AddCheckpoint(Checkpoint{Key: kA, StartOffset: 0, PopTime: 1, InvisibleTime: 9, Offsets: []int64{0, 1, 2}, NextOffset: 3}))
	must(t, s.AddCheckpoint(Checkpoint{Key: kA, StartOffset: 3, PopTime: 2, InvisibleTime: 9, Offsets: []int64{3, 4}, NextOffset: 5}))
	got := map[QueueKey]int64{}
	calls := 0
	collect := func() { s.LowWatermarks(func(k QueueKey, off int64) { got[k] = off; calls++ }) }
	collect()
	if got[kA] != 0 || calls != 1 {
		t.Fatalf("low %d (%d calls)", got[kA], calls)
	}
	collect() // unchanged: not handed out again
	if calls != 1 {
		t.Fatalf("an unchanged watermark was handed out again (%d calls)", calls)
	}
	s.Ack(kA, 0, 1, 0)
	s.Ack(kA, 0, 1, 2)
	collect()
	if got[kA] != 1 || calls != 2 {
		t.Fatalf("low after acks %d (%d calls)", got[kA], calls)
	}
	s.Ack(kA, 0, 1, 1)
	s.AckBatch(kA, 3, 2, []int64{3, 4})
	collect()
	if got[kA] != 5 {
		t.Fatalf("low when all acked %d", got[kA])
	}
}

// TestAckBatchOneRecord: a batch ack of several messages is one ack-bits
// record; it survives a reopen, acks only what it names, and a log cut
// anywhere inside it keeps the whole batch or none of it.
func TestAckBatchOneRecord(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	offs := []int64{10, 11, 12, 13, 14, 15}
	must(t, s.AddCheckpoint(Checkpoint{Key: kA, StartOffset: 10, PopTime: 7, InvisibleTime: 100, Offsets: offs, NextOffset: 16}))
	before := s.Stats().LogBytes
	for _, tc := range []struct {
		acks []int64
		want int
	}{
		{[]int64{11, 13, 13, 99}, 2}, // a duplicate and a foreign offset count once / not at all
		{[]int64{11, 13}, 0},         // already acked: no record
		{[]int64{15}, 1},             // one message: a plain ack record
	} {
		n, err := s.AckBatch(kA, 10, 7, tc.acks)
		if err != nil || n != tc.want {
			t.Fatalf("AckBatch(%v) = %d %v, want %d", tc.acks, n, err, tc.want)
		}
	}
	after := s.Stats().LogBytes
	if after-before > 2*frameHeader+40 {
		t.Fatalf("two ack records took %d bytes", after-before)
	}
	s.Close()
	seqs, _ := listLogs(dir)
	full, _ := os.ReadFile(logName(dir, seqs[0]))
	for cut := before; cut <= int64(len(full)); cut++ {
		sub := t.TempDir()
		os.WriteFile(logName(sub, seqs[0]), full[:cut], 0o644)
		r, err := Open(Options{Dir: sub})
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		var inFlight []int64
		for _, o := range offs {
			if r.InFlight(kA, 10, 7, o) {
				inFlight = append(inFlight, o)
			}
		}
		want := [][]int64{{10, 11, 12, 13, 14, 15}, {10, 12, 14, 15}, {10, 12, 14}}
		if !slices.ContainsFunc(want, func(w []int64) bool { return slices.Equal(w, inFlight) }) {
			t.Fatalf("cut %d: in flight %v", cut, inFlight)
		}
		if cut == int64(len(full)) && !slices.Equal(inFlight, want[2]) {
			t.Fatalf("full log: in flight %v", inFlight)
		}
		if st := r.Stats(); st.InFlight != int64(len(inFlight)) {
			t.Fatalf("cut %d: count %d, set %v", cut, st.InFlight, inFlight)
		}
		r.Close()
	}
}

// TestDrop: deleting a topic or a group forgets exactly its queues, and
// neither a reopen nor a compaction brings them back.
func TestDrop(t *testing.T) {
	keys := []QueueKey{{"G1", "T1", 0}, {"G1", "T1", 1}, {"G1", "T2", 0}, {"G2", "T1", 0}, {"G2", "%RETRY%G2+T1", 0}}
	for _, tc := range []struct {
		name      string
		drop      func(*Store) ([]string, error)
		wantOther []string
		left      []QueueKey
	}{
		{"topic", func(s *Store) ([]string, error) { return s.DropTopic("T1") }, []string{"G1", "G2"},
			[]QueueKey{keys[2], keys[4]}},
		{"group", func(s *Store) ([]string, error) { return s.DropGroup("G2") }, []string{"%RETRY%G2+T1", "T1"},
			[]QueueKey{keys[0], keys[1], keys[2]}},
		{"retry topic", func(s *Store) ([]string, error) { return s.DropTopic("%RETRY%G2+T1") }, []string{"G2"},
			keys[:4]},
		{"unknown topic", func(s *Store) ([]string, error) { return s.DropTopic("T9") }, nil, keys},
		{"unknown group", func(s *Store) ([]string, error) { return s.DropGroup("G9") }, nil, keys},
		{"group topic", func(s *Store) ([]string, error) { return dropGT(s, "G1", "T1") }, []string{"T1"},
			[]QueueKey{keys[2], keys[3], keys[4]}},
		{"group topic prefix", func(s *Store) ([]string, error) { return dropGT(s, "G", "1\x00T1") }, nil, keys},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := open(t, dir)
			for i, k := range keys {
				must(t, s.AddCheckpoint(Checkpoint{Key: k, StartOffset: 0, PopTime: int64(i + 1), InvisibleTime: 10,
					Offsets: []int64{0, 1}, NextOffset: 2}))
			}
			if _, err := s.OrderPop(OrderBatch{Key: keys[1], PopTime: 50, InvisibleTime: 10, Offsets: []int64{5}, NextOffset: 6}); err != nil {
				t.Fatal(err)
			}
			size := s.Stats().LogBytes
			other, err := tc.drop(s)
			if err != nil || !slices.Equal(other, tc.wantOther) {
				t.Fatalf("drop = %v %v, want %v", other, err, tc.wantOther)
			}
			if tc.wantOther == nil && s.Stats().LogBytes != size {
				t.Fatal("a drop that matched nothing wrote a record")
			}
			check := func(s *Store, when string) {
				t.Helper()
				for _, k := range keys {
					_, has := s.PopOffset(k)
					if want := slices.Contains(tc.left, k); has != want {
						t.Fatalf("%s: %v has state %v, want %v", when, k, has, want)
					}
				}
				if st := s.Stats(); st.InFlight != int64(2*len(tc.left)) || st.Queues != len(tc.left) {
					t.Fatalf("%s: stats %+v, want %d queues", when, st, len(tc.left))
				}
				due := s.TakeExpired(1<<40, 100)
				if len(due) != len(tc.left) {
					t.Fatalf("%s: %d checkpoints expire, want %d", when, len(due), len(tc.left))
				}
				for _, ex := range due {
					s.Release(ex)
				}
				checkIndex(t, s)
			}
			check(s, "after drop")
			s.Close()
			s = open(t, dir)
			check(s, "after reopen")
			must(t, s.Compact())
			s.Close()
			s = open(t, dir)
			check(s, "after compaction")
		})
	}
}

// checkIndex fails unless byTopic holds every queue once, under its
// topic, and nothing else.
func checkIndex(t *testing.T, s *Store) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for topic, list := range s.byTopic {
		if len(list) == 0 {
			t.Fatalf("byTopic[%q] is empty", topic)
		}
		for _, q := range list {
			if q.key.Topic != topic || s.queues[q.key] != q {
				t.Fatalf("byTopic[%q] holds %v, not a live queue of the topic", topic, q.key)
			}
		}
		n += len(list)
	}
	if n != len(s.queues) {
		t.Fatalf("byTopic holds %d queues, the store %d", n, len(s.queues))
	}
}

// BenchmarkDropTopicAmongMany: one topic's state dropped (and made again)
// among -n other popped queues: a lite topic expiring, or a lite
// subscription's offset reset, on a broker with many lite topics. Its cost
// must not grow with the other queues.
func BenchmarkDropTopicAmongMany(b *testing.B) {
	for _, n := range []int{1000, 100_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			s, err := Open(Options{Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			for i := range n {
				if err := s.SetPopOffset(QueueKey{"G", "T" + strconv.Itoa(i), 0}, 1); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := range b.N {
				k := QueueKey{"G", "T" + strconv.Itoa(i%n), 0}
				if i%2 == 0 {
					if _, err := s.DropTopic(k.Topic); err != nil {
						b.Fatal(err)
					}
				} else if _, err := s.DropGroupTopic(k.Group, k.Topic); err != nil {
					b.Fatal(err)
				}
				if err := s.SetPopOffset(k, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// dropGT adapts DropGroupTopic to TestDrop's table.
func dropGT(s *Store, group, topic string) ([]string, error) {
	ok, err := s.DropGroupTopic(group, topic)
	if !ok {
		return nil, err
	}
	return []string{topic}, err
}

// BenchmarkCompactManyOrderQueues: a compaction (snapshot written under the
// store's lock) with -n orderly queues, each popped and acked once: the
// POP state of a lite group consuming 10^5 lite topics.
func BenchmarkCompactManyOrderQueues(b *testing.B) {
	for _, n := range []int{10_000, 200_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			s, err := Open(Options{Dir: b.TempDir(), CompactBytes: 1 << 40})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			for i := range n {
				k := QueueKey{"G" + strconv.Itoa(i%2), "%LMQ%$P$session-" + strconv.Itoa(i), 0}
				if _, err := s.OrderPop(OrderBatch{Key: k, PopTime: 1, InvisibleTime: 60000, Offsets: []int64{0}, NextOffset: 1}); err != nil {
					b.Fatal(err)
				}
				if _, _, err := s.OrderAck(k, 1, 0); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for range b.N {
				if err := s.Compact(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(s.Stats().LogBytes)/float64(n), "B/queue")
		})
	}
}
