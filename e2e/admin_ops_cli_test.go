package e2e

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/testutil"
	"github.com/apogeemq/apogee/server/apogeetest"
)

// TestAdminOpsCLI runs each of mqadmin's operations commands as the real
// binary against a real name server and broker and checks what it did,
// through another path where one exists (the admin API, the route, a
// consumer, another command).
func TestAdminOpsCLI(t *testing.T) {
	srv := apogeetest.Start(t) // the embeddable server: an in-process name server and broker
	nsAddr := srv.NamesrvAddr()
	ns := []string{"-n", nsAddr}
	cluster, brokerName, brokerAddr := "DefaultCluster", "broker-a", srv.BrokerAddr()
	cli := newAdminCLI(t, nsAddr)
	bin, run, jsonOf, a := cli.bin, cli.run, cli.jsonOf, cli.a
	try := func(args ...string) string {
		t.Helper()
		if out, _, code := cli.try(args...); code == 0 {
			return out
		}
		return ""
	}
	ctx := testutil.Context(t, 2*time.Minute)

	// Name-server KV and configuration.
	run("updateKvConfig", "-s", "OPS_NS", "-k", "k1", "-v", "v1")
	if v, err := a.KVConfig(ctx, "OPS_NS", "k1"); err != nil || v != "v1" {
		t.Fatalf("updateKvConfig: kv is %q, %v", v, err)
	}
	run("deleteKvConfig", "-s", "OPS_NS", "-k", "k1")
	if _, err := a.KVConfig(ctx, "OPS_NS", "k1"); !errors.Is(err, admin.ErrNotFound) {
		t.Fatalf("deleteKvConfig: kv still there (%v)", err)
	}
	run("updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true")
	var nsCfg map[string]map[string]string
	jsonOf(&nsCfg, "getNamesrvConfig")
	if got := nsCfg[nsAddr]["orderMessageEnable"]; got != "true" {
		t.Fatalf("getNamesrvConfig after updateNamesrvConfig: orderMessageEnable=%q (%v)", got, nsCfg)
	}

	// A topic with messages of two tags.
	topic := uniqueName(t, "T")
	run("updateTopic", "-t", topic, "-c", cluster, "-r", "4", "-w", "4")
	testutil.Eventually(t, 10*time.Second, func() bool { _, err := a.TopicRoute(ctx, topic); return err == nil }, "no route for %s", topic)
	p := newProducer(t, nsAddr)
	var ids []string
	for i := range 20 {
		m := primitive.NewMessage(topic, []byte(fmt.Sprintf("ops-%d", i)))
		m.WithTag([]string{"TagA", "TagB"}[i%2])
		res, err := p.SendSync(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.MsgID)
	}

	// Route-level commands.
	if out := run("topicClusterList", "-t", topic); strings.TrimSpace(out) != cluster {
		t.Fatalf("topicClusterList: %q, want %q", out, cluster)
	}
	var alloc struct {
		Result map[string][]struct{ QueueID int }
	}
	jsonOf(&alloc, "allocateMQ", "-t", topic, "-i", "10.0.0.1,10.0.0.2")
	if len(alloc.Result["10.0.0.1"]) != 2 || len(alloc.Result["10.0.0.2"]) != 2 {
		t.Fatalf("allocateMQ: %+v", alloc)
	}
	perm := func() int {
		r, err := a.TopicRoute(ctx, topic)
		if err != nil || len(r.Queues) == 0 {
			return -1
		}
		return r.Queues[0].Perm
	}
	run("updateTopicPerm", "-c", cluster, "-t", topic, "-p", "4")
	testutil.Eventually(t, 10*time.Second, func() bool { return perm() == 4 }, "updateTopicPerm: perm %d", perm())
	run("updateTopicPerm", "-b", brokerAddr, "-t", topic, "-p", "6")
	testutil.Eventually(t, 10*time.Second, func() bool { return perm() == 6 }, "updateTopicPerm back: perm %d", perm())
	if out := run("wipeWritePerm", "-b", brokerName); !strings.Contains(out, "wipe write perm of broker["+brokerName+"]") {
		t.Fatalf("wipeWritePerm: %q", out)
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return perm() == 4 }, "wipeWritePerm: perm %d", perm())
	run("addWritePerm", "-b", brokerName)
	testutil.Eventually(t, 5*time.Second, func() bool { return perm() == 6 }, "addWritePerm: perm %d", perm())
	run("updateOrderConf", "-t", topic, "-v", brokerName+":4", "-m", "put")
	if out := run("updateOrderConf", "-t", topic, "-m", "get"); !strings.Contains(out, brokerName+":4") {
		t.Fatalf("updateOrderConf get: %q", out)
	}
	run("updateOrderConf", "-t", topic, "-m", "delete")
	if _, err := a.KVConfig(ctx, "ORDER_TOPIC_CONFIG", topic); !errors.Is(err, admin.ErrNotFound) {
		t.Fatalf("updateOrderConf delete: %v", err)
	}

	// Messages by position, by unique key, printed and counted.
	testutil.Eventually(t, 10*time.Second, func() bool {
		return strings.Contains(try("queryMsgByOffset", "-t", topic, "-b", brokerName, "-i", "0", "-o", "0"), "Queue Offset")
	},
		"queryMsgByOffset found nothing at offset 0")
	if out := run("queryMsgByUniqueKey", "-i", ids[3], "-t", topic); !strings.Contains(out, "ops-3") {
		t.Fatalf("queryMsgByUniqueKey: %s", out)
	}
	total := 0
	for q := range 4 {
		var counts map[string]int
		jsonOf(&counts, "printMsgByQueue", "-t", topic, "-a", brokerName, "-i", fmt.Sprint(q), "-f", "true")
		for _, n := range counts {
			total += n
		}
	}
	if total != 20 {
		t.Fatalf("printMsgByQueue -f true counted %d messages, want 20", total)
	}
	var printed []struct{ Topic string }
	jsonOf(&printed, "printMsg", "-t", topic, "-s", "TagA")
	if len(printed) != 10 {
		t.Fatalf("printMsg -s TagA printed %d messages, want 10", len(printed))
	}

	// Offsets: a group consumes, its offsets are cloned, skipped and reset.
	group := uniqueName(t, "cg")
	run("updateSubGroup", "-g", group, "-c", cluster)
	r := newReceived()
	newPushConsumer(t, nsAddr, group, topic, "*", r)
	testutil.Eventually(t, 30*time.Second, func() bool { return r.count.Load() >= 20 }, "consumer got %d", r.count.Load())
	lag := func(g string) int64 {
		cp, err := a.ConsumerProgress(ctx, g, topic)
		if err != nil {
			return -1
		}
		var n int64
		for _, q := range cp.Queues {
			n += q.ConsumerOffset
		}
		return n
	}
	testutil.Eventually(t, 30*time.Second, func() bool { return lag(group) == 20 }, "offsets of %s: %d", group, lag(group))
	clone := uniqueName(t, "cg")
	run("updateSubGroup", "-g", clone, "-c", cluster)
	run("cloneGroupOffset", "-s", group, "-d", clone, "-t", topic, "-o", "false")
	testutil.Eventually(t, 10*time.Second, func() bool { return lag(clone) == 20 }, "cloned offsets: %d", lag(clone))
	run("resetOffsetByTime", "-g", clone, "-t", topic, "-b", brokerAddr, "-q", "1", "-o", "0")
	testutil.Eventually(t, 10*time.Second, func() bool { return lag(clone) < 20 }, "one-queue reset: offsets %d", lag(clone))
	run("skipAccumulatedMessage", "-g", clone, "-t", topic, "-f", "true")
	testutil.Eventually(t, 10*time.Second, func() bool { return lag(clone) == 20 }, "skipAccumulatedMessage: offsets %d", lag(clone))

	// Consume mode (SET_MESSAGE_REQUEST_MODE): on one broker, then on the
	// cluster; the broker's table (GET_ALL_MESSAGE_REQUEST_MODE) shows it;
	// a %RETRY% topic is refused.
	mode := func() (string, int) {
		m, err := a.ConsumeModes(ctx, brokerAddr)
		if err != nil {
			t.Fatal(err)
		}
		return m[topic][group].Mode, m[topic][group].PopShareQueueNum
	}
	if out := run("setConsumeMode", "-b", brokerAddr, "-t", topic, "-g", group, "-m", "POP", "-q", "1"); !strings.Contains(out, "set consume mode to "+brokerAddr+" success.") ||
		!strings.Contains(out, "topic["+topic+"] group["+group+"] consume mode[POP] popShareQueueNum[1]") {
		t.Fatalf("setConsumeMode -b: %q", out)
	}
	if m, q := mode(); m != "POP" || q != 1 {
		t.Fatalf("after setConsumeMode POP: mode %q, popShareQueueNum %d", m, q)
	}
	run("setConsumeMode", "-c", cluster, "-t", topic, "-g", group, "-m", "PULL")
	if m, _ := mode(); m != "PULL" {
		t.Fatalf("after setConsumeMode -c PULL: mode %q", m)
	}
	if out := try("setConsumeMode", "-b", brokerAddr, "-t", "%RETRY%"+group, "-g", group, "-m", "POP"); out != "" {
		t.Fatalf("setConsumeMode on a retry topic succeeded: %q", out)
	}
	var bcs struct {
		Groups map[string][]struct {
			Queue                        struct{ Topic string }
			BrokerOffset, ConsumerOffset int64
		}
	}
	jsonOf(&bcs, "brokerConsumeStats", "-b", brokerAddr)
	onTopic := 0 // the group's %RETRY% topic may be listed too
	for _, q := range bcs.Groups[group] {
		if q.Queue.Topic == topic {
			onTopic++
			if q.BrokerOffset != 5 || q.ConsumerOffset != 5 {
				t.Fatalf("brokerConsumeStats: %+v, want broker and consumer offset 5", q)
			}
		}
	}
	if onTopic != 4 {
		t.Fatalf("brokerConsumeStats: group %s has %d queues of %s (%v)", group, onTopic, topic, bcs.Groups)
	}
	var gc map[string]map[string]any
	jsonOf(&gc, "getConsumerConfig", "-g", group)
	if gc[brokerAddr]["groupName"] != group {
		t.Fatalf("getConsumerConfig: %v", gc)
	}

	// Maintenance requests and send round trips.
	for _, cmd := range []string{"deleteExpiredCommitLog", "cleanExpiredCQ", "cleanUnusedTopic"} {
		out, errOut, code := runApogee(t, bin, append([]string{"admin", cmd, "-b", brokerAddr}, ns...)...)
		if code != 0 && !strings.Contains(errOut, "REQUEST_CODE_NOT_SUPPORTED") && !strings.Contains(errOut, "not supported") {
			t.Fatalf("%s: exit %d %s %s", cmd, code, out, errOut)
		}
	}
	var rt struct {
		Amount, Failed int
		AvgRTMillis    float64
	}
	jsonOf(&rt, "checkMsgSendRT", "-t", topic, "-a", "5", "-s", "64")
	if rt.Amount != 5 || rt.Failed != 0 || rt.AvgRTMillis <= 0 {
		t.Fatalf("checkMsgSendRT: %+v", rt)
	}
	var crt []struct {
		Broker          string
		Success, Failed int
	}
	jsonOf(&crt, "clusterRT", "-a", "3", "-c", cluster)
	if len(crt) != 1 || crt[0].Broker != brokerName || crt[0].Success != 3 {
		t.Fatalf("clusterRT: %+v", crt)
	}
	if out := run("sendMsgStatus", "-b", brokerName, "-c", "3"); strings.Count(out, " ok") != 3 {
		t.Fatalf("sendMsgStatus:\n%s", out)
	}
}
