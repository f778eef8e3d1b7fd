package proxy

import (
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	pb "github.com/apogeemq/apogee/internal/rmqpb"
)

// TestV55SendAndDeliver: a gRPC message's priority and lite topic become
// the broker's properties (and its type), and come back on delivery; a
// bad lite topic name or a negative priority is refused with the
// reference's codes.
func TestV55SendAndDeliver(t *testing.T) {
	prio, lite, group := int32(5), "session-1", "g"
	for _, tc := range []struct {
		name     string
		sp       *pb.SystemProperties
		wantType pb.MessageType
		key, val string
	}{
		{"priority", &pb.SystemProperties{MessageId: "m1", Priority: &prio}, pb.MessageType_PRIORITY, message.PropertyPriority, "5"},
		{"lite", &pb.SystemProperties{MessageId: "m2", LiteTopic: &lite}, pb.MessageType_LITE, message.PropertyLiteTopic, lite},
		{"fifo wins over priority", &pb.SystemProperties{MessageId: "m3", Priority: &prio, MessageGroup: &group}, pb.MessageType_FIFO, message.PropertyPriority, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &pb.Message{Topic: &pb.Resource{Name: "T"}, SystemProperties: tc.sp, Body: []byte("x")}
			mt, err := checkMessage(m, time.Now())
			if err != nil || mt != tc.wantType {
				t.Fatalf("checkMessage = %v, %v; want %v", mt, err, tc.wantType)
			}
			raw, _ := sendProperties("T", m, mt)
			props := message.DecodeProperties(raw)
			if props[tc.key] != tc.val {
				t.Fatalf("stored %s = %q, want %q (properties %q)", tc.key, props[tc.key], tc.val, raw)
			}
			if tc.val == "" {
				return
			}
			sp := &pb.SystemProperties{}
			v55Delivered(sp, props)
			if v55StoredType(props) != tc.wantType || (mt == pb.MessageType_PRIORITY && sp.GetPriority() != prio) ||
				(mt == pb.MessageType_LITE && sp.GetLiteTopic() != lite) {
				t.Fatalf("delivered %v type %v", sp, v55StoredType(props))
			}
		})
	}
	bad := "a/b"
	neg := int32(-1)
	for _, sp := range []*pb.SystemProperties{{MessageId: "m", LiteTopic: &bad}, {MessageId: "m", Priority: &neg}} {
		_, err := checkMessage(&pb.Message{Topic: &pb.Resource{Name: "T"}, SystemProperties: sp, Body: []byte("x")}, time.Now())
		want := pb.Code_ILLEGAL_LITE_TOPIC
		if sp.Priority != nil {
			want = pb.Code_BAD_REQUEST
		}
		if got := toStatus(err).GetCode(); got != want {
			t.Errorf("checkMessage(%v) = %v, want %v", sp, got, want)
		}
	}
}
