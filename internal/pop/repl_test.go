package pop

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
)

// dump is a canonical text of a store's state, for comparisons.
func dump(s *Store) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var lines []string
	for k, q := range s.queues {
		lines = append(lines, fmt.Sprintf("%v pop=%d", k, q.popOffset))
		for ck, c := range q.cks {
			offs := make([]int64, c.n)
			for i := range offs {
				offs[i] = c.offset(i)
			}
			lines = append(lines, fmt.Sprintf("%v ck %d@%d inv=%d offs=%v acked=%b", k, ck.start, ck.popTime, c.invis, offs, c.acked))
		}
		if o := q.order; o != nil {
			var msgs []string
			for _, m := range o.msgs {
				if m.acked {
					m.nextVisible = 0 // meaningless once acked; snapshots do not keep it
				}
				msgs = append(msgs, fmt.Sprintf("%+v", m))
			}
			lines = append(lines, fmt.Sprintf("%v order commit=%d pt=%d next=%d %q %v", k, o.commit, o.popTime, o.next, o.attemptID, msgs))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n") + fmt.Sprintf("\ninFlight=%d", s.inFlight)
}

// follow copies master's stream into replica until it is caught up.
func follow(t *testing.T, master, replica *Store, max int) {
	t.Helper()
	for range 100000 {
		c, err := master.ReadReplication(replica.ReplicaRequest(), max)
		if err != nil {
			t.Fatal(err)
		}
		if err := replica.ApplyReplicated(c); err != nil {
			t.Fatal(err)
		}
		if !c.Snapshot && len(c.Data) == 0 {
			return
		}
	}
	t.Fatal("replica never caught up")
}

// mutate runs a mix of every state change on s, step i of n.
func mutate(t *testing.T, s *Store, i int) {
	t.Helper()
	k := QueueKey{Group: "G", Topic: fmt.Sprintf("T%d", i%3), QueueID: int32(i % 2)}
	base := int64(i * 10)
	must(t, s.AddCheckpoint(Checkpoint{Key: k, StartOffset: base, PopTime: int64(1000 + i), InvisibleTime: 5000,
		Offsets: []int64{base, base + 1, base + 2, base + 4}, NextOffset: base + 5}))
	switch i % 5 {
	case 0:
		if _, err := s.Ack(k, base, int64(1000+i), base+1); err != nil {
			t.Fatal(err)
		}
	case 1:
		if _, err := s.AckBatch(k, base, int64(1000+i), []int64{base, base + 2, base + 4}); err != nil {
			t.Fatal(err)
		}
	case 2:
		if _, _, err := s.ChangeInvisible(k, base, int64(1000+i), base+2, 9000, 100); err != nil {
			t.Fatal(err)
		}
	case 3:
		ok := QueueKey{Group: "GO", Topic: "TO", QueueID: 0}
		if _, err := s.OrderPop(OrderBatch{Key: ok, PopTime: int64(2000 + i), InvisibleTime: 100, Offsets: []int64{base, base + 1}, NextOffset: base + 2}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.OrderAck(ok, int64(2000+i), base); err != nil {
			t.Fatal(err)
		}
	case 4:
		for _, ex := range s.TakeExpired(1<<40, 1) {
			must(t, s.Revived(ex))
		}
	}
	if i == 17 {
		if _, err := s.DropTopic("T2"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReplicationFollowsMaster: a replica that follows the master's
// stream — from a snapshot, in small chunks, across the master's
// compaction, after a gap larger than the window — holds the master's
// state, and so does its log after a reopen.
func TestReplicationFollowsMaster(t *testing.T) {
	master := open(t, t.TempDir())
	rdir := t.TempDir()
	replica := open(t, rdir)
	for i := range 5 { // state from before the replica asked: reaches it as a snapshot
		mutate(t, master, i)
	}
	follow(t, master, replica, 1<<20)
	if dump(replica) != dump(master) {
		t.Fatalf("after the first snapshot\nreplica:\n%s\nmaster:\n%s", dump(replica), dump(master))
	}
	first := replica.ReplicaRequest().Session
	for i := 5; i < 40; i++ {
		mutate(t, master, i)
		if i == 20 {
			must(t, master.Compact()) // compaction does not disturb the stream
		}
		if i%4 == 0 {
			follow(t, master, replica, 64) // a frame or two at a time
		}
	}
	follow(t, master, replica, 64)
	if replica.ReplicaRequest().Session != first {
		t.Fatal("the session changed without a restart")
	}
	if dump(replica) != dump(master) {
		t.Fatalf("after the changes\nreplica:\n%s\nmaster:\n%s", dump(replica), dump(master))
	}
	want := dump(master)
	replica.Close()
	replica = open(t, rdir)
	if got := dump(replica); got != want {
		t.Fatalf("replica log after reopen\n%s\nwant\n%s", got, want)
	}
	// A position of another session (a new master) gets a snapshot that
	// replaces the replica's state.
	other := open(t, t.TempDir())
	mutate(t, other, 1)
	c, err := other.ReadReplication(replica.ReplicaRequest(), 1<<20)
	if err != nil || !c.Snapshot {
		t.Fatalf("foreign session: snapshot %v %v", c.Snapshot, err)
	}
	must(t, replica.ApplyReplicated(c))
	follow(t, other, replica, 1<<20)
	if dump(replica) != dump(other) {
		t.Fatalf("after a new master's snapshot\n%s\nwant\n%s", dump(replica), dump(other))
	}
	want = dump(other)
	replica.Close()
	replica = open(t, rdir)
	if dump(replica) != want {
		t.Fatal("replaced state not durable")
	}
}

// TestReplicationWindow: a replica further behind than the retained
// window gets a snapshot; positions outside it never return frames.
func TestReplicationWindow(t *testing.T) {
	master := open(t, t.TempDir())
	c, _ := master.ReadReplication(ReplRequest{}, 1<<20)
	session, pos := c.Session, c.Next
	k := QueueKey{Group: strings.Repeat("g", 4000), Topic: "T"}
	for i := int64(0); master.repl.base == 0; i++ { // fill the window until it slides
		must(t, master.SetPopOffset(k, i))
	}
	c, err := master.ReadReplication(ReplRequest{Session: session, Pos: pos}, 1<<20)
	if err != nil || !c.Snapshot {
		t.Fatalf("behind the window: snapshot %v %v", c.Snapshot, err)
	}
	if len(master.repl.buf) > replMaxBuffer {
		t.Fatalf("window %d bytes", len(master.repl.buf))
	}
	for _, bad := range []int64{-1, c.Next + 1} {
		if c, _ := master.ReadReplication(ReplRequest{Session: session, Pos: bad}, 1<<20); !c.Snapshot {
			t.Fatalf("position %d answered frames", bad)
		}
	}
}

// TestApplyReplicatedRefusesBadChunks: torn frames, snapshot records in a
// change chunk, an incomplete snapshot change nothing.
func TestApplyReplicatedRefusesBadChunks(t *testing.T) {
	master := open(t, t.TempDir())
	c0, _ := master.ReadReplication(ReplRequest{}, 1<<20)
	mutate(t, master, 1)
	c, _ := master.ReadReplication(ReplRequest{Session: c0.Session, Pos: c0.Next}, 1<<20)
	replica := open(t, t.TempDir())
	must(t, replica.ApplyReplicated(c0))
	before := dump(replica)
	for name, bad := range map[string]ReplChunk{
		"torn":            {Data: c.Data[:len(c.Data)-1]},
		"bit flip":        {Data: flip(c.Data, 12)},
		"snapshot record": {Data: c0.Data},
		"short snapshot":  {Snapshot: true, SnapshotSize: int64(len(c0.Data)) - 1, Data: c0.Data[:len(c0.Data)-1]},
		"changes as snap": {Snapshot: true, SnapshotSize: int64(len(c.Data)), Data: c.Data},
		"part too long":   {Snapshot: true, SnapshotSize: 3, Data: c0.Data},
		"part out of seq": {Snapshot: true, SnapshotOffset: 8, SnapshotSize: int64(len(c0.Data)) + 8, Data: c0.Data},
	} {
		if err := replica.ApplyReplicated(bad); err == nil {
			t.Errorf("%s: accepted", name)
		}
		if replica.ReplicaRequest() != (ReplRequest{}) {
			t.Errorf("%s: the next request is not a fresh snapshot", name)
		}
		if dump(replica) != before {
			t.Fatalf("%s: state changed", name)
		}
	}
}

func flip(b []byte, i int) []byte {
	b = slices.Clone(b)
	b[i] ^= 1
	return b
}

// FuzzApplyReplicated: any chunk, as changes or as a snapshot, applies or
// is refused without a panic, and the replica's log reopens to the state
// it holds.
func FuzzApplyReplicated(f *testing.F) {
	dir := f.TempDir()
	m, err := Open(Options{Dir: dir})
	if err != nil {
		f.Fatal(err)
	}
	c0, _ := m.ReadReplication(ReplRequest{}, 1<<20)
	m.AddCheckpoint(Checkpoint{Key: kA, StartOffset: 0, PopTime: 1, InvisibleTime: 1, Offsets: []int64{0, 3}, NextOffset: 4})
	m.AckBatch(kA, 0, 1, []int64{0, 3})
	m.OrderPop(OrderBatch{Key: kA, PopTime: 2, InvisibleTime: 1, Offsets: []int64{4}, NextOffset: 5})
	m.DropGroup("nobody")
	c, _ := m.ReadReplication(ReplRequest{Session: c0.Session, Pos: c0.Next}, 1<<20)
	m.Close()
	f.Add(c.Data, false, int64(0))
	f.Add(c0.Data, true, int64(0))
	f.Fuzz(func(t *testing.T, data []byte, snapshot bool, extra int64) {
		rdir := t.TempDir()
		r, err := Open(Options{Dir: rdir})
		if err != nil {
			t.Fatal(err)
		}
		size := int64(len(data))
		if extra > 0 && extra < 1<<20 {
			size += extra // an incomplete snapshot: collected, not applied
		}
		_ = r.ApplyReplicated(ReplChunk{Data: data, Snapshot: snapshot, SnapshotSize: size})
		want := dump(r)
		r.TakeExpired(1<<62, 100)
		r.Close()
		r, err = Open(Options{Dir: rdir})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if got := dump(r); got != want {
			t.Fatalf("reopened\n%s\nwant\n%s", got, want)
		}
	})
}

// TestReplicationSnapshotInParts: a snapshot larger than one answer is
// fetched in parts; the state is replaced only by the complete one, and a
// master that cut a new snapshot meanwhile makes the replica start over.
func TestReplicationSnapshotInParts(t *testing.T) {
	master := open(t, t.TempDir())
	for i := range 40 {
		mutate(t, master, i)
	}
	replica := open(t, t.TempDir())
	parts := 0
	for {
		c, err := master.ReadReplication(replica.ReplicaRequest(), 100)
		if err != nil {
			t.Fatal(err)
		}
		if !c.Snapshot {
			break
		}
		if c.SnapshotOffset == 0 && parts > 0 {
			t.Fatal("the snapshot started over without a reason")
		}
		parts++
		if parts > 1 && int64(len(c.Data))+c.SnapshotOffset < c.SnapshotSize && replica.Stats().Queues != 0 {
			t.Fatal("state replaced before the last part")
		}
		must(t, replica.ApplyReplicated(c))
	}
	if parts < 3 {
		t.Fatalf("snapshot in %d parts", parts)
	}
	follow(t, master, replica, 100)
	if dump(replica) != dump(master) {
		t.Fatalf("after a snapshot in parts\n%s\nwant\n%s", dump(replica), dump(master))
	}
	// Another replica's fresh snapshot replaces the cached one: a replica in
	// the middle of the old one starts over and still converges.
	r2 := open(t, t.TempDir())
	c, _ := master.ReadReplication(r2.ReplicaRequest(), 100)
	must(t, r2.ApplyReplicated(c))
	mutate(t, master, 41)
	if _, err := master.ReadReplication(ReplRequest{}, 100); err != nil { // a third replica's first request
		t.Fatal(err)
	}
	follow(t, master, r2, 100)
	if dump(r2) != dump(master) {
		t.Fatal("replica whose snapshot was replaced did not converge")
	}
}

// TestReadOnlyReplicaAndTakeover: a read-only store refuses every local
// change and changes nothing, but still follows its master; made writable
// (a slave acting as master) it changes its copy, and a store that follows
// it back (the returning master) ends with exactly that state.
func TestReadOnlyReplicaAndTakeover(t *testing.T) {
	master, replica := open(t, t.TempDir()), open(t, t.TempDir())
	k := QueueKey{Group: "g", Topic: "t", QueueID: 0}
	must(t, master.AddCheckpoint(Checkpoint{Key: k, StartOffset: 0, PopTime: 1000, InvisibleTime: 5000, Offsets: []int64{0, 1, 2}, NextOffset: 3}))
	replica.SetReadOnly(true)
	follow(t, master, replica, 1<<20)
	before := dump(replica)
	if before != dump(master) {
		t.Fatalf("replica %s\nmaster %s", before, dump(master))
	}
	changes := []struct {
		name string
		do   func() error
	}{
		{"checkpoint", func() error {
			return replica.AddCheckpoint(Checkpoint{Key: k, StartOffset: 3, PopTime: 2000, InvisibleTime: 5000, Offsets: []int64{3}, NextOffset: 4})
		}},
		{"ack", func() error { _, err := replica.Ack(k, 0, 1000, 1); return err }},
		{"batch ack", func() error { _, err := replica.AckBatch(k, 0, 1000, []int64{0, 2}); return err }},
		{"change", func() error { _, _, err := replica.ChangeInvisible(k, 0, 1000, 1, 3000, 100); return err }},
		{"pop offset", func() error { return replica.SetPopOffset(k, 9) }},
		{"order pop", func() error {
			_, err := replica.OrderPop(OrderBatch{Key: QueueKey{Group: "g", Topic: "o"}, PopTime: 1, InvisibleTime: 10, Offsets: []int64{0}, NextOffset: 1})
			return err
		}},
		{"drop", func() error { _, err := replica.DropGroup("g"); return err }},
	}
	for _, c := range changes {
		if err := c.do(); !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s on a read-only store: %v", c.name, err)
		}
	}
	if got := dump(replica); got != before {
		t.Fatalf("a refused change changed the state:\n%s\nwant\n%s", got, before)
	}
	// The master's later changes still apply.
	if _, err := master.Ack(k, 0, 1000, 0); err != nil {
		t.Fatal(err)
	}
	follow(t, master, replica, 1<<20)
	if dump(replica) != dump(master) {
		t.Fatal("read-only replica did not follow its master")
	}
	// Acting: the replica changes its copy; the master (restarted, a fresh
	// Store on its directory) takes it back.
	replica.SetReadOnly(false)
	if _, err := replica.Ack(k, 0, 1000, 1); err != nil {
		t.Fatal(err)
	}
	must(t, replica.AddCheckpoint(Checkpoint{Key: k, StartOffset: 3, PopTime: 2000, InvisibleTime: 5000, Offsets: []int64{3, 4}, NextOffset: 5}))
	replica.SetReadOnly(true)
	want := dump(replica)
	dir := master.opts.Dir
	must(t, master.Close())
	back := open(t, dir)
	follow(t, replica, back, 64)
	if got := dump(back); got != want {
		t.Fatalf("returning master:\n%s\nwant\n%s", got, want)
	}
	must(t, back.Close())
	if got := dump(open(t, dir)); got != want {
		t.Fatalf("returning master after a reopen:\n%s\nwant\n%s", got, want)
	}
}
