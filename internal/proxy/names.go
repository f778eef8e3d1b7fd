package proxy

import (
	"strings"

	"github.com/apogeemq/apogee/internal/names"
	pb "github.com/apogeemq/apogee/internal/rmqpb"
)

// Name checks of the gRPC validator (internal/names' rules): topics of
// 1..127 and groups of 1..120 characters of [%|a-zA-Z0-9_-], neither a
// system name.

// checkTopic validates a topic resource: ILLEGAL_TOPIC.
func checkTopic(r *pb.Resource) (string, error) {
	t := r.GetName()
	if strings.TrimSpace(t) == "" {
		return "", errStatus(pb.Code_ILLEGAL_TOPIC, "topic name cannot be blank")
	}
	if err := names.ValidateTopic(t); err != nil || len(t) > names.MaxTopicLength {
		if err == nil {
			return "", errStatus(pb.Code_ILLEGAL_TOPIC, "the topic name %q is longer than %d characters", t, names.MaxTopicLength)
		}
		return "", errStatus(pb.Code_ILLEGAL_TOPIC, "%v", err)
	}
	if names.IsSystemTopic(t) {
		return "", errStatus(pb.Code_ILLEGAL_TOPIC, "topic %q is a system topic", t)
	}
	return t, nil
}

// checkGroup validates a consumer group resource: ILLEGAL_CONSUMER_GROUP.
func checkGroup(r *pb.Resource) (string, error) {
	g := r.GetName()
	if strings.TrimSpace(g) == "" {
		return "", errStatus(pb.Code_ILLEGAL_CONSUMER_GROUP, "consumer group cannot be blank")
	}
	if err := names.ValidateGroup(g); err != nil {
		return "", errStatus(pb.Code_ILLEGAL_CONSUMER_GROUP, "%v", err)
	}
	if names.IsSystemGroup(g) {
		return "", errStatus(pb.Code_ILLEGAL_CONSUMER_GROUP, "consumer group %q is a system group", g)
	}
	return g, nil
}
