package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/testutil"
	"github.com/apogeemq/apogee/server"
	"github.com/apogeemq/apogee/server/apogeetest"
)

// TestAdminMqadminOptionsCLI runs the real binary with mqadmin's command
// lines where our options once differed (letters, arity, long names) and
// checks what each did.
func TestAdminMqadminOptionsCLI(t *testing.T) {
	srv := apogeetest.Start(t)
	bin := buildApogee(t)
	nsAddr := srv.NamesrvAddr()
	cluster, brokerName, brokerAddr := "DefaultCluster", "broker-a", srv.BrokerAddr()
	exec := func(args ...string) (string, string, int) {
		t.Helper()
		return runApogee(t, bin, append([]string{"admin"}, args...)...)
	}
	run := func(args ...string) string {
		t.Helper()
		out, errOut, code := exec(args...)
		if code != 0 {
			t.Fatalf("apogee admin %v: exit %d: %s", args, code, errOut)
		}
		return out
	}
	jsonOf := func(v any, args ...string) {
		t.Helper()
		out := run(append(args, "--json")...)
		if err := json.Unmarshal([]byte(out), v); err != nil {
			t.Fatalf("apogee admin %v --json: %v\n%s", args, err, out)
		}
	}
	ctx := testutil.Context(t, 2*time.Minute)

	// --namesrvAddr (mqadmin's long -n) and --namesrv both work.
	topic := uniqueName(t, "T")
	run("updateTopic", "--namesrvAddr", nsAddr, "-t", topic, "-c", cluster, "-r", "2", "-w", "2")
	testutil.Eventually(t, 10*time.Second, func() bool {
		_, _, code := exec("topicRoute", "--namesrv", nsAddr, "-t", topic)
		return code == 0
	}, "no route for %s", topic)
	ns := []string{"-n", nsAddr}

	// topicList -c is a switch: a value after it would have eaten "-n".
	var rows []struct {
		Cluster string `json:"clusterName"`
		Topic   string `json:"topic"`
		Group   string `json:"consumerGroup"`
	}
	jsonOf(&rows, "topicList", "-c", "-n", nsAddr)
	found := false
	for _, r := range rows {
		if r.Topic == topic {
			found = r.Cluster == cluster && r.Group == ""
		}
		if strings.HasPrefix(r.Topic, "%RETRY%") || strings.HasPrefix(r.Topic, "%DLQ%") {
			t.Fatalf("topicList -c lists %s", r.Topic)
		}
	}
	if !found {
		t.Fatalf("topicList -c: no %s row in cluster %s: %+v", topic, cluster, rows)
	}
	if out := run(append([]string{"topicList", "-c"}, ns...)...); !strings.Contains(out, "#Cluster Name") {
		t.Fatalf("topicList -c table: %q", out)
	}

	// topicRoute prints RocketMQ's TopicRouteData JSON, as mqadmin.
	var rd struct {
		QueueDatas []struct {
			BrokerName    string `json:"brokerName"`
			ReadQueueNums int    `json:"readQueueNums"`
		} `json:"queueDatas"`
		BrokerDatas []struct {
			Cluster     string            `json:"cluster"`
			BrokerAddrs map[string]string `json:"brokerAddrs"`
		} `json:"brokerDatas"`
	}
	if out := run(append([]string{"topicRoute", "-t", topic}, ns...)...); json.Unmarshal([]byte(out), &rd) != nil ||
		len(rd.QueueDatas) != 1 || rd.QueueDatas[0].ReadQueueNums != 2 || len(rd.BrokerDatas) != 1 ||
		rd.BrokerDatas[0].Cluster != cluster || rd.BrokerDatas[0].BrokerAddrs["0"] != brokerAddr {
		t.Fatalf("topicRoute: not the route's TopicRouteData JSON: %q", out)
	}

	// queryMsgByKey: -m caps the count, -b/-e bound the store time, -c
	// the cluster.
	p := newProducer(t, nsAddr)
	before := time.Now().Add(-time.Minute).UnixMilli()
	key := uniqueName(t, "k")
	for i := range 3 {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("keyed-%d", i)))
		m.WithKeys([]string{key})
		if _, err := p.SendSync(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	count := func(args ...string) int {
		out, _, code := exec(append(append([]string{"queryMsgByKey", "-t", topic, "-k", key, "--json"}, ns...), args...)...)
		var msgs []json.RawMessage
		if code != 0 || json.Unmarshal([]byte(out), &msgs) != nil {
			return -1
		}
		return len(msgs)
	}
	testutil.Eventually(t, 15*time.Second, func() bool { return count() == 3 }, "queryMsgByKey found %d of 3", count())
	if n := count("-m", "2"); n != 2 {
		t.Fatalf("queryMsgByKey -m 2: %d messages", n)
	}
	if n := count("-b", strconv.FormatInt(before, 10), "-e", strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10), "-c", cluster); n != 3 {
		t.Fatalf("queryMsgByKey -b -e -c around the sends: %d messages", n)
	}
	if n := count("-e", strconv.FormatInt(before, 10)); n > 0 {
		t.Fatalf("queryMsgByKey -e before the sends: %d messages", n)
	}
	if _, errOut, code := exec(append([]string{"queryMsgByKey", "-t", topic, "-k", key, "-c", "NoSuchCluster"}, ns...)...); code == 0 || !strings.Contains(errOut, "NoSuchCluster") {
		t.Fatalf("queryMsgByKey -c NoSuchCluster: exit %d %q", code, errOut)
	}

	// consumerProgress: --topicName, -s true (the client IP of each queue),
	// -c cluster.
	group := uniqueName(t, "cg")
	run(append([]string{"updateSubGroup", "-g", group, "-c", cluster}, ns...)...)
	r := newReceived()
	newPushConsumer(t, nsAddr, group, topic, "*", r)
	testutil.Eventually(t, 30*time.Second, func() bool { return r.count.Load() >= 3 }, "consumer got %d", r.count.Load())
	var cp struct {
		Queues []struct {
			ClientIP string `json:"clientIP"`
		}
	}
	testutil.Eventually(t, 30*time.Second, func() bool {
		out, _, code := exec(append([]string{"consumerProgress", "-g", group, "--topicName", topic, "-s", "true", "-c", cluster, "--json"}, ns...)...)
		if code != 0 || json.Unmarshal([]byte(out), &cp) != nil || len(cp.Queues) != 2 {
			return false
		}
		for _, q := range cp.Queues {
			if q.ClientIP == "" {
				return false
			}
		}
		return true
	}, "consumerProgress -s true: %+v", cp)
	if out := run(append([]string{"consumerProgress", "-g", group, "-t", topic, "-s", "true"}, ns...)...); !strings.Contains(out, "#CLIENT_IP") || !strings.Contains(out, cp.Queues[0].ClientIP) {
		t.Fatalf("consumerProgress -s true table: %q", out)
	}
	if out := run(append([]string{"consumerProgress", "-g", group, "-t", topic}, ns...)...); strings.Contains(out, "#CLIENT_IP") {
		t.Fatalf("consumerProgress without -s shows client IPs: %q", out)
	}

	// consumerProgress without -g: one summary line per group.
	var groups []struct {
		Group string `json:"group"`
		Count int    `json:"count"`
		Type  string `json:"consumeType"`
		Model string `json:"messageModel"`
	}
	jsonOf(&groups, append([]string{"consumerProgress"}, ns...)...)
	seen := false
	for _, x := range groups {
		if x.Group == group {
			seen = x.Count == 1 && x.Type == "PUSH" && x.Model == "CLUSTERING"
		}
	}
	if !seen {
		t.Fatalf("consumerProgress without -g: no live PUSH CLUSTERING line for %s: %+v", group, groups)
	}

	// updateBrokerConfig -a takes a value; -c alone updates the masters.
	var upd struct {
		Brokers []string `json:"brokers"`
	}
	jsonOf(&upd, append([]string{"updateBrokerConfig", "-c", cluster, "-a", "true", "-k", "brokerPermission", "-v", "6"}, ns...)...)
	if len(upd.Brokers) != 1 || upd.Brokers[0] != brokerAddr {
		t.Fatalf("updateBrokerConfig -c -a: %+v", upd)
	}

	// getBrokerEpoch -b is a broker name, -c a cluster; a classic broker
	// has no epoch cache, so each resolves to the broker and fails there
	// (not on the name server).
	for _, args := range [][]string{{"-b", brokerName}, {"-c", cluster}} {
		_, errOut, code := exec(append(append([]string{"getBrokerEpoch"}, args...), ns...)...)
		if code == 0 || !strings.Contains(errOut, brokerAddr) {
			t.Fatalf("getBrokerEpoch %v: exit %d %q", args, code, errOut)
		}
	}
	if _, errOut, code := exec(append([]string{"getBrokerEpoch", "-b", "no-such-broker"}, ns...)...); code == 0 || !strings.Contains(errOut, "no-such-broker not found") {
		t.Fatalf("getBrokerEpoch of an unknown broker: exit %d %q", code, errOut)
	}

	// electMaster and cleanBrokerMetadata take mqadmin's -bn; without -l
	// cleanBrokerMetadata needs -c, as mqadmin's.
	if _, errOut, code := exec("cleanBrokerMetadata", "-a", nsAddr, "-bn", brokerName, "-b", "1;2"); code == 0 || !strings.Contains(errOut, "clusterName option can not be empty") {
		t.Fatalf("cleanBrokerMetadata without -c: exit %d %q", code, errOut)
	}
	if _, errOut, code := exec("cleanBrokerMetadata", "-a", nsAddr, "-bn", brokerName, "-b", "1;x", "-c", cluster); code == 0 || !strings.Contains(errOut, "want broker ids") {
		t.Fatalf("cleanBrokerMetadata -b 1;x: exit %d %q", code, errOut)
	}
	if _, errOut, code := exec("electMaster", "-a", nsAddr, "-b", "x", "-bn", brokerName, "-c", cluster); code == 0 || !strings.Contains(errOut, "brokerId") {
		t.Fatalf("electMaster -b x (not an id): exit %d %q", code, errOut)
	}
	// clusterRT -p true prints mqadmin's tlog lines.
	if out := run(append([]string{"clusterRT", "-a", "2", "-c", cluster, "-p", "true", "-m", "room1"}, ns...)...); !strings.Contains(out, "|room1|"+cluster+"|"+brokerName+"|") {
		t.Fatalf("clusterRT -p true: %q", out)
	}

	// setCommitLogReadAheadMode and resetMasterFlushOffset send RocketMQ's
	// requests; an Apogee broker does not serve them and says so.
	if _, errOut, code := exec(append([]string{"setCommitLogReadAheadMode", "-b", brokerAddr, "-m", "2"}, ns...)...); code == 0 || !strings.Contains(errOut, "0 is default, 1 random read") {
		t.Fatalf("setCommitLogReadAheadMode -m 2: exit %d %q", code, errOut)
	}
	for _, args := range [][]string{{"setCommitLogReadAheadMode", "-c", cluster, "-m", "1"}, {"resetMasterFlushOffset", "-b", brokerAddr, "-o", "0"}} {
		if _, errOut, code := exec(append(args, ns...)...); code == 0 || !strings.Contains(errOut, "REQUEST_CODE_NOT_SUPPORTED") {
			t.Fatalf("%v: exit %d %q", args, code, errOut)
		}
	}

	// Parsed in full, the request reaches the address (a name server, which
	// serves no controller request).
	if _, errOut, code := exec("electMaster", "-a", nsAddr, "-b", "1", "-bn", brokerName, "-c", cluster, "--timeout", "3s"); code == 0 || strings.Contains(errOut, "flag") {
		t.Fatalf("electMaster -bn against a name server: exit %d %q", code, errOut)
	}
}

