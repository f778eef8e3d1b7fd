package broker

import (
	"errors"
	"fmt"
	"strings"
)

// Reserved topics, groups and prefixes (remoting.md §6.10, storage §8.3).
const (
	TopicAutoCreate       = "TBW102"
	TopicSelfTest         = "SELF_TEST_TOPIC"
	TopicBenchmark        = "BenchmarkTest"
	TopicOffsetMoved      = "OFFSET_MOVED_EVENT"
	TopicSchedule         = "SCHEDULE_TOPIC_XXXX"
	TopicTransHalf        = "RMQ_SYS_TRANS_HALF_TOPIC"
	TopicTransOpHalf      = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
	TopicTransCheckMax    = "TRANS_CHECK_MAX_TIME_TOPIC"
	TopicTimerWheel       = "rmq_sys_wheel_timer"
	SysTopicPrefix        = "rmq_sys_"
	RetryGroupTopicPrefix = "%RETRY%"
	DLQGroupTopicPrefix   = "%DLQ%"
	ReplyTopicSuffix      = "_REPLY_TOPIC"

	GroupToolsConsumer  = "TOOLS_CONSUMER"
	GroupFilterSrv      = "FILTERSRV_CONSUMER"
	GroupSelfTest       = "SELF_TEST_C_GROUP"
	GroupTransCheck     = "CID_RMQ_SYS_TRANS"
	GroupReviveConsumer = "CID_RMQ_SYS_REVIVE_GROUP"
	GroupClientInner    = "CLIENT_INNER_PRODUCER"
)

// Name limits (remoting.md §1.7).
const (
	maxTopicLength      = 127
	maxRetryTopicLength = 255
	maxGroupLength      = 120
)

// ErrInvalidName is wrapped by every topic/group name error.
var ErrInvalidName = errors.New("broker: invalid name")

// ValidateTopic checks a topic name: 1..127 characters (255 for %RETRY% and
// %DLQ% topics) of letters, digits, '%', '_', '-' and '|'.
func ValidateTopic(topic string) error {
	if topic == "" {
		return fmt.Errorf("%w: the topic name is blank", ErrInvalidName)
	}
	limit := maxTopicLength
	if strings.HasPrefix(topic, RetryGroupTopicPrefix) || strings.HasPrefix(topic, DLQGroupTopicPrefix) {
		limit = maxRetryTopicLength
	}
	if len(topic) > limit {
		return fmt.Errorf("%w: the topic name %q is longer than %d characters", ErrInvalidName, topic, limit)
	}
	if !validName(topic) {
		return fmt.Errorf("%w: the topic name %q contains illegal characters, allowing only ^[%%|a-zA-Z0-9_-]+$", ErrInvalidName, topic)
	}
	return nil
}

// ValidateGroup checks a consumer or producer group name: 1..120 characters
// of the same alphabet as topics.
func ValidateGroup(group string) error {
	if group == "" {
		return fmt.Errorf("%w: the group name is blank", ErrInvalidName)
	}
	if len(group) > maxGroupLength {
		return fmt.Errorf("%w: the group name %q is longer than %d characters", ErrInvalidName, group, maxGroupLength)
	}
	if !validName(group) {
		return fmt.Errorf("%w: the group name %q contains illegal characters, allowing only ^[%%|a-zA-Z0-9_-]+$", ErrInvalidName, group)
	}
	return nil
}

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

// RetryTopic is the per-group retry topic.
func RetryTopic(group string) string { return RetryGroupTopicPrefix + group }

// DLQTopic is the per-group dead-letter topic.
func DLQTopic(group string) string { return DLQGroupTopicPrefix + group }

// notAllowedToSend are system topics producers may not write to
// (storage-and-broker.md §8.1 step 3).
func notAllowedToSend(topic string) bool {
	switch topic {
	case TopicSchedule, TopicTransHalf, TopicTransOpHalf, TopicTransCheckMax, TopicSelfTest, TopicOffsetMoved:
		return true
	}
	return false
}

// IsSystemTopic reports topics owned by the broker itself.
func IsSystemTopic(topic string) bool {
	switch topic {
	case TopicAutoCreate, TopicSelfTest, TopicBenchmark, TopicOffsetMoved, TopicSchedule,
		TopicTransHalf, TopicTransOpHalf, TopicTransCheckMax, TopicTimerWheel, "RMQ_SYS_TRACE_TOPIC":
		return true
	}
	return strings.HasPrefix(topic, SysTopicPrefix)
}

// IsSystemGroup reports groups reserved for the broker and tools.
func IsSystemGroup(group string) bool {
	switch group {
	case GroupToolsConsumer, GroupFilterSrv, GroupSelfTest, GroupTransCheck, GroupReviveConsumer,
		"CID_ONS-HTTP-PROXY", "CID_ONSAPI_PULL", "CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER":
		return true
	}
	return strings.HasPrefix(group, "CID_RMQ_SYS_")
}
