package proxy

import (
	"strings"

	pb "github.com/apogeemq/apogee/internal/rmqpb"
)

// Name checks of the gRPC validator: topics of 1..127 and groups of 1..120
// characters of [%|a-zA-Z0-9_-], neither a system name.

const (
	maxTopicLength = 127
	maxGroupLength = 120
	retryPrefix    = "%RETRY%"
	dlqPrefix      = "%DLQ%"
)

func validName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '%', c == '_', c == '-', c == '|':
		default:
			return false
		}
	}
	return true
}

func isSystemTopic(topic string) bool {
	switch topic {
	case "TBW102", "SELF_TEST_TOPIC", "BenchmarkTest", "OFFSET_MOVED_EVENT", "SCHEDULE_TOPIC_XXXX",
		"RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC", "TRANS_CHECK_MAX_TIME_TOPIC",
		"RMQ_SYS_TRACE_TOPIC", "rmq_sys_wheel_timer":
		return true
	}
	return strings.HasPrefix(topic, "rmq_sys_") || strings.HasPrefix(topic, "rmq_sys_REVIVE_LOG_")
}

func isSystemGroup(group string) bool {
	switch group {
	case "TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP", "CID_RMQ_SYS_TRANS",
		"CID_RMQ_SYS_REVIVE_GROUP", "CLIENT_INNER_PRODUCER", "CID_ONS-HTTP-PROXY", "CID_ONSAPI_PULL",
		"CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER":
		return true
	}
	return strings.HasPrefix(group, "CID_SYS_RMQ_TRANS")
}

// checkTopic validates a topic resource: ILLEGAL_TOPIC.
func checkTopic(r *pb.Resource) (string, error) {
	t := r.GetName()
	switch {
	case strings.TrimSpace(t) == "":
		return "", errStatus(pb.Code_ILLEGAL_TOPIC, "topic name cannot be blank")
	case len(t) > maxTopicLength:
		return "", errStatus(pb.Code_ILLEGAL_TOPIC, "topic name %q is longer than %d characters", t, maxTopicLength)
	case !validName(t):
		return "", errStatus(pb.Code_ILLEGAL_TOPIC, "topic name %q does not match ^[%%|a-zA-Z0-9_-]+$", t)
	case isSystemTopic(t):
		return "", errStatus(pb.Code_ILLEGAL_TOPIC, "topic %q is a system topic", t)
	}
	return t, nil
}

// checkGroup validates a consumer group resource: ILLEGAL_CONSUMER_GROUP.
func checkGroup(r *pb.Resource) (string, error) {
	g := r.GetName()
	switch {
	case strings.TrimSpace(g) == "":
		return "", errStatus(pb.Code_ILLEGAL_CONSUMER_GROUP, "consumer group cannot be blank")
	case len(g) > maxGroupLength:
		return "", errStatus(pb.Code_ILLEGAL_CONSUMER_GROUP, "consumer group %q is longer than %d characters", g, maxGroupLength)
	case !validName(g):
		return "", errStatus(pb.Code_ILLEGAL_CONSUMER_GROUP, "consumer group %q does not match ^[%%|a-zA-Z0-9_-]+$", g)
	case isSystemGroup(g):
		return "", errStatus(pb.Code_ILLEGAL_CONSUMER_GROUP, "consumer group %q is a system group", g)
	}
	return g, nil
}
