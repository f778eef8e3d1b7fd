package broker

import (
	"slices"

	"github.com/apogeemq/apogee/internal/protocol"
)

// POP state follows its topic and its group: DELETE_TOPIC_IN_BROKER and
// DELETE_SUBSCRIPTIONGROUP drop it (internal/pop records the drop, so a
// restart does not bring it back and a topic or group created again with
// the name starts from nothing), as RocketMQ's revive service skips the
// checkpoints of a topic or group that no longer exists.

// popRetryTopicsOf lists the pop retry topics (v2 and v1 names) that
// exist for the given normal topics, for every group that popped them or
// has offsets on them: RocketMQ's deleteTopic deletes them with the topic.
func (b *Broker) popRetryTopicsOf(topics []string) []string {
	if b.pop == nil {
		return nil
	}
	var out []string
	for _, t := range topics {
		if protocol.PopTopicTypeOf(t).IsRetry() {
			continue
		}
		groups := append(b.pop.state.GroupsOf(t), b.Offsets.GroupsOfTopic(t)...)
		slices.Sort(groups)
		for _, g := range slices.Compact(groups) {
			out = append(out, b.pop.retryTopics(t, g)...)
		}
	}
	return out
}

// dropPopTopics forgets the POP state on deleted topics.
func (b *Broker) dropPopTopics(topics []string) error {
	if b.pop == nil {
		return nil
	}
	for _, t := range topics {
		if _, err := b.pop.state.DropTopic(t); err != nil {
			return err
		}
	}
	return nil
}

// dropPopGroup forgets a deleted group's POP state and returns its pop
// retry topics that exist (deleted with the group's offsets).
func (b *Broker) dropPopGroup(group string) ([]string, error) {
	if b.pop == nil {
		return nil, nil
	}
	topics, err := b.pop.state.DropGroup(group)
	if err != nil {
		return nil, err
	}
	var retry []string
	for _, t := range topics {
		if !protocol.PopTopicTypeOf(t).IsRetry() {
			retry = append(retry, b.pop.retryTopics(t, group)...)
		}
	}
	return retry, nil
}
