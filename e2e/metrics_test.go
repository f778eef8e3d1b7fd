package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/apogeemq/apogee/internal/metrics"
	"github.com/apogeemq/apogee/internal/testutil"
)

// brokerFamilies are the RocketMQ 5 families dashboards rely on, with
// their types: every one must be on every scrape, before it has a series.
var brokerFamilies = map[string]dto.MetricType{
	"rocketmq_messages_in_total":              dto.MetricType_COUNTER,
	"rocketmq_messages_out_total":             dto.MetricType_COUNTER,
	"rocketmq_throughput_in_total":            dto.MetricType_COUNTER,
	"rocketmq_throughput_out_total":           dto.MetricType_COUNTER,
	"rocketmq_message_size":                   dto.MetricType_HISTOGRAM,
	"rocketmq_rpc_latency":                    dto.MetricType_HISTOGRAM,
	"rocketmq_consumer_lag_messages":          dto.MetricType_GAUGE,
	"rocketmq_consumer_lag_latency":           dto.MetricType_GAUGE,
	"rocketmq_consumer_inflight_messages":     dto.MetricType_GAUGE,
	"rocketmq_consumer_queueing_latency":      dto.MetricType_GAUGE,
	"rocketmq_producer_connections":           dto.MetricType_GAUGE,
	"rocketmq_consumer_connections":           dto.MetricType_GAUGE,
	"rocketmq_storage_size":                   dto.MetricType_GAUGE,
	"rocketmq_storage_flush_behind_bytes":     dto.MetricType_GAUGE,
	"rocketmq_storage_dispatch_behind_bytes":  dto.MetricType_GAUGE,
	"rocketmq_topic_number":                   dto.MetricType_GAUGE,
	"rocketmq_consumer_group_number":          dto.MetricType_GAUGE,
	"rocketmq_processor_watermark":            dto.MetricType_GAUGE,
	"rocketmq_send_to_dlq_messages_total":     dto.MetricType_COUNTER,
	"apogee_group_commit_size":                dto.MetricType_HISTOGRAM,
	"apogee_fsync_latency_seconds":            dto.MetricType_HISTOGRAM,
	"apogee_page_cache_busy_rejections_total": dto.MetricType_COUNTER,
	"apogee_ha_lag_bytes":                     dto.MetricType_GAUGE,
	"apogee_timer_backlog_messages":           dto.MetricType_GAUGE,
	"apogee_pop_inflight_messages":            dto.MetricType_GAUGE,
	"apogee_index_unavailable":                dto.MetricType_GAUGE,
	"apogee_forced_deleted_messages_total":    dto.MetricType_COUNTER,
}

// scrape GETs /metrics and parses it with expfmt's text parser.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, _ := scrapeText(t, addr)
	return mfs
}

// scrapeText is scrape plus the raw exposition (expfmt's parser drops
// families without series; their # HELP and # TYPE lines are in the text).
func scrapeText(t *testing.T, addr string) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s: %s", resp.Status, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("Content-Type = %q", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("exposition does not parse: %v\n%s", err, body)
	}
	return mfs, string(body)
}

// sample sums the values of a family's series whose labels include want.
func sample(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, int) {
	mf := mfs[name]
	if mf == nil {
		return 0, 0
	}
	var sum float64
	n := 0
	for _, m := range mf.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		ok := true
		for k, v := range want {
			if labels[k] != v {
				ok = false
			}
		}
		if !ok {
			continue
		}
		n++
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum, n
}

