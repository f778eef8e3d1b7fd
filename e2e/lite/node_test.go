package litee2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNodeClient runs node/lite.js, which drives priority messages and lite
// topics with the official Node.js client rocketmq-client-nodejs 1.0.8
// (plaintext): a priority backlog highest level first, a LitePushConsumer's
// subscribed lite topic in order, both lite quota codes, and the expiry
// notification. .ci/run does `npm ci` in node/; without node or
// node_modules the test is skipped.
func TestNodeClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	if _, err := os.Stat(filepath.Join("node", "node_modules", "rocketmq-client-nodejs")); err != nil {
		t.Skip("run `npm ci` in e2e/lite/node first")
	}
	s := startServer(t, "", "--set", "liteExpirationUnitMs=2000", "--set", "liteTtlCheckInterval=200",
		"--set", "minLiteTTl=0", "--set", "maxLmqConsumeQueueNum=2", "--set", "maxLiteSubscriptionCount=1")
	s.createTopic(t, "NodePrio", "+message.type=PRIORITY", 4)
	s.createTopic(t, "NodeLite", "+message.type=LITE,+lite.topic.expiration=3", 1)
	cmd := exec.Command(node, "lite.js")
	cmd.Dir = "node"
	cmd.Env = append(os.Environ(), "ENDPOINT="+s.grpc, "PRIO_TOPIC=NodePrio", "LITE_TOPIC=NodeLite")
	out, err := cmd.CombinedOutput()
	t.Logf("node lite.js:\n%s", out)
	if err != nil {
		t.Fatalf("node lite.js: %v", err)
	}
	for _, step := range []string{"priority order", "subscription quota", "lite topic quota", "lite consumed", "lite expired and unsubscribed", "done"} {
		if !strings.Contains(string(out), `"step":"`+step+`"`) {
			t.Errorf("node output lacks %s", step)
		}
	}
}
