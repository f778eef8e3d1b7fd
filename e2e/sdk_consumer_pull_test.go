package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/internal/testutil"
)

func newSDKPullConsumer(t *testing.T, nsAddr, group string, opts ...client.ConsumerOpt) *client.PullConsumer {
	t.Helper()
	all := append([]client.ConsumerOpt{
		client.WithNameServers(nsAddr),
		client.WithLogger(testutil.Logger(t)),
		client.WithInstanceName(uniqueName(t, "spi")),
		client.WithPullSuspend(3 * time.Second),
	}, opts...)
	c, err := client.NewPullConsumer(group, all...)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestSDKPullConsumer: Pull reads every queue from offset 0 to its end,
// offsets round-trip through the broker (QUERY/UPDATE_CONSUMER_OFFSET),
// and PullBlock long-polls until a message arrives (docs/protocol.md §7.4).
func TestSDKPullConsumer(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 2)
	p := newProducer(t, c.nsAddr)
	ids := sendN(t, p, topic, "x", "p", 20)
	ctx := testutil.Context(t, 60*time.Second)
	pc := newSDKPullConsumer(t, c.nsAddr, uniqueName(t, "cg"))

	mqs, err := pc.FetchQueues(ctx, topic)
	if err != nil || len(mqs) != 2 {
		t.Fatalf("queues %v %v", mqs, err)
	}
	// An acknowledged send becomes pullable once the broker's dispatch has
	// built its consume-queue entry, a moment later (RocketMQ's reput
	// lag); under -race on a loaded machine that moment can outlast the
	// sends.
	testutil.Eventually(t, 10*time.Second, func() bool {
		var n int64
		for _, mq := range mqs {
			off, err := pc.MaxOffset(ctx, mq)
			if err != nil {
				return false
			}
			n += off
		}
		return n == int64(len(ids))
	}, "sent messages not dispatched")
	got := map[string]bool{}
	for _, mq := range mqs {
		off := int64(0)
		for range 100 {
			res, err := pc.Pull(ctx, mq, client.TagSelector("x"), off, 8)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status == client.PullNoNewMsg {
				break
			}
			for _, m := range res.Messages {
				got[m.MsgID] = true
				if m.Topic != topic || m.QueueID != int32(mq.QueueID) {
					t.Fatalf("message from %s/%d in %v", m.Topic, m.QueueID, mq)
				}
			}
			off = res.NextBeginOffset
		}
		maxOff, err := pc.MaxOffset(ctx, mq)
		if err != nil || maxOff != off {
			t.Fatalf("%v: max offset %d (%v), pulled to %d", mq, maxOff, err, off)
		}
		if err := pc.CommitOffset(ctx, mq, off); err != nil {
			t.Fatal(err)
		}
		if back, err := pc.CommittedOffset(ctx, mq); err != nil || back != off {
			t.Fatalf("committed offset %d (%v), want %d", back, err, off)
		}
	}
	for _, id := range ids {
		if !got[id] {
			t.Fatalf("message %s not pulled (%d of %d)", id, len(got), len(ids))
		}
	}
	// A tag that matches nothing.
	res, err := pc.Pull(ctx, mqs[0], client.TagSelector("nope"), 0, 8)
	if err != nil || len(res.Messages) != 0 || res.NextBeginOffset <= 0 {
		t.Fatalf("non-matching pull: %+v %v", res, err)
	}

	// Long polling: the pull waits at the end until a message arrives.
	end, _ := pc.MaxOffset(ctx, mqs[0])
	type answer struct {
		res *client.PullResult
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		res, err := pc.PullBlock(ctx, mqs[0], client.TagSelector("*"), end, 8)
		ch <- answer{res, err}
	}()
	start := time.Now()
	var a answer
	for a.res == nil && a.err == nil && time.Since(start) < 20*time.Second {
		sendN(t, p, topic, "late", "late", 2)
		select {
		case a = <-ch:
		case <-time.After(500 * time.Millisecond):
		}
	}
	if a.err != nil || a.res == nil || a.res.Status != client.PullFound {
		t.Fatalf("long poll: %+v %v", a.res, a.err)
	}
}

