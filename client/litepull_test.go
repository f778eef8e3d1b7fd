package client

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

func newFakeLitePull(t *testing.T, env *fakeBrokerEnv, opts ...ConsumerOpt) *LitePullConsumer {
	t.Helper()
	all := append([]ConsumerOpt{WithNameServers("fake:9876"), WithConsumeFromWhere(ConsumeFromFirstOffset)}, opts...)
	l, err := NewLitePullConsumer("g", all...)
	if err != nil {
		t.Fatal(err)
	}
	l.c.newEnv = func(*consumerConfig) (consumerEnv, func() error, error) {
		return env, func() error { return nil }, nil
	}
	return l
}

func pollN(t *testing.T, l *LitePullConsumer, n int) []*MessageExt {
	t.Helper()
	ctx := testutil.Context(t, 5*time.Second)
	var out []*MessageExt
	for len(out) < n {
		msgs, err := l.Poll(ctx)
		if err != nil {
			t.Fatalf("poll after %d: %v", len(out), err)
		}
		out = append(out, msgs...)
	}
	return out
}

// TestLitePullSeekAndManualCommit: Poll returns each queue in order, Seek
// rewinds one queue, and only Commit stores offsets.
func TestLitePullSeekAndManualCommit(t *testing.T) {
	env := newFakeBrokerEnv(t, "a")
	env.put("T", 2, 20, "m")
	l := newFakeLitePull(t, env, WithAutoCommit(false, 0))
	if err := l.Subscribe("T", TagSelector("*")); err != nil {
		t.Fatal(err)
	}
	if err := l.Assign(MessageQueue{Topic: "T", BrokerName: fakeBrokerName}); err == nil {
		t.Fatal("Assign after Subscribe accepted")
	}
	if _, err := l.Poll(context.Background()); err == nil {
		t.Fatal("Poll before Start accepted")
	}
	if err := l.Start(); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := pollN(t, l, 20)
	last := map[int]int64{0: -1, 1: -1}
	for _, m := range got {
		if m.QueueOffset != last[int(m.QueueID)]+1 {
			t.Fatalf("queue %d: offset %d after %d", m.QueueID, m.QueueOffset, last[int(m.QueueID)])
		}
		last[int(m.QueueID)] = m.QueueOffset
	}
	mq := MessageQueue{Topic: "T", BrokerName: fakeBrokerName, QueueID: 1}
	if off, _ := l.CommittedOffset(context.Background(), mq); off >= 10 {
		t.Fatalf("offset %d committed before Commit", off)
	}
	if err := l.Seek(mq, 4); err != nil {
		t.Fatal(err)
	}
	again := pollN(t, l, 6)
	if again[0].QueueOffset != 4 || again[0].QueueID != 1 {
		t.Fatalf("after seek: queue %d offset %d", again[0].QueueID, again[0].QueueOffset)
	}
	if err := l.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	off0, off1 := env.offset(MessageQueue{Topic: "T", BrokerName: fakeBrokerName}), env.offset(mq)
	if off0 != 10 || off1 != 10 {
		t.Fatalf("committed %d / %d, want 10 / 10", off0, off1)
	}
	// Offsets move only through Commit: no pull carried one (a pull sent
	// before the Seek could otherwise move the committed offset back).
	if n := env.broker.CommitPulls(); n != 0 {
		t.Fatalf("%d pulls carried a commit offset", n)
	}
	if err := l.Seek(MessageQueue{Topic: "X"}, 0); err == nil {
		t.Fatal("seek of an unassigned queue accepted")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Poll(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("poll after close: %v", err)
	}
}

// TestLitePullAssignAutoCommit: an assigned queue is read without
// rebalance; auto-commit uploads polled offsets.
func TestLitePullAssignAutoCommit(t *testing.T) {
	env := newFakeBrokerEnv(t, "a")
	env.put("T", 2, 20, "m")
	l := newFakeLitePull(t, env, WithAutoCommit(true, 10*time.Millisecond))
	mq := MessageQueue{Topic: "T", BrokerName: fakeBrokerName, QueueID: 0}
	if err := l.Assign(mq); err != nil {
		t.Fatal(err)
	}
	if err := l.Start(); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, m := range pollN(t, l, 10) {
		if m.QueueID != 0 {
			t.Fatalf("message of unassigned queue %d", m.QueueID)
		}
	}
	if a := l.Assignment(); len(a) != 1 || a[0] != mq {
		t.Fatalf("assignment %v", a)
	}
	testutil.Eventually(t, 5*time.Second, func() bool {
		return env.offset(mq) == 10
	}, "auto commit did not upload")
}

// TestLitePullPauseResume: a paused queue is not pulled until resumed.
func TestLitePullPauseResume(t *testing.T) {
	env := newFakeBrokerEnv(t, "a")
	env.put("T", 2, 4, "m")
	l := newFakeLitePull(t, env)
	q0 := MessageQueue{Topic: "T", BrokerName: fakeBrokerName, QueueID: 0}
	q1 := MessageQueue{Topic: "T", BrokerName: fakeBrokerName, QueueID: 1}
	if err := l.Assign(q0, q1); err != nil {
		t.Fatal(err)
	}
	l.Pause(q1)
	if err := l.Start(); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, m := range pollN(t, l, 2) {
		if m.QueueID != 0 {
			t.Fatalf("message from paused queue %d", m.QueueID)
		}
	}
	l.Resume(q1)
	for _, m := range pollN(t, l, 2) {
		if m.QueueID != 1 {
			t.Fatalf("message from queue %d after resume", m.QueueID)
		}
	}
}

// TestLitePullAhead: while a backlog drains, a queue's next pull is sent
// before the current one is answered, and the messages still arrive once
// each, in offset order, also across a Seek that strands a pull sent ahead.
func TestLitePullAhead(t *testing.T) {
	env := newFakeBrokerEnv(t, "a")
	env.put("T", 1, 400, "m")
	env.broker.Delay(protocol.LitePullMessage, 2*time.Millisecond)
	l := newFakeLitePull(t, env, WithAutoCommit(false, 0), WithPullBatchSize(32))
	mq := MessageQueue{Topic: "T", BrokerName: fakeBrokerName}
	if err := l.Assign(mq); err != nil {
		t.Fatal(err)
	}
	if err := l.Start(); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	check := func(msgs []*MessageExt, from int64) {
		t.Helper()
		for i, m := range msgs {
			if want := from + int64(i); m.QueueOffset != want || string(m.Body) != fmt.Sprintf("m-%d", want) {
				t.Fatalf("message %d: offset %d body %q, want offset %d", i, m.QueueOffset, m.Body, want)
			}
		}
	}
	first := pollN(t, l, 100)
	check(first, 0)
	if err := l.Seek(mq, 50); err != nil {
		t.Fatal(err)
	}
	check(pollN(t, l, 350), 50)
	if n := env.maxPulls.Load(); n < 2 {
		t.Fatalf("at most %d pull in flight", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if msgs, err := l.Poll(ctx); err == nil {
		t.Fatalf("%d more messages (first offset %d)", len(msgs), msgs[0].QueueOffset)
	}
}