// syncBuffer is an io.Writer that can be read while a process writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestAdminMqadminMissingOptionsCLI runs the real binary with the mqadmin
// options Apogee lacked and checks what each did through another path.
func TestAdminMqadminMissingOptionsCLI(t *testing.T) {
	srv := apogeetest.Start(t, func(o *server.Options) { o.Config = map[string]string{"traceTopicEnable": "true"} })
	bin := buildApogee(t)
	nsAddr := srv.NamesrvAddr()
	cluster, brokerName, brokerAddr := "DefaultCluster", "broker-a", srv.BrokerAddr()
	exec := func(args ...string) (string, string, int) {
		t.Helper()
		return runApogee(t, bin, append(append([]string{"admin"}, args...), "-n", nsAddr)...)
	}
	run := func(args ...string) string {
		t.Helper()
		out, errOut, code := exec(args...)
		if code != 0 {
			t.Fatalf("apogee admin %v: exit %d: %s", args, code, errOut)
		}
		return out
	}
	jsonOf := func(v any, args ...string) {
		t.Helper()
		out := run(append(args, "--json")...)
		if err := json.Unmarshal([]byte(out), v); err != nil {
			t.Fatalf("apogee admin %v --json: %v\n%s", args, err, out)
		}
	}
	fails := func(want string, args ...string) {
		t.Helper()
		out, errOut, code := exec(args...)
		if code == 0 || !strings.Contains(errOut, want) {
			t.Fatalf("apogee admin %v: exit %d, want an error with %q: %s%s", args, code, want, out, errOut)
		}
	}
	a, err := admin.New(admin.WithNameServers(nsAddr))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx := testutil.Context(t, 2*time.Minute)

	// updateTopic -u / -s set topicSysFlag; topicRoute -l and topicStatus -c.
	topic, unitTopic := uniqueName(t, "T"), uniqueName(t, "U")
	run("updateTopic", "-t", topic, "-c", cluster, "-r", "2", "-w", "2")
	run("updateTopic", "-t", unitTopic, "-c", cluster, "-u", "true", "-s", "true")
	for _, tp := range []string{topic, client.DefaultTraceTopic} {
		testutil.Eventually(t, 10*time.Second, func() bool { _, err := a.TopicRoute(ctx, tp); return err == nil }, "no route for %s", tp)
	}
	table, err := a.TopicConfigTable(ctx, brokerAddr)
	if err != nil {
		t.Fatal(err)
	}
	var tc struct {
		TopicSysFlag int `json:"topicSysFlag"`
	}
	if err := json.Unmarshal(table[unitTopic], &tc); err != nil || tc.TopicSysFlag != 3 {
		t.Fatalf("updateTopic -u true -s true: topicSysFlag %d (%v) %s", tc.TopicSysFlag, err, table[unitTopic])
	}
	if out := run("topicRoute", "-t", topic, "-l"); !regexpLine(out, cluster, brokerName, brokerAddr, "2") || !regexpLine(out, "Total:", "1", "2", "2") {
		t.Fatalf("topicRoute -l: %q", out)
	}
	var stats []json.RawMessage
	jsonOf(&stats, "topicStatus", "-t", topic, "-c", cluster)
	if len(stats) != 2 {
		t.Fatalf("topicStatus -c %s: %d queues", cluster, len(stats))
	}
	fails("NoSuchCluster", "topicStatus", "-t", topic, "-c", "NoSuchCluster")

	// sendMessage --key (mqadmin's long -k) and -m true (a trace record);
	// queryMsgTraceById -b / -e bound the trace records' store time.
	before := time.Now().Add(-time.Minute).UnixMilli()
	var sent struct {
		MsgID string `json:"msgId"`
	}
	key := uniqueName(t, "k")
	jsonOf(&sent, "sendMessage", "-t", topic, "-p", "traced body", "--key", key, "-c", "TagA", "-m", "true")
	testutil.Eventually(t, 15*time.Second, func() bool {
		out, _, code := exec("queryMsgByKey", "-t", topic, "-k", key)
		return code == 0 && strings.Contains(out, sent.MsgID)
	}, "queryMsgByKey -k %s never found the message sent with --key", key)
	after := strconv.FormatInt(time.Now().Add(time.Minute).UnixMilli(), 10)
	testutil.Eventually(t, 20*time.Second, func() bool {
		out, _, code := exec("queryMsgTraceById", "-i", sent.MsgID, "-b", strconv.FormatInt(before, 10), "-e", after)
		return code == 0 && regexpLine(out, "Pub", "success")
	}, "no Pub trace of %s (sendMessage -m true)", sent.MsgID)
	if out := run("queryMsgTraceById", "-i", sent.MsgID, "-e", strconv.FormatInt(before, 10)); !strings.Contains(out, "no trace") {
		t.Fatalf("queryMsgTraceById -e before the send: %q", out)
	}

	// queryMsgById -f prints the body in a charset; -s true sends it again.
	if out := run("queryMsgById", "-t", topic, "-i", sent.MsgID, "-f", "UTF-8"); !regexpLine(out, "Message Body", "traced body") {
		t.Fatalf("queryMsgById -f UTF-8: %q", out)
	}
	fails("charset not supported", "queryMsgById", "-t", topic, "-i", sent.MsgID, "-f", "EBCDIC")
	total := func() int64 {
		st, err := a.TopicStats(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, s := range st {
			n += s.MaxOffset
		}
		return n
	}
	n0 := total()
	var resent []struct {
		Status string `json:"status"`
	}
	jsonOf(&resent, "queryMsgById", "-t", topic, "-i", sent.MsgID+",", "-s", "true", "-u", "unit1")
	if len(resent) != 1 || resent[0].Status != "SEND_OK" || total() != n0+1 {
		t.Fatalf("queryMsgById -s true: %+v, messages %d -> %d", resent, n0, total())
	}

	// consumeMessage --MessageNumber, -g, -s / -e.
	var msgs []json.RawMessage
	jsonOf(&msgs, "consumeMessage", "-t", topic, "--MessageNumber", "1", "-g", "CID_TOOLS")
	if len(msgs) != 1 {
		t.Fatalf("consumeMessage --MessageNumber 1: %d messages", len(msgs))
	}
	jsonOf(&msgs, "consumeMessage", "-t", topic, "-s", strconv.FormatInt(before, 10), "-e", after)
	if len(msgs) != 2 {
		t.Fatalf("consumeMessage -s -e around the sends: %d messages", len(msgs))
	}
	jsonOf(&msgs, "consumeMessage", "-t", topic, "-e", strconv.FormatInt(before, 10))
	if len(msgs) != 0 {
		t.Fatalf("consumeMessage -e before the sends: %d messages", len(msgs))
	}

	// updateSubGroup -m / -p / -a reach the broker's group config.
	group := uniqueName(t, "cg")
	run("updateSubGroup", "-g", group, "-c", cluster, "-m", "true", "-a", "false",
		"-p", `{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[1000,2000]}}`)
	cfgs, err := a.GroupConfigs(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	var gc struct {
		ConsumeFromMinEnable           bool `json:"consumeFromMinEnable"`
		NotifyConsumerIdsChangedEnable bool `json:"notifyConsumerIdsChangedEnable"`
		GroupRetryPolicy               struct {
			Type                  string `json:"type"`
			CustomizedRetryPolicy struct {
				Next []int64 `json:"next"`
			} `json:"customizedRetryPolicy"`
		} `json:"groupRetryPolicy"`
	}
	if err := json.Unmarshal(cfgs[brokerAddr], &gc); err != nil || !gc.ConsumeFromMinEnable || gc.NotifyConsumerIdsChangedEnable ||
		gc.GroupRetryPolicy.Type != "CUSTOMIZED" || len(gc.GroupRetryPolicy.CustomizedRetryPolicy.Next) != 2 {
		t.Fatalf("updateSubGroup -m true -a false -p: %+v (%v) %s", gc, err, cfgs[brokerAddr])
	}
	fails("groupRetryPolicy", "updateSubGroup", "-g", group, "-c", cluster, "-p", "{not json")
	// resetOffsetByTime takes mqadmin's -c cluster and --cplus. On a group
	// that never gets a consumer: the broker answers a reset group's next
	// pull with PULL_OFFSET_MOVED, which the official Go client retries
	// after 10 seconds, beyond this test.
	resetGroup := uniqueName(t, "cg")
	run("updateSubGroup", "-g", resetGroup, "-c", cluster)
	var reset []struct {
		QueueID int   `json:"queueId"`
		Offset  int64 `json:"offset"`
	}
	jsonOf(&reset, "resetOffsetByTime", "-g", resetGroup, "-t", topic, "-s", "now", "-c", cluster, "--cplus")
	maxOf := map[int]int64{}
	st, err := a.TopicStats(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		maxOf[s.Queue.QueueID] = s.MaxOffset
	}
	for _, q := range reset {
		if q.Offset != maxOf[q.QueueID] { // now: the end of each queue
			t.Fatalf("resetOffsetByTime -s now -c --cplus: %+v, queue ends %v", reset, maxOf)
		}
	}

	// A live push consumer: consumerConnection -b, consumerStatus -b,
	// queryMsgById -g -d (pushed to it again).
	r := newReceived()
	newPushConsumer(t, nsAddr, group, topic, "*", r)
	// The resent copy keeps the message's UNIQ_KEY: one id for two messages.
	testutil.Eventually(t, 30*time.Second, func() bool { return r.count.Load() >= 1 }, "consumer got %d", r.count.Load())
	var cc struct {
		Connections []struct{ ClientID string }
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		out, _, code := exec("consumerConnection", "-g", group, "-b", brokerAddr, "--json")
		return code == 0 && json.Unmarshal([]byte(out), &cc) == nil && len(cc.Connections) == 1
	}, "consumerConnection -b: %+v", cc)
	clientID := cc.Connections[0].ClientID
	if out := run("consumerStatus", "-g", group, "-b", brokerAddr); !strings.Contains(out, clientID) {
		t.Fatalf("consumerStatus -b: %q", out)
	}
	var pushed []struct {
		ConsumeResult string `json:"consumeResult"`
	}
	jsonOf(&pushed, "queryMsgById", "-t", topic, "-i", sent.MsgID, "-g", group, "-d", clientID)
	if len(pushed) != 1 || !strings.HasPrefix(pushed[0].ConsumeResult, "CR_SUCCESS") {
		t.Fatalf("queryMsgById -g -d: %+v", pushed)
	}

	// producerConnection -t: the producer of a topic's route.
	pgName := uniqueName(t, "pg")
	p := newProducer(t, nsAddr, producer.WithGroupName(pgName))
	if _, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("from a producer"))); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 15*time.Second, func() bool {
		out, _, code := exec("producerConnection", "-g", pgName, "-t", topic)
		return code == 0 && strings.Contains(out, brokerName) && strings.Contains(out, "GO")
	}, "producerConnection -g %s -t: no client", pgName)

	// clusterList -c / -m (yesterday's and today's totals: today counts
	// this test's sends).
	if out := run("clusterList", "-c", cluster); !regexpLine(out, cluster, brokerName, brokerAddr, "MASTER") {
		t.Fatalf("clusterList -c: %q", out)
	}
	fails("NoSuchCluster", "clusterList", "-c", "NoSuchCluster")
	var more []struct {
		InTotalToday int64 `json:"inTotalToday"`
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		out, _, code := exec("clusterList", "-m", "-c", cluster, "--json")
		return code == 0 && json.Unmarshal([]byte(out), &more) == nil && len(more) == 1 && more[0].InTotalToday >= 3
	}, "clusterList -m: %+v", more)

	// clusterList -i 1 repeats until interrupted, and an interrupt is a
	// normal end.
	var out syncBuffer
	cmd := osexec.Command(bin, "admin", "clusterList", "-i", "1", "-n", nsAddr)
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*time.Second, func() bool { return strings.Count(out.String(), "#CLUSTER_NAME") >= 2 }, "clusterList -i 1 printed once: %q", out.String())
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("clusterList -i after SIGINT: %v", err)
	}

	// haStatus -c: every master of the cluster; getSyncStateSet -c names
	// the cluster's broker sets (here from a name server, which is no
	// controller); printMsg -l is refused.
	var ha map[string]any
	jsonOf(&ha, "haStatus", "-c", cluster)
	if _, ok := ha["master"]; !ok {
		t.Fatalf("haStatus -c: %v", ha)
	}
	fails("NoSuchCluster", "getSyncStateSet", "-a", nsAddr, "-c", "NoSuchCluster")
	fails("LMQ", "printMsg", "-t", topic, "-l", "parent")
}