// TestMetricsExactCounts sends exactly N messages with the official Go
// client and consumes them with an official push consumer, then checks
// the scrape: every RocketMQ 5 family present with its type (also before
// it has series), rocketmq_messages_in_total and _out_total rising by
// exactly N under the topic and consumer_group labels, throughput at least
// the body bytes, the lag going to 0, and the exposition parsing.
func TestMetricsExactCounts(t *testing.T) {
	c := startCluster(t, nil)
	srv, err := metrics.NewServer(metrics.Config{Addr: "127.0.0.1:0"}, testLogger(t), metrics.NewBrokerCollector(c.b))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })

	first, text := scrapeText(t, srv.Addr())
	for name, typ := range brokerFamilies {
		if !strings.Contains(text, "\n# HELP "+name+" ") && !strings.HasPrefix(text, "# HELP "+name+" ") {
			t.Errorf("family %s: no # HELP line on the first scrape", name)
		}
		if want := "# TYPE " + name + " " + strings.ToLower(typ.String()) + "\n"; !strings.Contains(text, want) {
			t.Errorf("family %s: no %q line on the first scrape", name, strings.TrimSpace(want))
		}
		if mf := first[name]; mf != nil && mf.GetType() != typ {
			t.Errorf("family %s parsed as %v, want %v", name, mf.GetType(), typ)
		}
	}
	if _, n := sample(first, "rocketmq_consumer_lag_messages", nil); n != 0 {
		t.Errorf("lag series before any consumer: %d", n)
	}

	topic := uniqueName(t, "T")
	c.createTopic(topic, 4)
	group := uniqueName(t, "cg")
	const n = 57
	p := newProducer(t, c.nsAddr)
	ids := sendN(t, p, topic, "", "metrics", n)
	bodyBytes := 0
	for i := range n {
		bodyBytes += len(fmt.Sprintf("%s-%d", "metrics", i))
	}

	mfs := scrape(t, srv.Addr())
	in := map[string]string{"topic": topic}
	if v, _ := sample(mfs, "rocketmq_messages_in_total", in); v != n {
		t.Fatalf("rocketmq_messages_in_total{topic=%s} = %v, want %d", topic, v, n)
	}
	if v, _ := sample(mfs, "rocketmq_messages_in_total", map[string]string{"topic": topic, "message_type": "normal",
		"cluster": c.cfg.BrokerClusterName, "node_type": "broker", "node_id": c.cfg.BrokerName, "is_system": "false"}); v != n {
		t.Fatalf("rocketmq_messages_in_total with RocketMQ's labels = %v, want %d", v, n)
	}
	if v, _ := sample(mfs, "rocketmq_throughput_in_total", in); v < float64(bodyBytes) {
		t.Fatalf("rocketmq_throughput_in_total = %v, want >= %d body bytes", v, bodyBytes)
	}
	if v, _ := sample(mfs, "rocketmq_message_size", in); v != n {
		t.Fatalf("rocketmq_message_size count = %v, want %d", v, n)
	}

	r := newReceived()
	newPushConsumer(t, c.nsAddr, group, topic, "*", r)
	r.waitAll(t, 30*time.Second, ids, "consumed")
	out := map[string]string{"topic": topic, "consumer_group": group}
	var last map[string]*dto.MetricFamily
	testutil.Eventually(t, 30*time.Second, func() bool {
		last = scrape(t, srv.Addr())
		lag, series := sample(last, "rocketmq_consumer_lag_messages", out)
		return series == 1 && lag == 0
	}, "rocketmq_consumer_lag_messages{topic,consumer_group} never 0 (committed offsets)")
	if v, _ := sample(last, "rocketmq_messages_out_total", out); v != n {
		t.Fatalf("rocketmq_messages_out_total{topic,consumer_group} = %v, want %d", v, n)
	}
	if v, _ := sample(last, "rocketmq_throughput_out_total", out); v < float64(bodyBytes) {
		t.Fatalf("rocketmq_throughput_out_total = %v, want >= %d", v, bodyBytes)
	}
	if v, _ := sample(last, "rocketmq_consumer_connections", map[string]string{"consumer_group": group}); v != 1 {
		t.Fatalf("rocketmq_consumer_connections{consumer_group} = %v, want 1", v)
	}
	if v, _ := sample(last, "rocketmq_producer_connections", nil); v < 1 {
		t.Fatalf("rocketmq_producer_connections = %v, want >= 1", v)
	}
	if v, _ := sample(last, "rocketmq_rpc_latency", map[string]string{"request_code": "heart_beat", "response_code": "success"}); v < 1 {
		t.Fatalf("rocketmq_rpc_latency{request_code=heart_beat} count = %v, want >= 1", v)
	}
	sendLat, _ := sample(last, "rocketmq_rpc_latency", map[string]string{"request_code": "send_message", "response_code": "success"})
	sendLatV2, _ := sample(last, "rocketmq_rpc_latency", map[string]string{"request_code": "send_message_v2", "response_code": "success"})
	if sendLat+sendLatV2 < n {
		t.Fatalf("rocketmq_rpc_latency{request_code=send_message(_v2)} count = %v, want >= %d", sendLat+sendLatV2, n)
	}
	if v, _ := sample(last, "rocketmq_topic_number", nil); v < 1 {
		t.Fatalf("rocketmq_topic_number = %v", v)
	}
	if v, _ := sample(last, "rocketmq_storage_size", nil); v <= 0 {
		t.Fatalf("rocketmq_storage_size = %v", v)
	}
	// A second send of N moves the counter by exactly N again.
	sendN(t, p, topic, "", "more", n)
	if v, _ := sample(scrape(t, srv.Addr()), "rocketmq_messages_in_total", in); v != 2*n {
		t.Fatalf("rocketmq_messages_in_total after 2N = %v, want %d", v, 2*n)
	}
}
