// Package lite holds RocketMQ 5.5's lite topics' pure parts: the names
// that map a (parent topic, lite topic) pair to its store queue and the
// in-memory registry of a broker's lite topics (registry.go). It does no
// I/O and starts no goroutine; internal/broker owns the lifecycle
// (docs/priority-and-lite.md).
package lite

import (
	"errors"
	"fmt"
	"strings"
)

// Prefix starts every lite topic's store topic name: RocketMQ's light
// message queue prefix %LMQ% and the '$' separator, so that
// "%LMQ%$parent$lite" names lite topic "lite" of parent topic "parent"
// (RocketMQ's LiteUtil.toLmqName). Topic names cannot hold '$', so the
// name splits back unambiguously.
const Prefix = "%LMQ%$"

// Separator splits parent and lite topic in a store topic name.
const Separator = '$'

// MaxNameLength bounds a lite topic name (bytes).
const MaxNameLength = 64

// ErrInvalidName is matched (errors.Is) by ValidateName's errors.
var ErrInvalidName = errors.New("illegal lite topic")

// ValidateName checks a lite topic name: 1..64 bytes of letters, digits,
// '_', '-' and '.'.
func ValidateName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: the lite topic name is blank", ErrInvalidName)
	}
	if len(name) > MaxNameLength {
		return fmt.Errorf("%w: the lite topic name %q is longer than %d characters", ErrInvalidName, name, MaxNameLength)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-', c == '.':
		default:
			return fmt.Errorf("%w: the lite topic name %q contains illegal characters, allowing only ^[a-zA-Z0-9_.-]+$", ErrInvalidName, name)
		}
	}
	return nil
}

// QueueName is the store topic of lite topic name under parent.
func QueueName(parent, name string) string {
	return Prefix + parent + string(Separator) + name
}

// IsQueueName reports whether topic is a lite topic's store topic.
func IsQueueName(topic string) bool { return strings.HasPrefix(topic, Prefix) }

// SplitQueueName returns the parent and lite topic of a store topic name;
// ok is false for other names.
func SplitQueueName(topic string) (parent, name string, ok bool) {
	rest, found := strings.CutPrefix(topic, Prefix)
	if !found {
		return "", "", false
	}
	i := strings.IndexByte(rest, Separator)
	if i <= 0 || i == len(rest)-1 {
		return "", "", false
	}
	return rest[:i], rest[i+1:], true
}
