package remoting

import (
	"context"
	"errors"
	"fmt"

	"github.com/apogeemq/apogee/internal/protocol"
)

// Sentinels callers branch on with errors.Is.
var (
	// ErrTimeout: the call's context ended before the response arrived. The
	// error also wraps the context's error.
	ErrTimeout = errors.New("remoting: timeout")
	// ErrConnClosed: the connection closed before the call completed (or was
	// already closed when the call was made).
	ErrConnClosed = errors.New("remoting: connection closed")
	// ErrClosed: the Server or Client is closed.
	ErrClosed = errors.New("remoting: closed")
	// ErrTooManyRequests: no async/oneway permit became free before the
	// context ended (Java's RemotingTooMuchRequestException).
	ErrTooManyRequests = errors.New("remoting: too many requests in flight")
)

// overloadRemark is Java's remark for a full processor queue (docs/protocol.md §2.7).
const overloadRemark = "[OVERLOAD]system busy, start flow control for a while"

// notSupportedRemark is Java's remark for an unknown request code, with its
// leading space (docs/protocol.md §9.1 item 9).
func notSupportedRemark(code int32) string {
	return fmt.Sprintf(" request type %d not supported", code)
}

// errorResponse turns a processor or hook error into a response to req: a
// *protocol.Error keeps its code and remark, anything else is SYSTEM_ERROR
// with the error text.
func errorResponse(req *protocol.Command, err error) *protocol.Command {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return protocol.NewResponse(req, pe.Code, pe.Remark)
	}
	return protocol.NewResponse(req, protocol.SystemError, err.Error())
}

// ctxError describes why a call's context ended: ErrTimeout (plus the
// context error) for a deadline, the context error alone for a cancel.
func ctxError(ctx context.Context, what string) error {
	err := ctx.Err()
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("remoting: %s: %w: %w", what, ErrTimeout, err)
	}
	return fmt.Errorf("remoting: %s: %w", what, err)
}
