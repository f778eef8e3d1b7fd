package store

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/testutil"
)

// The crash test re-executes the test binary as a child (TestMain sees
// crashChildEnv) that appends with SYNC_FLUSH and prints one line per
// acknowledged message; the parent SIGKILLs it at a random moment, reopens
// the store and verifies every acknowledged message.

const (
	crashChildEnv = "APOGEE_STORE_CRASH_CHILD" // store dir
	crashRoundEnv = "APOGEE_STORE_CRASH_ROUND"
	crashModeEnv  = "APOGEE_STORE_CRASH_MODE"
)

// crash test modes: the flush type and pool of the child (and the reopen).
var crashModes = []string{"sync", "sync-pool", "sync-pwrite", "async"}

var (
	crashRounds   = flag.Int("crash.rounds", 5, "kill/recover rounds per mode of TestCrashRecovery")
	crashModeList = flag.String("crash.modes", "sync,sync-pool,sync-pwrite,async", "modes of TestCrashRecovery")
)

func crashConfig(dir string, mode string) Config {
	cfg := testConfig(dir)
	cfg.FlushDiskType = SyncFlush
	if mode == "async" {
		cfg.FlushDiskType = AsyncFlush
	}
	cfg.TransientStorePoolEnable = mode == "sync-pool"
	cfg.WriteWithoutMmap = mode == "sync-pwrite"
	cfg.TransientStorePoolSize = 2
	cfg.MappedFileSizeCommitLog = 128 << 10
	cfg.MappedFileSizeConsumeQueue = 64 * CQUnitSize
	// Fewer mappings than queues: consume-queue files are unmapped and
	// mapped again while the child writes (lazy_map.go).
	cfg.MaxMappedConsumeQueueFiles = 4
	if mode == "behind" {
		// Write-behind (cq_behind.go) with nothing written before the
		// kill: units older than the checkpoint's slack are only in
		// memory, and only the checkpoint hold brings them back.
		cfg.ConsumeQueueWriteBehindMaxAge = time.Hour
	}
	return cfg
}

// crashQueuesOf is how many queues of topic Crash the child writes.
func crashQueuesOf(mode string) int {
	if mode == "behind" {
		return crashBehindQueues
	}
	return crashQueues
}

// crashBody is the deterministic body of message id.
func crashBody(id string) []byte {
	sum := sha256.Sum256([]byte(id))
	n := 1 + int(sum[0])<<3 + int(sum[1])%8
	return bytes.Repeat(sum[:], n/32+1)[:n]
}

const (
	crashWriters = 4
	crashQueues  = 12 // more than MaxMappedConsumeQueueFiles
	// crashBehindQueues: each queue gets far fewer than a page's worth of
	// units before the kill, so they stay buffered (mode "behind").
	crashBehindQueues = 200
)

func crashChildMain() {
	dir := os.Getenv(crashChildEnv)
	round := os.Getenv(crashRoundEnv)
	mode := os.Getenv(crashModeEnv)
	queues := crashQueuesOf(mode)
	s, err := New(crashConfig(dir, mode), nil)
	if err == nil {
		err = s.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child start:", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, "ready")
	out.Flush()
	var wg sync.WaitGroup
	for w := 0; w < crashWriters; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				id := fmt.Sprintf("r%s-w%d-%d", round, w, i)
				qid := int32((i*crashWriters + w) % queues)
				topic := "Crash"
				if i%4 == 3 && mode != "behind" { // behind: no creator hold to mask its own
					// A new queue: its first file is made off dispatch
					// (cq_create.go) while the child may be killed.
					topic, qid = fmt.Sprintf("CrashNew-r%s-w%d-%d", round, w, i), 0
				}
				m := &message.Ext{QueueID: qid, BornTimestamp: time.Now().UnixMilli()}
				m.Topic = topic
				m.Body = crashBody(id)
				m.Properties = map[string]string{message.PropertyKeys: id}
				done := make(chan PutResult, 1)
				s.PutMessage(m, func(r PutResult) { done <- r })
				r := <-done
				if r.Status != PutOK {
					fmt.Fprintln(os.Stderr, "put failed:", r.Status, r.Remark)
					os.Exit(3)
				}
				if mode == "behind" {
					time.Sleep(2 * time.Millisecond) // a few thousand messages a round
				}
				mu.Lock()
				fmt.Fprintf(out, "%s %d %d %d %d %s\n", id, r.WroteOffset, r.WroteBytes, qid, r.QueueOffset, topic)
				out.Flush()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

type ackedMsg struct {
	id          string
	phy         int64
	size        int32
	queueID     int32
	queueOffset int64
	topic       string
}

// TestCrashRecovery: every message acknowledged under SYNC_FLUSH (with and
// without the transient pool; a quarter of them to brand-new queues, whose
// first files are made in the background) survives a SIGKILL at a random moment,
// byte-exact, CRC-valid and reachable through its consume queue and by key;
// no partial message is ever returned (docs/storage.md §3.1, 6.4).
// ASYNC_FLUSH runs too: a killed process leaves the page cache, so its
// acknowledged messages survive as well. Rounds per mode: -crash.rounds.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() && *crashRounds > 5 {
		*crashRounds = 5
	}
	for _, mode := range crashModes {
		if !strings.Contains(","+*crashModeList+",", ","+mode+",") {
			continue
		}
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
			var acked []ackedMsg
			for round := 0; round < *crashRounds; round++ {
				got := runCrashChild(t, dir, mode, round, time.Duration(rng.IntN(150))*time.Millisecond)
				acked = append(acked, got...)
				verifyCrashStore(t, dir, mode, acked, got, round)
			}
			t.Logf("%d rounds, %d acknowledged messages verified", *crashRounds, len(acked))
		})
	}
}