func newSDKLitePull(t *testing.T, nsAddr, group string, opts ...client.ConsumerOpt) *client.LitePullConsumer {
	t.Helper()
	all := append([]client.ConsumerOpt{
		client.WithNameServers(nsAddr),
		client.WithLogger(testutil.Logger(t)),
		client.WithInstanceName(uniqueName(t, "sli")),
		client.WithConsumeFromWhere(client.ConsumeFromFirstOffset),
		client.WithRebalanceInterval(time.Second),
		client.WithPullSuspend(2 * time.Second),
	}, opts...)
	c, err := client.NewLitePullConsumer(group, all...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func pollUntil(t *testing.T, ctx context.Context, c *client.LitePullConsumer, n int) []*client.MessageExt {
	t.Helper()
	var out []*client.MessageExt
	for len(out) < n {
		pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		msgs, err := c.Poll(pctx)
		cancel()
		if err != nil {
			t.Fatalf("poll after %d of %d: %v", len(out), n, err)
		}
		out = append(out, msgs...)
	}
	return out
}

// TestSDKLitePullSubscribeAutoCommit: a subscribed lite pull consumer polls
// every message; its offsets are committed to the broker on Close.
func TestSDKLitePullSubscribeAutoCommit(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 4)
	group := uniqueName(t, "cg")
	p := newProducer(t, c.nsAddr)
	ids := sendN(t, p, topic, "", "l", 50)
	ctx := testutil.Context(t, 60*time.Second)

	lc := newSDKLitePull(t, c.nsAddr, group)
	if err := lc.Subscribe(topic, client.TagSelector("*")); err != nil {
		t.Fatal(err)
	}
	if err := lc.Start(); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, m := range pollUntil(t, ctx, lc, len(ids)) {
		got[m.MsgID] = true
	}
	for _, id := range ids {
		if !got[id] {
			t.Fatalf("message %s not polled", id)
		}
	}
	if err := lc.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := lc.Poll(ctx); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("poll after close: %v", err)
	}
	pc := newSDKPullConsumer(t, c.nsAddr, group)
	mqs, _ := pc.FetchQueues(ctx, topic)
	var committed int64
	for _, mq := range mqs {
		off, err := pc.CommittedOffset(ctx, mq)
		if err != nil {
			t.Fatal(err)
		}
		committed += off
	}
	if committed != int64(len(ids)) {
		t.Fatalf("committed offsets sum to %d, want %d", committed, len(ids))
	}
}

// TestSDKLitePullAssignSeekManualCommit: an assigned queue is polled, Seek
// rewinds it, and only Commit stores the offset.
func TestSDKLitePullAssignSeekManualCommit(t *testing.T) {
	c := startCluster(t, nil)
	topic := uniqueName(t, "T")
	c.createTopic(topic, 1)
	group := uniqueName(t, "cg")
	p := newProducer(t, c.nsAddr)
	ids := sendN(t, p, topic, "", "s", 10)
	ctx := testutil.Context(t, 60*time.Second)

	lc := newSDKLitePull(t, c.nsAddr, group, client.WithAutoCommit(false, 0))
	mq := client.MessageQueue{Topic: topic, BrokerName: "broker-a", QueueID: 0}
	if err := lc.Assign(mq); err != nil {
		t.Fatal(err)
	}
	if err := lc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lc.Close() })
	first := pollUntil(t, ctx, lc, len(ids))
	if first[0].MsgID != ids[0] || first[0].QueueOffset != 0 {
		t.Fatalf("first polled %s@%d, want %s@0", first[0].MsgID, first[0].QueueOffset, ids[0])
	}
	if err := lc.Seek(mq, 3); err != nil {
		t.Fatal(err)
	}
	again := pollUntil(t, ctx, lc, 1)
	if again[0].QueueOffset != 3 || again[0].MsgID != ids[3] {
		t.Fatalf("after seek polled offset %d", again[0].QueueOffset)
	}
	pollUntil(t, ctx, lc, len(ids)-3-len(again))
	if err := lc.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	pc := newSDKPullConsumer(t, c.nsAddr, group)
	if off, err := pc.CommittedOffset(ctx, mq); err != nil || off != int64(len(ids)) {
		t.Fatalf("committed %d (%v), want %d", off, err, len(ids))
	}
}
