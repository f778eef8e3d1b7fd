package broker

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

// The change-log crash test re-executes the test binary as a child that
// creates, updates and deletes topics (and compacts now and then) and
// prints one line per acknowledged change; the parent SIGKILLs it at a
// random moment and checks that a reload has every acknowledged change.

const configCrashChildEnv = "APOGEE_CONFIG_CRASH_CHILD"

func configCrashChild(dir string) {
	m := newTopicConfigManager(filepath.Join(dir, "topics.json"), testutil.DiscardLogger(), time.Now)
	if err := m.load(); err != nil {
		fmt.Fprintln(os.Stderr, "child load:", err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, "ready")
	out.Flush()
	base := m.Len()
	if base < syncSnapshotMax+10 { // past the snapshot-per-change size: the log is exercised
		var seed []protocol.TopicConfig
		var names []string
		for i := 0; i < syncSnapshotMax+10; i++ {
			seed = append(seed, topicNamed(fmt.Sprintf("Seed%d", i)))
			names = append(names, seed[i].TopicName)
		}
		if err := m.UpdateMany(seed); err != nil {
			fmt.Fprintln(os.Stderr, "child seed:", err)
			os.Exit(3)
		}
		fmt.Fprintln(out, "+"+strings.Join(names, ","))
		out.Flush()
	}
	// Each change is announced ("?names") before it is made and
	// acknowledged ("+names" or "-name") after: a kill between the two
	// leaves the announced topics in either state.
	intent := func(names string) {
		fmt.Fprintln(out, "?"+names)
		out.Flush()
	}
	for i := 0; ; i++ {
		name := fmt.Sprintf("C%d-%d", base, i)
		var err error
		switch {
		case i%7 == 3: // delete an earlier topic of this run
			prev := fmt.Sprintf("C%d-%d", base, i-3)
			intent(prev)
			_, err = m.Delete(prev)
			name = "-" + prev
		case i%5 == 4: // a batch of three
			intent(name + "a," + name + "b," + name + "c")
			err = m.UpdateMany([]protocol.TopicConfig{topicNamed(name + "a"), topicNamed(name + "b"), topicNamed(name + "c")})
			name = "+" + name + "a," + name + "b," + name + "c"
		default:
			intent(name)
			err = m.Update(topicNamed(name))
			name = "+" + name
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "child change:", err)
			os.Exit(3)
		}
		fmt.Fprintln(out, name)
		out.Flush()
		if i%300 == 299 {
			if err := m.cf.compact(); err != nil {
				fmt.Fprintln(os.Stderr, "child compact:", err)
				os.Exit(4)
			}
		}
	}
}

func topicNamed(name string) protocol.TopicConfig {
	return protocol.TopicConfig{TopicName: name, ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6}
}

// TestConfigLogCrash: every topic change acknowledged before a SIGKILL
// (appends, batches, deletions, compactions under way) is there after a
// reload, over several kill/reload rounds.
func TestConfigLogCrash(t *testing.T) {
	dir := t.TempDir()
	want := map[string]bool{} // topic -> exists
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	for round := 0; round < 3; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), configCrashChildEnv+"="+dir)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		var lines []string
		var killAt time.Time
		killed := false
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if len(lines) == 1 {
				killAt = time.Now().Add(time.Duration(200+rng.IntN(400)) * time.Millisecond)
			}
			if !killed && time.Now().After(killAt) {
				_ = cmd.Process.Signal(syscall.SIGKILL)
				killed = true
			}
		}
		_ = cmd.Wait()
		if len(lines) == 0 || lines[0] != "ready" {
			t.Fatalf("round %d: child did not start: %s", round, stderr.String())
		}
		var inFlight []string // announced by the last "?" line, not yet acknowledged
		acks := 0
		for _, l := range lines[1:] {
			switch {
			case strings.HasPrefix(l, "?"):
				inFlight = strings.Split(l[1:], ",")
			case strings.HasPrefix(l, "+"):
				for _, n := range strings.Split(l[1:], ",") {
					want[n] = true
				}
				inFlight, acks = nil, acks+1
			case strings.HasPrefix(l, "-"):
				want[l[1:]] = false
				inFlight, acks = nil, acks+1
			}
		}
		m := newTopicConfigManager(filepath.Join(dir, "topics.json"), testutil.DiscardLogger(), time.Now)
		if err := m.load(); err != nil {
			t.Fatalf("round %d: reload: %v", round, err)
		}
		for _, n := range inFlight { // killed mid-change: either state is right, the reload decides
			delete(want, n)
		}
		for n, exists := range want {
			if m.Contains(n) != exists {
				t.Fatalf("round %d: topic %s exists=%v after reload, acknowledged %v (%d changes)", round, n, m.Contains(n), exists, acks)
			}
		}
		for _, n := range inFlight {
			want[n] = m.Contains(n)
		}
		m.cf.close()
		t.Logf("round %d: %d acknowledged changes verified (%d topics, %d in flight at the kill)", round, acks, len(want), len(inFlight))
	}
}
