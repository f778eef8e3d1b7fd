package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
	"github.com/apogeemq/apogee/server/apogeetest"
)

// TestAdminExportCLI runs mqadmin's export*, updateSubGroupList, consumer,
// consumerStatus, producer and DecodeMessageId as the real binary against
// a server with the official v2 producer and push consumer attached.
func TestAdminExportCLI(t *testing.T) {
	srv := apogeetest.Start(t)
	nsAddr, brokerAddr, cluster := srv.NamesrvAddr(), srv.BrokerAddr(), "DefaultCluster"
	cli := newAdminCLI(t, nsAddr)
	run, jsonOf, a := cli.run, cli.jsonOf, cli.a
	ctx := testutil.Context(t, 2*time.Minute)

	topic, group := uniqueName(t, "T"), uniqueName(t, "G")
	run("updateTopic", "-t", topic, "-c", cluster, "-r", "3", "-w", "3", "-a", "+message.type=NORMAL")
	testutil.Eventually(t, 10*time.Second, func() bool { _, err := a.TopicRoute(ctx, topic); return err == nil }, "no route for %s", topic)

	// updateSubGroupList: two groups from one file, one with non-default
	// settings that must arrive as written.
	dir := t.TempDir()
	groupsFile := filepath.Join(dir, "groups.json")
	g2 := group + "_batch"
	list := fmt.Sprintf(`[{"groupName":%q},{"groupName":%q,"retryMaxTimes":5,"consumeBroadcastEnable":false}]`, group, g2)
	if err := os.WriteFile(groupsFile, []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := run("updateSubGroupList", "-c", cluster, "-f", groupsFile); !strings.Contains(out, "2 subscription groups") {
		t.Fatalf("updateSubGroupList: %q", out)
	}
	cfgs, err := a.GroupConfigTable(ctx, brokerAddr)
	if err != nil {
		t.Fatal(err)
	}
	var gc struct {
		RetryMaxTimes          int  `json:"retryMaxTimes"`
		ConsumeBroadcastEnable bool `json:"consumeBroadcastEnable"`
		ConsumeEnable          bool `json:"consumeEnable"`
	}
	if err := json.Unmarshal(cfgs[g2], &gc); err != nil || gc.RetryMaxTimes != 5 || gc.ConsumeBroadcastEnable || !gc.ConsumeEnable {
		t.Fatalf("group %s after updateSubGroupList: %s (%v)", g2, cfgs[g2], err)
	}
	if _, ok := cfgs[group]; !ok {
		t.Fatalf("group %s not created by updateSubGroupList", group)
	}

	// A producer and a push consumer, both the official v2 client.
	p := newProducer(t, nsAddr)
	res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("export")))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{}, 16)
	startOfficialPushConsumer(t, nsAddr, group, topic, consumer.MessageSelector{},
		func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			select {
			case got <- struct{}{}:
			default:
			}
			return consumer.ConsumeSuccess, nil
		})
	select {
	case <-got:
	case <-ctx.Done():
		t.Fatal("the push consumer received nothing")
	}

	// exportMetadata -c: the user topic and groups, no system topic, no
	// retry topic without -s.
	exportDir := filepath.Join(dir, "export")
	if out := run("exportMetadata", "-c", cluster, "-f", exportDir); !strings.Contains(out, "metadata.json success") {
		t.Fatalf("exportMetadata: %q", out)
	}
	var md struct {
		TopicConfigTable map[string]struct {
			TopicName      string            `json:"topicName"`
			ReadQueueNums  int               `json:"readQueueNums"`
			WriteQueueNums int               `json:"writeQueueNums"`
			Attributes     map[string]string `json:"attributes"`
		} `json:"topicConfigTable"`
		SubscriptionGroupTable map[string]json.RawMessage `json:"subscriptionGroupTable"`
		ExportTime             int64                      `json:"exportTime"`
	}
	readJSON(t, filepath.Join(exportDir, "metadata.json"), &md)
	tc, ok := md.TopicConfigTable[topic]
	if !ok || tc.WriteQueueNums != 3 || tc.ReadQueueNums != 3 || tc.Attributes["message.type"] != "NORMAL" {
		t.Fatalf("exportMetadata: topic %s is %+v (present %v)", topic, tc, ok)
	}
	for name := range md.TopicConfigTable {
		if name == "TBW102" || strings.HasPrefix(name, "rmq_sys_") || strings.HasPrefix(name, "%RETRY%") || name == cluster {
			t.Fatalf("exportMetadata exported the system or retry topic %s", name)
		}
	}
	if _, ok := md.SubscriptionGroupTable[g2]; !ok || md.ExportTime == 0 {
		t.Fatalf("exportMetadata: groups %v, exportTime %d", len(md.SubscriptionGroupTable), md.ExportTime)
	}
	if _, ok := md.SubscriptionGroupTable["TOOLS_CONSUMER"]; ok {
		t.Fatal("exportMetadata exported the system group TOOLS_CONSUMER")
	}
	// -b -t -s: one broker's topics with the retry topics.
	run("exportMetadata", "-b", brokerAddr, "-t", "-s", "-f", exportDir)
	var topics struct {
		TopicConfigTable map[string]json.RawMessage `json:"topicConfigTable"`
	}
	readJSON(t, filepath.Join(exportDir, "topic.json"), &topics)
	if _, ok := topics.TopicConfigTable["%RETRY%"+group]; !ok {
		t.Fatalf("exportMetadata -s: no retry topic of %s in %d topics", group, len(topics.TopicConfigTable))
	}

	// exportConfigs: the kept broker.conf keys and the cluster's size.
	run("exportConfigs", "-c", cluster, "-f", exportDir)
	var cf struct {
		BrokerConfigs map[string]map[string]string `json:"brokerConfigs"`
		ClusterScale  map[string]int               `json:"clusterScale"`
	}
	readJSON(t, filepath.Join(exportDir, "configs.json"), &cf)
	if len(cf.BrokerConfigs) != 1 || cf.ClusterScale["masterBrokerSize"] != 1 || cf.ClusterScale["namesrvSize"] != 1 {
		t.Fatalf("exportConfigs: %+v", cf)
	}
	for _, bc := range cf.BrokerConfigs {
		if bc["brokerClusterName"] != cluster || bc["flushDiskType"] == "" || bc["storePathRootDir"] != "" {
			t.Fatalf("exportConfigs broker keys: %v", bc)
		}
	}

	// exportMetrics: measured put counts and the consumer's client version.
	run("exportMetrics", "-c", cluster, "-f", exportDir)
	var mt struct {
		EvaluateReport map[string]struct {
			RuntimeQuota struct {
				TopicSize          int    `json:"topicSize"`
				GroupSize          int    `json:"groupSize"`
				MessageAverageSize string `json:"messageAverageSize"`
			} `json:"runtimeQuota"`
			RuntimeVersion struct {
				ClientInfo []string `json:"clientInfo"`
			} `json:"runtimeVersion"`
		} `json:"evaluateReport"`
		TotalData map[string]json.RawMessage `json:"totalData"`
	}
	readJSON(t, filepath.Join(exportDir, "metrics.json"), &mt)
	if len(mt.EvaluateReport) != 1 || mt.TotalData["totalTps"] == nil {
		t.Fatalf("exportMetrics: %+v", mt)
	}
	for _, r := range mt.EvaluateReport {
		if r.RuntimeQuota.TopicSize < 1 || r.RuntimeQuota.GroupSize < 2 || r.RuntimeQuota.MessageAverageSize == "" {
			t.Fatalf("exportMetrics quota: %+v", r.RuntimeQuota)
		}
		if len(r.RuntimeVersion.ClientInfo) == 0 || !strings.HasPrefix(r.RuntimeVersion.ClientInfo[0], "GO%V") {
			t.Fatalf("exportMetrics client info: %v", r.RuntimeVersion.ClientInfo)
		}
	}

	// consumerStatus and consumer: the push consumer's own running info.
	var infos []struct {
		ClientID      string
		Properties    map[string]string
		Subscriptions []struct{ Topic string }
		Queues        []struct{ Queue struct{ Topic string } }
	}
	testutil.Eventually(t, 20*time.Second, func() bool {
		out, _, code := cli.try("consumerStatus", "-g", group, "--json")
		infos = nil
		if code != 0 || json.Unmarshal([]byte(out), &infos) != nil || len(infos) != 1 {
			return false
		}
		n := 0
		for _, q := range infos[0].Queues {
			if q.Queue.Topic == topic {
				n++
			}
		}
		return n == 3
	}, "consumerStatus never showed one client with the topic's 3 queues: %d clients", lazy(func() string { return fmt.Sprint(len(infos)) }))
	if !hasTopic(infos[0].Subscriptions, topic) || infos[0].Properties["PROP_CONSUME_TYPE"] == "" {
		t.Fatalf("consumerStatus: %+v", infos[0])
	}
	if out := run("consumerStatus", "-g", group); !strings.Contains(out, "Same subscription in the same group of consumer") {
		t.Fatalf("consumerStatus table: %q", out)
	}
	detail := run("consumerStatus", "-g", group, "-i", infos[0].ClientID)
	for _, want := range []string{"#Consumer Properties#", "#Consumer Subscription#", "#Consumer Offset#", topic} {
		if !strings.Contains(detail, want) {
			t.Fatalf("consumerStatus -i lacks %q:\n%s", want, detail)
		}
	}
	if out := run("consumer", "-g", group); !strings.Contains(out, infos[0].ClientID) || !strings.Contains(out, topic) {
		t.Fatalf("consumer: %q", out)
	}
	if _, errOut, code := cli.try("consumerStatus", "-g", group, "-i", "no-such-client"); code == 0 || !strings.Contains(errOut, "not online") {
		t.Fatalf("consumerStatus of an unknown client: exit %d, %q", code, errOut)
	}

	// producer: our SDK's producer (it heartbeats as it starts; the
	// official one first does so up to 30 s later) under its group.
	sp := newSDKProducer(t, nsAddr)
	if _, err := sp.Send(ctx, client.NewMessage(topic, []byte("from the SDK"))); err != nil {
		t.Fatal(err)
	}
	var producers map[string][]admin.ProducerInfo
	jsonOf(&producers, "producer", "-b", brokerAddr)
	if ps := producers[sp.Group()]; len(ps) != 1 || ps[0].ClientID != sp.ClientID() || ps[0].Language != "GO" || ps[0].LastUpdateTimestamp == 0 {
		t.Fatalf("producer: group %s has %+v (all %+v)", sp.Group(), ps, producers)
	}
	if out := run("producer", "-b", brokerAddr); !strings.Contains(out, sp.ClientID()) {
		t.Fatalf("producer table: %q", out)
	}

	// DecodeMessageId: the send's UNIQ_KEY names this host and a time
	// within the test.
	out := run("DecodeMessageId", "-i", res.MsgID)
	if !strings.Contains(out, "ip=") || !strings.Contains(out, "date="+time.Now().Format("2006-01-02")) {
		t.Fatalf("DecodeMessageId %s: %q", res.MsgID, out)
	}
	if _, _, code := cli.try("DecodeMessageId", "-i", "XYZ"); code == 0 {
		t.Fatal("DecodeMessageId accepted a malformed id")
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
}

