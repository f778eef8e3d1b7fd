package e2e

// Scaffolding shared by the end-to-end tests: message collectors, official
// push consumers with any listener, and the apogee binary (build, start a
// child process, wait for its listening line). The in-process cluster
// (startCluster) lives in broker_cluster_test.go, the in-process name
// server (startNamesrv) in namesrv_test.go.

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/testutil"
)

// byID collects consumed messages by message id; a second delivery of an
// id counts as a duplicate and keeps the first message.
type byID[M any] struct {
	id    func(M) string // the message id of a message
	mu    sync.Mutex
	msgs  map[string]M // guarded by mu
	dups  int          // guarded by mu
	count atomic.Int64 // len(msgs), readable without mu
}

// received collects messages of official Go consumers.
type received = byID[*primitive.MessageExt]

// sdkReceived collects messages of Apogee SDK consumers.
type sdkReceived = byID[*client.MessageExt]

func newReceived() *received {
	return &received{id: func(m *primitive.MessageExt) string { return m.MsgId }, msgs: map[string]*primitive.MessageExt{}}
}

func newSDKReceived() *sdkReceived {
	return &sdkReceived{id: func(m *client.MessageExt) string { return m.MsgID }, msgs: map[string]*client.MessageExt{}}
}

func (r *byID[M]) add(msgs ...M) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range msgs {
		id := r.id(m)
		if _, ok := r.msgs[id]; ok {
			r.dups++
			continue
		}
		r.msgs[id] = m
		r.count.Add(1)
	}
}

func (r *byID[M]) get(id string) (M, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.msgs[id]
	return m, ok
}

func (r *byID[M]) duplicates() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dups
}

func (r *byID[M]) ids() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]bool, len(r.msgs))
	for id := range r.msgs {
		out[id] = true
	}
	return out
}

// missing counts the ids not received yet.
func (r *byID[M]) missing(ids []string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, id := range ids {
		if _, ok := r.msgs[id]; !ok {
			n++
		}
	}
	return n
}

// waitAll waits until every id has been received; what names the phase in
// the failure message.
func (r *byID[M]) waitAll(t testing.TB, timeout time.Duration, ids []string, what string) {
	t.Helper()
	testutil.Eventually(t, timeout, func() bool { return r.missing(ids) == 0 }, "%s: %v", what, lazy(func() string {
		return fmt.Sprintf("%d of %d messages never received (%d received in all)", r.missing(ids), len(ids), r.count.Load())
	}))
}

// lazy is a failure-message argument formatted only when the message is
// printed (testutil.Eventually's arguments are evaluated when it is
// called, before the wait).
type lazy func() string

func (l lazy) String() string { return l() }

// testLogger is the logger of in-process servers: t.Log for tests,
// discarded for benchmarks (whose b.Log output is always printed and would
// cost time inside the measurement).
func testLogger(tb testing.TB) *slog.Logger {
	if _, ok := tb.(*testing.B); ok {
		return testutil.DiscardLogger()
	}
	return testutil.Logger(tb)
}

// tagSelector is the official client's tag subscription expression.
func tagSelector(expr string) consumer.MessageSelector {
	return consumer.MessageSelector{Type: consumer.TAG, Expression: expr}
}

// officialListener is the official Go client's push listener.
type officialListener = func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error)

