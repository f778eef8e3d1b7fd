package e2e

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/testutil"
)

// runApogee runs the binary and returns stdout, stderr and the exit code.
func runApogee(t testing.TB, bin string, args ...string) (string, string, int) {
	t.Helper()
	ctx := testutil.Context(t, 60*time.Second)
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

// TestSDKAdminCLI drives `apogee admin` with mqadmin's command names and
// flags against a real broker: tables for people, --json for scripts,
// non-zero exit with a one-line reason on error.
func TestSDKAdminCLI(t *testing.T) {
	c := startCluster(t, nil)
	bin := buildApogee(t)
	ns := []string{"-n", c.nsAddr}
	topic := uniqueName(t, "T")
	run := func(args ...string) string {
		t.Helper()
		out, errOut, code := runApogee(t, bin, append(append([]string{"admin"}, args...), ns...)...)
		if code != 0 {
			t.Fatalf("apogee admin %v: exit %d: %s", args, code, errOut)
		}
		return out
	}
	// try is run for polling: a failing command gives "".
	try := func(args ...string) string {
		t.Helper()
		out, _, code := runApogee(t, bin, append(append([]string{"admin"}, args...), ns...)...)
		if code != 0 {
			return ""
		}
		return out
	}
	out := run("updateTopic", "-t", topic, "-c", c.cfg.BrokerClusterName, "-r", "4", "-w", "4")
	if !strings.Contains(out, "success") {
		t.Fatalf("updateTopic: %q", out)
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		return strings.Contains(try("topicList"), topic)
	}, "topic not listed")
	var route struct {
		Topic  string
		Queues []struct {
			BrokerName  string
			WriteQueues int
		}
	}
	if err := json.Unmarshal([]byte(run("topicRoute", "-t", topic, "--json")), &route); err != nil {
		t.Fatal(err)
	}
	if route.Topic != topic || len(route.Queues) != 1 || route.Queues[0].WriteQueues != 4 {
		t.Fatalf("route %+v", route)
	}
	table := run("clusterList")
	if !strings.Contains(table, "#CLUSTER_NAME") || !strings.Contains(table, c.cfg.BrokerName) {
		t.Fatalf("clusterList:\n%s", table)
	}
	out = run("sendMessage", "-t", topic, "-p", "hello-cli", "-k", "cli-key", "-c", "TagC", "--json")
	var sent struct {
		Status      string `json:"status"`
		OffsetMsgID string `json:"offsetMsgId"`
	}
	if err := json.Unmarshal([]byte(out), &sent); err != nil || sent.Status != "SEND_OK" {
		t.Fatalf("sendMessage: %q (%v)", out, err)
	}
	out = run("queryMsgById", "-i", sent.OffsetMsgID)
	if !strings.Contains(out, "hello-cli") || !strings.Contains(out, "TagC") {
		t.Fatalf("queryMsgById:\n%s", out)
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		return strings.Contains(try("consumeMessage", "-t", topic), "hello-cli")
	}, "consumeMessage did not read the message")
	out, errOut, code := runApogee(t, bin, "produce", "-n", c.nsAddr, "-t", topic, "-b", "from-produce", "--keys", "pk", "--json")
	if code != 0 || !strings.Contains(out, "SEND_OK") {
		t.Fatalf("produce: exit %d %q %s", code, out, errOut)
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		var stats []struct{ MinOffset, MaxOffset int64 }
		if err := json.Unmarshal([]byte(try("topicStatus", "-t", topic, "--json")), &stats); err != nil {
			return false
		}
		var n int64
		for _, s := range stats {
			n += s.MaxOffset - s.MinOffset
		}
		return len(stats) == 4 && n == 2
	}, "topicStatus never showed 2 messages")
	testutil.Eventually(t, 10*time.Second, func() bool {
		return strings.Contains(try("queryMsgByKey", "-t", topic, "-k", "cli-key"), "hello-cli")
	}, "queryMsgByKey did not find the message")
	var status map[string]string
	if err := json.Unmarshal([]byte(run("brokerStatus", "-b", c.b.Addr(), "--json")), &status); err != nil || len(status) == 0 {
		t.Fatalf("brokerStatus: %v %v", status, err)
	}

	group := uniqueName(t, "cg")
	run("updateSubGroup", "-g", group, "-c", c.cfg.BrokerClusterName)
	r := newReceived()
	newPushConsumer(t, c.nsAddr, group, topic, "*", r)
	testutil.Eventually(t, 30*time.Second, func() bool { return r.count.Load() >= 2 }, "consumer got %d", r.count.Load())
	testutil.Eventually(t, 20*time.Second, func() bool {
		return strings.Contains(try("consumerConnection", "-g", group), "GO")
	}, "consumerConnection does not list the Go client")
	testutil.Eventually(t, 40*time.Second, func() bool {
		var cp struct {
			Queues   []struct{ BrokerOffset int64 }
			TotalLag int64
		}
		if err := json.Unmarshal([]byte(try("consumerProgress", "-g", group, "--json")), &cp); err != nil {
			return false
		}
		var n int64
		for _, q := range cp.Queues {
			n += q.BrokerOffset
		}
		return n == 2 && cp.TotalLag == 0
	}, "consumerProgress never caught up")
	if out := run("resetOffsetByTime", "-g", group, "-t", topic, "-s", "now"); !strings.Contains(out, "#OFFSET") {
		t.Fatalf("resetOffsetByTime: %q", out)
	}
	run("deleteSubGroup", "-g", group, "-c", c.cfg.BrokerClusterName)
	run("deleteTopic", "-t", topic, "-c", c.cfg.BrokerClusterName)
	testutil.Eventually(t, 10*time.Second, func() bool { return !strings.Contains(try("topicList"), topic) }, "deleted topic still listed")

	// Errors: non-zero exit and one line on stderr.
	_, errOut, code = runApogee(t, bin, append([]string{"admin", "topicRoute", "-t", "NoSuchTopic_xyz"}, ns...)...)
	if code == 0 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, "NoSuchTopic_xyz") {
		t.Fatalf("unknown topic: exit %d stderr %q", code, errOut)
	}
}

