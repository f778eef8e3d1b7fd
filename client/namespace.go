package client

import (
	"strings"

	"github.com/apogeemq/apogee/internal/names"
)

// RocketMQ namespaces: on the wire a topic or group "T" of namespace "ns"
// is "ns%T"; retry and dead-letter topics keep their prefix in front:
// "%RETRY%ns%group". System topics (TBW102, SCHEDULE_TOPIC_XXXX, rmq_sys_*,
// ...) are never wrapped.

// wrapNamespace returns the wire name of a topic or group.
func wrapNamespace(ns, name string) string {
	if ns == "" || name == "" || isSystemTopic(name) {
		return name
	}
	for _, p := range []string{names.RetryGroupTopicPrefix, names.DLQGroupTopicPrefix} {
		if rest, ok := strings.CutPrefix(name, p); ok {
			if strings.HasPrefix(rest, ns+names.NamespaceSeparator) {
				return name
			}
			return p + ns + names.NamespaceSeparator + rest
		}
	}
	if strings.HasPrefix(name, ns+names.NamespaceSeparator) {
		return name
	}
	return ns + names.NamespaceSeparator + name
}

// unwrapNamespace strips the namespace from a wire name.
func unwrapNamespace(ns, name string) string {
	if ns == "" || name == "" {
		return name
	}
	for _, p := range []string{names.RetryGroupTopicPrefix, names.DLQGroupTopicPrefix} {
		if rest, ok := strings.CutPrefix(name, p); ok {
			if r, ok := strings.CutPrefix(rest, ns+names.NamespaceSeparator); ok {
				return p + r
			}
			return name
		}
	}
	if r, ok := strings.CutPrefix(name, ns+names.NamespaceSeparator); ok {
		return r
	}
	return name
}

// isSystemTopic reports topics the namespace never applies to: the
// broker's system topics and reply topics.
func isSystemTopic(t string) bool {
	return names.IsSystemTopic(t) || strings.HasSuffix(t, names.ReplyTopicSuffix)
}
