package broker

import (
	"strings"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
)

// attrMessageType is RocketMQ 5's topic attribute for the topic's message
// type (UPDATE_AND_CREATE_TOPIC attributes "+message.type=FIFO").
const attrMessageType = "message.type"

// rawMessageType classifies a send by its properties string without
// building a map, as messageTypeOf does: transaction half first, then
// sharding key (FIFO), then any delay or timer property.
func rawMessageType(props string) MessageType {
	if v, _ := message.LookupProperty(props, message.PropertyTransactionPrepared); v == "true" {
		return MessageTransaction
	}
	if _, ok := message.LookupProperty(props, propertyShardingKey); ok {
		return MessageFIFO
	}
	for _, k := range [...]string{"__STARTDELIVERTIME", message.PropertyDelayTimeLevel, message.PropertyTimerDeliverMS,
		message.PropertyTimerDelaySec, message.PropertyTimerDelayMS} {
		if v, _ := message.LookupProperty(props, k); v != "" {
			return MessageDelay
		}
	}
	prio, _ := message.LookupProperty(props, message.PropertyPriority)
	lite, _ := message.LookupProperty(props, message.PropertyLiteTopic)
	return v55MessageType(prio != "", lite != "")
}

// checkMessageType refuses a send whose message type the topic's
// message.type attribute does not accept, as RocketMQ 5 does: MIXED takes
// every type, NORMAL / FIFO / DELAY / TRANSACTION only their own. Topics
// without the attribute (classic topics) and retry and DLQ topics take
// anything. The answer is MESSAGE_ILLEGAL naming both types.
func checkMessageType(tc *protocol.TopicConfig, props string) *protocol.Error {
	want := strings.ToUpper(tc.Attributes[attrMessageType])
	if want == "" || want == "MIXED" || names.IsRetryTopic(tc.TopicName) || names.IsDLQTopic(tc.TopicName) {
		return nil
	}
	got := rawMessageType(props)
	var ok bool
	switch want {
	case "NORMAL":
		ok = got == MessageNormal
	case "FIFO":
		ok = got == MessageFIFO
	case "DELAY":
		ok = got == MessageDelay
	case "TRANSACTION":
		ok = got == MessageTransaction
	case "PRIORITY":
		// RocketMQ's broker stores plain messages in a priority topic too
		// (round robin, below every priority).
		ok = got == MessagePriority || got == MessageNormal
	case "LITE":
		ok = got == MessageLite
	default:
		ok = true // a type this broker does not know: do not refuse
	}
	if ok {
		return nil
	}
	return protocol.Errorf(protocol.MessageIllegal, "the message type %s does not match the type %s of topic %s",
		strings.ToUpper(got.String()), want, tc.TopicName)
}
