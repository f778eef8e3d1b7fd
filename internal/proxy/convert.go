package proxy

import (
	"crypto/md5"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/apogeemq/apogee/internal/message"
	pb "github.com/apogeemq/apogee/internal/rmqpb"
)

// deliveredMessage converts a stored message into the form 5.x clients
// receive: system properties from the stored fields and RocketMQ's
// properties, every system property kept out of user_properties, the body
// as IDENTITY (the caller decompressed it) with an uppercase-hex MD5
// digest, and handle as the receipt handle ("" for none).
func deliveredMessage(m *message.Ext, handle string) *pb.Message {
	props := validProperties(m.Properties)
	sp := &pb.SystemProperties{
		Keys:          message.SplitKeys(props[message.PropertyKeys]),
		MessageId:     strings.ToValidUTF8(m.MsgID(), "\uFFFD"),
		BodyDigest:    &pb.Digest{Type: pb.DigestType_MD5, Checksum: md5Upper(m.Body)},
		BodyEncoding:  pb.Encoding_IDENTITY,
		MessageType:   storedMessageType(props),
		BornTimestamp: timestamppb.New(time.UnixMilli(m.BornTimestamp)),
		QueueId:       m.QueueID,
	}
	if t, ok := props[message.PropertyTags]; ok && t != "" {
		sp.Tag = &t
	}
	if h := props[message.PropertyBornHost]; h != "" {
		sp.BornHost = h
	} else if m.BornHost.IsValid() {
		sp.BornHost = m.BornHost.Addr().String()
	}
	if m.StoreTimestamp > 0 {
		sp.StoreTimestamp = timestamppb.New(time.UnixMilli(m.StoreTimestamp))
	}
	if m.StoreHost.IsValid() {
		sp.StoreHost = m.StoreHost.String()
	}
	if d := deliveryTime(props, m.BornTimestamp); d > 0 {
		sp.DeliveryTimestamp = timestamppb.New(time.UnixMilli(d))
	}
	if handle != "" {
		handle = strings.ToValidUTF8(handle, "\uFFFD")
		sp.ReceiptHandle = &handle
	}
	off := m.QueueOffset
	sp.QueueOffset = &off
	attempt := m.ReconsumeTimes + 1
	sp.DeliveryAttempt = &attempt
	if g := props[message.PropertyShardingKey]; g != "" {
		sp.MessageGroup = &g
	}
	if tc := props[message.PropertyTraceContext]; tc != "" {
		sp.TraceContext = &tc
	}
	v55Delivered(sp, props) // v55.go: priority, lite topic
	if t := props[message.PropertyDLQOriginTopic]; t != "" {
		sp.DeadLetterQueue = &pb.DeadLetterQueue{Topic: t, MessageId: props[message.PropertyDLQOriginMessageID]}
	}
	user := make(map[string]string, len(props))
	for k, v := range props {
		if !message.IsSystemProperty(k) && !strings.HasPrefix(k, "__") {
			user[k] = v
		}
	}
	return &pb.Message{Topic: &pb.Resource{Name: strings.ToValidUTF8(m.Topic, "\uFFFD")}, UserProperties: user, SystemProperties: sp, Body: m.Body}
}

// validProperties returns props with every key and value valid UTF-8:
// protobuf refuses to encode strings that are not, and a remoting producer
// may store any bytes. The map is copied only when something changes.
func validProperties(props map[string]string) map[string]string {
	for k, v := range props {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			out := make(map[string]string, len(props))
			for k, v := range props {
				out[strings.ToValidUTF8(k, "\uFFFD")] = strings.ToValidUTF8(v, "\uFFFD")
			}
			return out
		}
	}
	return props
}

// storedMessageType derives a stored message's type as RocketMQ does:
// transaction flag, then delay or timer properties, then message group.
func storedMessageType(props map[string]string) pb.MessageType {
	switch {
	case props[message.PropertyTransactionPrepared] == "true":
		return pb.MessageType_TRANSACTION
	case props[message.PropertyDelayTimeLevel] != "" || props[message.PropertyTimerDeliverMS] != "" ||
		props[message.PropertyTimerDelaySec] != "" || props[message.PropertyTimerDelayMS] != "":
		return pb.MessageType_DELAY
	case props[message.PropertyShardingKey] != "":
		return pb.MessageType_FIFO
	}
	return v55StoredType(props) // v55.go: PRIORITY, LITE or NORMAL
}

// deliveryTime is a delayed message's delivery time (ms epoch), 0 if none.
func deliveryTime(props map[string]string, born int64) int64 {
	if v, err := strconv.ParseInt(props[message.PropertyTimerDeliverMS], 10, 64); err == nil && v > 0 {
		return v
	}
	if v, err := strconv.ParseInt(props[message.PropertyTimerDelaySec], 10, 64); err == nil && v > 0 {
		return born + v*1000
	}
	if v, err := strconv.ParseInt(props[message.PropertyTimerDelayMS], 10, 64); err == nil && v > 0 {
		return born + v
	}
	return 0
}

// md5Upper is the MD5 of b in uppercase hex, the form 5.x clients compare
// against case-sensitively.
func md5Upper(b []byte) string {
	sum := md5.Sum(b)
	return strings.ToUpper(hex.EncodeToString(sum[:]))
}
