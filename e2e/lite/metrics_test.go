package litee2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scrapeMetrics returns the exposition text of the server's /metrics.
func scrapeMetrics(t *testing.T, s *server) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.metrics, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// metricValue is the value of the series of name whose labels include
// every label="value" of want; ok is false when there is none.
func metricValue(text, name string, want ...string) (v float64, ok bool) {
	for line := range strings.SplitSeq(text, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		match := true
		for _, w := range want {
			if !strings.Contains(line, w) {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		f, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		return f, err == nil
	}
	return 0, false
}

// TestLiteMetrics: /metrics carries lite aggregates, never a series per
// lite topic: apogee_lite_topics per LITE parent, apogee_lite_subscriptions,
// and a group's lag over the parent's lite topics in
// rocketmq_consumer_lag_messages{topic=<parent>} (RocketMQ 5.5's
// aggregation), consumed with our remoting lite consumer.
func TestLiteMetrics(t *testing.T) {
	s := startServer(t, "")
	if s.metrics == "" {
		t.Fatal("the server printed no metrics address")
	}
	const parent, group = "MetParent", "MetGroup"
	s.createTopic(t, parent, "+message.type=LITE", 1)
	send := liteProducer(t, s, parent)
	for lt, n := range map[string]int{"l1": 5, "l2": 3, "l3": 2} {
		for i := range n {
			send(lt, fmt.Sprint(lt, "-", i))
		}
	}
	c, _, _ := newLitePop(t, s, "met-1", group, parent)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Subscribe(ctx, nil, "l1", "l2"); err != nil {
		t.Fatal(err)
	}
	if got := receiveAll(t, c, 8, 30*time.Second); len(got) != 8 {
		t.Fatalf("received %d of 8", len(got))
	}
	send("l1", "l1-5")
	send("l1", "l1-6")
	send("l2", "l2-3")

	labels := []string{`topic="` + parent + `"`, `consumer_group="` + group + `"`}
	var text string
	eventually(t, 30*time.Second, "lag 3 for the group over the parent's lite topics", func() bool {
		text = scrapeMetrics(t, s)
		v, ok := metricValue(text, "rocketmq_consumer_lag_messages", labels...)
		return ok && v == 3
	})
	if v, ok := metricValue(text, "rocketmq_consumer_ready_messages", labels...); !ok || v != 3 {
		t.Errorf("ready messages %v (%v), want 3", v, ok)
	}
	if v, ok := metricValue(text, "rocketmq_consumer_lag_latency", labels...); !ok || v <= 0 {
		t.Errorf("lag latency %v (%v), want > 0", v, ok)
	}
	if v, ok := metricValue(text, "apogee_lite_topics", `topic="`+parent+`"`); !ok || v != 3 {
		t.Errorf("apogee_lite_topics = %v (%v), want 3", v, ok)
	}
	if v, ok := metricValue(text, "apogee_lite_subscriptions"); !ok || v != 2 {
		t.Errorf("apogee_lite_subscriptions = %v (%v), want 2", v, ok)
	}
	if strings.Contains(text, "%LMQ%") || strings.Contains(text, `"l1"`) {
		t.Errorf("a series names a lite topic:\n%s", grepLines(text, "LMQ"))
	}
}

func grepLines(text, sub string) string {
	var out []string
	for line := range strings.SplitSeq(text, "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
