package proxy

import (
	"strconv"

	"github.com/apogeemq/apogee/internal/lite"
	"github.com/apogeemq/apogee/internal/message"
	pb "github.com/apogeemq/apogee/internal/rmqpb"
)

// RocketMQ 5.4 priority messages and 5.5 lite topics on the gRPC endpoint
// (docs/priority-and-lite.md): the send side turns SystemProperties.priority
// and lite_topic into the broker's properties, the delivery side back.

// v55SendType classifies a message that is neither a transaction, a delay
// nor a FIFO message: a priority makes PRIORITY, a lite topic LITE (the
// reference's order).
func v55SendType(sp *pb.SystemProperties) pb.MessageType {
	switch {
	case sp.Priority != nil:
		return pb.MessageType_PRIORITY
	case sp.LiteTopic != nil:
		return pb.MessageType_LITE
	}
	return pb.MessageType_NORMAL
}

// checkV55 validates the priority (>= 0) and the lite topic name of a
// message of type t: BAD_REQUEST and ILLEGAL_LITE_TOPIC.
func checkV55(sp *pb.SystemProperties, t pb.MessageType) error {
	if t == pb.MessageType_PRIORITY && sp.GetPriority() < 0 {
		return errStatus(pb.Code_BAD_REQUEST, "priority %d must be >= 0", sp.GetPriority())
	}
	if t == pb.MessageType_LITE {
		if err := lite.ValidateName(sp.GetLiteTopic()); err != nil {
			return errStatus(pb.Code_ILLEGAL_LITE_TOPIC, "%s", err)
		}
	}
	return nil
}

// v55AppendProperties appends the priority or lite topic of a message of
// type t to its stored properties. A priority on a message of another type
// is dropped, as the reference's broker drops it.
func v55AppendProperties(b []byte, sp *pb.SystemProperties, t pb.MessageType) []byte {
	switch t {
	case pb.MessageType_PRIORITY:
		b = message.AppendProperty(b, message.PropertyPriority, strconv.Itoa(int(sp.GetPriority())))
	case pb.MessageType_LITE:
		b = message.AppendProperty(b, message.PropertyLiteTopic, sp.GetLiteTopic())
	}
	return b
}

// v55StoredType classifies a stored message the older types did not claim.
func v55StoredType(props map[string]string) pb.MessageType {
	switch {
	case props[message.PropertyPriority] != "":
		return pb.MessageType_PRIORITY
	case props[message.PropertyLiteTopic] != "":
		return pb.MessageType_LITE
	}
	return pb.MessageType_NORMAL
}

// v55Delivered fills a delivered message's priority and lite topic.
func v55Delivered(sp *pb.SystemProperties, props map[string]string) {
	if v, err := strconv.ParseInt(props[message.PropertyPriority], 10, 32); err == nil && v >= 0 {
		p := int32(v)
		sp.Priority = &p
	}
	if l := props[message.PropertyLiteTopic]; l != "" {
		sp.LiteTopic = &l
	}
}
