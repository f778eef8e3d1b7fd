package client

import "strings"

// RocketMQ namespaces: on the wire a topic or group "T" of namespace "ns"
// is "ns%T"; retry and dead-letter topics keep their prefix in front:
// "%RETRY%ns%group". System topics (TBW102, SCHEDULE_TOPIC_XXXX, rmq_sys_*,
// ...) are never wrapped.

const (
	retryGroupTopicPrefix = "%RETRY%"
	dlqGroupTopicPrefix   = "%DLQ%"
	namespaceSeparator    = "%"
)

// wrapNamespace returns the wire name of a topic or group.
func wrapNamespace(ns, name string) string {
	if ns == "" || name == "" || isSystemTopic(name) {
		return name
	}
	for _, p := range []string{retryGroupTopicPrefix, dlqGroupTopicPrefix} {
		if rest, ok := strings.CutPrefix(name, p); ok {
			if strings.HasPrefix(rest, ns+namespaceSeparator) {
				return name
			}
			return p + ns + namespaceSeparator + rest
		}
	}
	if strings.HasPrefix(name, ns+namespaceSeparator) {
		return name
	}
	return ns + namespaceSeparator + name
}

// unwrapNamespace strips the namespace from a wire name.
func unwrapNamespace(ns, name string) string {
	if ns == "" || name == "" {
		return name
	}
	for _, p := range []string{retryGroupTopicPrefix, dlqGroupTopicPrefix} {
		if rest, ok := strings.CutPrefix(name, p); ok {
			if r, ok := strings.CutPrefix(rest, ns+namespaceSeparator); ok {
				return p + r
			}
			return name
		}
	}
	if r, ok := strings.CutPrefix(name, ns+namespaceSeparator); ok {
		return r
	}
	return name
}

// isSystemTopic reports topics the namespace never applies to.
func isSystemTopic(t string) bool {
	switch t {
	case defaultCreateTopicKey, "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC",
		"RMQ_SYS_TRANS_OP_HALF_TOPIC", "TRANS_CHECK_MAX_TIME_TOPIC", "RMQ_SYS_TRACE_TOPIC",
		"OFFSET_MOVED_EVENT", "SELF_TEST_TOPIC", "BenchmarkTest":
		return true
	}
	return strings.HasPrefix(t, "rmq_sys_") || strings.HasSuffix(t, replyTopicSuffix)
}
