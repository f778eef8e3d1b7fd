package client

import (
	"context"
	"time"
)

// Hook is any value implementing one or more of the Hook* interfaces
// below; WithHooks registers it. Hooks let metrics, tracing or logging
// plug in without the SDK depending on them (franz-go's model). Hooks run
// synchronously on the sending goroutine (for SendAsync the "after" hook
// runs on the callback goroutine); they must be quick and must not call
// back into the producer.
type Hook any

// SendMode says how a message was sent.
type SendMode int

// Send modes.
const (
	SendModeSync SendMode = iota
	SendModeAsync
	SendModeOneway
)

func (m SendMode) String() string {
	switch m {
	case SendModeSync:
		return "SYNC"
	case SendModeAsync:
		return "ASYNC"
	default:
		return "ONEWAY"
	}
}

// SendContext describes one send attempt to hooks. Hooks may read it but
// must not modify it or the messages it points to (the request is already
// encoded when hooks run).
type SendContext struct {
	ProducerGroup string
	Message       *Message // the message as the user gave it (a copy)
	Batch         []*Message
	Queue         MessageQueue
	BrokerAddr    string
	Mode          SendMode
	Attempt       int // 0 for the first attempt
	BornTime      time.Time

	// Set for AfterSend only.
	Result  *SendResult // nil on failure or for oneway
	Err     error
	Latency time.Duration
}

// HookBeforeSend is called before every send attempt.
type HookBeforeSend interface {
	OnBeforeSend(ctx context.Context, sc *SendContext)
}

// HookAfterSend is called after every send attempt with its outcome.
type HookAfterSend interface {
	OnAfterSend(ctx context.Context, sc *SendContext)
}

// hookSet splits the registered hooks by interface once, at construction.
type hookSet struct {
	before []HookBeforeSend
	after  []HookAfterSend
}

func newHookSet(hooks []Hook) hookSet {
	var hs hookSet
	for _, h := range hooks {
		if b, ok := h.(HookBeforeSend); ok {
			hs.before = append(hs.before, b)
		}
		if a, ok := h.(HookAfterSend); ok {
			hs.after = append(hs.after, a)
		}
	}
	return hs
}

func (hs *hookSet) empty() bool { return len(hs.before) == 0 && len(hs.after) == 0 }
