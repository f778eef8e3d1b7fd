package grpce2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestNodeClient runs node/interop.js, which drives the endpoint with the
// official Node.js client rocketmq-client-nodejs 1.0.8 (plaintext, its
// default): Producer send and recall of a delay message, SimpleConsumer
// receive and ack, PushConsumer with a nack. CI installs the package with
// `npm ci` in node/; without node or node_modules the test is skipped.
func TestNodeClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	if _, err := os.Stat(filepath.Join("node", "node_modules", "rocketmq-client-nodejs")); err != nil {
		t.Skip("run `npm ci` in e2e/grpc/node first")
	}
	s := startServer(t, "")
	s.createTopic(t, "NodeTopic", "NORMAL", 2)
	s.createTopic(t, "NodeDelayTopic", "DELAY", 2)
	cmd := exec.Command(node, "interop.js")
	cmd.Dir = "node"
	cmd.Env = append(os.Environ(), "ENDPOINT="+s.grpc, "TOPIC=NodeTopic", "DELAY_TOPIC=NodeDelayTopic")
	out, err := cmd.CombinedOutput()
	t.Logf("node interop.js:\n%s", out)
	if err != nil {
		t.Fatalf("node interop.js: %v", err)
	}
	for _, step := range []string{`"step":"sent"`, `"step":"recalled"`, `"step":"simple consumed"`, `"step":"push consumed"`, `"step":"ok"`} {
		if !strings.Contains(string(out), step) {
			t.Errorf("node output lacks %s", step)
		}
	}
}