var crashBehindRounds = flag.Int("crash.behindrounds", 1, "kill/recover rounds of TestCrashWriteBehind")

// TestCrashWriteBehind: consume-queue units kept in memory by the
// write-behind (the child's 200 queues, 4 mappings) are not lost by a
// SIGKILL seconds after they were dispatched: the checkpoint stays below
// the oldest of them, so recovery re-dispatches them from the commit log.
func TestCrashWriteBehind(t *testing.T) {
	dir := t.TempDir()
	var acked []ackedMsg
	for round := 0; round < *crashBehindRounds; round++ {
		// Longer than the checkpoint's slack (3 s) and its period.
		got := runCrashChild(t, dir, "behind", round, 4500*time.Millisecond)
		acked = append(acked, got...)
		verifyCrashStore(t, dir, "behind", acked, got, round)
	}
	t.Logf("%d rounds, %d acknowledged messages verified", *crashBehindRounds, len(acked))
}

// runCrashChild starts the child, lets it write for about d after it is
// ready (and at least one acknowledgement), SIGKILLs it, and returns the
// acknowledged messages.
func runCrashChild(t *testing.T, dir string, mode string, round int, d time.Duration) []ackedMsg {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, crashRoundEnv+"="+strconv.Itoa(round), crashModeEnv+"="+mode)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var acked []ackedMsg
	parse := func(l string) {
		f := strings.Fields(l)
		if len(f) != 6 {
			return // the torn last line of a killed child
		}
		phy, _ := strconv.ParseInt(f[1], 10, 64)
		size, _ := strconv.ParseInt(f[2], 10, 32)
		qid, _ := strconv.ParseInt(f[3], 10, 32)
		qo, _ := strconv.ParseInt(f[4], 10, 64)
		acked = append(acked, ackedMsg{f[0], phy, int32(size), int32(qid), qo, f[5]})
	}
	deadline := time.After(20 * time.Second)
	var killAt <-chan time.Time
	killed := false
	for !killed {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("round %d: child exited early: %s", round, stderr.String())
			}
			if l == "ready" {
				continue
			}
			parse(l)
			if killAt == nil {
				killAt = time.After(d)
			}
		case <-killAt:
			_ = cmd.Process.Signal(syscall.SIGKILL)
			killed = true
		case <-deadline:
			_ = cmd.Process.Signal(syscall.SIGKILL)
			t.Fatalf("round %d: child made no progress: %s", round, stderr.String())
		}
	}
	for l := range lines {
		parse(l)
	}
	<-readDone
	_ = cmd.Wait()
	return acked
}

// verifyCrashStore reopens the store and checks every acknowledged message;
// a sample of them (every round's, not only the last one's: a crash drops
// the newest index file, whose range recovery must index again) must also
// be found by key through the index.
func verifyCrashStore(t *testing.T, dir string, mode string, acked, lastRound []ackedMsg, round int) {
	t.Helper()
	s, err := New(crashConfig(dir, mode), testutil.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("round %d: reopen: %v", round, err)
	}
	defer s.Close()
	rep := s.Recovery()
	if !rep.Abnormal {
		t.Fatalf("round %d: recovery after SIGKILL not reported abnormal", round)
	}
	for _, a := range acked {
		raw, err := s.ReadRawByOffset(a.phy, a.size)
		if err != nil {
			t.Fatalf("round %d: acknowledged %s at %d lost: %v (recovery %+v)", round, a.id, a.phy, err, rep)
		}
		m := decode(t, raw)
		if !bytes.Equal(m.Body, crashBody(a.id)) || m.Properties[message.PropertyKeys] != a.id {
			t.Fatalf("round %d: %s at %d has other content", round, a.id, a.phy)
		}
		res := s.GetMessage("g", a.topic, a.queueID, a.queueOffset, 1, 1<<20, nil)
		if res.Status != Found || !bytes.Equal(res.Messages[0], raw) {
			t.Fatalf("round %d: %s not reachable through queue %d offset %d: %v", round, a.id, a.queueID, a.queueOffset, res.Status)
		}
	}
	for i, a := range acked {
		if i%7 != 0 && i < len(acked)-len(lastRound) {
			continue
		}
		found, err := s.QueryMessage(a.topic, a.id, 32, 0, time.Now().UnixMilli()+1000)
		ok := false
		for _, m := range found {
			ok = ok || m.CommitLogOffset == a.phy
		}
		if err != nil || !ok {
			t.Fatalf("round %d: %s not found by key after recovery (%d results, %v)", round, a.id, len(found), err)
		}
	}
	// Every message any queue returns is whole and CRC-valid.
	for q := int32(0); q < int32(crashQueuesOf(mode)); q++ {
		for off := s.MinOffsetInQueue("Crash", q); off < s.MaxOffsetInQueue("Crash", q); {
			res := s.GetMessage("g", "Crash", q, off, 32, 1<<20, nil)
			if res.Status != Found {
				t.Fatalf("round %d: queue %d offset %d: %v", round, q, off, res.Status)
			}
			for i, raw := range res.Messages {
				if m := decode(t, raw); m.QueueOffset != off+int64(i) {
					t.Fatalf("round %d: queue %d offset %d holds queue offset %d", round, q, off+int64(i), m.QueueOffset)
				}
			}
			off = res.NextBeginOffset
		}
	}
}
