package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

// TestPopStateDroppedWithTopicOrGroup: deleting the topic, or the group
// (with cleanOffset), drops the group's POP state on it — checkpoints of
// the topic and of its pop retry topic, which is deleted too — and a
// restart does not bring any of it back: nothing is in flight, nothing is
// revived, and a topic created again with the name starts from nothing.
func TestPopStateDroppedWithTopicOrGroup(t *testing.T) {
	for _, tc := range []struct {
		name   string
		delete func(topic, group string) *protocol.Command
	}{
		{"deleteTopic", func(topic, _ string) *protocol.Command {
			return protocol.NewRequest(protocol.DeleteTopicInBroker, protocol.EncodeHeader(&protocol.TopicHeader{Topic: topic}, false), nil)
		}},
		{"deleteSubscriptionGroup", func(_, group string) *protocol.Command {
			h := protocol.DeleteSubscriptionGroupRequestHeader{GroupName: group, CleanOffset: true}
			return protocol.NewRequest(protocol.DeleteSubscriptionGroup, protocol.EncodeHeader(&h, false), nil)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := popTestConfig(t, dir)
			b := startBroker(t, cfg)
			c := newClient(t)
			const topic, group = "PopDrop", "GD"
			retry := protocol.PopRetryTopicV2(topic, group)
			sendN(t, c, b, topic, 0, 6, "old")
			if got := popAll(t, c, b, group, topic, 300*time.Millisecond); len(got) != 6 {
				t.Fatalf("popped %d, want 6", len(got))
			}
			// The six come back through the retry topic; pop them there too
			// so both topics hold in-flight state.
			var back []popped
			testutil.Eventually(t, 10*time.Second, func() bool {
				back = append(back, popAll(t, c, b, group, topic, time.Hour)...)
				return len(back) >= 6
			}, "redelivery through %s", retry)
			sendN(t, c, b, topic, 0, 2, "old2")
			if got := popAll(t, c, b, group, topic, time.Hour); len(got) != 2 {
				t.Fatalf("popped %d, want 2", len(got))
			}
			if st := b.pop.state.Stats(); st.InFlight != 8 {
				t.Fatalf("in flight before the delete: %+v", st)
			}

			mustCode(t, invoke(t, c, b.Addr(), tc.delete(topic, group)), protocol.Success)
			if st := b.pop.state.Stats(); st.InFlight != 0 || st.Queues != 0 {
				t.Fatalf("POP state after the delete: %+v", st)
			}
			if b.Topics.Contains(retry) {
				t.Fatalf("%s survived the delete", retry)
			}
			// Another topic's record after the deleted ones: the store's
			// restart then re-dispatches from past them (it re-dispatches
			// records past every consume queue's end, deleted topics'
			// included, as RocketMQ's recovery does).
			sendN(t, c, b, "PopDropOther", 0, 1, "other")

			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
			cfg.ListenPort = 0
			b = startBroker(t, cfg)
			if st := b.pop.state.Stats(); st.InFlight != 0 || st.Queues != 0 {
				t.Fatalf("POP state came back after a restart: %+v", st)
			}
			sendN(t, c, b, topic, 0, 3, "new")
			var got []popped
			testutil.Eventually(t, 10*time.Second, func() bool {
				got = append(got, popAll(t, c, b, group, topic, time.Hour)...)
				return len(got) >= 3
			}, "pop after the delete")
			bodies := map[string]bool{}
			for _, p := range got {
				bodies[string(p.msg.Body)] = true
				if p.real != topic {
					t.Fatalf("%s came from %s", p.msg.Body, p.real)
				}
			}
			for i := range 3 {
				if !bodies[fmt.Sprintf("new-%d", i)] {
					t.Fatalf("new-%d not popped; got %v", i, bodies)
				}
			}
			if tc.name == "deleteTopic" && len(got) != 3 {
				t.Fatalf("the topic created again popped %d messages %v, want its 3", len(got), bodies)
			}
			if b.Topics.Contains(retry) {
				t.Fatalf("%s re-created: old checkpoints were revived", retry)
			}
		})
	}
}
