package client

import (
	"fmt"
	"math/rand/v2"
)

// QueueSelector picks the queue of an ordered send among the topic's
// writable queues (never empty). Select runs on the sending goroutine.
type QueueSelector interface {
	Select(queues []MessageQueue, msg *Message, arg any) MessageQueue
}

// QueueSelectorFunc adapts a function to QueueSelector.
type QueueSelectorFunc func(queues []MessageQueue, msg *Message, arg any) MessageQueue

// Select calls f.
func (f QueueSelectorFunc) Select(queues []MessageQueue, msg *Message, arg any) MessageQueue {
	return f(queues, msg, arg)
}

// HashQueueSelector picks queue |hash(arg)| % len(queues), with Java's
// String.hashCode of arg's text (fmt %v), so Java and Go producers of the
// same key (order id, user id, ...) choose the same queue. A nil arg uses
// the message's sharding key, then its first key.
type HashQueueSelector struct{}

// Select implements QueueSelector.
func (HashQueueSelector) Select(queues []MessageQueue, msg *Message, arg any) MessageQueue {
	key := ""
	if arg != nil {
		key = fmt.Sprint(arg)
	} else if msg != nil {
		if key = msg.Property(PropertyShardingKey); key == "" {
			if ks := msg.Keys(); len(ks) > 0 {
				key = ks[0]
			}
		}
	}
	h := javaStringHash(key)
	if h < 0 {
		h = -h
	}
	if h < 0 { // math.MinInt32 stays negative
		h = 0
	}
	return queues[int(h)%len(queues)]
}

// RandomQueueSelector picks a queue uniformly at random.
type RandomQueueSelector struct{}

// Select implements QueueSelector.
func (RandomQueueSelector) Select(queues []MessageQueue, _ *Message, _ any) MessageQueue {
	return queues[rand.IntN(len(queues))]
}

// javaStringHash is Java's String.hashCode over UTF-16 code units.
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}
