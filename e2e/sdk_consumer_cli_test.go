package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestConsumeCLI: `apogee consume --count N --json` prints N messages as
// JSON lines and exits 0; a second run of the same group continues after
// them (offsets committed on exit); bad flags exit non-zero with a reason.
func TestConsumeCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 2)
	p := newProducer(t, c.nsAddr)
	ids := sendN(t, p, topic, "cli", "cli", 10)
	bin := buildApogee(t)
	group := uniqueName(t, "cg")

	seen := map[string]bool{}
	for run, n := range []int{6, 4} {
		stdout, stderr, code := runApogee(t, bin, "consume", "-n", c.nsAddr, "-t", topic, "-g", group,
			"--from", "first", "--count", itoa(n), "--json", "--duration", "30s", "--log-level", "error")
		if code != 0 {
			t.Fatalf("run %d: exit %d\n%s", run, code, stderr)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if len(lines) != n {
			t.Fatalf("run %d: %d lines, want %d:\n%s", run, len(lines), n, stdout)
		}
		for _, line := range lines {
			var m struct {
				Topic string `json:"topic"`
				MsgID string `json:"msgId"`
				Tags  string `json:"tags"`
				Body  string `json:"body"`
			}
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("bad JSON line %q: %v", line, err)
			}
			if m.Topic != topic || m.Tags != "cli" || !strings.HasPrefix(m.Body, "cli-") {
				t.Errorf("unexpected message %+v", m)
			}
			if seen[m.MsgID] {
				t.Errorf("run %d: %s printed again", run, m.MsgID)
			}
			seen[m.MsgID] = true
		}
	}
	for _, id := range ids {
		if !seen[id] {
			t.Errorf("message %s never printed", id)
		}
	}
	_, stderr, code := runApogee(t, bin, "consume", "-n", c.nsAddr, "--from", "nowhere", "-t", topic)
	if code == 0 || !strings.Contains(stderr, "--from") {
		t.Fatalf("bad --from: exit %d, stderr %q", code, stderr)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestConsumerKilledMidStreamLosesNothing: an `apogee consume` process is
// SIGKILLed while consuming (no Close, no final offset commit); the group's
// next member receives every message the killed one did not print
// (at-least-once: redelivery from the last committed offset).
func TestConsumerKilledMidStreamLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 4)
	// Registered first, so it runs last: the diagnosis of a failure is
	// the last thing in the test's output, after the cluster's logs.
	var diagnosis string
	t.Cleanup(func() {
		if t.Failed() && diagnosis != "" {
			t.Log(diagnosis)
		}
	})
	p := newProducer(t, c.nsAddr)
	type sent struct {
		queue  int
		offset int64
	}
	where := map[string]sent{}
	var ids []string
	sctx := testutil.Context(t, 60*time.Second)
	for i := range 300 {
		res, err := p.SendSync(sctx, primitive.NewMessage(topic, []byte(fmt.Sprintf("kill-%d", i))))
		if err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		ids = append(ids, res.MsgID)
		where[res.MsgID] = sent{res.MessageQueue.QueueId, res.QueueOffset}
	}
	bin := buildApogee(t)
	group := uniqueName(t, "cg")

	ctx := testutil.Context(t, 60*time.Second)
	cmd := exec.CommandContext(ctx, bin, "consume", "-n", c.nsAddr, "-t", topic, "-g", group,
		"--from", "first", "--json", "--log-level", "error")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	printed := map[string]bool{}
	lines := bufio.NewScanner(stdout)
	for len(printed) < 100 && lines.Scan() {
		var m struct {
			MsgID string `json:"msgId"`
		}
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("bad line %q", lines.Text())
		}
		printed[m.MsgID] = true
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Whatever was already written to the pipe counts as consumed too.
	for lines.Scan() {
		var m struct {
			MsgID string `json:"msgId"`
		}
		if json.Unmarshal(lines.Bytes(), &m) == nil {
			printed[m.MsgID] = true
		}
	}
	_ = cmd.Wait()
	if len(printed) < 100 {
		t.Fatalf("killed consumer printed only %d messages", len(printed))
	}

	r := newSDKReceived()
	successor := newSDKPushConsumer(t, c.nsAddr, group, topic, client.TagSelector("*"), recordListener(r))
	missing := func() []string {
		var out []string
		for _, id := range ids {
			if _, ok := r.get(id); !ok && !printed[id] {
				out = append(out, id)
			}
		}
		return out
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(missing()) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if m := missing(); len(m) > 0 {
		perQueue := map[int]string{}
		for q := range 4 {
			var offs []int64
			for _, id := range m {
				if where[id].queue == q {
					offs = append(offs, where[id].offset)
				}
			}
			if len(offs) > 0 {
				perQueue[q] = fmt.Sprintf("%d in %d..%d", len(offs), slices.Min(offs), slices.Max(offs))
			}
		}
		diagnosis = fmt.Sprintf("DIAGNOSIS: %d messages lost after the kill; missing per queue %v; "+
			"successor stats %+v offsets %v; broker: consumer ids %v, committed offsets %v",
			len(m), perQueue, successor.Stats(), successor.Offsets(),
			c.b.Clients.ConsumerIDs(group), c.b.Offsets.QueryAll(group, topic))
		t.Fatal(diagnosis)
	}
	t.Logf("killed consumer printed %d, successor received %d of %d", len(printed), r.count.Load(), len(ids))
}