// TestSDKBenchCLI: `apogee bench produce --json` ends stdout with a
// one-line JSON summary, and prints progress on stderr.
func TestSDKBenchCLI(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 4)
	bin := buildApogee(t)
	out, errOut, code := runApogee(t, bin, "bench", "produce", "-n", c.nsAddr, "--topic", topic, "--size", "512",
		"--threads", "2", "--mode", "async", "--count", "2000", "--json")
	if code != 0 {
		t.Fatalf("bench produce: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var sum struct {
		TPS    float64 `json:"tps"`
		MBps   float64 `json:"mbps"`
		P50    float64 `json:"p50_ms"`
		P99    float64 `json:"p99_ms"`
		Max    float64 `json:"max_ms"`
		Sent   int64   `json:"sent"`
		Failed int64   `json:"failed"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("last line %q: %v", lines[len(lines)-1], err)
	}
	if sum.Sent != 2000 || sum.Failed != 0 || sum.TPS <= 0 || sum.MBps <= 0 || sum.P99 < sum.P50 || sum.Max < sum.P99 {
		t.Fatalf("summary %+v", sum)
	}
	for _, mode := range []string{"sync", "oneway"} {
		out, errOut, code := runApogee(t, bin, "bench", "produce", "-n", c.nsAddr, "--topic", topic, "--mode", mode, "--count", "500", "--json")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var s struct {
			Sent   int64 `json:"sent"`
			Failed int64 `json:"failed"`
		}
		if code != 0 || json.Unmarshal([]byte(lines[len(lines)-1]), &s) != nil || s.Sent != 500 || s.Failed != 0 {
			t.Fatalf("bench produce --mode %s: exit %d, %q, %s", mode, code, out, errOut)
		}
	}
	out, errOut, code = runApogee(t, bin, "bench", "consume", "-n", c.nsAddr, "--topic", topic, "--group", uniqueName(t, "cg"),
		"--from", "first", "--count", "3000", "--json")
	if code != 0 {
		t.Fatalf("bench consume: exit %d: %s", code, errOut)
	}
	lines = strings.Split(strings.TrimSpace(out), "\n")
	var csum struct {
		Received int64 `json:"received"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &csum); err != nil || csum.Received < 3000 {
		t.Fatalf("consume summary %q (%v)", lines[len(lines)-1], err)
	}
}
