package store

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// openFDs counts this process's open descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// mappingsUnder counts the mappings of files under dir in /proc/self/maps.
func mappingsUnder(t testing.TB, dir string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, dir) {
			n++
		}
	}
	return n
}

// TestManyQueuesBoundedResources: with more queues than the mapping limit,
// every message stays reachable (before and after a restart), the store
// holds no descriptor per file, the consume-queue mappings stay within
// the limit, and a queue with one message costs one 4 KiB block, not the
// whole file.
func TestManyQueuesBoundedResources(t *testing.T) {
	const (
		topics = 40
		queues = 4
		limit  = 8
		rounds = 3
	)
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.MappedFileSizeConsumeQueue = 300000 * CQUnitSize // RocketMQ's size: sparse files matter
	cfg.MaxMappedConsumeQueueFiles = limit
	fds0 := openFDs(t)
	s := openStore(t, cfg)
	type at struct {
		topic string
		qid   int32
		off   int64
		body  string
	}
	var sent []at
	for r := 0; r < rounds; r++ {
		for i := 0; i < topics; i++ {
			for q := int32(0); q < queues; q++ {
				topic := fmt.Sprintf("T%03d", i)
				body := fmt.Sprintf("%s-%d-%d", topic, q, r)
				res := mustPut(t, s, newMsg(topic, q, body, nil))
				sent = append(sent, at{topic, q, res.QueueOffset, body})
			}
		}
	}
	for i := 0; i < topics; i++ {
		for q := int32(0); q < queues; q++ {
			waitDispatched(t, s, fmt.Sprintf("T%03d", i), q, rounds)
		}
	}
	check := func(s *Store, when string) {
		t.Helper()
		for _, a := range sent {
			res := s.GetMessage("g", a.topic, a.qid, a.off, 1, 1<<20, nil)
			if res.Status != Found || !bytes.Equal(decode(t, res.Messages[0]).Body, []byte(a.body)) {
				t.Fatalf("%s: %s-%d offset %d: %v", when, a.topic, a.qid, a.off, res.Status)
			}
		}
		if n := s.mapper.mapped(); n > limit {
			t.Fatalf("%s: %d consume-queue files mapped, limit %d", when, n, limit)
		}
		if n := mappingsUnder(t, filepath.Join(dir, consumeQueueDirName)); n > limit {
			t.Fatalf("%s: /proc/self/maps shows %d consume-queue mappings, limit %d", when, n, limit)
		}
		// The commit log, checkpoint and lock file: a handful, not one per
		// queue (160 queues here).
		if d := openFDs(t) - fds0; d > 8 {
			t.Fatalf("%s: %d more open files than before the store (%d queues)", when, d, topics*queues)
		}
	}
	check(s, "running")
	var st syscall.Stat_t
	cqFile := filepath.Join(dir, consumeQueueDirName, "T000", "0", fileName(0))
	if err := syscall.Stat(cqFile, &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != cfg.MappedFileSizeConsumeQueue || st.Blocks*512 > 16<<10 {
		t.Fatalf("consume-queue file with %d units: size %d, %d bytes allocated; want full size, sparse", rounds, st.Size, st.Blocks*512)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, cfg)
	check(s2, "after restart")
	if n := s2.Recovery().SnapshotQueues; n != topics*queues {
		t.Fatalf("%d queues restored from the snapshot, want %d", n, topics*queues)
	}
}

// TestMapperNeverUnmapsHeldFile: a held file survives any number of
// eviction sweeps; released, it is unmapped by the next one.
func TestMapperNeverUnmapsHeldFile(t *testing.T) {
	dir := t.TempDir()
	m := newMapper(2)
	var files []*mappedFile
	for i := 0; i < 6; i++ {
		f, err := openLazyPath(filepath.Join(dir, fileName(int64(i)*4096)), int64(i)*4096, 4096, true, m)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	held := files[0]
	if !held.hold() {
		t.Fatal("hold")
	}
	d, err := held.view()
	if err != nil {
		t.Fatal(err)
	}
	d[0] = 7
	for round := 0; round < 3; round++ {
		for _, f := range files[1:] {
			f.hold()
			if _, err := f.view(); err != nil {
				t.Fatal(err)
			}
			f.release()
		}
	}
	if held.lazy.mapping.Load() == nil || d[0] != 7 {
		t.Fatal("a held file was unmapped")
	}
	held.release()
	for _, f := range files[1:] {
		f.hold()
		f.view()
		f.release()
	}
	if held.lazy.mapping.Load() != nil {
		t.Fatal("released file still mapped after the sweeps")
	}
	held.hold()
	if d, _ := held.view(); d[0] != 7 {
		t.Fatal("data lost across unmap and map")
	}
	held.release()
	for _, f := range files {
		f.shutdown(time.Now(), 0)
	}
	if n := m.mapped(); n != 0 {
		t.Fatalf("%d mappings left after shutdown", n)
	}
}
