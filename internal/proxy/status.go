package proxy

import (
	"context"
	"errors"
	"fmt"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	pb "github.com/apogeemq/apogee/internal/rmqpb"
)

// Business statuses. Every unary response and stream frame carries one next
// to gRPC OK; gRPC error codes are left to transport failures, Telemetry
// stream errors and unimplemented RPCs, as the RocketMQ proxy does.

func okStatus() *pb.Status { return &pb.Status{Code: pb.Code_OK, Message: "OK"} }

func statusf(code pb.Code, format string, args ...any) *pb.Status {
	return &pb.Status{Code: code, Message: fmt.Sprintf(format, args...)}
}

// statusError is an error that carries the business status to answer with.
type statusError struct{ st *pb.Status }

func (e *statusError) Error() string { return fmt.Sprintf("%s: %s", e.st.Code, e.st.Message) }

func errStatus(code pb.Code, format string, args ...any) error {
	return &statusError{statusf(code, format, args...)}
}

// toStatus turns any error of the proxy into the business status the
// reference proxy gives it: broker codes map as in RocketMQ's proxy
// (SYSTEM_BUSY -> TOO_MANY_REQUESTS, REQUEST_CODE_NOT_SUPPORTED ->
// NOT_IMPLEMENTED, SUBSCRIPTION_GROUP_NOT_EXIST -> CONSUMER_GROUP_NOT_FOUND,
// TOPIC_NOT_EXIST -> TOPIC_NOT_FOUND, timeouts -> PROXY_TIMEOUT), everything
// else is INTERNAL_SERVER_ERROR with the error text.
func toStatus(err error) *pb.Status {
	var se *statusError
	if errors.As(err, &se) {
		return se.st
	}
	if errors.Is(err, errTopicNotFound) {
		return statusf(pb.Code_TOPIC_NOT_FOUND, "topic not found")
	}
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return brokerStatus(pe.Code, pe.Remark)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, remoting.ErrTimeout) {
		return statusf(pb.Code_PROXY_TIMEOUT, "broker timeout: %v", err)
	}
	return statusf(pb.Code_INTERNAL_SERVER_ERROR, "%v", err)
}

// brokerStatus maps a broker's remoting response code.
func brokerStatus(code protocol.ResponseCode, remark string) *pb.Status {
	switch code {
	case protocol.Success:
		return okStatus()
	case protocol.SystemBusy, protocol.FlowControl, protocol.PollingFull:
		return statusf(pb.Code_TOO_MANY_REQUESTS, "%s", remark)
	case protocol.RequestCodeNotSupported:
		return statusf(pb.Code_NOT_IMPLEMENTED, "%s", remark)
	case protocol.SubscriptionGroupNotExist:
		return statusf(pb.Code_CONSUMER_GROUP_NOT_FOUND, "%s", remark)
	case protocol.TopicNotExist:
		return statusf(pb.Code_TOPIC_NOT_FOUND, "%s", remark)
	case protocol.NoPermission:
		return statusf(pb.Code_FORBIDDEN, "%s", remark)
	case protocol.FlushDiskTimeout:
		return statusf(pb.Code_MASTER_PERSISTENCE_TIMEOUT, "%s", remark)
	case protocol.FlushSlaveTimeout:
		return statusf(pb.Code_SLAVE_PERSISTENCE_TIMEOUT, "%s", remark)
	case protocol.SlaveNotAvailable:
		return statusf(pb.Code_HA_NOT_AVAILABLE, "%s", remark)
	case protocol.MessageIllegal, protocol.InvalidParameter:
		return statusf(pb.Code_BAD_REQUEST, "%s", remark)
	case protocol.RPCTimeOut:
		return statusf(pb.Code_PROXY_TIMEOUT, "%s", remark)
	}
	return statusf(pb.Code_INTERNAL_SERVER_ERROR, "broker code %d: %s", code, remark)
}
