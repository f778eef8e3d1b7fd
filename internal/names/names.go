// Package names owns RocketMQ's reserved names and its topic and group
// naming rules: the system topics and groups, the %RETRY% and %DLQ%
// prefixes, TBW102, and the validation every component applies to a
// topic or group name. Client, broker, store, admin and CLI all use this
// file; none keeps its own copy.
//
// The rules are RocketMQ 5's TopicValidator: names use only
// ^[%|a-zA-Z0-9_-]+$; a topic is at most 127 characters, a %RETRY% or
// %DLQ% topic at most 255 (it embeds a group, and POP retry topics embed
// a group and a topic); a group is at most 120 characters.
//
// The package is a leaf: it imports only the standard library and holds
// no mutable state.
package names

import (
	"errors"
	"fmt"
	"strings"
)

// Reserved topics.
const (
	TopicAutoCreate    = "TBW102" // template route for auto-created topics
	TopicSelfTest      = "SELF_TEST_TOPIC"
	TopicBenchmark     = "BenchmarkTest"
	TopicOffsetMoved   = "OFFSET_MOVED_EVENT"
	TopicSchedule      = "SCHEDULE_TOPIC_XXXX" // delay-level messages wait here
	TopicTransHalf     = "RMQ_SYS_TRANS_HALF_TOPIC"
	TopicTransOpHalf   = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
	TopicTransCheckMax = "TRANS_CHECK_MAX_TIME_TOPIC"
	TopicTrace         = "RMQ_SYS_TRACE_TOPIC" // default message-trace topic
	TopicTimerWheel    = "rmq_sys_wheel_timer" // timer messages wait here

	// SysTopicPrefix starts every other system topic.
	SysTopicPrefix = "rmq_sys_"
	// RetryGroupTopicPrefix + group is a group's retry topic.
	RetryGroupTopicPrefix = "%RETRY%"
	// DLQGroupTopicPrefix + group is a group's dead-letter topic.
	DLQGroupTopicPrefix = "%DLQ%"
	// ReplyTopicSuffix: "<cluster>_REPLY_TOPIC" carries request-reply answers.
	ReplyTopicSuffix = "_REPLY_TOPIC"
	// NamespaceSeparator joins a namespace and a name: "ns%name".
	NamespaceSeparator = "%"
)

// Reserved groups.
const (
	GroupToolsConsumer  = "TOOLS_CONSUMER"
	GroupFilterSrv      = "FILTERSRV_CONSUMER"
	GroupSelfTest       = "SELF_TEST_C_GROUP"
	GroupTransCheck     = "CID_RMQ_SYS_TRANS"
	GroupReviveConsumer = "CID_RMQ_SYS_REVIVE_GROUP"
	GroupClientInner    = "CLIENT_INNER_PRODUCER"

	// SysGroupPrefix starts every other system consumer group.
	SysGroupPrefix = "CID_RMQ_SYS_"
)

// Name limits, in bytes (names are ASCII).
const (
	MaxTopicLength      = 127
	MaxRetryTopicLength = 255 // %RETRY% and %DLQ% topics
	MaxGroupLength      = 120
)

// ErrInvalid is matched (errors.Is) by every error ValidateTopic and
// ValidateGroup return. The error's text is RocketMQ's remark, fit to send
// to a client as is.
var ErrInvalid = errors.New("invalid topic or group name")

type invalidError struct{ remark string }

func (e *invalidError) Error() string        { return e.remark }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

func invalidf(format string, args ...any) error {
	return &invalidError{remark: fmt.Sprintf(format, args...)}
}

// ValidateTopic checks a topic name: 1..127 characters (255 for %RETRY%
// and %DLQ% topics) of letters, digits, '%', '_', '-' and '|'. The checks
// and remarks are RocketMQ's TopicValidator.validateTopic, in its order
// (blank, characters, length): clients show the remark as is.
func ValidateTopic(topic string) error {
	if strings.TrimSpace(topic) == "" {
		return invalidf("The specified topic is blank.")
	}
	if !validChars(topic) {
		return invalidf("The specified topic: %s, contains illegal characters, allowing only ^[%%|a-zA-Z0-9_-]+$", topic)
	}
	if IsRetryTopic(topic) || IsDLQTopic(topic) {
		if len(topic) > MaxRetryTopicLength {
			return invalidf("The specified topic is DLQ or Retry topic: %s, and it's longer than topic max length: %d", topic, MaxRetryTopicLength)
		}
	} else if len(topic) > MaxTopicLength {
		return invalidf("The specified topic: %s, is longer than topic max length: %d", topic, MaxTopicLength)
	}
	return nil
}

// ValidateGroup checks a consumer or producer group name: 1..120
// characters of the same alphabet as topics.
func ValidateGroup(group string) error {
	if group == "" {
		return invalidf("the group name is blank")
	}
	if len(group) > MaxGroupLength {
		return invalidf("the group name %q is longer than %d characters", group, MaxGroupLength)
	}
	if !validChars(group) {
		return invalidf("the group name %q contains illegal characters, allowing only ^[%%|a-zA-Z0-9_-]+$", group)
	}
	return nil
}

func validChars(s string) bool {
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

// RetryTopic is group's retry topic, "%RETRY%group".
func RetryTopic(group string) string { return RetryGroupTopicPrefix + group }

// DLQTopic is group's dead-letter topic, "%DLQ%group".
func DLQTopic(group string) string { return DLQGroupTopicPrefix + group }

// IsRetryTopic reports a %RETRY% topic.
func IsRetryTopic(topic string) bool { return strings.HasPrefix(topic, RetryGroupTopicPrefix) }

// IsDLQTopic reports a %DLQ% topic.
func IsDLQTopic(topic string) bool { return strings.HasPrefix(topic, DLQGroupTopicPrefix) }

// PopRetryTopicV1 is the retry topic a POP consumer group uses for topic
// in RocketMQ 5's first naming: "%RETRY%group_topic".
func PopRetryTopicV1(group, topic string) string {
	return RetryGroupTopicPrefix + group + "_" + topic
}

// PopRetryTopicV2 is the retry topic a POP consumer group uses for topic
// when the broker enables the v2 naming (enableRetryTopicV2):
// "%RETRY%group+topic", which unlike v1 splits back unambiguously.
func PopRetryTopicV2(group, topic string) string {
	return RetryGroupTopicPrefix + group + "+" + topic
}

// NotAllowedToSend reports the system topics producers may not write to
// (the broker answers NO_PERMISSION).
func NotAllowedToSend(topic string) bool {
	switch topic {
	case TopicSchedule, TopicTransHalf, TopicTransOpHalf, TopicTransCheckMax, TopicSelfTest, TopicOffsetMoved:
		return true
	}
	return false
}

// IsSystemTopic reports topics owned by the broker itself: a user may not
// create them, the store never cleans them up and a namespace never wraps
// them.
func IsSystemTopic(topic string) bool {
	switch topic {
	case TopicAutoCreate, TopicSelfTest, TopicBenchmark, TopicOffsetMoved, TopicSchedule,
		TopicTransHalf, TopicTransOpHalf, TopicTransCheckMax, TopicTrace:
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
	return strings.HasPrefix(group, SysGroupPrefix)
}