// startOfficialPushConsumer starts an official Go push consumer of topic
// in group, reading from the first offset, with listener l. opts are
// applied after the defaults. Shutdown is registered with t.Cleanup.
func startOfficialPushConsumer(t testing.TB, nsAddr, group, topic string, sel consumer.MessageSelector, l officialListener, opts ...consumer.Option) rocketmq.PushConsumer {
	t.Helper()
	all := append([]consumer.Option{
		consumer.WithNameServer([]string{nsAddr}),
		consumer.WithGroupName(group),
		consumer.WithInstance(uniqueName(t, "ci")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	}, opts...)
	c, err := rocketmq.NewPushConsumer(all...)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe(topic, sel, l); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	t.Cleanup(func() {
		// The official client's Start launches an unsynchronised rebalance
		// goroutine that reads its close flag, which Shutdown writes: a
		// data race inside the client (not ours) that -race reports when a
		// test ends within a few tens of milliseconds of Start. Give that
		// goroutine time to finish before shutting down.
		if d := officialStartGrace - time.Since(started); d > 0 {
			time.Sleep(d)
		}
		// The same close flag is read by the rebalance that the client
		// runs on NOTIFY_CONSUMER_IDS_CHANGED, on a goroutine with no
		// ordering to Shutdown. Shutting down the group's members one by
		// one makes the broker notify the remaining ones (as RocketMQ's
		// broker does), so each Shutdown would race with the rebalance the
		// previous one caused. Switch the group's notifications off first
		// (SubscriptionGroupConfig.notifyConsumerIdsChangedEnable, a real
		// RocketMQ setting), over the wire like an admin tool.
		disableGroupNotify(t, nsAddr, topic, group)
		c.Shutdown()
	})
	return c
}

// disableGroupNotify sets notifyConsumerIdsChangedEnable=false in group's
// subscription group config on every broker serving topic. Best effort:
// the broker may already be gone at the end of a test.
func disableGroupNotify(t testing.TB, nsAddr, topic, group string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	rc := remoting.NewClient(remoting.ClientConfig{Logger: testutil.DiscardLogger()})
	if err := rc.Start(); err != nil {
		return
	}
	defer rc.Close()
	resp, err := rc.InvokeSync(ctx, nsAddr, protocol.NewRequest(protocol.GetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
	if err != nil || resp.Code != int32(protocol.Success) {
		return
	}
	route, err := protocol.DecodeTopicRouteData(resp.Body)
	if err != nil {
		return
	}
	sc := protocol.NewSubscriptionGroupConfig(group)
	sc.NotifyConsumerIdsChangedEnable = false
	body, err := protocol.MarshalJSON(&sc)
	if err != nil {
		t.Errorf("encode group config: %v", err)
		return
	}
	for _, bd := range route.BrokerDatas {
		if addr, ok := bd.BrokerAddrs[0]; ok {
			_, _ = rc.InvokeSync(ctx, addr, protocol.NewRequest(protocol.UpdateAndCreateSubscriptionGroup, nil, body))
		}
	}
}

// officialStartGrace is how long after Start an official push consumer is
// left alone before Shutdown; see startOfficialPushConsumer.
const officialStartGrace = 500 * time.Millisecond

// buildApogee builds cmd/apogee into the test's temp dir (the build
// cache makes repeats cheap).
func buildApogee(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "apogee")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/apogeemq/apogee/cmd/apogee").CombinedOutput()
	if err != nil {
		t.Fatalf("build apogee: %v\n%s", err, out)
	}
	return bin
}

// buildApogeeBinary is buildApogee (an older name some tests use).
func buildApogeeBinary(t *testing.T) string {
	t.Helper()
	return buildApogee(t)
}

// startApogeeProcess runs bin with args as a child process, its stderr
// forwarded to t.Log, and returns once a line it prints on stdout satisfies
// ready (called from another goroutine, one line at a time, until it
// returns true; whatever it records is visible once this returns). The
// rest of stdout is drained. The process is killed at cleanup if it still
// runs.
func startApogeeProcess(t testing.TB, bin string, ready func(line string) bool, args ...string) *testutil.Child {
	t.Helper()
	return testutil.StartChild(t, testutil.ChildOptions{Ready: ready, Stderr: &logWriter{t: t}}, bin, args...)
}

// listening is a ready function for startApogeeProcess: the first line
// that says "listening on".
func listening(line string) bool { return strings.Contains(line, "listening on") }

// logWriter forwards a child's stderr to t.Log.
type logWriter struct{ t testing.TB }

func (w *logWriter) Write(p []byte) (int, error) {
	defer func() { _ = recover() }() // t.Log after the test ended panics
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// wantMessage is what a test sent, to compare with what a consumer got.
type wantMessage struct {
	body  []byte
	tag   string
	keys  string // space-separated, as the KEYS property holds them
	props map[string]string
}

// checkOfficialMessage compares a message consumed by the official Go
// client with what was sent; name identifies it in failures.
func checkOfficialMessage(t *testing.T, name string, m *primitive.MessageExt, w wantMessage) {
	t.Helper()
	checkMessage(t, name, m.Body, m.GetTags(), m.GetKeys(), m.GetProperty, w)
}

// checkSDKMessage compares a message consumed by an Apogee SDK consumer
// with what was sent; name identifies it in failures.
func checkSDKMessage(t *testing.T, name string, m *client.MessageExt, w wantMessage) {
	t.Helper()
	checkMessage(t, name, m.Body, m.Tag(), strings.Join(m.Keys(), " "), m.Property, w)
}

func checkMessage(t *testing.T, name string, body []byte, tag, keys string, prop func(string) string, w wantMessage) {
	t.Helper()
	if !bytes.Equal(body, w.body) {
		t.Errorf("%s: body %q (%d bytes), want %q (%d bytes)", name, trunc(body), len(body), trunc(w.body), len(w.body))
	}
	if tag != w.tag {
		t.Errorf("%s: tag %q, want %q", name, tag, w.tag)
	}
	if keys != w.keys {
		t.Errorf("%s: keys %q, want %q", name, keys, w.keys)
	}
	for k, v := range w.props {
		if got := prop(k); got != v {
			t.Errorf("%s: property %s = %q, want %q", name, k, got, v)
		}
	}
}

// trunc shortens a body for a failure message.
func trunc(b []byte) []byte {
	if len(b) > 40 {
		return b[:40]
	}
	return b
}
