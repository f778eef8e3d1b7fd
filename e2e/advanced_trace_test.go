package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/testutil"
)

// traceOutput is the --json output of `apogee admin queryMsgTraceById`.
type traceOutput struct {
	MsgID string `json:"msgId"`
	Trace []struct {
		Type       string `json:"type"`
		Group      string `json:"group"`
		Topic      string `json:"topic"`
		ClientHost string `json:"clientHost"`
		StoreHost  string `json:"storeHost"`
		Time       int64  `json:"time"`
		CostMs     int64  `json:"costMs"`
		Status     string `json:"status"`
		Keys       string `json:"keys"`
	} `json:"trace"`
}

// waitTrace runs queryMsgTraceById until the trace shows a successful send
// and a successful consume of id, and returns it.
func waitTrace(t *testing.T, bin, nsAddr, id string) traceOutput {
	t.Helper()
	var out traceOutput
	testutil.Eventually(t, 30*time.Second, func() bool {
		stdout, stderr, code := runApogee(t, bin, "admin", "queryMsgTraceById", "-n", nsAddr, "-i", id, "--json")
		if code != 0 {
			t.Logf("queryMsgTraceById: exit %d: %s", code, stderr)
			return false
		}
		out = traceOutput{}
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatalf("queryMsgTraceById --json: %v\n%s", err, stdout)
		}
		var pub, sub bool
		for _, s := range out.Trace {
			pub = pub || s.Type == "Pub" && s.Status == "success"
			sub = sub || s.Type == "Sub" && s.Status == "success"
		}
		return pub && sub
	}, "trace of %s never showed a send and a consume", id)
	return out
}

// TestTraceApogeeSDK: the Apogee SDK's WithTrace records a send (Pub) and a
// consume (SubBefore/SubAfter) in RMQ_SYS_TRACE_TOPIC (created by the
// broker with traceTopicEnable), and `apogee admin queryMsgTraceById`
// prints them with hosts and costs (docs/broker.md §1.15).
func TestTraceApogeeSDK(t *testing.T) {
	c := startCluster(t, func(cfg *broker.Config) { cfg.TraceTopicEnable = true })
	waitRoute(t, c.ns, client.DefaultTraceTopic)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 2)
	bin := buildApogee(t)

	p := newSDKProducer(t, c.nsAddr, client.WithTrace(""))
	ctx := testutil.Context(t, 30*time.Second)
	res, err := p.Send(ctx, client.NewMessage(topic, []byte("traced")).WithTag("TagT").WithKeys("order-1"))
	if err != nil {
		t.Fatal(err)
	}
	group := uniqueName(t, "cg")
	got := make(chan struct{}, 1)
	newSDKPushConsumer(t, c.nsAddr, group, topic, client.TagSelector("*"),
		func(context.Context, []*client.MessageExt) (client.ConsumeResult, error) {
			select {
			case got <- struct{}{}:
			default:
			}
			return client.ConsumeSuccess, nil
		}, client.WithTrace(""))
	select {
	case <-got:
	case <-ctx.Done():
		t.Fatal("message not consumed")
	}

	out := waitTrace(t, bin, c.nsAddr, res.MsgID)
	stored := false
	for _, s := range out.Trace {
		switch s.Type {
		case "Store":
			stored = s.StoreHost == c.b.Addr() && s.Topic == topic
		case "Pub":
			if s.Group != p.Group() || s.Topic != topic || s.StoreHost != c.b.Addr() || s.Keys != "order-1" || s.ClientHost == "" {
				t.Errorf("Pub step = %+v", s)
			}
		case "Sub":
			if s.Group != group || s.ClientHost == "" || s.Time == 0 {
				t.Errorf("Sub step = %+v", s)
			}
		}
	}
	if !stored {
		t.Errorf("no Store step in %+v", out.Trace)
	}
	// The table form names the steps too.
	table, _, code := runApogee(t, bin, "admin", "queryMsgTraceById", "-n", c.nsAddr, "-i", res.MsgID)
	if code != 0 || !strings.Contains(table, "Pub") || !strings.Contains(table, "Sub") || !strings.Contains(table, c.b.Addr()) {
		t.Fatalf("table output (exit %d):\n%s", code, table)
	}
	t.Logf("queryMsgTraceById:\n%s", table)
}

// TestTraceOfficialGoClient: the official Go client's producer.WithTrace
// and consumer.WithTrace write their trace records to our broker, and our
// admin command parses them.
func TestTraceOfficialGoClient(t *testing.T) {
	c := startCluster(t, func(cfg *broker.Config) { cfg.TraceTopicEnable = true })
	waitRoute(t, c.ns, client.DefaultTraceTopic)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 2)
	bin := buildApogee(t)

	traceCfg := &primitive.TraceConfig{GroupName: uniqueName(t, "tg"), NamesrvAddrs: []string{c.nsAddr}}
	p := newProducer(t, c.nsAddr, producer.WithTrace(traceCfg))
	ctx := testutil.Context(t, 30*time.Second)
	m := primitive.NewMessage(topic, []byte("traced by the official client"))
	m.WithTag("TagO")
	m.WithKeys([]string{"official-key"})
	res, err := p.SendSync(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	r := newReceived()
	group := uniqueName(t, "cg")
	newPushConsumerSel(t, c.nsAddr, group, topic, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"},
		func(msgs ...*primitive.MessageExt) { r.add(msgs...) }, consumer.WithTrace(traceCfg))
	testutil.Eventually(t, 30*time.Second, func() bool { return r.count.Load() == 1 }, "message not consumed")

	out := waitTrace(t, bin, c.nsAddr, res.MsgID)
	for _, s := range out.Trace {
		if s.Type == "Pub" && (s.Topic != topic || s.Keys != "official-key" || s.StoreHost == "") {
			t.Errorf("Pub step = %+v", s)
		}
		if s.Type == "Sub" && s.Group != group {
			t.Errorf("Sub step = %+v", s)
		}
	}
}