func hasTopic(subs []struct{ Topic string }, topic string) bool {
	for _, s := range subs {
		if s.Topic == topic {
			return true
		}
	}
	return false
}

// TestAdminMqadminValueFlags: mqadmin's switches that take a value
// (updateTopic -o true, updateSubGroup -s false -d false -o true,
// resetOffsetByTimeOld -f false) parse as mqadmin's, and
// resetOffsetByTimeOld rewrites committed offsets, forwards only with
// -f true.
func TestAdminMqadminValueFlags(t *testing.T) {
	srv := apogeetest.Start(t)
	nsAddr, brokerAddr, cluster := srv.NamesrvAddr(), srv.BrokerAddr(), "DefaultCluster"
	cli := newAdminCLI(t, nsAddr)
	run, a := cli.run, cli.a
	ctx := testutil.Context(t, time.Minute)

	topic, group := uniqueName(t, "T"), uniqueName(t, "G")
	run("updateTopic", "-t", topic, "-c", cluster, "-r", "1", "-w", "1", "-o", "true")
	if tc, err := a.BrokerTopicConfig(ctx, brokerAddr, topic); err != nil || !tc.Order {
		t.Fatalf("updateTopic -o true: %+v %v", tc, err)
	}
	if _, errOut, code := cli.try("updateTopic", "-t", topic, "-c", cluster, "-o", "maybe"); code == 0 || !strings.Contains(errOut, "want true or false") {
		t.Fatalf("updateTopic -o maybe: exit %d: %s", code, errOut)
	}
	run("updateSubGroup", "-g", group, "-c", cluster, "-s", "false", "-d", "false", "-o", "true")
	cfgs, err := a.GroupConfigTable(ctx, brokerAddr)
	if err != nil {
		t.Fatal(err)
	}
	var gc struct{ ConsumeEnable, ConsumeBroadcastEnable, ConsumeMessageOrderly bool }
	if err := json.Unmarshal(cfgs[group], &gc); err != nil || gc.ConsumeEnable || gc.ConsumeBroadcastEnable || !gc.ConsumeMessageOrderly {
		t.Fatalf("updateSubGroup -s false -d false -o true: %s (%v)", cfgs[group], err)
	}
	testutil.Eventually(t, 10*time.Second, func() bool { _, err := a.TopicRoute(ctx, topic); return err == nil }, "no route for %s", topic)

	// Five messages, then the group's committed offset at 5.
	p := newSDKProducer(t, nsAddr)
	before := time.Now().Add(-time.Second)
	for i := range 5 {
		if _, err := p.Send(ctx, client.NewMessage(topic, []byte(fmt.Sprint(i)))); err != nil {
			t.Fatal(err)
		}
	}
	rc := signedClient(t, "", "")
	commit := func(off int64) {
		t.Helper()
		resp, err := rc.InvokeSync(ctx, brokerAddr, protocol.NewRequest(protocol.UpdateConsumerOffset,
			map[string]string{"consumerGroup": group, "topic": topic, "queueId": "0", "commitOffset": fmt.Sprint(off)}, nil))
		if err != nil || resp.Code != int32(protocol.Success) {
			t.Fatalf("commit %d: %v %+v", off, err, resp)
		}
	}
	committed := func() int64 {
		t.Helper()
		cp, err := a.ConsumerProgress(ctx, group, topic)
		if err != nil || len(cp.Queues) != 1 {
			t.Fatalf("progress: %+v %v", cp, err)
		}
		return cp.Queues[0].ConsumerOffset
	}
	// Sends are acknowledged once stored; the consume queue that the
	// offsets are read from is written just after.
	testutil.Eventually(t, 10*time.Second, func() bool {
		cp, err := a.ConsumerProgress(ctx, group, topic)
		return err == nil && len(cp.Queues) == 1 && cp.Queues[0].BrokerOffset == 5
	}, "the queue never reached 5 messages")
	commit(5)
	var stats []admin.RollbackStats
	reset := func(args ...string) {
		t.Helper()
		out := run(append([]string{"resetOffsetByTimeOld", "-g", group, "-t", topic, "--json"}, args...)...)
		stats = nil
		if err := json.Unmarshal([]byte(out), &stats); err != nil || len(stats) != 1 {
			t.Fatalf("resetOffsetByTimeOld %v: %v\n%s", args, err, out)
		}
	}
	// Backwards to the first message after before: allowed without force.
	reset("-s", fmt.Sprint(before.UnixMilli()), "-f", "false")
	if s := stats[0]; s.ConsumerOffset != 5 || s.TimestampOffset != 0 || s.RollbackOffset != 0 || s.BrokerOffset != 5 || committed() != 0 {
		t.Fatalf("reset back: %+v, committed %d", s, committed())
	}
	// Forwards to the end: refused without force, done with it.
	reset("-s", "-1", "-f", "false")
	if s := stats[0]; s.TimestampOffset != 5 || s.RollbackOffset != 0 || committed() != 0 {
		t.Fatalf("reset forward without force: %+v, committed %d", s, committed())
	}
	reset("-s", "-1", "-f", "true")
	if s := stats[0]; s.RollbackOffset != 5 || committed() != 5 {
		t.Fatalf("reset forward with force: %+v, committed %d", s, committed())
	}
	// A group that consumed nothing there is an error.
	if _, errOut, code := cli.try("resetOffsetByTimeOld", "-g", group+"_none", "-t", topic, "-s", "now"); code == 0 {
		t.Fatalf("resetOffsetByTimeOld of a group without offsets succeeded: %s", errOut)
	}
}
