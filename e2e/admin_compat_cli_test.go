package e2e

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/apogeemq/apogee/internal/testutil"
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
	// Parsed in full, the request reaches the address (a name server, which
	// serves no controller request).
	if _, errOut, code := exec("electMaster", "-a", nsAddr, "-b", "1", "-bn", brokerName, "-c", cluster, "--timeout", "3s"); code == 0 || strings.Contains(errOut, "flag") {
		t.Fatalf("electMaster -bn against a name server: exit %d %q", code, errOut)
	}
}
