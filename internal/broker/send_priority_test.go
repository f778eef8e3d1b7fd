package broker

import (
	"testing"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
)

// FuzzPriorityQueue: the shortcut (no priority key in the string, no
// look-ups) never changes priorityQueue's answer.
func FuzzPriorityQueue(f *testing.F) {
	prio := message.PropertyPriority
	for _, s := range []string{"", "TAGS\x01t\x02UNIQ_KEY\x01AC11\x02WAIT\x01true\x02",
		prio + "\x013\x02", "TAGS\x01" + prio + "\x02", prio + "\x01-1\x02", prio + "\x01x\x02",
		prio + "\x0199\x02TRAN_MSG\x01true\x02", prio + "\x012\x02__SHARDINGKEY\x01k\x02",
		"DELAY\x013\x02" + prio + "\x011\x02", prio + "\x01\x02", "a\x01b" + prio + "\x02"} {
		f.Add(s, int32(4))
	}
	f.Fuzz(func(t *testing.T, props string, queues int32) {
		tc := protocol.TopicConfig{WriteQueueNums: queues}
		q, ok := priorityQueue(&tc, props)
		wq, wok := priorityQueueFull(&tc, props)
		if q != wq || ok != wok {
			t.Fatalf("priorityQueue(%q) = %d, %v; without the shortcut %d, %v", props, q, ok, wq, wok)
		}
	})
}
