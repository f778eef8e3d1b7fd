package protocol

import (
	"errors"
	"fmt"
)

// Error is a protocol failure as answered to a peer: a response code and a
// remark in RocketMQ's terms. Processors return it to choose the response;
// clients get it back for non-success responses.
type Error struct {
	Code   ResponseCode
	Remark string
}

// Error formats like the Go client does: "CODE: n, DESC: remark".
func (e *Error) Error() string {
	return fmt.Sprintf("CODE: %d, DESC: %s", int32(e.Code), e.Remark)
}

// Errorf returns an *Error with a formatted remark.
func Errorf(code ResponseCode, format string, args ...any) *Error {
	return &Error{Code: code, Remark: fmt.Sprintf(format, args...)}
}

// Codec sentinels; decode errors wrap one of them with detail.
var (
	// ErrFrameTooLarge: a frame's length word exceeds the configured limit.
	ErrFrameTooLarge = errors.New("protocol: frame too large")
	// ErrBadFrame: a frame or header that cannot be decoded. The connection
	// it came from must be closed (docs/protocol.md §1.1 "Codec errors").
	ErrBadFrame = errors.New("protocol: bad frame")
	// ErrUnencodable: a Command that cannot be represented on the wire in its
	// serialize type (e.g. a code above 32767 in a ROCKETMQ header).
	ErrUnencodable = errors.New("protocol: command cannot be encoded")
)

// badFrame wraps ErrBadFrame with detail.
func badFrame(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadFrame, fmt.Sprintf(format, args...))
}
