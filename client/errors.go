package client

import (
	"errors"
	"fmt"

	"github.com/apogeemq/apogee/internal/protocol"
)

// Sentinel errors callers branch on with errors.Is.
var (
	// ErrClosed: the client was closed (or never started).
	ErrClosed = errors.New("client: closed")
	// ErrNotStarted: a call that needs Start came before it.
	ErrNotStarted = errors.New("client: not started")
	// ErrNoRoute: no name server knows the topic and it cannot be
	// auto-created (no TBW102 route either).
	ErrNoRoute = errors.New("client: no route for topic")
	// ErrNoAvailableQueue: the route has no writable queue on a broker with
	// a live master.
	ErrNoAvailableQueue = errors.New("client: no writable queue")
	// ErrTimeout: the send timeout (or ctx deadline) ran out before a broker
	// answered.
	ErrTimeout = errors.New("client: timeout")
	// ErrIllegalMessage: the message fails validation before sending (empty
	// topic or body, too large, bad topic name, batch mixing topics).
	ErrIllegalMessage = errors.New("client: illegal message")
)

// BrokerError is a failure answered by a broker or name server: the address
// asked, the response code and remark, and the topic concerned.
type BrokerError struct {
	Addr       string // "host:port" asked
	BrokerName string // "" for name servers
	Topic      string // "" when not about one topic
	Code       int32  // RocketMQ response code
	Remark     string
}

func (e *BrokerError) Error() string {
	who := e.Addr
	if e.BrokerName != "" {
		who = e.BrokerName + "@" + e.Addr
	}
	if e.Topic != "" {
		return fmt.Sprintf("client: %s answered %s (%d) for topic %s: %s",
			who, protocol.ResponseCode(e.Code), e.Code, e.Topic, e.Remark)
	}
	return fmt.Sprintf("client: %s answered %s (%d): %s", who, protocol.ResponseCode(e.Code), e.Code, e.Remark)
}

// CodeName returns RocketMQ's name of the code (e.g. "SYSTEM_BUSY").
func (e *BrokerError) CodeName() string { return protocol.ResponseCode(e.Code).String() }

// Retriable reports whether a producer retries this code on another broker
// (docs/broker.md §4.3).
func (e *BrokerError) Retriable() bool { return protocol.ResponseCode(e.Code).Retriable() }

// newBrokerError builds a BrokerError from a response.
func newBrokerError(addr, brokerName, topic string, resp *protocol.Command) *BrokerError {
	return &BrokerError{Addr: addr, BrokerName: brokerName, Topic: topic, Code: resp.Code, Remark: resp.Remark}
}
