package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/testutil"
)

// TestAdminUpdateTopicList: `apogee admin updateTopicList -f` creates every
// topic of a RocketMQ TopicConfig list on the broker in batch requests, and
// the name server routes them (incremental registration).
func TestAdminUpdateTopicList(t *testing.T) {
	c := startAdminCluster(t)
	const n = 1200 // more than one request's chunk
	var b strings.Builder
	b.WriteString("[")
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"topicName":"Batch%04d","readQueueNums":2,"writeQueueNums":2,"perm":6}`, i)
	}
	b.WriteString("]")
	file := filepath.Join(t.TempDir(), "topics.json")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var out struct {
		OK     bool `json:"ok"`
		Topics int  `json:"topics"`
	}
	if err := c.admin(t, &out, "updateTopicList", "-b", c.b.Addr(), "-f", file); err != nil || !out.OK || out.Topics != n {
		t.Fatalf("updateTopicList: %+v %v", out, err)
	}
	for _, i := range []int{0, n / 2, n - 1} {
		tc, ok := c.b.Topics.Get(fmt.Sprintf("Batch%04d", i))
		if !ok || tc.WriteQueueNums != 2 {
			t.Fatalf("Batch%04d: %+v %v", i, tc, ok)
		}
	}
	var route map[string]any
	testutil.Eventually(t, 10*time.Second, func() bool {
		return c.admin(t, &route, "topicRoute", "-t", fmt.Sprintf("Batch%04d", n-1)) == nil
	}, "last batch topic never routed")
	if err := c.admin(t, nil, "updateTopicList", "-b", c.b.Addr(), "-f", filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Fatal("a missing file was accepted")
	}
}
